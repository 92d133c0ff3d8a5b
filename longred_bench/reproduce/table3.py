"""``reproduce table3``: LongReD Table 3, short-text ability and long retrieval of every recipe at
each extension: the original model, each zero-shot extension, then ``control``, ``cpt``,
``mix-cpt``, ``longred-c``, ``longred-u`` and ``linearard`` (one run grid:
:mod:`longred_bench.reproduce.grid`). The rows a verdict compares get the profile's seeds;
``linearard`` enters none and trains one. ``--d1 prose`` trains every row on the recipes' own
long data (prose only) instead of the profile's."""

from __future__ import annotations

from longred_bench.errors import UserError
from longred_bench.reproduce.grid import grid_spec

ROWS = ("control", "cpt", "mix-cpt", "longred-c", "longred-u", "linearard")
# Rows that enter a verdict (reports.verdicts claims a, b, d).
VERDICT_ROWS = ("control", "cpt", "mix-cpt", "longred-c", "longred-u")

SPEC = grid_spec(
    "table3", "LongReD Table 3: recipes against CPT, short and long scores", ROWS, VERDICT_ROWS,
    "longred_bench.reports.table3:build_table3",
)  # fmt: skip


def table3_grid(profile: object, needed_by: str | None = None) -> object:
    """Table 3's run grid at ``profile``: the trained runs Table 1, Figure 2 and PCD measure
    come from it. ``needed_by``: the table asking, named in a refusal of the grid (which names
    table3, a table the user did not run)."""
    try:
        return SPEC.grid(SPEC.resolve(profile))
    except UserError as exc:
        if needed_by is None:
            raise
        raise UserError(f"{needed_by} measures runs of Table 3's grid, which cannot run at this "
                        f"profile: {exc}") from None  # fmt: skip
