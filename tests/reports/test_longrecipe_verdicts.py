"""LongRecipe's claims (``longred_bench.reports.longrecipe_verdicts``) on hand-built ``RunScores``
and timings: matching full-length training needs a full-length run that learned something and
an interval above the suite's margin of similar long ability; beating PoSE and RPES combines the
two baselines' labels, ruling out the paper's scaled RULER gain; the compute claim is a measured
ratio per sequence with an interval over runs and steps, against a bound it can fail. Every
label each rule can give."""

from __future__ import annotations

import json

import numpy as np
import pytest

from longred_bench.jobs.run_steps import run_steps_record
from longred_bench.metrics.stats import RunSteps
from longred_bench.reports.longrecipe_verdicts import (
    compute_interval,
    paper_ruler_gain,
    verdict_beats,
    verdict_compute,
    verdict_matches_full_length,
)
from longred_bench.reports.runs import Run, collect_runs, run_steps
from longred_bench.reports.verdict_rules import (
    LONG_MARGIN_FRACTION,
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
)
from longred_bench.reports.verdict_stats import RunScores


def _run(row: str, short: float, ruler_hits: int, seed: int = 0) -> RunScores:
    """Short: 200 documents at ``short`` +-1; RULER: the first ``ruler_hits`` of 100 samples."""
    docs = {i: short + (i % 3) - 1 for i in range(200)}
    per = {i: 100.0 if i < ruler_hits else 0.0 for i in range(100)}
    return RunScores(
        "abf:theta=2e6", row, seed, short, float(ruler_hits),
        short={"General": {"cloze": docs}}, ruler={"niah_single_1": {1024: per}},
    )  # fmt: skip


def _seeds(row: str, short: float, hits: int) -> list[RunScores]:
    return [_run(row, short, hits, s) for s in range(3)]


def test_matching_full_length_needs_its_premise_and_the_long_margin() -> None:
    zero, cpt = _seeds("zero-shot", 50, 2), _seeds("cpt", 50, 30)  # gain 28: margin 7
    near = verdict_matches_full_length(_seeds("longrecipe", 50, 29), cpt, zero, "s")
    assert near.label == REPRODUCED and "= 7.00" in near.ours
    assert "passed" in near.premise
    # Far below full-length training: the interval lies below -7.
    far = verdict_matches_full_length(_seeds("longrecipe", 50, 5), cpt, zero, "s")
    assert far.label == NOT_REPRODUCED
    # 8 points below, on 100 samples: the interval straddles -7, the samples cannot tell.
    across = verdict_matches_full_length(_seeds("longrecipe", 50, 22), cpt, zero, "s")
    assert across.label == UNDECIDED and f"{LONG_MARGIN_FRACTION:g} x that gain" in across.rule
    # Full-length training learned nothing over zero-shot: nothing to match.
    flat = verdict_matches_full_length(_seeds("longrecipe", 50, 3), _seeds("cpt", 50, 3), zero, "s")
    assert flat.label == NOT_COMPARABLE and "Nothing learned to match" in flat.ours
    assert "not comparable" in flat.premise and "(e)" in flat.premise
    # The tokens each side trained are stated; a budget 22% over CPT's is said not to be equal.
    mine = _seeds("longrecipe", 50, 29)
    same = verdict_matches_full_length(mine, cpt, zero, "s", token_ratio=1.05)
    assert "1.05x (about the same)" in same.ours
    more = verdict_matches_full_length(mine, cpt, zero, "s", token_ratio=1.22)
    assert "1.22x (not a comparison at equal tokens)" in more.ours
    assert more.label == same.label == REPRODUCED  # stated, not a change of the rule


def test_the_tokens_trained_are_stated_where_the_premise_fails_too() -> None:
    """A row not comparable for its premise still says what it trained against CPT."""
    zero, flat_cpt = _seeds("zero-shot", 50, 2), _seeds("cpt", 50, 3)
    flat = verdict_matches_full_length(
        _seeds("longrecipe", 50, 3), flat_cpt, zero, "s", token_ratio=1.06
    )
    assert flat.label == NOT_COMPARABLE and "Nothing learned to match" in flat.ours
    assert "Tokens trained, `longrecipe` / `cpt`: 1.06x (about the same)" in flat.ours


def test_paper_ruler_gain_is_the_smaller_relative_one() -> None:
    assert paper_ruler_gain("pose") == pytest.approx((0.7, 75.3))  # 128K: 76.0 vs 75.3
    assert paper_ruler_gain("rpes") == pytest.approx((3.1, 71.4))  # 80K: 74.5 vs 71.4


