"""``reproduce longrecipe``: LongRecipe against PoSE, RPES and full-length CPT at one extension
where full-length training is affordable: ``cpt`` (full-length training; Table 3's runs where
the extension is Table 3's), ``rpes`` and ``pose`` (samples of the original window, position ids
spread over the target window), ``longrecipe`` (samples of about 30% of the target window from
sentence-selected text with its anchor types measured for the run's own model, sentence-gap
position ids, replay and the 50/50 merge) and ``longrecipe-digit`` (the released code's
selection: sentences holding a digit; in no verdict, one seed). At ``tiny`` and ``smol`` every
row trains the same steps on the same token budget per step (LongRecipe's replay is the last
quarter of its steps: :func:`~longred_bench.reproduce.grid.replay_within_budget`) on the same
long data; the ``paper*`` profiles give LongRecipe its own paper's budget. The tokens each row
counted are in the report, and (R1) states LongRecipe's over CPT's."""

from __future__ import annotations

from longred_bench.reproduce.grid import grid_spec

COMPARED = ("cpt", "rpes", "pose", "longrecipe")
ROWS = (*COMPARED, "longrecipe-digit")
SPEC = grid_spec(
    "longrecipe", "LongRecipe against PoSE, RPES and full-length CPT", ROWS,
    COMPARED, "longred_bench.reports.longrecipe_report:build_longrecipe",
)  # fmt: skip
