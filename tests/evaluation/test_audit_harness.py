"""The pure parts of :mod:`longred_bench.evaluation.harness` that decide what a run scores and
records: the few-shot count and generation budget each task runs with, the window of a long
suite, the group a record names, a NaN stderr, skipped documents summed over groups, the
documents counted at each RULER length and the error when a task has no document that fits."""

from __future__ import annotations

import math
from types import SimpleNamespace
from typing import Any

import pytest
from lm_eval.api.task import Task

from longred_bench.evaluation import harness
from longred_bench.evaluation.fit_check import FitReport


class FakeTask:
    """The config surface of an lm-eval task that :func:`harness._configure` uses."""

    get_config = Task.get_config
    set_config = Task.set_config

    def __init__(self, **config: Any) -> None:
        self._config = SimpleNamespace(**config)
        self.seed: int | None = None

    def set_fewshot_seed(self, seed: int) -> None:
        self.seed = seed


def test_a_few_shot_count_is_given_to_every_task_but_a_zero_shot_one() -> None:
    """``--num-fewshot`` reaches a task with its own count or none; a task whose YAML says 0
    stays zero-shot; with no count given a task without one runs zero-shot."""
    own, zero, unset = FakeTask(num_fewshot=5), FakeTask(num_fewshot=0), FakeTask()
    for task in (own, zero, unset):
        harness._configure(task, num_fewshot=3, seed=7, window=4096)
    assert [t.get_config("num_fewshot") for t in (own, zero, unset)] == [3, 0, 3]
    assert {t.seed for t in (own, zero, unset)} == {7}
    kept, none = FakeTask(num_fewshot=5), FakeTask()
    for task in (kept, none):
        harness._configure(task, num_fewshot=None, seed=0, window=4096)
    assert [kept.get_config("num_fewshot"), none.get_config("num_fewshot")] == [5, 0]


def test_a_generation_budget_that_fills_the_window_becomes_half_of_it() -> None:
    def budget(window: int, gen: dict[str, Any] | None) -> dict[str, Any]:
        task = FakeTask(output_type="generate_until", generation_kwargs=gen, num_fewshot=0)
        harness._configure(task, num_fewshot=None, seed=0, window=window)
        return task.get_config("generation_kwargs")

    assert budget(512, {"until": ["\n"], "max_gen_toks": 32}) == {
        "until": ["\n"], "max_gen_toks": 32}  # fmt: skip
    assert budget(32, {"until": ["\n"], "max_gen_toks": 32}) == {
        "until": ["\n"], "max_gen_toks": 16}  # fmt: skip
    assert budget(257, {}) == {}  # lm-eval's default budget (256) fits
    assert budget(256, {}) == {"max_gen_toks": 128}
    # a log-likelihood task keeps its settings
    task = FakeTask(output_type="multiple_choice", num_fewshot=0)
    harness._configure(task, num_fewshot=None, seed=0, window=8)
    assert task.get_config("generation_kwargs") is None


def test_a_long_suites_window_holds_its_largest_generation_budget() -> None:
    tasks = {
        "a": FakeTask(output_type="generate_until", generation_kwargs={"max_gen_toks": 32}),
        "b": FakeTask(output_type="generate_until", generation_kwargs={"max_gen_toks": 128}),
        "c": FakeTask(output_type="generate_until", generation_kwargs=None),
        "d": FakeTask(output_type="loglikelihood", generation_kwargs={"max_gen_toks": 999}),
    }
    assert harness._generation_budget(tasks) == 256  # c: lm-eval's default
    del tasks["c"]
    assert harness._generation_budget(tasks) == 128
    assert harness._generation_budget({"d": tasks["d"]}) == 0


def test_metadata_names_only_the_settings_given() -> None:
    got = harness._metadata("m", lengths=[1024], ruler_samples=None, seed=0, corpus=None)
    assert got == {"tokenizer": "m", "lengths": [1024], "seed": 0}


