"""What :mod:`longred_bench.evaluation.harness` checks and prepares before lm-eval runs, and how
it reads lm-eval's results.

Pinned here: which task index a selection is checked against and the one-line error for unknown
names; how records read lm-eval's results (metric names, stderr, counts, per-length scores);
the window, lengths, metadata and seed a run is prepared with; RULER's first-sample check.
A run itself is pinned in ``test_harness_run_pins.py``.
"""

from __future__ import annotations

import pickle
import sys
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from eval_helpers import HarnessTask, fit, loading_manager

from longred_bench.errors import UserError
from longred_bench.evaluation import harness
from longred_bench.evaluation.config import EvalConfig

# --- the task index and the names it knows ----------------------------------------------------


def test_a_selection_with_one_name_outside_the_registry_gets_lm_evals_tasks_too(
    monkeypatch,
) -> None:
    """One name the repository's index lacks is enough to index lm-eval's own tasks as well."""
    import lm_eval.tasks

    built: list[bool] = []

    class Recording:
        def __init__(self, include_path=None, include_defaults=True, metadata=None):
            built.append(include_defaults)
            self.task_index = {"longred_piqa": SimpleNamespace(cfg={"task": "longred_piqa"})}
            self.all_groups, self.all_tags = [], []

    monkeypatch.setattr(lm_eval.tasks, "TaskManager", Recording)
    harness.task_manager(None, ["longred_piqa", "hellaswag"])
    assert built == [False, True]
    built.clear()
    harness.task_manager(None, ["longred_piqa"])
    assert built == [False]


def test_an_empty_selection_is_refused() -> None:
    """No task at all is one line, not an lm-eval run of nothing."""
    with pytest.raises(UserError, match=r"^no tasks given$"):
        harness.check_tasks([], SimpleNamespace(all_tasks=["longred_piqa"]))


def test_an_unknown_task_names_its_nearest_and_the_repositorys_tasks() -> None:
    """The error lists up to two close names per unknown one, then every ``longred_`` task."""
    known = [
        "longred_piqa",
        "longred_boolq",
        "longred_boolq_x",
        "longred_mmlu",
        "longredx",
        "hellaswag",
        "piqa",
    ]
    manager = SimpleNamespace(all_tasks=known)
    assert harness.check_tasks(("piqa", "hellaswag"), manager) == ["piqa", "hellaswag"]
    with pytest.raises(UserError) as err:
        harness.check_tasks(["longred_boolk"], manager)
    assert str(err.value) == (
        "unknown lm-eval task(s) longred_boolk; nearest: longred_boolq, longred_boolq_x; "
        "tasks of this repo: longred_boolq, longred_boolq_x, longred_mmlu, longred_piqa"
    )
    with pytest.raises(UserError) as err:
        harness.check_tasks(["zzzz"], manager)
    assert str(err.value).startswith("unknown lm-eval task(s) zzzz; tasks of this repo: ")


def test_an_unknown_tasks_line_lists_a_large_group_of_the_repository_as_one_item() -> None:
    """A group of this repository with four or more members (RULER's tasks) is listed by its
    name and ``NAME_* (N)``, not member by member; a group of fewer is listed whole."""
    ruler = [f"longred_ruler_{t}" for t in ("cwe", "fwe", "qa_1", "vt")]
    known = ["longred_ruler", *ruler, "longred_boolq", "longred_boolq_x", "piqa"]
    with pytest.raises(UserError) as err:
        harness.check_tasks(["nothing_like_it"], SimpleNamespace(all_tasks=known))
    assert str(err.value).endswith(
        "tasks of this repo: longred_boolq, longred_boolq_x, longred_ruler, longred_ruler_* (4)"
    )
    with pytest.raises(UserError) as err:  # three members: listed
        harness.check_tasks(
            ["nothing_like_it"], SimpleNamespace(all_tasks=["longred_ruler", *ruler[:3]])
        )
    assert "longred_ruler, longred_ruler_cwe, longred_ruler_fwe" in str(err.value)


# --- records read from lm-eval's results ------------------------------------------------------


def test_records_skip_stderr_keys_unkeyed_entries_and_values_that_are_not_numbers() -> None:
    """A record per ``metric,filter`` value: ``*_stderr`` keys, keys without a filter and
    non-numeric values (lm-eval's ``"N/A"``) make none."""
    raw = {"results": {"t": {"alias": "t", "acc,none": 0.5, "acc_stderr,none": 0.1,
                             "bleu,none": "N/A", "samples": 3}}}  # fmt: skip
    records = harness.tidy_records(raw, model="m", rope="yarn:2", limit=7)
    assert [(r["metric"], r["value"], r["stderr"]) for r in records] == [("acc", 0.5, 0.1)]
    assert (records[0]["rope"], records[0]["limit"], records[0]["model"]) == ("yarn:2", 7, "m")


