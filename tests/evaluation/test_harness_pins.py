"""What :mod:`longred_bench.evaluation.harness` hands lm-eval and what it records back.

Pinned here: which task index a selection is checked against and the one-line error for unknown
names; how records read lm-eval's results (metric names, stderr, counts, per-length scores);
the window, lengths and few-shot counts a run is prepared with; and, with lm-eval's
``simple_evaluate`` replaced by a stand-in, what :func:`harness.run_harness` asks of it and the
fields every record of the run carries (window, backend, decoding, dtype, RoPE, skipped
documents summed over groups, the ``paper_short`` member fields, perplexities under PCD).
"""

from __future__ import annotations

import pickle
import sys
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
from eval_helpers import StandInTask

from longred_bench.errors import UserError
from longred_bench.evaluation import harness
from longred_bench.evaluation.config import EvalConfig
from longred_bench.evaluation.fit_check import FitReport


class _Task:
    """The config surface of an lm-eval task that the harness reads and sets."""

    def __init__(self, **config: Any) -> None:
        self.config = {"output_type": "loglikelihood", **config}
        self.seed: int | None = None
        self.eval_docs: list[dict[str, Any]] = []

    def get_config(self, key: str) -> Any:
        return self.config.get(key)

    def set_config(self, key: str, value: Any, update: bool = False) -> None:
        if update and isinstance(self.config.get(key), dict):
            self.config[key] = {**self.config[key], **value}
        else:
            self.config[key] = value

    def set_fewshot_seed(self, seed: int) -> None:
        self.seed = seed


class _Lm:
    """The lm-eval model a stand-in :class:`_Model` builds."""

    def __init__(self, **asked: Any) -> None:
        self.asked = asked
        config = SimpleNamespace(rope_parameters={"rope_type": "linear", "factor": 2.0},
                                 max_position_embeddings=1024)  # fmt: skip
        self.model = SimpleNamespace(config=config)
        self.kept: list[tuple] = []
        self.pcd = SimpleNamespace(
            resolved=lambda: {"alpha": 0.5},
            keep_windows=lambda path, run: self.kept.append((path, run)),
        )


class _Model:
    """An :class:`~longred_bench.evaluation.lm.EvalModel` without weights."""

    window, dtype = 512, "float32"

    def __init__(self) -> None:
        self.built: list[_Lm] = []
        self.closed = 0

    def lm(self, *, window: int, batch_size: int | str, seed: int) -> _Lm:
        self.built.append(_Lm(window=window, batch_size=batch_size, seed=seed))
        return self.built[-1]

    def ran_with(self, lm: _Lm) -> Any:
        return lm.model.config

    def close(self, lm: _Lm) -> None:
        self.closed += 1


def _manager(tasks: dict[str, _Task], group_map: dict[str, list[str]] | None = None) -> Any:
    group_map = group_map or {}
    return SimpleNamespace(
        all_tasks=[*tasks, *group_map],
        load=lambda names: {"tasks": tasks, "groups": {g: g for g in group_map},
                            "group_map": group_map},
    )  # fmt: skip


def _fit(task: str, fitting: list[int], over: int = 0) -> FitReport:
    return FitReport(task=task, fitting=fitting, over_length=over, longest=0, shortest=1)


@pytest.fixture
def evaluate(monkeypatch: pytest.MonkeyPatch):
    """Run :func:`harness.run_harness` on stand-ins: ``evaluate(cfg, tasks, results, fits,
    group_map=..., **kwargs)`` returns ``(result, simple_evaluate's keyword arguments, model)``."""
    import lm_eval

    def run(cfg, tasks, results, fits, group_map=None, samples=None, **kwargs):
        seen: dict[str, Any] = {}
        manager = _manager(tasks, group_map)
        monkeypatch.setattr(harness, "task_manager", lambda metadata, names: manager)
        monkeypatch.setattr(harness, "_check_ruler_fits", lambda cfg, names, length: None)

        def fitting_documents(tasks, lm, *, limit, seed):
            seen.update(limit=limit)
            return fits

        monkeypatch.setattr(harness, "fitting_documents", fitting_documents)

        def simple_evaluate(**kw: Any) -> dict[str, Any]:
            seen.update(kw)
            return {**results, "samples": samples or {}}

        monkeypatch.setattr(lm_eval, "simple_evaluate", simple_evaluate)
        model = _Model()
        result = harness.run_harness(cfg, model, progress=False, **kwargs)
        return result, seen, model

    return run


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