def test_beating_pose_and_rpes_combines_both_baselines() -> None:
    base = {"pose": _seeds("pose", 50, 5), "rpes": _seeds("rpes", 50, 5)}
    mine = _seeds("longrecipe", 53, 30)
    assert verdict_beats(mine, base, "s", "ruler").label == REPRODUCED
    assert verdict_beats(mine, base, "s", "short").label == REPRODUCED
    # Tied with RPES on every item: the RULER interval [0, 0] lies short of the paper's gain over
    # RPES scaled here (3.1 / 71.4 x 30 = +1.30) -> not reproduced; Short Avg has no paper effect,
    # so [0, 0] is undecided.
    base["rpes"] = _seeds("rpes", 53, 30)
    ruler, short = verdict_beats(mine, base, "s", "ruler"), verdict_beats(mine, base, "s", "short")
    assert (ruler.key, ruler.label) == ("R2", NOT_REPRODUCED) and "+1.30" in ruler.ours
    assert (short.key, short.label) == ("R3", UNDECIDED)
    base["rpes"] = _seeds("rpes", 56, 40)  # better than LongRecipe on both
    ruler, short = verdict_beats(mine, base, "s", "ruler"), verdict_beats(mine, base, "s", "short")
    assert ruler.label == short.label == NOT_REPRODUCED
    # The paper's gain over PoSE is small (0.7 / 75.3): one sample apart, 30 of 100 hit, cannot
    # rule it out.
    close = {"pose": _seeds("pose", 53, 29)}
    assert verdict_beats(mine, close, "s", "ruler").label == UNDECIDED
    bare = {"pose": [RunScores("abf:theta=2e6", "pose", 0, 50.0, 1.0)]}
    assert verdict_beats(mine, bare, "s", "ruler").label == NOT_COMPARABLE
    assert verdict_beats(mine, bare, "s", "short").label == NOT_COMPARABLE  # R3 too
    # A baseline without paired scores leaves its part not comparable; another baseline that
    # refutes the claim still refutes it, whichever comes first.
    for what in ("ruler", "short"):
        both = {**bare, "rpes": _seeds("rpes", 56, 40)}
        v = verdict_beats(mine, both, "s", what)
        assert v.label == NOT_REPRODUCED and "`pose`: no per-item" in v.ours
        assert "(not comparable)" in v.ours and "`rpes`" in v.ours


def _timed(per_step: float, runs: int = 3, steps: int = 64, jitter: float = 0.05,
           fixed: float = 0.0, seed: int = 0) -> list[RunSteps]:  # fmt: skip
    """``runs`` runs of ``steps`` steps of 1000 tokens at ``per_step`` seconds +-``jitter``."""
    rng = np.random.default_rng(seed)
    return [RunSteps(list(per_step * (1 + jitter * rng.uniform(-1, 1, steps))), [1000.0] * steps,
                     fixed) for _ in range(runs)]  # fmt: skip


def test_compute_is_a_measured_ratio_per_sequence_that_can_fail() -> None:
    cpt = _timed(1.0)
    # Per token as fast as CPT, samples 0.15 of CPT's: 0.15 per sequence, under 0.175.
    fast = verdict_compute(_timed(1.0, seed=1), cpt, 0.15, "s")
    assert fast.label == REPRODUCED and "0.150 [" in fast.ours
    # Per token as fast as CPT, samples 0.3125 of CPT's (this suite's): 0.31 per sequence.
    assert verdict_compute(_timed(1.0, seed=1), cpt, 0.3125, "s").label == NOT_REPRODUCED
    # The anchor measurement run's seconds count: 0.15 per sequence becomes 0.2 with a brief
    # run a third the cost of the training.
    briefed = compute_interval(_timed(1.0, fixed=64 / 3, seed=1), cpt, 0.15)
    assert briefed.estimate == pytest.approx(0.2, abs=0.005)
    # Timings that vary by +-60% per step over 4 steps: the interval straddles 0.175.
    noisy = verdict_compute(_timed(1.0, runs=1, steps=4, jitter=0.6, seed=2), cpt, 0.175, "s")
    assert noisy.label == UNDECIDED
    # One run per row, timed as a total only: no spread, not comparable; no timings at all too.
    total = [RunSteps([64.0], [64000.0])]
    assert verdict_compute(total, total, 0.15, "s").label == NOT_COMPARABLE
    assert verdict_compute([], cpt, 0.15, "s").label == NOT_COMPARABLE
    # Timed under an unrecorded (or too high) machine load: the timing premise fails, the
    # interval is still shown, as in Table 10.
    loud = verdict_compute(_timed(1.0, seed=1), cpt, 0.15, "s", "`cpt` load not recorded")
    assert loud.label == NOT_COMPARABLE and "0.150 [" in loud.ours
    assert "Timing premise failed: `cpt` load not recorded." in loud.ours