def test_a_records_metric_keeps_a_filter_other_than_none() -> None:
    """``acc,none`` is ``acc``; ``exact_match,strict-match`` keeps its filter; a per-length key
    of a filter keeps it on ``score``."""
    raw = {"results": {"t": {"acc,none": 1.0, "exact_match,strict-match": 0.5,
                             "4096,flex": 0.25}}}  # fmt: skip
    got = {(r["metric"], r["length"]) for r in harness.tidy_records(raw, model="m", rope=None,
                                                                     limit=None)}  # fmt: skip
    assert got == {("acc", None), ("exact_match,strict-match", None), ("score,flex", 4096)}


def test_records_count_the_documents_scored_and_the_tasks_shots() -> None:
    """``n_samples`` is lm-eval's ``effective`` count (the documents scored, not the split's
    size) and ``num_fewshot`` its ``n-shot``; records come sorted by task."""
    raw = {"results": {"b": {"acc,none": 0.5}, "a": {"acc,none": 0.25}},
           "n-samples": {"a": {"original": 100, "effective": 3}, "b": {"original": 50,
                                                                      "effective": 2}},
           "n-shot": {"a": 5, "b": 0}}  # fmt: skip
    records = harness.tidy_records(raw, model="m", rope=None, limit=3)
    assert [(r["task"], r["n_samples"], r["num_fewshot"]) for r in records] == [
        ("a", 3, 5), ("b", 2, 0)]  # fmt: skip


# --- what a run is prepared with ----------------------------------------------------------------


def _prepared(monkeypatch, cfg: EvalConfig, tasks: dict[str, HarnessTask], window: int = 700):
    """``harness._prepare(cfg)`` on stand-ins; returns (prepared, metadata, RULER check length)."""
    seen: dict[str, Any] = {}

    def manager(metadata, names):
        seen["metadata"] = metadata
        return loading_manager(tasks)

    monkeypatch.setattr(harness, "task_manager", manager)
    monkeypatch.setattr(harness, "_check_ruler_fits",
                        lambda cfg, names, length: seen.update(ruler_length=length))  # fmt: skip
    model = SimpleNamespace(window=window, lm=lambda **kw: seen.update(lm=kw) or "lm")
    prepared = harness._prepare(cfg, model, 1)
    return prepared, seen


def test_a_long_suite_without_lengths_runs_at_the_windows_power_of_two(monkeypatch) -> None:
    """No ``--lengths``: the largest power of two within the model's window (700: 512)."""
    tasks = {"longred_niah": HarnessTask(output_type="generate_until",
                                   generation_kwargs={"max_gen_toks": 32})}  # fmt: skip
    prepared, seen = _prepared(monkeypatch, EvalConfig(model="m", suite="niah"), tasks)
    assert seen["metadata"]["lengths"] == [512]
    assert prepared.window == 512 + 32


def test_a_ruler_run_passes_its_settings_to_the_task_loaders(monkeypatch) -> None:
    """RULER's metadata: the lengths sorted, samples per length as ``ruler_samples``, the
    corpus, phrasing and seed; the first-sample check runs at the shortest length."""
    tasks = {"longred_ruler_vt": HarnessTask(output_type="generate_until",
                                       generation_kwargs={"max_gen_toks": 8})}  # fmt: skip
    cfg = EvalConfig(model="m", suite="ruler", tasks=("longred_ruler_vt",),
                     lengths=(2048, 1024), samples=3, seed=5, corpus="austen",
                     phrasing="standard")  # fmt: skip
    prepared, seen = _prepared(monkeypatch, cfg, tasks)
    assert seen["metadata"] == {"tokenizer": "m", "lengths": [1024, 2048], "ruler_samples": 3,
                                "corpus": "austen", "seed": 5, "phrasing": "standard"}  # fmt: skip
    assert seen["ruler_length"] == 1024
    assert prepared.window == seen["lm"]["window"] == 2048 + 8
    assert seen["lm"]["seed"] == 5 and tasks["longred_ruler_vt"].seed == 5


def test_a_niah_run_passes_its_samples_and_depths(monkeypatch) -> None:
    """NIAH's metadata: samples per cell as ``niah_samples`` and its depths."""
    tasks = {"longred_niah": HarnessTask(output_type="generate_until",
                                   generation_kwargs={"max_gen_toks": 8})}  # fmt: skip
    cfg = EvalConfig(model="m", suite="niah", lengths=(1024,), samples=2, depths=(10, 90))
    _, seen = _prepared(monkeypatch, cfg, tasks)
    assert seen["metadata"] == {"tokenizer": "m", "lengths": [1024], "niah_samples": 2,
                                "depths": [10, 90], "seed": 0}  # fmt: skip


