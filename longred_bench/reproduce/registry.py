"""Every table and figure ``reproduce`` makes, one line each: its name and the module attribute
that holds its :class:`~longred_bench.reproduce.spec.TableSpec`. The order is ``reproduce
all``'s (Table 3 first: the other training tables reuse its runs). Reading the names imports no
table, so the command line's choices and the nox sessions answer at once."""

from __future__ import annotations

from typing import Any

TABLES = {
    "table3": "longred_bench.reproduce.table3:SPEC",
    "table2": "longred_bench.reproduce.table2:SPEC",
    "table4": "longred_bench.reproduce.ablations:TABLE4",
    "table5": "longred_bench.reproduce.ablations:TABLE5",
    "table6": "longred_bench.reproduce.ablations:TABLE6",
    "table7": "longred_bench.reproduce.table7:SPEC",
    "table10": "longred_bench.reproduce.table10:SPEC",
    "linearard": "longred_bench.reproduce.linearard:SPEC",
    "longrecipe": "longred_bench.reproduce.longrecipe:SPEC",
    "fig2": "longred_bench.reproduce.fig2:SPEC",
    "fig3": "longred_bench.reproduce.fig3:SPEC",
    "table1": "longred_bench.reproduce.table1:SPEC",
    "tiny_base": "longred_bench.reproduce.tiny_base:SPEC",
    "pcd": "longred_bench.reproduce.pcd:SPEC",
    "kernel": "longred_bench.reproduce.kernel:SPEC",
}


def table_names() -> tuple[str, ...]:
    """Every table, in ``reproduce all``'s order."""
    return tuple(TABLES)


def all_tables(profile: Any) -> list[str]:
    """The tables ``reproduce all`` makes at ``profile``: every one, but ``tiny_base`` at a
    profile of the user's own (not built in) whose model is not tiny-base: that report is about
    the suite's own model, whatever the profile, and building it takes 15 minutes (``reproduce
    tiny_base --profile P`` still makes it)."""
    from longred_bench.profiles import BUILTIN

    own_model = profile.name not in BUILTIN and profile.model.name != "tiny-base"
    return [t for t in TABLES if not (t == "tiny_base" and own_model)]


def get_spec(name: str) -> Any:
    """The spec of table ``name`` (a one-line error naming the tables if there is none)."""
    import importlib

    from longred_bench.errors import UserError

    if name not in TABLES:
        raise UserError(f"unknown table {name!r}; tables: {', '.join(TABLES)}")
    module, _, attr = TABLES[name].partition(":")
    return getattr(importlib.import_module(module), attr)