# --- a run, with lm-eval's evaluation replaced -------------------------------------------------


def _short_run(evaluate, **cfg: Any):
    """A two-task group ``g`` (members ``t1``, ``t2``) evaluated with stand-ins."""
    tasks = {"t1": _Task(num_fewshot=0), "t2": _Task()}
    results = {"results": {"g": {"acc,none": 0.5}, "t1": {"acc,none": 0.25},
                           "t2": {"acc,none": 0.75, "perplexity,none": 3.0,
                                  "perplexity_stderr,none": 0.5}},
               "group_subtasks": {"g": ["t1", "t2"]},
               "n-samples": {"t1": {"effective": 2}, "t2": {"effective": 1}}}  # fmt: skip
    fits = [_fit("t1", [0, 1], over=1), _fit("t2", [0], over=2)]
    config = EvalConfig(model="m", tasks=("g",), **cfg)
    return evaluate(config, tasks, results, fits, group_map={"g": ["t1", "t2"]})


def test_a_run_asks_lm_eval_for_the_fitting_documents_with_its_seed(evaluate) -> None:
    """lm-eval gets the group asked for, each task's fitting documents, the run's seed for
    every generator and no request cache unless one is given."""
    _, seen, model = _short_run(evaluate, seed=3, limit=4)
    assert seen["tasks"] == ["g"] and seen["samples"] == {"t1": [0, 1], "t2": [0]}
    assert seen["limit"] == 4  # the documents checked for fit: the run's first --limit
    assert {seen[k] for k in ("random_seed", "numpy_random_seed", "torch_random_seed",
                              "fewshot_random_seed")} == {3}  # fmt: skip
    assert seen["use_cache"] is None and seen["log_samples"] is False
    assert seen["num_fewshot"] is None and seen["confirm_run_unsafe_code"] is False
    assert model.built[0].asked == {"window": 512, "batch_size": 1, "seed": 3}
    assert model.closed == 1


def test_a_run_with_a_request_cache_hands_its_folder_to_lm_eval(evaluate, tmp_path) -> None:
    """The request cache is lm-eval's ``use_cache`` path, a damaged file of it set aside first;
    a PCD run keeps its local windows beside the responses, keyed by the run."""
    from longred_bench.results import config_hash

    damaged = tmp_path / "requests_rank0.db"
    damaged.write_bytes(b"not a database")
    tasks = {"t": _Task()}
    results = {"results": {"t": {"acc,none": 1.0}}}
    cfg = EvalConfig(model="m", tasks=("t",), decoding="pcd")
    _, seen, model = evaluate(cfg, tasks, results, [_fit("t", [0])],
                              request_cache=tmp_path / "requests")  # fmt: skip
    assert seen["use_cache"] == str(tmp_path / "requests")
    assert not damaged.exists() and (tmp_path / "requests_rank0.db.damaged").exists()
    lm = model.built[0]
    assert lm.kept == [(tmp_path / "requests" / harness.PCD_WINDOWS,
                        config_hash(cfg.run_settings()))]  # fmt: skip


def test_every_record_names_the_window_backend_decoding_dtype_and_rope(evaluate) -> None:
    """The fields of the evaluated model every record carries, read from the model it ran."""
    result, _, _ = _short_run(evaluate, max_length=300)
    for r in result.records:
        assert r["max_length"] == 300
        assert (r["backend"], r["decoding"], r["dtype"]) == ("hf", "greedy", "float32")
        assert r["rope_parameters"] == {"rope_type": "linear", "factor": 2.0}
        assert r["max_position_embeddings"] == 1024
        assert "pcd" not in r


def test_a_groups_skipped_documents_are_its_members_summed(evaluate) -> None:
    """``n_over_length`` of a group record is the sum of its members'."""
    result, _, _ = _short_run(evaluate)
    over = {r["task"]: r["n_over_length"] for r in result.records}
    assert over == {"g": 3, "t1": 1, "t2": 2}
    assert {r["task"]: r["group"] for r in result.records} == {"g": None, "t1": "g", "t2": "g"}


