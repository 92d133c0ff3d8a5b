"""``longred_bench.metrics.retention`` (unit) and ``longred-bench eval`` / ``run_eval``.

The evaluation tests read the ``benchmarks`` cache (fetched once into the default cache by the
``benchmarks_cache`` fixture, as in ``test_tasks.py``), so they are marked ``network``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from longred_bench import cli
from longred_bench.errors import UserError
from longred_bench.metrics.retention import category_means, longred_avg, retention, short_average


@pytest.fixture(scope="module")
def benchmarks_cache() -> None:
    """Fill the default cache with the benchmark data (a no-op when already there)."""
    from longred_bench.data.fetch import fetch

    fetch(["benchmarks"])


# --- retention (unit) ------------------------------------------------------------------------


def test_retention_ratios() -> None:
    out = retention({"arc": 0.5, "boolq": 0.8}, {"arc": 0.25, "boolq": 0.8})
    assert out == {"arc": 0.5, "boolq": 1.0}


def test_retention_zero_original_is_nan() -> None:
    out = retention({"a": 0.0, "b": 0.0}, {"a": 0.3, "b": 0.0})
    assert math.isnan(out["a"]) and math.isnan(out["b"])


def test_retention_missing_key() -> None:
    with pytest.raises(UserError, match="missing from extended: boolq"):
        retention({"arc": 0.5, "boolq": 0.8}, {"arc": 0.4})
    with pytest.raises(UserError, match="missing from original: piqa"):
        retention({"arc": 0.5}, {"arc": 0.4, "piqa": 0.7})


def test_category_means_and_short_average() -> None:
    scores = {"mmlu": 0.4, "triviaqa": 0.2, "piqa": 0.7, "arc": 0.5, "boolq": 0.6}
    cats = {"general": ["mmlu", "triviaqa"], "common": ["piqa", "arc"], "rc": ["squad"]}
    means = category_means(scores, cats)
    assert means == pytest.approx({"general": 0.3, "common": 0.6})  # rc: absent, left out
    assert short_average(means) == pytest.approx(0.45)
    with pytest.raises(UserError, match="missing scores for: squad"):
        category_means(scores, {"rc": ["boolq", "squad"]})
    with pytest.raises(UserError, match="no category scores"):
        short_average({})


def test_longred_avg_table3_golden() -> None:
    # LongReD (Dong et al., 2025, arXiv:2502.07365), Table 3, LongReD-C at 32K with ABF:
    # Short Avg 54.85, RULER Avg 84.98, published Avg 59.87 = (5 * 54.85 + 84.98) / 6.
    # (274.25 + 84.98) / 6 = 359.23 / 6 = 59.8717 (not 59.875), which rounds to the published 59.87.
    assert longred_avg(54.85, 84.98) == pytest.approx(359.23 / 6)
    assert round(longred_avg(54.85, 84.98), 2) == 59.87
    assert longred_avg(60.0, 60.0) == pytest.approx(60.0)


def test_tidy_records_groups_and_filters() -> None:
    from longred_bench.evaluation.harness import tidy_records

    raw = {
        "results": {
            "longred_rc": {"alias": "rc", "acc,none": 0.5, "acc_stderr,none": "N/A"},
            "longred_squad": {
                "exact_match,remove_whitespace": 0.25,
                "exact_match_stderr,remove_whitespace": 0.1,
            },
        },
        "n-samples": {"longred_squad": {"original": 1000, "effective": 4}},
        "n-shot": {"longred_rc": 0, "longred_squad": 0},
    }
    records = tidy_records(raw, model="m", rope=None, limit=4, extra={"max_length": 8})
    assert [(r["task"], r["metric"], r["value"], r["stderr"], r["n_samples"]) for r in records] == [
        ("longred_rc", "acc", 0.5, None, None),
        ("longred_squad", "exact_match,remove_whitespace", 0.25, 0.1, 4),
    ]
    assert all(r["kind"] == "eval" and r["max_length"] == 8 for r in records)
    assert all(r["length"] is None and r["n_over_length"] == 0 for r in records)


def test_tidy_records_per_length_metrics_and_over_length() -> None:
    from longred_bench.evaluation.harness import tidy_records

    raw = {
        "results": {
            "longred_ruler_vt": {"score,none": 50.0, "1024,none": 100.0, "2048,none": 0.0},
        },
        "n-samples": {"longred_ruler_vt": {"original": 4, "effective": 4}},
    }
    records = tidy_records(
        raw, model="m", rope=None, limit=None, suite="ruler", over_length={"longred_ruler_vt": 3}
    )
    got = sorted((r["length"] or 0, r["metric"], r["value"]) for r in records)
    assert got == [(0, "score", 50.0), (1024, "score", 100.0), (2048, "score", 0.0)]
    assert {(r["suite"], r["n_over_length"]) for r in records} == {("ruler", 3)}


# --- eval (integration) ----------------------------------------------------------------------


@pytest.mark.integration
def test_eval_unknown_task_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from longred_bench.evaluation import lm

    def no_load(cfg: object) -> None:
        raise AssertionError("the model was loaded before the tasks were checked")

    monkeypatch.setattr(lm, "open_model", no_load)
    argv = ["eval", "--model", "tiny-random", "--tasks", "no_such_task", "--out", str(tmp_path)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: unknown lm-eval task(s) no_such_task") and "\n" not in err
    assert not (tmp_path / "eval.jsonl").exists()


def test_eval_suite_choices() -> None:
    with pytest.raises(SystemExit) as exc:
        cli.build_parser().parse_args(["eval", "--model", "m", "--suite", "long", "--out", "o"])
    assert exc.value.code == 2


@pytest.mark.integration
@pytest.mark.network
def test_eval_cli_tiny(tmp_path: Path, benchmarks_cache: None) -> None:
    from longred_bench.results import read_records

    out = tmp_path / "run"
    argv = ["eval", "--model", "tiny-random", "--rope", "pi:factor=2", "--suite", "short"]
    argv += ["--tasks", "longred_arc_easy", "longred_boolq", "--limit", "4", "--out", str(out)]
    assert cli.main([*argv, "--quiet"]) == 0
    records = read_records(out / "eval.jsonl")
    by_task = {(r["task"], r["metric"]): r for r in records}
    assert {"longred_arc_easy", "longred_boolq"} <= {r["task"] for r in records}
    for key in [
        ("longred_arc_easy", "acc"),
        ("longred_arc_easy", "acc_norm"),
        ("longred_boolq", "acc"),
    ]:
        r = by_task[key]
        assert 0.0 <= r["value"] <= 1.0
        assert (r["kind"], r["model"], r["rope"]) == ("eval", "tiny-random", "pi:factor=2")
        # Documents longer than the 512-byte window are skipped and counted, never truncated:
        # of the first 4 BoolQ passages only one fits the byte tokenizer's window.
        assert r["n_samples"] + r["n_over_length"] == 4
        assert (r["limit"], r["num_fewshot"]) == (4, 0)
        assert r["n_over_length"] == (3 if r["task"] == "longred_boolq" else 0)
        assert r["provenance"]["config"]["tasks"] == ["longred_arc_easy", "longred_boolq"]
        assert r["provenance"]["seed"] == 0
    # The extended window (tiny-random: 256 tokens, PI factor 2) is the default max_length.
    assert {r["max_length"] for r in records} == {512}
    assert {r["dtype"] for r in records} == {"float32"}  # the CPU's default
    raw = json.loads((out / "lm_eval_results.json").read_text())
    assert raw["results"]["longred_boolq"]["acc,none"] == by_task[("longred_boolq", "acc")]["value"]
    md = (out / "eval.md").read_text()
    assert "| task | acc | acc_norm | n | over-length |" in md
    rows = [line.split(" | ")[0] for line in md.splitlines() if line.startswith("| longred_")]
    assert rows == ["| longred_arc_easy", "| longred_boolq"]  # each task once
    assert "| longred_boolq | 0.0000 |  | 1 | 3 |" in md  # one scored, three over-length
    head = md.splitlines()[2:5]  # the command that ran, then the device and commit it ran at
    assert head[0].startswith(f"Command: `longred-bench {' '.join(argv)}") and head[1] == ""
    assert head[2].startswith("Device: ") and ". Commit `" in head[2]


@pytest.mark.integration
@pytest.mark.network
def test_rope_reaches_evaluated_model(benchmarks_cache: None) -> None:
    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.run import run_eval

    def ppl(rope: str | None) -> tuple[float, dict]:
        result = run_eval(
            EvalConfig(model="tiny-random", rope=rope, tasks=["longred_lambada_openai"], limit=2),
            progress=False,
        )
        (rec,) = [r for r in result.records if r["metric"] == "perplexity"]
        return rec["value"], rec["rope_parameters"]

    base, base_params = ppl(None)
    ext, ext_params = ppl("pi:factor=2")
    # rope_parameters are read from the model lm-eval evaluated, not from the request.
    assert base_params.get("rope_type", "default") == "default"
    assert ext_params == {"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}
    # Position interpolation changes every attention score: the perplexity must move.
    assert base > 1.0 and ext > 1.0 and not math.isclose(base, ext, rel_tol=1e-6)


SHORT_TASKS = (
    "longred_mmlu",
    "longred_lambada_openai",
    "longred_triviaqa",
    "longred_hellaswag",
    "longred_piqa",
    "longred_winogrande",
    "longred_arc_easy",
    "longred_arc_challenge",
    "longred_boolq",
    "longred_squad",
)


@pytest.mark.integration
@pytest.mark.network
def test_every_short_task_runs_end_to_end_on_the_tiny_model(benchmarks_cache: None) -> None:
    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.run import run_eval

    # PI x8 gives the tiny model a 2048-byte window, so a document of every task fits.
    result = run_eval(
        EvalConfig(model="tiny-random", rope="pi:factor=8", suite="short", limit=2), progress=False
    )
    leaves = {r["task"]: r for r in result.records if r["n_samples"] is not None}
    assert set(leaves) == set(SHORT_TASKS)
    for task, record in leaves.items():
        assert record["n_samples"] + record["n_over_length"] == 2, task
        assert record["n_samples"] >= 1, task
    groups = {r["task"] for r in result.records if r["n_samples"] is None}
    assert groups == {"longred_short", "longred_general", "longred_common", "longred_rc"}
    assert {r["group"] for r in result.records if r["task"] == "longred_mmlu"} == {
        "longred_general"
    }


@pytest.mark.integration
@pytest.mark.network
def test_every_ruler_task_runs_end_to_end_on_the_tiny_model(benchmarks_cache: None) -> None:
    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.run import run_eval
    from longred_bench.taskdata.ruler import TASKS

    result = run_eval(
        EvalConfig(model="tiny-random", suite="ruler", lengths=[1024], samples=1), progress=False
    )
    scored = {
        r["task"]: r["value"]
        for r in result.records
        if r["metric"] == "score" and r["length"] == 1024
    }
    assert set(scored) == {f"longred_ruler_{t}" for t in TASKS} | {"longred_ruler"}
    assert all(0.0 <= v <= 100.0 for v in scored.values())
    assert all(r["n_over_length"] == 0 for r in result.records)
    assert {r["max_length"] for r in result.records} == {1024 + 128}
