"""Figure 3's rule (premise, recovery, decline) on hand-built per-document scores: each label is
reachable (a failed premise not comparable), and seeds that disagree widen the intervals."""

from __future__ import annotations

import pytest

from longred_bench.errors import UserError
from longred_bench.reports.fig3_report import (
    curve_intervals,
    curve_label,
    curve_runs,
    fig3_verdicts,
    premise_verdict,
)
from longred_bench.reports.runs import Run
from longred_bench.reports.verdict_rules import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
    premise_gate,
)

DOCS = range(60)


def _items(shift: float, noise: int = 0) -> dict:
    """One task of 60 documents scoring 0 or 100, ``shift`` points of them raised to 100."""
    base = [100.0 if (d * 7 + noise) % 10 < 4 else 0.0 for d in DOCS]
    raised = round(len(base) * shift / 100)
    zeros = [d for d in DOCS if base[d] == 0.0][:raised] if shift > 0 else []
    ones = [d for d in DOCS if base[d] == 100.0][:-raised] if shift < 0 else []
    return {"gen": {"t": {d: (100.0 if d in zeros else 0.0 if d in ones else base[d])
                          for d in DOCS}}}  # fmt: skip


def _label(original, zero, early, late):
    return curve_label(curve_intervals(original, zero, early, late))


def test_recovery_then_decline_is_reproduced():
    seeds = range(3)
    assert _label(_items(0), _items(-30), [[_items(-5), _items(-5)] for _ in seeds],
                  [_items(-25) for _ in seeds]) == REPRODUCED  # fmt: skip


def test_a_steady_climb_or_a_steady_fall_is_not_reproduced():
    seeds = range(3)
    climb = _label(_items(0), _items(-30), [[_items(-20)] for _ in seeds],
                   [_items(0) for _ in seeds])  # fmt: skip
    fall = _label(_items(0), _items(-10), [[_items(-30)] for _ in seeds],
                  [_items(-35) for _ in seeds])  # fmt: skip
    assert climb == NOT_REPRODUCED and fall == NOT_REPRODUCED


def test_a_recovery_the_samples_cannot_tell_is_undecided():
    seeds = range(3)
    # Early snapshots score as the zero-shot model on every document: recovery [0, 0].
    assert _label(_items(0), _items(-30), [[_items(-30)] for _ in seeds],
                  [_items(-45) for _ in seeds]) == UNDECIDED  # fmt: skip


def test_nothing_lost_is_not_comparable_and_the_premise_says_so():
    seeds = range(3)
    ci = curve_intervals(_items(0), _items(0), [[_items(10)] for _ in seeds],
                         [_items(-10) for _ in seeds])  # fmt: skip
    assert curve_label(ci) == NOT_COMPARABLE
    passed, text = premise_gate([premise_verdict(ci, "s")])
    assert not passed and "(zero-shot loses) undecided" in text and "not comparable" in text


def test_seeds_that_disagree_widen_the_interval():
    agree = curve_intervals(_items(0), _items(-30), [[_items(-5)]] * 3, [_items(-25)] * 3)
    split = curve_intervals(
        _items(0), _items(-30), [[_items(-5)], [_items(-5)], [_items(-5)]],
        [_items(-40), _items(-25), _items(-10)],
    )  # fmt: skip
    assert agree["decline"].estimate == pytest.approx(split["decline"].estimate)
    width = lambda ci: ci.high - ci.low  # noqa: E731
    assert width(split["decline"]) > width(agree["decline"])


def test_records_without_a_step_are_refused():
    record = {"kind": "eval", "row": "cpt", "seed": 0, "extension": "pi:factor=2"}
    with pytest.raises(UserError, match="no `step`"):
        curve_runs([record])


def _run(score: float, steps: int | None = 20) -> Run:
    """60 documents of task ``t``, ``score``% of them right; ``steps``: Table 3's steps."""
    items = {d: 100.0 if d < score * 0.6 else 0.0 for d in DOCS}
    train = None if steps is None else {"table_steps": steps}
    return Run(short={"t": score}, short_items={"t": items}, train=train)


def test_the_snapshot_at_table_3s_steps_is_not_early() -> None:
    # Early is the snapshots before Table 3's 20 steps: step 10 alone, not step 20.
    ext = "abf:theta=2e7"
    runs = {(None, None, 0): _run(60.0, None), (ext, 0, 0): _run(30.0, None)}
    runs |= {(ext, step, 0): _run(score) for step, score in ((10, 55.0), (20, 50.0), (40, 40.0))}
    (verdict,) = fig3_verdicts(runs, {"gen": ("t",)})
    assert "early = steps 10, late = step 40" in verdict.ours