def test_a_window_without_a_fitting_document_stops_the_run_before_lm_eval(evaluate) -> None:
    """No document of a task fits: :class:`harness.WindowTooSmall`, and lm-eval never runs."""
    tasks = {"t": _Task()}
    with pytest.raises(harness.WindowTooSmall):
        evaluate(EvalConfig(model="m", tasks=("t",)), tasks, {}, [_fit("t", [], over=2)])


def test_under_pcd_perplexities_lose_their_value_and_records_carry_its_settings(evaluate) -> None:
    """A PCD run's perplexity-like metrics are ``None`` with ``not_defined``; accuracy stays;
    every record carries the resolved PCD settings."""
    result, _, _ = _short_run(evaluate, decoding="pcd")
    by_metric = {(r["task"], r["metric"]): r for r in result.records}
    ppl = by_metric[("t2", "perplexity")]
    assert (ppl["value"], ppl["stderr"]) == (None, None)
    assert ppl["not_defined"] == "not a probability under PCD"
    assert by_metric[("t2", "acc")]["value"] == 0.75
    assert "not_defined" not in by_metric[("t2", "acc")]
    assert all(r["pcd"] == {"alpha": 0.5} for r in result.records)


@pytest.mark.parametrize("metric", ["perplexity", "bits_per_byte", "byte_perplexity",
                                    "word_perplexity", "bits_per_byte,none2"])  # fmt: skip
def test_every_perplexity_like_metric_is_undefined_under_pcd(metric: str) -> None:
    """Each of lm-eval's perplexity-like metrics, with or without a filter."""
    records = [{"metric": metric, "value": 1.0, "stderr": 0.1}, {"metric": "acc", "value": 1.0}]
    harness._undefined_under_pcd(records)
    assert records[0]["value"] is None and records[0]["stderr"] is None
    assert records[1] == {"metric": "acc", "value": 1.0}


def test_a_vllm_run_lets_the_engine_size_its_batches(evaluate) -> None:
    """Without ``--batch-size``: one document a batch with ``hf``, ``"auto"`` with vLLM."""
    tasks = {"t": _Task()}
    results = {"results": {"t": {"acc,none": 1.0}}}
    cfg = EvalConfig(model="m", tasks=("t",), backend="vllm")
    result, _, model = evaluate(cfg, tasks, results, [_fit("t", [0])])
    assert model.built[0].asked["batch_size"] == "auto"
    assert result.records[0]["backend"] == "vllm"
    cfg = EvalConfig(model="m", tasks=("t",), batch_size=4)
    _, _, model = evaluate(cfg, tasks, results, [_fit("t", [0])])
    assert model.built[0].asked["batch_size"] == 4


def test_a_niah_run_logs_samples_and_adds_one_record_per_grid_cell(evaluate) -> None:
    """The needle grid is read from lm-eval's samples, which a ``niah`` run always logs; each
    cell record carries the run's fields."""
    tasks = {"longred_niah": _Task(output_type="generate_until",
                                   generation_kwargs={"max_gen_toks": 16})}  # fmt: skip
    results = {"results": {"longred_niah": {"score,none": 50.0}}}
    samples = {"longred_niah": [
        {"doc": {"length": 256, "depth": 0.5}, "score": 100.0},
        {"doc": {"length": 256, "depth": 0.5}, "score": 0.0},
    ]}  # fmt: skip
    cfg = EvalConfig(model="m", suite="niah", lengths=(256,))
    result, seen, _ = evaluate(cfg, tasks, results, [_fit("longred_niah", [0, 1])],
                               samples=samples)  # fmt: skip
    assert seen["log_samples"] is True
    cells = [r for r in result.records if r["kind"] == "niah"]
    assert len(cells) == 1
    cell = cells[0]
    assert (cell["length"], cell["depth"], cell["score"], cell["n"]) == (256, 0.5, 50.0, 2)
    assert (cell["suite"], cell["model"], cell["max_length"]) == ("niah", "m", 256 + 16)


