"""What :func:`longred_bench.evaluation.harness.run_harness` asks of lm-eval and records back,
with lm-eval's ``simple_evaluate`` and the document fit check replaced by stand-ins.

Pinned here: the documents, seeds, request cache and sample logging lm-eval is asked for; the
fields every record of a run carries (window, backend, decoding, dtype, RoPE, skipped documents
summed over groups, per-length counts, the ``paper_short`` member fields); NIAH's grid records,
per-document scores and logged samples; perplexities under PCD; and the fit report of a suite.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from eval_helpers import HarnessTask, StandInTask, fit, loading_manager

from longred_bench.evaluation import harness
from longred_bench.evaluation.config import EvalConfig


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


@pytest.fixture
def evaluate(monkeypatch: pytest.MonkeyPatch):
    """Run :func:`harness.run_harness` on stand-ins: ``evaluate(cfg, tasks, results, fits,
    group_map=..., **kwargs)`` returns ``(result, simple_evaluate's keyword arguments, model)``."""
    import lm_eval

    def run(cfg, tasks, results, fits, group_map=None, samples=None, **kwargs):
        seen: dict[str, Any] = {}
        manager = loading_manager(tasks, group_map)
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


# --- a run, with lm-eval's evaluation replaced -------------------------------------------------


def _short_run(evaluate, **cfg: Any):
    """A two-task group ``g`` (members ``t1``, ``t2``) evaluated with stand-ins."""
    tasks = {"t1": HarnessTask(num_fewshot=0), "t2": HarnessTask()}
    results = {"results": {"g": {"acc,none": 0.5}, "t1": {"acc,none": 0.25},
                           "t2": {"acc,none": 0.75, "perplexity,none": 3.0,
                                  "perplexity_stderr,none": 0.5}},
               "group_subtasks": {"g": ["t1", "t2"]},
               "n-samples": {"t1": {"effective": 2}, "t2": {"effective": 1}}}  # fmt: skip
    fits = [fit("t1", [0, 1], over=1), fit("t2", [0], over=2)]
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
    tasks = {"t": HarnessTask()}
    results = {"results": {"t": {"acc,none": 1.0}}}
    cfg = EvalConfig(model="m", tasks=("t",), decoding="pcd")
    _, seen, model = evaluate(cfg, tasks, results, [fit("t", [0])],
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
    tasks = {"t": HarnessTask()}
    with pytest.raises(harness.WindowTooSmall):
        evaluate(EvalConfig(model="m", tasks=("t",)), tasks, {}, [fit("t", [], over=2)])


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
    tasks = {"t": HarnessTask()}
    results = {"results": {"t": {"acc,none": 1.0}}}
    cfg = EvalConfig(model="m", tasks=("t",), backend="vllm")
    result, _, model = evaluate(cfg, tasks, results, [fit("t", [0])])
    assert model.built[0].asked["batch_size"] == "auto"
    assert result.records[0]["backend"] == "vllm"
    cfg = EvalConfig(model="m", tasks=("t",), batch_size=4)
    _, _, model = evaluate(cfg, tasks, results, [fit("t", [0])])
    assert model.built[0].asked["batch_size"] == 4


def test_a_niah_run_logs_samples_and_adds_one_record_per_grid_cell(evaluate) -> None:
    """The needle grid is read from lm-eval's samples, which a ``niah`` run always logs; each
    cell record carries the run's fields."""
    tasks = {"longred_niah": HarnessTask(output_type="generate_until",
                                   generation_kwargs={"max_gen_toks": 16})}  # fmt: skip
    results = {"results": {"longred_niah": {"score,none": 50.0}}}
    samples = {"longred_niah": [
        {"doc": {"length": 256, "depth": 0.5}, "score": 100.0},
        {"doc": {"length": 256, "depth": 0.5}, "score": 0.0},
    ]}  # fmt: skip
    cfg = EvalConfig(model="m", suite="niah", lengths=(256,))
    result, seen, _ = evaluate(cfg, tasks, results, [fit("longred_niah", [0, 1])],
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

    tasks = {"t": HarnessTask()}
    results = {"results": {"t": {"acc,none": 0.5}}}
    samples = {"t": [{"doc_id": 0, "filter": "none", "metrics": ["acc"], "acc": 1.0},
                     {"doc_id": 1, "filter": "none", "metrics": ["acc"], "acc": 0.0}]}  # fmt: skip
    stand_in = StandInTask({"acc": mean})
    tasks["t"].aggregation = stand_in.aggregation
    result, seen, _ = evaluate(EvalConfig(model="m", tasks=("t",)), tasks, results,
                               [fit("t", [0, 1])], samples=samples, item_scores=True)  # fmt: skip
    assert seen["log_samples"] is True
    items = [r for r in result.records if r["kind"] == "eval_item"]
    assert [(r["doc_id"], r["value"]) for r in items] == [(0, 1.0), (1, 0.0)]


def test_logged_samples_come_back_per_document_with_the_runs_decoding(evaluate) -> None:
    """``log_samples``: the result holds each task's documents, marked with the decoding."""
    tasks = {"t": HarnessTask()}
    results = {"results": {"t": {"acc,none": 1.0}}}
    samples = {"t": [{"doc_id": 0, "filter": "none", "metrics": ["acc"], "acc": 1.0}]}
    cfg = EvalConfig(model="m", tasks=("t",), log_samples=True, decoding="pcd")
    result, seen, _ = evaluate(cfg, tasks, results, [fit("t", [0])], samples=samples)
    assert seen["log_samples"] is True
    assert [(s["doc_id"], s["decoding"]) for s in result.samples["t"]] == [(0, "pcd")]
    assert "samples" not in result.raw  # lm-eval's results, without the samples


def test_paper_short_records_name_their_member_and_its_headline(evaluate) -> None:
    """Every record under a member (MMLU's subjects too) names the member; the member's own
    records carry its category, source, headline metric and scale."""
    tasks = {"mmlu_anatomy": HarnessTask(), "squadv2": HarnessTask()}
    group_map = {"mmlu": ["mmlu_stem"], "mmlu_stem": ["mmlu_anatomy"]}
    results = {"results": {"mmlu": {"acc,none": 0.5}, "mmlu_anatomy": {"acc,none": 0.5},
                           "squadv2": {"f1,none": 60.0}}}  # fmt: skip
    cfg = EvalConfig(model="m", suite="paper_short", tasks=("mmlu", "squadv2"))
    fits = [fit("mmlu_anatomy", [0]), fit("squadv2", [0])]
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


def test_a_runs_per_length_records_count_the_documents_of_their_length(evaluate) -> None:
    """A RULER task scored at two lengths: each length's record counts its own documents, the
    task's plain score all of them."""
    task = HarnessTask(output_type="generate_until", generation_kwargs={"max_gen_toks": 8})
    task.eval_docs = [{"length": 1024}, {"length": 2048}, {"length": 2048}]
    tasks = {"longred_ruler_vt": task}
    results = {"results": {"longred_ruler_vt": {"score,none": 50.0, "1024,none": 100.0,
                                                "2048,none": 25.0}},
               "n-samples": {"longred_ruler_vt": {"effective": 3}}}  # fmt: skip
    cfg = EvalConfig(model="m", suite="ruler", tasks=("longred_ruler_vt",), lengths=(1024, 2048))
    result, _, _ = evaluate(cfg, tasks, results, [fit("longred_ruler_vt", [0, 1, 2])])
    counts = {r["length"]: r["n_samples"] for r in result.records}
    assert counts == {None: 3, 1024: 1, 2048: 2}


def test_the_fit_report_of_a_suite_checks_the_first_limit_documents(monkeypatch) -> None:
    """``suite_fits`` (``longred-bench models``): the window a config would run at and which of
    the first ``limit`` documents fit it, with the config's seed; nothing is evaluated."""
    from longred_bench.evaluation import lm

    seen: dict[str, Any] = {}
    monkeypatch.setattr(lm, "open_model", lambda cfg: _Model())
    monkeypatch.setattr(
        harness, "task_manager", lambda metadata, names: loading_manager({"t": HarnessTask()})
    )

    def fitting_documents(tasks, lm, *, limit, seed):
        seen.update(limit=limit, seed=seed)
        return [fit("t", [0])]

    monkeypatch.setattr(harness, "fitting_documents", fitting_documents)
    window, fits = harness.suite_fits(EvalConfig(model="m", tasks=("t",), seed=4), limit=6)
    assert (window, [f.task for f in fits], seen) == (512, ["t"], {"limit": 6, "seed": 4})