def test_records_name_their_group_and_a_nan_stderr_is_none() -> None:
    raw = {
        "results": {
            "g": {"acc,none": 0.5, "acc_stderr,none": float("nan")},
            "t1": {"acc,none": 0.25, "acc_stderr,none": 0.125},
            "t2": {"acc,none": 0.75, "acc_stderr,none": 0.0},
        },
        "group_subtasks": {"g": ["t1", "t2"]},
        "n-samples": {"t1": {"effective": 4}, "t2": {"effective": 2}},
    }
    records = harness.tidy_records(raw, model="m", rope=None, limit=None,
                                   over_length={"t1": 1, "t2": 2, "g": 3})  # fmt: skip
    got = [(r["task"], r["group"], r["stderr"], r["n_samples"], r["n_over_length"])
           for r in records]  # fmt: skip
    assert got == [("g", None, None, None, 3), ("t1", "g", 0.125, 4, 1), ("t2", "g", 0.0, 2, 2)]
    assert not any(isinstance(r["stderr"], float) and math.isnan(r["stderr"]) for r in records)


def test_skipped_documents_of_a_group_are_its_members_summed() -> None:
    counts = {"t1": 1, "t2": 2, "t3": 4}
    group_map = {"top": ["sub", "t3"], "sub": ["t1", "t2"]}
    assert harness._group_totals(counts, group_map) == {**counts, "sub": 3, "top": 7}


def _report(task: str, fitting: list[int], over: int = 0, shortest: int = 0) -> FitReport:
    return FitReport(task=task, fitting=fitting, over_length=over, longest=0, shortest=shortest)


def test_each_length_counts_the_fitting_documents_of_that_length() -> None:
    docs = [{"length": n} for n in (1024, 1024, 2048, 2048, 2048)]
    tasks = {"vt": SimpleNamespace(eval_docs=docs)}
    records = [
        {"task": "vt", "length": 1024, "n_samples": 4},
        {"task": "vt", "length": 2048, "n_samples": 4},
        {"task": "vt", "length": None, "n_samples": 4},  # the task over every length
    ]
    harness._count_by_length(records, tasks, [_report("vt", [0, 2, 3, 4])])
    assert [r["n_samples"] for r in records] == [1, 3, 4]  # document 1 did not fit


def test_a_task_without_a_fitting_document_names_the_window_that_holds_one_of_each() -> None:
    fits = [_report("a", [], 3, shortest=300), _report("b", [0], 1, shortest=90),
            _report("c", [], 2, shortest=500)]  # fmt: skip
    with pytest.raises(harness.WindowTooSmall) as info:
        harness.check_fits(fits, 256)
    assert info.value.tasks == ["a", "c"] and info.value.needed == 500
    assert "a (300), c (500)" in str(info.value)
    harness.check_fits([_report("a", [0], 0)], 256)  # one document fits: no error
    with pytest.raises(harness.WindowTooSmall):
        harness.check_fits([_report("one", [], 1, shortest=257)], 256)


def test_a_long_suite_runs_at_its_longest_length_plus_the_generation_budget(monkeypatch) -> None:
    from longred_bench.evaluation.config import EvalConfig

    task = FakeTask(output_type="generate_until", generation_kwargs={"max_gen_toks": 64})
    manager = SimpleNamespace(load=lambda names: {"tasks": {"longred_niah": task},
                                                  "group_map": {}, "groups": {}})  # fmt: skip
    seen: dict[str, Any] = {}
    monkeypatch.setattr(harness, "task_manager", lambda metadata, names: manager)
    monkeypatch.setattr(harness, "check_tasks", lambda names, m: list(names))
    model = SimpleNamespace(window=512, lm=lambda **kw: seen.update(kw))
    cfg = EvalConfig(model="tiny-random", suite="niah", lengths=(2048, 1024))
    prepared = harness._prepare(cfg, model, 1)
    assert prepared.window == seen["window"] == 2048 + 64