def test_item_scores_log_samples_and_add_per_document_records(evaluate) -> None:
    """``item_scores`` asks lm-eval for its samples and adds ``eval_item`` records."""

    def mean(values):
        return sum(values) / len(values)

    tasks = {"t": _Task()}
    results = {"results": {"t": {"acc,none": 0.5}}}
    samples = {"t": [{"doc_id": 0, "filter": "none", "metrics": ["acc"], "acc": 1.0},
                     {"doc_id": 1, "filter": "none", "metrics": ["acc"], "acc": 0.0}]}  # fmt: skip
    stand_in = StandInTask({"acc": mean})
    tasks["t"].aggregation = stand_in.aggregation
    result, seen, _ = evaluate(EvalConfig(model="m", tasks=("t",)), tasks, results,
                               [_fit("t", [0, 1])], samples=samples, item_scores=True)  # fmt: skip
    assert seen["log_samples"] is True
    items = [r for r in result.records if r["kind"] == "eval_item"]
    assert [(r["doc_id"], r["value"]) for r in items] == [(0, 1.0), (1, 0.0)]


def test_logged_samples_come_back_per_document_with_the_runs_decoding(evaluate) -> None:
    """``log_samples``: the result holds each task's documents, marked with the decoding."""
    tasks = {"t": _Task()}
    results = {"results": {"t": {"acc,none": 1.0}}}
    samples = {"t": [{"doc_id": 0, "filter": "none", "metrics": ["acc"], "acc": 1.0}]}
    cfg = EvalConfig(model="m", tasks=("t",), log_samples=True, decoding="pcd")
    result, seen, _ = evaluate(cfg, tasks, results, [_fit("t", [0])], samples=samples)
    assert seen["log_samples"] is True
    assert [(s["doc_id"], s["decoding"]) for s in result.samples["t"]] == [(0, "pcd")]
    assert "samples" not in result.raw  # lm-eval's results, without the samples


def test_paper_short_records_name_their_member_and_its_headline(evaluate) -> None:
    """Every record under a member (MMLU's subjects too) names the member; the member's own
    records carry its category, source, headline metric and scale."""
    tasks = {"mmlu_anatomy": _Task(), "squadv2": _Task()}
    group_map = {"mmlu": ["mmlu_stem"], "mmlu_stem": ["mmlu_anatomy"]}
    results = {"results": {"mmlu": {"acc,none": 0.5}, "mmlu_anatomy": {"acc,none": 0.5},
                           "squadv2": {"f1,none": 60.0}}}  # fmt: skip
    cfg = EvalConfig(model="m", suite="paper_short", tasks=("mmlu", "squadv2"))
    fits = [_fit("mmlu_anatomy", [0]), _fit("squadv2", [0])]
    result, _, _ = evaluate(cfg, tasks, results, fits, group_map=group_map)
    by_task = {r["task"]: r for r in result.records}
    assert by_task["mmlu_anatomy"]["member"] == "mmlu"
    assert "headline" not in by_task["mmlu_anatomy"]
    squad = by_task["squadv2"]
    assert (squad["member"], squad["category"], squad["source"]) == ("squadv2", "RC", "paper")
    assert (squad["headline"], squad["headline_scale"]) == ("f1", 0.01)
    assert (squad["benchmark"], squad["ran_task"], squad["ran_via"]) == ("squadv2", "squadv2",
                                                                         "hub")  # fmt: skip
    assert by_task["mmlu"]["headline"] == "acc" and by_task["mmlu"]["category"] == "General"


# --- what a run is prepared with ----------------------------------------------------------------


def _prepared(monkeypatch, cfg: EvalConfig, tasks: dict[str, _Task], window: int = 700):
    """``harness._prepare(cfg)`` on stand-ins; returns (prepared, metadata, RULER check length)."""
    seen: dict[str, Any] = {}

    def manager(metadata, names):
        seen["metadata"] = metadata
        return _manager(tasks)

    monkeypatch.setattr(harness, "task_manager", manager)
    monkeypatch.setattr(harness, "_check_ruler_fits",
                        lambda cfg, names, length: seen.update(ruler_length=length))  # fmt: skip
    model = SimpleNamespace(window=window, lm=lambda **kw: seen.update(lm=kw) or "lm")
    prepared = harness._prepare(cfg, model, 1)
    return prepared, seen


def test_a_long_suite_without_lengths_runs_at_the_windows_power_of_two(monkeypatch) -> None:
    """No ``--lengths``: the largest power of two within the model's window (700: 512)."""
    tasks = {"longred_niah": _Task(output_type="generate_until",
                                   generation_kwargs={"max_gen_toks": 32})}  # fmt: skip
    prepared, seen = _prepared(monkeypatch, EvalConfig(model="m", suite="niah"), tasks)
    assert seen["metadata"]["lengths"] == [512]
    assert prepared.window == 512 + 32


