"""One module per paper table or figure, the worker pool, and the ``reproduce`` dispatcher
(:mod:`longred_bench.reproduce.tables`). The names below are read by the command line's parser
without importing any table (``all``: every table of a profile)."""

TABLE_NAMES = (
    "all", "fig2", "fig3", "kernel", "linearard", "longrecipe", "pcd", "table1", "table10",
    "table2", "table3", "table4", "table5", "table6", "table7", "tiny_base",
)  # fmt: skip
DEFAULT_PROFILE = "smol"
