"""The Table 3 report (``longred_bench.reports.table3``) from synthetic records made here.

Every run scores the same documents: short tasks of ``N_SHORT`` documents whose per-document
``acc`` is 1 for the first ``round(p * N_SHORT)`` documents (so a score is known exactly), and
two RULER tasks at two lengths with scores of 0 or 100 the same way. The verdict tests flip the
synthetic data and check that the labels flip with it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from longred_bench.errors import UserError
from longred_bench.reports.paper import TABLE3
from longred_bench.reports.runs import (
    collect_runs,
    retention_cell,
    ruler_cell,
    short_avg_cell,
    task_cell,
)
from longred_bench.reports.short_avg import TINY_CATEGORIES, short_categories
from longred_bench.reports.table3 import build_table3, table3_verdicts
from longred_bench.reports.verdicts import NOT_COMPARABLE, NOT_REPRODUCED, REPRODUCED, UNDECIDED

N_SHORT = 200
N_RULER = 20  # per task and length
LENGTHS = (512, 1024)
RULER_TASKS = ("longred_ruler_vt", "longred_ruler_fwe")
SHORT_TASKS = ("longred_tiny_lastword", "longred_tiny_nextsent", "longred_tiny_swap")
PASSKEY = 0.9  # every run's passkey accuracy: shown in its own column, never in Short Avg
EXT = "abf:theta=4e4"
PROV = {"device": "CPU test", "git_commit": "abc123", "versions": {}, "seed": 0, "config": {}}
TRAIN = {"steps": 100, "tokens": 409600, "seconds": 12.5}


def _ones(n: int, p: float) -> list[float]:
    k = round(p * n)
    return [1.0] * k + [0.0] * (n - k)


def run_records(
    row: str,
    extension: str | None,
    *,
    short: tuple[float, float, float],
    ruler: float | None = None,
    seed: int = 0,
    train: dict[str, Any] | None = None,
    items: bool = True,
    ppl: float = 50.0,
) -> list[dict[str, Any]]:
    """Tidy and item records of one run: ``short`` = acc of cloze, nextsent and both minimal-pair
    tasks (the Language category; the same value), the passkey at :data:`PASSKEY`; ``ruler`` =
    fraction of RULER documents scored 100 (None: not evaluated on RULER)."""
    common = {"row": row, "extension": extension, "seed": seed, "train": train}
    common |= {"model": "tiny-base", "rope": extension, "provenance": PROV}
    window = 256 if extension is None else 1024
    out: list[dict[str, Any]] = []
    scored = [*zip(SHORT_TASKS, short, strict=True), ("longred_tiny_replace", short[2])]
    for task, p in [*scored, ("longred_tiny_passkey", PASSKEY)]:
        values = _ones(N_SHORT, p)
        base = {**common, "suite": "short_tiny", "task": task, "length": None}
        out.append(
            {
                **base,
                "kind": "eval",
                "metric": "acc",
                "value": sum(values) / N_SHORT,
                "n_samples": N_SHORT,
                "n_over_length": 0,
                "group": "longred_short_tiny",
                "max_position_embeddings": window,
            }
        )
        if items:
            out += [
                {**base, "kind": "eval_item", "metric": "acc", "doc_id": i, "value": v}
                for i, v in enumerate(values)
            ]
    out.append(
        {
            **common,
            "kind": "eval",
            "suite": "short_tiny",
            "task": "longred_tiny_ppl",
            "metric": "word_perplexity",
            "length": None,
            "value": ppl,
            "n_samples": N_SHORT,
            "n_over_length": 0,
            "group": "longred_short_tiny",
            "max_position_embeddings": window,
        }
    )
    if ruler is None:
        return out
    values = [100.0 * v for v in _ones(N_RULER, ruler)]
    mean = sum(values) / N_RULER
    base = {**common, "suite": "ruler", "metric": "score", "max_position_embeddings": window}
    for length in (*LENGTHS, None):
        out.append({**base, "kind": "eval", "task": "longred_ruler", "length": length})
        out[-1] |= {"value": mean, "n_samples": None}
    for t, task in enumerate(RULER_TASKS):
        for li, length in enumerate(LENGTHS):
            if items:
                out += [
                    {
                        **base,
                        "kind": "eval_item",
                        "task": task,
                        "length": length,
                        "doc_id": t * 1000 + li * N_RULER + i,
                        "value": v,
                    }
                    for i, v in enumerate(values)
                ]
    return out


def records_for(
    *,
    cpt: tuple[float, float, float] = (0.3, 0.4, 0.5),
    cpt_seed1: tuple[float, float, float] | None = None,
    longred: tuple[float, float, float] = (0.55, 0.6, 0.7),
    longred_ruler: float = 0.5,
    control: tuple[float, float, float] | None = None,
    longred_train: dict[str, Any] | None = None,
    mix_cpt: tuple[float, float, float] | None = None,
    train: dict[str, Any] = TRAIN,
) -> list[dict[str, Any]]:
    recs = run_records("original", None, short=(0.6, 0.6, 0.8))
    recs += run_records("zero-shot", EXT, short=(0.5, 0.5, 0.7), ruler=0.2)
    recs += run_records("cpt", EXT, short=cpt, ruler=0.5, train=train)
    if cpt_seed1 is not None:
        recs += run_records("cpt", EXT, short=cpt_seed1, ruler=0.5, seed=1, train=train)
    recs += run_records(
        "longred-c", EXT, short=longred, ruler=longred_ruler, train=longred_train or train
    )
    if control is not None:
        recs += run_records("control", None, short=control, train=train)
    if mix_cpt is not None:
        recs += run_records("mix-cpt", EXT, short=mix_cpt, ruler=0.5, train=train)
    return recs


def _labels(records: list[dict[str, Any]]) -> dict[str, str]:
    runs = collect_runs(records)
    return {v.key: v.label for v in table3_verdicts(runs, short_categories(records))}


# --- cells ------------------------------------------------------------------------------------


def test_categories_are_the_tiny_ones_without_ppl() -> None:
    assert short_categories(records_for()) == TINY_CATEGORIES


def test_cells_values_intervals_and_n() -> None:
    recs = records_for()
    runs = collect_runs(recs)
    cats = short_categories(recs)
    orig = runs[(None, "original", 0)]
    cloze = task_cell(orig, "longred_tiny_lastword")
    assert cloze.value == pytest.approx(60.0) and cloze.n == N_SHORT
    assert cloze.ci.low < 60.0 < cloze.ci.high
    # Binomial standard error sqrt(.6 * .4 / 200) = 3.46 points; 95% half-width about 6.8.
    assert 4.5 < (cloze.ci.high - cloze.ci.low) / 2 < 9.0
    avg = short_avg_cell(orig, cats)
    assert avg.value == pytest.approx((60 + 60 + 80) / 3)
    assert avg.ci.estimate == pytest.approx(avg.value) and avg.n == 4 * N_SHORT  # no passkey
    cpt = runs[(EXT, "cpt", 0)]
    assert cpt.train == TRAIN and cpt.ppl == 50.0
    ruler = ruler_cell(cpt, None)
    assert ruler.value == pytest.approx(50.0) and ruler.n == 2 * 2 * N_RULER
    assert ruler.ci.low < 50.0 < ruler.ci.high
    assert ruler_cell(cpt, 512).n == 2 * N_RULER
    assert ruler_cell(orig, None).value is None


def test_without_item_records_cells_have_no_interval_and_verdicts_not_comparable() -> None:
    recs = [r for r in records_for() if r["kind"] == "eval"]
    runs = collect_runs(recs)
    cell = task_cell(runs[(None, "original", 0)], "longred_tiny_lastword")
    assert cell.ci is None and cell.n == N_SHORT and cell.text() == "60.0 n=200"
    assert set(_labels(recs).values()) == {NOT_COMPARABLE}


# --- verdicts ---------------------------------------------------------------------------------


def test_verdict_a_flips_with_the_data() -> None:
    assert _labels(records_for(cpt=(0.3, 0.4, 0.5)))["a"] == REPRODUCED
    # equal to the original: the interval around 0 rules out the paper's loss (scaled, -9.31)
    assert _labels(records_for(cpt=(0.6, 0.6, 0.8)))["a"] == NOT_REPRODUCED
    assert _labels(records_for(cpt=(0.8, 0.8, 0.9)))["a"] == NOT_REPRODUCED  # above it


def test_verdict_b_flips_and_ruler_margin() -> None:
    assert _labels(records_for(longred=(0.55, 0.6, 0.7)))["b"] == REPRODUCED
    assert _labels(records_for(longred=(0.3, 0.4, 0.5)))["b"] == NOT_REPRODUCED  # same as cpt
    # RULER 25 points below CPT's 50: beyond the margin, 0.25 x CPT's gain of 30 = 7.5.
    assert _labels(records_for(longred_ruler=0.25))["b"] == NOT_REPRODUCED
    # 3 points away: within the margin (non-inferior).
    assert _labels(records_for(longred_ruler=0.53))["b"] == REPRODUCED
    # RULER 40 points above CPT's: at least as good on both axes is credited.
    assert _labels(records_for(longred_ruler=0.9))["b"] == REPRODUCED
    assert _labels(records_for(longred=(0.3, 0.4, 0.5), longred_ruler=0.9))["b"] == NOT_REPRODUCED


def test_verdict_b_is_gated_on_premise_a() -> None:
    """CPT keeps the original's short ability: (a) is not reproduced, so (b) is not comparable
    and says why."""
    recs = records_for(cpt=(0.6, 0.6, 0.8))
    runs = collect_runs(recs)
    verdicts = {v.key: v for v in table3_verdicts(runs, short_categories(recs))}
    assert verdicts["a"].label == NOT_REPRODUCED and verdicts["e"].label == REPRODUCED
    assert verdicts["b"].label == NOT_COMPARABLE
    assert verdicts["b"].premise.startswith("premises (a) not reproduced, (e) reproduced")


def test_seed_variance_enters_through_the_interval() -> None:
    far = records_for(cpt=(0.3, 0.4, 0.5), cpt_seed1=(0.32, 0.42, 0.52))  # spread 2 points
    assert _labels(far)["a"] == REPRODUCED
    wide = records_for(cpt=(0.3, 0.4, 0.5), cpt_seed1=(0.9, 0.9, 0.9))  # spread 50 points
    labels = _labels(wide)
    assert labels["a"] == UNDECIDED and labels["b"] == NOT_COMPARABLE  # (b): premise undecided


def test_verdict_d_control_is_ours() -> None:
    recs = records_for(control=(0.55, 0.6, 0.75))  # control loses less than cpt
    runs = collect_runs(recs)
    (d,) = [v for v in table3_verdicts(runs, short_categories(recs)) if v.key == "d"]
    assert d.label == REPRODUCED and d.source == "ours"
    assert _labels(records_for(control=(0.2, 0.3, 0.4)))["d"] == NOT_REPRODUCED
    # The control scores as CPT does: the interval holds 0, the samples cannot tell.
    assert _labels(records_for(control=(0.3, 0.4, 0.5)))["d"] == UNDECIDED
    assert "d" not in _labels(records_for())
    bare = [r for r in records_for(control=(0.55, 0.6, 0.75)) if r["kind"] == "eval"]
    assert _labels(bare)["d"] == NOT_COMPARABLE  # no per-document scores to pair


# --- the report -------------------------------------------------------------------------------


def test_build_table3_writes_cells_paper_rows_and_verdicts(tmp_path: Path) -> None:
    recs = records_for(control=(0.55, 0.6, 0.75))
    paths = build_table3(recs, tmp_path, profile="tiny", command="cmd", wall_seconds=3725)
    assert [p.name for p in paths] == ["table3.md", "table3.png"]
    md = (tmp_path / "table3.md").read_text()
    assert paths[1].read_bytes()[:4] == b"\x89PNG"
    assert "profile `tiny`" in md and "wall time 1 h 02 min 05 s" in md
    assert "CPU test" in md and "`abc123`" in md
    # The original's line: three task cells, Short Avg 66.7 with its interval and n.
    line = next(x for x in md.splitlines() if x.startswith("| - | original | 0 |"))
    assert re.search(r"\| 60\.0 \[\d+\.\d, \d+\.\d\] n=200 \|", line)
    assert re.search(r"\| 66\.7 \[\d+\.\d, \d+\.\d\] n=800 \|", line)
    assert re.search(r"\| 90\.0 \[\d+\.\d, \d+\.\d\] n=200 \| 50\.00 \|$", line)  # passkey
    cpt = next(x for x in md.splitlines() if x.startswith(f"| `{EXT}` | CPT, long data | 0 |"))
    # Retention 40 / 66.67 = 0.600 over 4 x 200 shared documents; Avg = (5 * 40 + 50) / 6 = 41.7.
    assert "| 0.600 n=800 |" in cpt and "| 41.7 |" in cpt and cpt.endswith("| 50.00 |")
    assert re.search(r"\| 50\.0 \[\d+\.\d, \d+\.\d\] n=80 \|", cpt)
    # RULER per length table, paper rows, verdicts, training budget.
    assert "| extension | row | seed | 512 | 1024 | all lengths |" in md
    assert "## Paper, Table 3 [fig]" in md
    for row in TABLE3:
        assert f"| {row.model} | {row.window} | {row.pe or '-'} | {row.data or '-'} |" in md
    assert "| Llama-3-8B | 32K | ABF | Mix | LongReD-C | 67.65 |" in md
    assert "| (a) Long-only CPT loses" in md and "**reproduced**" in md
    assert f"`{EXT}` (ABF, window x4)" in md
    assert "Short 51.00 vs original 55.16 (-4.16)" in md  # the paper's evidence for (a)
    assert "ours (not in the paper)" in md
    assert "Every trained row used the same budget: 100 steps and 409600 tokens." in md
    assert "Long data (D1)" not in md  # these runs recorded no D1


def test_the_long_data_of_trained_rows_is_stated(tmp_path: Path) -> None:
    with_retrieval = {**TRAIN, "long_data": "austen+kjv+retrieval", "retrieval_fraction": 0.3}
    prose = {**TRAIN, "long_data": "austen+kjv", "retrieval_fraction": 0.3}
    build_table3(records_for(train=with_retrieval), tmp_path, profile="tiny", command="c")
    md = (tmp_path / "table3.md").read_text()
    assert ("Long data (D1) of every trained row: `austen+kjv+retrieval` (30% of rows retrieval "
            "rows at the long length).") in md  # fmt: skip
    build_table3(records_for(train=with_retrieval, longred_train=prose), tmp_path,
                 profile="tiny", command="c")  # fmt: skip
    md = (tmp_path / "table3.md").read_text()
    assert "Long data (D1) differs between trained rows:" in md and "(prose only): 1 runs" in md


def test_unequal_budgets_are_flagged(tmp_path: Path) -> None:
    odd = {"steps": 50, "tokens": 204800, "seconds": 6.0}
    build_table3(
        records_for(longred_train=odd, cpt_seed1=(0.3, 0.4, 0.5)),
        tmp_path,
        profile="tiny",
        command="c",
    )
    md = (tmp_path / "table3.md").read_text()
    assert "**Not every trained row used the same budget**" in md
    assert "different (other steps, or tokens beyond 10%): LongReD-C `abf:theta=4e4` seed 0" in md
    assert "wall time not recorded" in md


def test_token_counts_within_the_tolerance_are_one_budget(tmp_path: Path) -> None:
    """Token counts leave out padding, so runs of one budget differ a little: 5% apart is the
    same budget (with the range printed), 30% apart is flagged."""
    near = {"steps": 100, "tokens": 430080, "seconds": 6.0}  # +5% over 409600
    build_table3(records_for(longred_train=near), tmp_path, profile="tiny", command="c")
    md = (tmp_path / "table3.md").read_text()
    assert "Every trained row used the same budget: 100 steps and 409600-430080 tokens" in md
    far = {"steps": 100, "tokens": 532480, "seconds": 6.0}  # +30%
    build_table3(records_for(longred_train=far), tmp_path, profile="tiny", command="c")
    md = (tmp_path / "table3.md").read_text()
    assert "**Not every trained row used the same budget**" in md
    assert "beyond 10%): " in md and "LongReD-C `abf:theta=4e4` seed 0. Compare" in md


def test_unknown_row_and_missing_original_are_user_errors(tmp_path: Path) -> None:
    bad = run_records("cpt-x", EXT, short=(0.5, 0.5, 0.5))
    with pytest.raises(UserError, match="row 'cpt-x'"):
        build_table3(bad, tmp_path, profile="tiny", command="c")
    no_orig = run_records("cpt", EXT, short=(0.5, 0.5, 0.5))
    with pytest.raises(UserError, match="needs the `original` row"):
        build_table3(no_orig, tmp_path, profile="tiny", command="c")


def test_short_suite_groups_and_filtered_headline_metrics() -> None:
    common = {"row": "original", "extension": None, "seed": 0, "suite": "short", "length": None}
    recs = [
        {**common, "kind": "eval", "task": "longred_mmlu", "metric": "acc", "value": 0.5,
         "n_samples": 4, "group": "longred_general"},
        {**common, "kind": "eval", "task": "longred_squad", "metric": "exact_match,strip",
         "value": 0.25, "n_samples": 4, "group": "longred_rc"},
        {**common, "kind": "eval", "task": "longred_rc", "metric": "exact_match,strip",
         "value": 0.25, "n_samples": None, "group": "longred_short"},
    ]  # fmt: skip
    recs += [
        {
            **common,
            "kind": "eval_item",
            "task": "longred_squad",
            "metric": "exact_match,strip",
            "doc_id": i,
            "value": v,
        }
        for i, v in enumerate([1.0, 0.0, 0.0, 0.0])
    ]
    cats = short_categories(recs)
    assert cats == {"general": ("longred_mmlu",), "rc": ("longred_squad",)}
    run = collect_runs(recs)[(None, "original", 0)]
    assert run.short == {"longred_mmlu": 50.0, "longred_squad": 25.0}
    squad = task_cell(run, "longred_squad")
    assert squad.n == 4 and squad.ci is not None and squad.ci.estimate == pytest.approx(25.0)
    assert short_avg_cell(run, cats).value == pytest.approx(37.5)
    assert short_avg_cell(run, cats).ci is None  # mmlu has no item scores: no interval


@pytest.mark.integration
def test_report_from_real_run_eval_records(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    from data_helpers import ensure_cached

    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.run import run_eval

    ensure_cached(request, "brown", "austen", "sotu")
    tasks = ["longred_tiny_nextsent", "longred_tiny_passkey"]
    kw: dict[str, Any] = {"item_scores": True, "progress": False}
    base = run_eval(
        EvalConfig("tiny-random", suite="short_tiny", tasks=tasks, limit=8, max_length=1024), **kw
    )
    ext = "pi:factor=4"
    short = run_eval(
        EvalConfig("tiny-random", rope=ext, suite="short_tiny", tasks=tasks, limit=8), **kw
    )
    ruler = run_eval(
        EvalConfig("tiny-random", rope=ext, suite="ruler", tasks=["longred_ruler_vt"],
                   lengths=[1024], samples=2),
        **kw,
    )  # fmt: skip
    records = [{**r, "row": "original", "extension": None, "seed": 0} for r in base.records]
    for row in ("zero-shot", "cpt"):  # one evaluation stands for both rows here
        tag = {"row": row, "extension": ext, "seed": 0, "train": TRAIN if row == "cpt" else None}
        records += [{**r, **tag} for r in short.records + ruler.records]
    md_path, png = build_table3(records, tmp_path, profile="smoke", command="c")
    md = md_path.read_text()
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert "Short-task categories: RC = nextsent." in md  # the passkey is not a category
    assert "passkey (retrieval, not averaged)" in md
    cpt = next(x for x in md.splitlines() if x.startswith("| `pi:factor=4` | CPT, long data |"))
    assert re.search(r"\| \d+\.\d \[\d+\.\d, \d+\.\d\] n=2 \|", cpt)  # RULER vt, 2 samples
    assert "| (a) Long-only CPT loses" in md  # a verdict was computed from the item records
    assert "[fig] Llama-3-8B 32K PI: Short 49.36 vs original 55.16" in md


def test_over_length_documents_count_each_task_once() -> None:
    from longred_bench.results import over_length_documents

    def rec(task: str, metric: str, over: int, row: str = "cpt", n: int | None = 190) -> dict:
        return {"kind": "eval", "suite": "short_tiny", "task": task, "metric": metric, "row": row,
                "n_samples": n, "n_over_length": over}  # fmt: skip

    records = [
        rec("longred_tiny_passkey", "acc", 10),
        rec("longred_tiny_passkey", "acc_norm", 10),  # the same 10 documents
        rec("longred_tiny_nextsent", "acc", 3),
        rec("longred_short_tiny", "acc", 13, n=None),  # the group: left out
        rec("longred_tiny_passkey", "acc", 10, row="control"),  # another run
    ]
    assert over_length_documents(records) == 23


# --- claim (b) against the data-matched baseline; retention over shared documents ---------------


def test_claim_b_against_the_data_matched_mix_cpt() -> None:
    recs = records_for(mix_cpt=(0.5, 0.5, 0.6))  # mix-cpt: Short 53.3, LongReD-C 61.7
    runs = collect_runs(recs)
    verdicts = table3_verdicts(runs, short_categories(recs))
    b = [v for v in verdicts if v.key == "b"]
    b2 = [v for v in verdicts if v.key == "b'"]
    assert len(b) == 1 and len(b2) == 1  # against cpt, kept, and against mix-cpt
    assert b[0].label == b2[0].label == REPRODUCED
    assert "data-matched" in b2[0].claim and "`mix-cpt`" in b2[0].claim
    assert "RULER(longred-c) - RULER(mix-cpt)" in b2[0].rule
    assert "vs Mix CPT" in b2[0].paper and "vs CPT" in b[0].paper
    # mix-cpt keeps more short-text ability than LongReD-C: b' flips, b does not.
    labels = _labels(records_for(mix_cpt=(0.7, 0.7, 0.8)))
    assert labels["b'"] == NOT_REPRODUCED and labels["b"] == REPRODUCED
    assert "b'" not in _labels(records_for())  # no mix-cpt row, no b' verdict


def _drop_docs(records: list[dict[str, Any]], row: str, keep: int) -> list[dict[str, Any]]:
    """``row``'s short tasks scored on their first ``keep`` documents only (the others skipped,
    as over-length documents are): item records dropped, tidy values and counts recomputed."""
    out = []
    for r in records:
        short_item = r["row"] == row and r["suite"] == "short_tiny" and r["kind"] == "eval_item"
        if not (short_item and r["doc_id"] >= keep):
            out.append(r)
    for r in out:
        if r["row"] == row and r["kind"] == "eval" and r["metric"] == "acc":
            values = [x["value"] for x in out if x["kind"] == "eval_item" and x["row"] == row
                      and x["task"] == r["task"]]  # fmt: skip
            r["value"], r["n_samples"] = sum(values) / len(values), len(values)
    return out


def test_retention_is_over_the_documents_both_runs_scored(tmp_path: Path) -> None:
    # The original scored 190 of the 200 documents of each task (its 10 last, all 0, skipped);
    # CPT scored all 200. Over the shared 190: CPT 40 * 200/190 over the original's
    # 66.67 * 200/190 = 0.600. The tidy averages over unequal sets would give 40 / 70.18 = 0.570.
    recs = _drop_docs(records_for(), "original", 190)
    runs = collect_runs(recs)
    cats = short_categories(recs)
    orig, cpt = runs[(None, "original", 0)], runs[(EXT, "cpt", 0)]
    assert short_avg_cell(orig, cats).n == 4 * 190 and short_avg_cell(cpt, cats).n == 4 * 200
    naive = short_avg_cell(cpt, cats).value / short_avg_cell(orig, cats).value
    assert naive == pytest.approx(0.570, abs=1e-3)
    cell = retention_cell(cpt, orig, cats)
    assert cell.value == pytest.approx(0.600) and cell.n == 4 * 190
    assert cell.ci[0] < 0.600 < cell.ci[1]
    build_table3(recs, tmp_path, profile="tiny", command="c")
    md = (tmp_path / "table3.md").read_text()
    line = next(x for x in md.splitlines() if x.startswith(f"| `{EXT}` | CPT, long data | 0 |"))
    assert "| 0.600 n=760 |" in line
    # Claim (a)'s means and difference are over the same shared documents, and say n: CPT
    # 40 * 200/190 = 42.11 against the original's 70.18 (its tidy value over its own 190).
    a = next(x for x in md.splitlines() if x.startswith("- Ours: Short Avg `cpt`"))
    assert "`cpt` 42.11 vs `original` 70.18 on the documents both scored" in a
    assert "difference -28.07 [" in a and "n=760 documents" in a


def test_retention_without_item_scores_needs_equal_document_counts() -> None:
    tidy = [r for r in records_for() if r["kind"] == "eval"]
    runs = collect_runs(tidy)
    cats = short_categories(tidy)
    orig, cpt = runs[(None, "original", 0)], runs[(EXT, "cpt", 0)]
    same = retention_cell(cpt, orig, cats)
    assert same.value == pytest.approx(0.600) and same.ci is None and same.n == 800
    uneven = [r for r in _drop_docs(records_for(), "original", 190) if r["kind"] == "eval"]
    runs = collect_runs(uneven)
    cell = retention_cell(runs[(EXT, "cpt", 0)], runs[(None, "original", 0)], cats)
    assert cell.value is None and cell.text() == ""  # unknown shared set: no ratio


def test_seed_table_shows_every_seed(tmp_path: Path) -> None:
    recs = records_for()
    for seed, short in ((1, (0.32, 0.42, 0.52)), (2, (0.34, 0.44, 0.54))):
        recs += run_records("cpt", EXT, short=short, ruler=0.5 + seed / 20, seed=seed, train=TRAIN)
    build_table3(recs, tmp_path, profile="tiny", command="c")
    md = (tmp_path / "table3.md").read_text()
    line = next(
        x for x in md.splitlines() if x.startswith(f"| `{EXT}` | CPT, long data | 0, 1, 2 |")
    )
    # Short Avg 40, 42, 44 (spread 4); RULER 50, 55, 60 (spread 10).
    assert "| 40.00, 42.00, 44.00 | 4.00 | 50.00, 55.00, 60.00 | 10.00 |" in line