def test_a_ruler_run_passes_its_settings_to_the_task_loaders(monkeypatch) -> None:
    """RULER's metadata: the lengths sorted, samples per length as ``ruler_samples``, the
    corpus, phrasing and seed; the first-sample check runs at the shortest length."""
    tasks = {"longred_ruler_vt": _Task(output_type="generate_until",
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
    tasks = {"longred_niah": _Task(output_type="generate_until",
                                   generation_kwargs={"max_gen_toks": 8})}  # fmt: skip
    cfg = EvalConfig(model="m", suite="niah", lengths=(1024,), samples=2, depths=(10, 90))
    _, seen = _prepared(monkeypatch, cfg, tasks)
    assert seen["metadata"] == {"tokenizer": "m", "lengths": [1024], "niah_samples": 2,
                                "depths": [10, 90], "seed": 0}  # fmt: skip


def test_a_short_run_evaluates_at_the_models_window_or_the_one_asked(monkeypatch) -> None:
    """The short suites run at the model's window; ``--max-length`` overrides any suite's."""
    tasks = {"t": _Task()}
    prepared, seen = _prepared(monkeypatch, EvalConfig(model="m", tasks=("t",)), tasks)
    assert prepared.window == 700 and seen["metadata"] == {"tokenizer": "m", "seed": 0}
    cfg = EvalConfig(model="m", tasks=("t",), max_length=300)
    assert _prepared(monkeypatch, cfg, tasks)[0].window == 300
    long = {"longred_niah": _Task(output_type="generate_until")}
    cfg = EvalConfig(model="m", suite="niah", lengths=(1024,), max_length=900)
    assert _prepared(monkeypatch, cfg, long)[0].window == 900


def test_a_suite_without_tasks_runs_its_own_names(monkeypatch) -> None:
    """No ``--tasks``: the suite's groups are what is checked and loaded."""
    from longred_bench.evaluation.config import SUITES

    tasks = {name: _Task() for name in SUITES["short_tiny"]}
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
    harness._count_by_length(records, tasks, [_fit("plain", [0, 1]), _fit("empty", []),
                                              _fit("gone", [0])])  # fmt: skip
    assert [r["n_samples"] for r in records] == [2, 0]


def test_a_runs_per_length_records_count_the_documents_of_their_length(evaluate) -> None:
    """A RULER task scored at two lengths: each length's record counts its own documents, the
    task's plain score all of them."""
    task = _Task(output_type="generate_until", generation_kwargs={"max_gen_toks": 8})
    task.eval_docs = [{"length": 1024}, {"length": 2048}, {"length": 2048}]
    tasks = {"longred_ruler_vt": task}
    results = {"results": {"longred_ruler_vt": {"score,none": 50.0, "1024,none": 100.0,
                                                "2048,none": 25.0}},
               "n-samples": {"longred_ruler_vt": {"effective": 3}}}  # fmt: skip
    cfg = EvalConfig(model="m", suite="ruler", tasks=("longred_ruler_vt",), lengths=(1024, 2048))
    result, _, _ = evaluate(cfg, tasks, results, [_fit("longred_ruler_vt", [0, 1, 2])])
    counts = {r["length"]: r["n_samples"] for r in result.records}
    assert counts == {None: 3, 1024: 1, 2048: 2}


def test_the_fit_report_of_a_suite_checks_the_first_limit_documents(monkeypatch) -> None:
    """``suite_fits`` (``longred-bench models``): the window a config would run at and which of
    the first ``limit`` documents fit it, with the config's seed; nothing is evaluated."""
    from longred_bench.evaluation import lm

    seen: dict[str, Any] = {}
    monkeypatch.setattr(lm, "open_model", lambda cfg: _Model())
    monkeypatch.setattr(harness, "task_manager", lambda metadata, names: _manager({"t": _Task()}))

    def fitting_documents(tasks, lm, *, limit, seed):
        seen.update(limit=limit, seed=seed)
        return [_fit("t", [0])]

    monkeypatch.setattr(harness, "fitting_documents", fitting_documents)
    window, fits = harness.suite_fits(EvalConfig(model="m", tasks=("t",), seed=4), limit=6)
    assert (window, [f.task for f in fits], seen) == (512, ["t"], {"limit": 6, "seed": 4})


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
