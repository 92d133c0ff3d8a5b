"""LongReD's ablation tables 4-6 as :class:`~longred_bench.reports.ablation_report.Ablation`:
the rows each compares with LongReD-C, the paper's numbers and the claims decided by rule."""

from __future__ import annotations

from longred_bench.reports.ablation_report import DEFAULT, Ablation, Claim
from longred_bench.reports.paper import ABLATION_MARK, ABLATION_SETTING, TABLE4, TABLE5, TABLE6


def _paper(header: str, rows: list[str]) -> tuple[str, ...]:
    return (f"Paper ({ABLATION_MARK}; {ABLATION_SETTING}):", "", header, *rows)


_R = {name: ruler for name, ruler, *_ in (*TABLE4, *TABLE5, *TABLE6)}


def _drop(row_name: str, ref_name: str) -> str:
    return f"RULER {_R[ref_name]:.2f} -> {_R[row_name]:.2f} ({ABLATION_MARK})."


def _relative(row_name: str, ref_name: str) -> float:
    """The paper's relative RULER change, row vs reference."""
    return _R[row_name] / _R[ref_name] - 1


# Without L_short: General 67.65 -> 66.54, Common 72.35 -> 70.64 (the two categories shown).
_NO_SHORT = ((66.54 - 67.65) / 67.65 + (70.64 - 72.35) / 72.35) / 2


TABLE4_ABLATION = Ablation(
    name="table4",
    title="Table 4: loss-weight ablation",
    rows=(
        "longred-c-no-short",
        "longred-c-no-s2l",
        "longred-c-a2-100",
        "longred-c-a1-100",
        "longred-c-a1-2",
    ),
    paper=_paper(
        "| variant | RULER | note |\n|---|---:|---|",
        [f"| {n} | {r:.2f} | {note} |" for n, r, note in TABLE4],
    ),
    claims=(
        Claim(
            "T4a",
            "Without L_s2l, RULER falls.",
            "longred-c-no-s2l",
            DEFAULT,
            "ruler",
            -1,
            _drop("no L_s2l (a2 = 0)", TABLE4[0][0]),
            relative=_relative("no L_s2l (a2 = 0)", TABLE4[0][0]),
        ),
        Claim(
            "T4b",
            "A large L_s2l weight (a2 = 100) lowers RULER.",
            "longred-c-a2-100",
            DEFAULT,
            "ruler",
            -1,
            _drop("a2 = 100", TABLE4[0][0]),
            relative=_relative("a2 = 100", TABLE4[0][0]),
        ),
        Claim(
            "T4c",
            "A large L_short weight (a1 = 100) lowers RULER.",
            "longred-c-a1-100",
            DEFAULT,
            "ruler",
            -1,
            _drop("a1 = 100", TABLE4[0][0]),
            relative=_relative("a1 = 100", TABLE4[0][0]),
        ),
        Claim(
            "T4d",
            "Without L_short, short-text ability falls.",
            "longred-c-no-short",
            DEFAULT,
            "short",
            -1,
            f"General 67.65 -> 66.54, Common 72.35 -> 70.64 ({ABLATION_MARK}).",
            relative=_NO_SHORT,
        ),
        Claim(
            "T4e",
            "A smaller L_short weight (a1 = 2) raises RULER.",
            "longred-c-a1-2",
            DEFAULT,
            "ruler",
            1,
            _drop("a1 = 2", TABLE4[0][0]),
            relative=_relative("a1 = 2", TABLE4[0][0]),
        ),
    ),
)

_KL = TABLE5[0][0]
TABLE5_ABLATION = Ablation(
    name="table5",
    title="Table 5: which layers to distil",
    rows=("longred-c-uniform", "longred-c-all-layers", "longred-c-last-layer"),
    paper=_paper("| layers | RULER |\n|---|---:|", [f"| {n} | {r:.2f} |" for n, r in TABLE5]),
    claims=tuple(
        Claim(
            key,
            f"Attention-KL selected layers give a higher RULER than {what}.",
            row,
            DEFAULT,
            "ruler",
            -1,
            _drop(name, _KL),
            layers=True,
            relative=_relative(name, _KL),
        )
        for key, what, row, name in (
            ("T5a", "uniformly spread layers", "longred-c-uniform", TABLE5[1][0]),
            ("T5b", "all layers", "longred-c-all-layers", TABLE5[2][0]),
            ("T5c", "the last layer only", "longred-c-last-layer", TABLE5[3][0]),
        )
    ),
)

_EIGHTH = TABLE6[0][0]
TABLE6_ABLATION = Ablation(
    name="table6",
    title="Table 6: short-distillation length",
    rows=("longred-c-short-eighth", "longred-c-short-quarter", "longred-c-short-full"),
    paper=_paper("| short length | RULER |\n|---|---:|", [f"| {n} | {r:.2f} |" for n, r in TABLE6]),
    claims=(
        Claim(
            "T6a",
            "Short distillation on 1/8 of the window gives a higher RULER than on the "
            "whole window.",
            "longred-c-short-full",
            "longred-c-short-eighth",
            "ruler",
            -1,
            _drop(TABLE6[2][0], _EIGHTH),
            relative=_relative(TABLE6[2][0], _EIGHTH),
        ),
        Claim(
            "T6b",
            "Short distillation on 1/8 of the window gives a higher RULER than on 1/4.",
            "longred-c-short-quarter",
            "longred-c-short-eighth",
            "ruler",
            -1,
            _drop(TABLE6[1][0], _EIGHTH),
            relative=_relative(TABLE6[1][0], _EIGHTH),
        ),
    ),
)

ABLATIONS = {a.name: a for a in (TABLE4_ABLATION, TABLE5_ABLATION, TABLE6_ABLATION)}
