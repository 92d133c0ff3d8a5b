"""``reproduce table4`` / ``table5`` / ``table6``: LongReD's ablations of LongReD-C (loss
weights, distilled layers, short-distillation length) at one extension (the paper's are at 32K
ABF; a profile names it under ``tables.tableN.extensions``).

Each is a run grid of ``longred-c`` (Table 3's runs), ``cpt`` (Table 3's runs too: the premises
(a) and (e) that every ablation claim is gated on compare it with the original and the zero-shot
extension) and the table's variants (:data:`~longred_bench.reproduce.rows.ABLATION_ROWS`), every
row compared. Table 5's layer
variants need a model with at least 2 layers; Table 6 scores the paper's three lengths as
fractions of the original window (1/8, 1/4, 1x).
"""

from __future__ import annotations

from longred_bench.reproduce.grid import grid_spec
from longred_bench.reproduce.spec import Context, refuse

ROWS = {
    "table4": ("longred-c-no-short", "longred-c-no-s2l", "longred-c-a2-100", "longred-c-a1-100",
               "longred-c-a1-2"),
    "table5": ("longred-c-uniform", "longred-c-all-layers", "longred-c-last-layer"),
    "table6": ("longred-c-short-eighth", "longred-c-short-quarter", "longred-c-short-full"),
}  # fmt: skip
TITLES = {
    "table4": "LongReD Table 4: loss-weight ablation of LongReD-C",
    "table5": "LongReD Table 5: distilled-layer ablation of LongReD-C",
    "table6": "LongReD Table 6: short-distillation length ablation of LongReD-C",
}


def _two_layers(ctx: Context) -> None:
    layers = ctx.profile.model.layers
    if layers is not None and layers < 2:
        raise refuse(ctx, "model.layers", f"table5 needs at least 2 layers to choose from, the "
                     f"model has {layers}")  # fmt: skip


def _short_lengths(ctx: Context) -> None:
    if ctx.profile.model.window < 8:
        raise refuse(ctx, "model.window", "table6 scores 1/8 of the window; it is under 8 tokens")


def _spec(name: str, check: object = None) -> object:
    every = ("longred-c", "cpt", *ROWS[name])
    build = "longred_bench.reproduce.ablations:build_" + name
    return grid_spec(name, TITLES[name], every, every, build, check=check)


def _build(name: str, records: list, out: object, **report: object) -> list:
    from longred_bench.reports.ablation_report import build_ablation
    from longred_bench.reports.ablation_tables import ABLATIONS

    return build_ablation(ABLATIONS[name], records, out, **report)


def build_table4(records: list, out: object, **report: object) -> list:
    return _build("table4", records, out, **report)


def build_table5(records: list, out: object, **report: object) -> list:
    return _build("table5", records, out, **report)


def build_table6(records: list, out: object, **report: object) -> list:
    return _build("table6", records, out, **report)


TABLE4 = _spec("table4")
TABLE5 = _spec("table5", _two_layers)
TABLE6 = _spec("table6", _short_lengths)
