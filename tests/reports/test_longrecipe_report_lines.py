"""The LongRecipe report's own figures: its cost per token counts the anchor measurement run (the
mean over seeds) and its cost per sequence scales by its sample length over CPT's, as (R4)
does; NIAH(M) is the mean of the needle tasks' scores over all lengths; perplexity by position
averages each bucket's NLL over the seeds; the anchor lifts are listed largest first; and the
sample share is given per extension where the extensions differ."""

from __future__ import annotations

import math

from longred_bench.reports.longrecipe_report import (
    anchor_lines,
    cost_lines,
    longrecipe_verdicts,
    niah_m,
    position_ppl,
    ppl_lines,
    sample_share,
)
from longred_bench.reports.runs import Run

EXT = "pi:factor=4"


def _run(seconds: float, long_len: int, brief: float | None = None, **train) -> Run:
    info = {"seconds": seconds, "tokens": 1000.0, "steps": 4, "long_len": long_len, **train}
    if brief is not None:
        info["impact"] = {"brief_seconds": brief, "anchors": [], "lifts": {}}
    return Run(train=info)


def _timed() -> dict:
    runs = {(EXT, "cpt", s): _run(secs, 1024) for s, secs in enumerate((90.0, 110.0))}
    # LongRecipe: 50 s on average, and its anchor measurement 20 s on average
    runs |= {(EXT, "longrecipe", s): _run(secs, 512, brief) for s, (secs, brief)
             in enumerate(((40.0, 10.0), (60.0, 30.0)))}  # fmt: skip
    return runs


def test_the_cost_counts_the_anchor_run_and_scales_by_sample_length() -> None:
    rows = [x for x in cost_lines(_timed()) if x.startswith(f"| `{EXT}`")]
    cells = [c.strip() for c in rows[1].strip("|").split("|")]
    # (50 + 20) s over 1,000 tokens; 0.70x CPT's 0.1 s per token; x 512 / 1,024 per sequence
    assert cells[2:] == ["2", "4", "1,000", "512", "70000", "0.70", "0.35"]
    (r4,) = [v for v in longrecipe_verdicts(_timed(), {}) if v.key == "R4"]
    assert r4.ours.startswith("training seconds per sequence, `longrecipe` / `cpt`: 0.350 [")


def test_niah_m_is_the_needle_tasks_over_all_lengths() -> None:
    run = Run(ruler_tasks={("longred_ruler_niah_multikey_1", None): 40.0,
                           ("longred_ruler_niah_multikey_1", 1024): 100.0,
                           ("longred_ruler_niah_multivalue", None): 20.0,
                           ("longred_ruler_vt", None): 90.0})  # fmt: skip
    assert niah_m(run) == 30.0


def _ppl(seed: int, start: int, nll: float) -> dict:
    return {"kind": "ppl", "row": "cpt", "extension": EXT, "seed": seed, "corpus": "pg19",
            "length": 1024, "bucket_start": start, "bucket_end": start + 512,
            "nll": nll}  # fmt: skip


def test_perplexity_by_position_averages_the_nll_over_seeds() -> None:
    curves = position_ppl([_ppl(0, 0, 1.0), _ppl(1, 0, 2.0), _ppl(0, 512, 1.0)])
    first = next(c for c in curves if c["bucket_start"] == 0)
    assert first["nll"] == 1.5 and first["seeds"] == 2
    assert math.isclose(first["ppl"], math.exp(1.5))
    row = next(x for x in ppl_lines(curves) if x.startswith(f"| `{EXT}`"))
    assert row == f"| `{EXT}` | CPT, long data | 2 | 4.5 | 2.7 |"


def test_anchor_lifts_are_listed_largest_first() -> None:
    lifts = {"a": 0.1, "b": 0.5, "c": 0.3, "d": 0.2, "e": 0.05, "f": 0.4}
    impact = {"anchors": ["b", "f"], "lifts": lifts, "brief_seconds": 1.0}
    runs = {(EXT, "longrecipe", 0): Run(train={"anchors": ["measured"], "impact": impact})}
    line = next(x for x in anchor_lines(runs) if x.startswith("- "))
    assert line.endswith("measured: b, f (largest lifts of the logit change: b 0.50, f 0.40, "
                         "c 0.30, d 0.20, a 0.10).")  # fmt: skip


def test_the_sample_share_is_given_per_extension_where_they_differ() -> None:
    runs = {(ext, row, 0): _run(1.0, length) for ext, row, length in (
        ("abf:theta=4e4", "cpt", 1024), ("abf:theta=4e4", "longrecipe", 256),
        (EXT, "cpt", 1024), (EXT, "longrecipe", 512))}  # fmt: skip
    assert sample_share(runs) == f"samples of 25% (`abf:theta=4e4`), 50% (`{EXT}`)"
    same = {k: v for k, v in runs.items() if k[0] == EXT}
    assert sample_share(same) == "samples of 50%"