def test_run_steps_reads_the_per_step_record_not_the_run_folder(tmp_path) -> None:
    """The timings come from the run's ``train_steps`` record; its folder (here holding other
    timings) is not read, so a report rebuilt from its records alone gives the same R4."""
    rows = [{"step": i + 1, "seconds": 9.0 * (i + 1), "tokens": 100 * (i + 1)} for i in range(4)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    train = {"steps": 4, "tokens": 400, "seconds": 6.0, "dir": str(tmp_path)}
    label = {"row": "longrecipe", "extension": "pi:factor=4", "seed": 0, "train": train}
    scored = {**label, "kind": "eval", "suite": "ruler", "task": "longred_ruler",
              "metric": "score", "value": 1.0, "length": 64, "n_samples": None}  # fmt: skip
    timed = {**label, "kind": "train_steps", "step_seconds": [1.5, 3.0, 4.5, 6.0],
             "step_tokens": [100, 200, 300, 400]}  # fmt: skip
    run = collect_runs([scored, timed])[("pi:factor=4", "longrecipe", 0)]
    assert run_steps(run, fixed=2.0) == RunSteps([1.5] * 4, [100.0] * 4, 2.0)
    alone = collect_runs([scored])[("pi:factor=4", "longrecipe", 0)]
    assert run_steps(alone) == RunSteps([6.0], [400.0], 0.0)  # no record: the totals
    short = {**timed, "step_seconds": [1.5, 3.0], "step_tokens": [100, 200]}
    partial = collect_runs([scored, short])[("pi:factor=4", "longrecipe", 0)]
    assert run_steps(partial) == RunSteps([6.0], [400.0], 0.0)  # does not cover the run
    assert run_steps(Run(train=None)) is None
    # A per-step record of a run no record scored makes no run.
    other = {**timed, "seed": 1}
    assert list(collect_runs([scored, other])) == [("pi:factor=4", "longrecipe", 0)]


def test_run_steps_record_reads_a_run_folder_and_its_provenance(tmp_path) -> None:
    rows = [{"step": i + 1, "seconds": 1.5 * (i + 1), "tokens": 100 * (i + 1)} for i in range(3)]
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert run_steps_record(tmp_path) is None  # no run.json: not a finished run
    (tmp_path / "run.json").write_text(json.dumps({"tokens": 300, "provenance": {"dirty": False}}))
    record = run_steps_record(tmp_path)
    assert record == {"kind": "train_steps", "step_seconds": [1.5, 3.0, 4.5],
                      "step_tokens": [100, 200, 300], "provenance": {"dirty": False}}  # fmt: skip
    (tmp_path / "run.json").write_text(json.dumps({"tokens": 300}))  # older run: no provenance
    assert "provenance" not in run_steps_record(tmp_path)
    (tmp_path / "metrics.jsonl").write_text("{not json\n")
    assert run_steps_record(tmp_path) is None


def test_the_cost_table_says_whether_the_rows_read_the_same_tokens() -> None:
    from longred_bench.reports.longrecipe_report import _budget_sentence

    def record(row: str, tokens: int) -> dict:
        train = {"steps": 4, "tokens": tokens, "seconds": 6.0}
        return {"kind": "eval", "suite": "ruler", "task": "longred_ruler", "metric": "score",
                "value": 1.0, "length": 64, "n_samples": None, "row": row,
                "extension": "pi:factor=4", "seed": 0, "train": train}  # fmt: skip

    same = collect_runs([record("cpt", 1000), record("longrecipe", 1060)])
    assert _budget_sentence(same).startswith("Every row trains on about the same number")
    more = collect_runs([record("cpt", 1000), record("longrecipe", 1220), record("pose", 990)])
    assert "(0.99x to 1.22x CPT's): (R1) is not a comparison at equal tokens" in (
        _budget_sentence(more)
    )