def test_a_short_run_evaluates_at_the_models_window_or_the_one_asked(monkeypatch) -> None:
    """The short suites run at the model's window; ``--max-length`` overrides any suite's."""
    tasks = {"t": HarnessTask()}
    prepared, seen = _prepared(monkeypatch, EvalConfig(model="m", tasks=("t",)), tasks)
    assert prepared.window == 700 and seen["metadata"] == {"tokenizer": "m", "seed": 0}
    cfg = EvalConfig(model="m", tasks=("t",), max_length=300)
    assert _prepared(monkeypatch, cfg, tasks)[0].window == 300
    long = {"longred_niah": HarnessTask(output_type="generate_until")}
    cfg = EvalConfig(model="m", suite="niah", lengths=(1024,), max_length=900)
    assert _prepared(monkeypatch, cfg, long)[0].window == 900


def test_a_suite_without_tasks_runs_its_own_names(monkeypatch) -> None:
    """No ``--tasks``: the suite's groups are what is checked and loaded."""
    from longred_bench.evaluation.config import SUITES

    tasks = {name: HarnessTask() for name in SUITES["short_tiny"]}
    prepared, _ = _prepared(monkeypatch, EvalConfig(model="m", suite="short_tiny"), tasks)
    assert prepared.names == list(SUITES["short_tiny"])


# --- RULER's first-sample check -----------------------------------------------------------------


def test_ruler_samples_that_do_not_fit_name_the_length_that_holds_them(monkeypatch) -> None:
    """The check reads the run's corpus and phrasing (Brown and the standard phrasing when not
    given) and turns a misfit into :class:`harness.RulerTooShort` with the RULER length that
    holds the largest first sample; the error survives a trip to a worker process."""
    from longred_bench.taskdata.ruler import registry
    from longred_bench.taskdata.ruler.sizing import Misfit

    seen: dict[str, Any] = {}

    def check(tasks, tokenizer, length, seed, *, corpus, phrasing):
        seen.update(tasks=tasks, length=length, seed=seed, corpus=corpus, phrasing=phrasing)
        raise Misfit("longred_ruler_vt does not fit", needed=1500)

    # the tokenizer is never read: a stand-in module spares importing transformers
    loading = ModuleType("longred_bench.models.loading")
    loading.load_tokenizer = lambda spec: "tokenizer"
    monkeypatch.setitem(sys.modules, "longred_bench.models.loading", loading)
    monkeypatch.setattr(registry, "check_fits_all", check)
    cfg = EvalConfig(model="m", suite="ruler", lengths=(1024,), seed=2)
    with pytest.raises(harness.RulerTooShort) as info:
        harness._check_ruler_fits(cfg, ["longred_ruler_vt"], 1024)
    assert seen == {"tasks": ["vt"], "length": 1024, "seed": 2, "corpus": "brown",
                    "phrasing": "standard"}  # fmt: skip
    assert (info.value.length, info.value.fits) == (1024, 2048)
    assert str(info.value) == "longred_ruler_vt does not fit"
    again = pickle.loads(pickle.dumps(info.value))
    assert (type(again), again.length, again.fits, str(again)) == (
        harness.RulerTooShort, 1024, 2048, "longred_ruler_vt does not fit")  # fmt: skip
    cfg = EvalConfig(model="m", suite="ruler", lengths=(1024,), corpus="austen",
                     phrasing="standard")  # fmt: skip
    with pytest.raises(harness.RulerTooShort):
        harness._check_ruler_fits(cfg, ["longred_ruler_vt"], 1024)
    assert seen["corpus"] == "austen"


def test_per_length_counts_leave_tasks_whose_documents_have_no_length() -> None:
    """Only a task whose documents carry a ``length`` has its records recounted per length."""
    tasks = {"plain": SimpleNamespace(eval_docs=[{"text": "a"}, {"text": "b"}]),
             "empty": SimpleNamespace(eval_docs=[])}  # fmt: skip
    records = [{"task": "plain", "length": 1024, "n_samples": 2},
               {"task": "empty", "length": 1024, "n_samples": 0}]  # fmt: skip
    harness._count_by_length(records, tasks, [fit("plain", [0, 1]), fit("empty", []),
                                              fit("gone", [0])])  # fmt: skip
    assert [r["n_samples"] for r in records] == [2, 0]


def test_names_asked_for_are_checked_on_an_index_built_for_them(monkeypatch) -> None:
    """``check_task_names`` builds the index from the names given (this repository's alone when
    it holds them all); ``None``, a suite's own names, is not checked."""
    asked: list[Any] = []

    def manager(metadata=None, names=None):
        asked.append(names)
        return SimpleNamespace(all_tasks=["longred_piqa"])

    monkeypatch.setattr(harness, "task_manager", manager)
    harness.check_task_names(("longred_piqa",))
    assert asked == [["longred_piqa"]]
    harness.check_task_names(None)
    assert asked == [["longred_piqa"]]
    with pytest.raises(UserError, match=r"^unknown lm-eval task\(s\) nope"):
        harness.check_task_names(["nope"])
