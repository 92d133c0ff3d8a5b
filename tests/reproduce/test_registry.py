"""One table registry: every table is one entry naming its module's spec; the command line's
choices, the nox sessions, ``longred-bench profiles`` and the dispatcher read it."""

from __future__ import annotations

import pytest

from longred_bench.errors import UserError
from longred_bench.profiles import BUILTIN, load_profile
from longred_bench.reproduce.registry import TABLES, get_spec, table_names


def test_every_entry_is_the_spec_of_its_name() -> None:
    for name in table_names():
        spec = get_spec(name)
        assert spec.name == name and spec.title and callable(spec.steps)
        assert (spec.build is None) != (spec.write is None), name  # one way to write it


def test_the_command_line_offers_the_registry() -> None:
    from longred_bench.cli import build_parser

    parser = build_parser()
    choices = parser._subparsers._group_actions[0].choices["reproduce"]._actions[1].choices
    assert tuple(choices) == ("all", *TABLES)
    with pytest.raises(UserError, match="unknown table 'table99'; tables: table3, table2"):
        get_spec("table99")


def test_the_nox_sessions_are_the_registry() -> None:
    from script_loader import load_noxfile

    assert load_noxfile()._table_names() == list(TABLES)


def test_every_table_runs_at_every_builtin_profile() -> None:
    """No table refuses a built-in profile; ``profiles`` lists them all."""
    from longred_bench.reproduce.profile_views import profiles_table, table_support

    for name in BUILTIN:
        assert table_support(load_profile(name)) == dict.fromkeys(TABLES), name
    text = profiles_table()
    assert all(f"| {name} |" in text for name in BUILTIN)
    # the tables named once, each profile's cell saying it runs them all
    assert text.count(", ".join(TABLES)) == 1
    assert text.count(" | every table |") == len(BUILTIN)


def test_the_profiles_listing_names_what_a_profile_cannot_run(monkeypatch) -> None:
    """A profile that a table refuses lists the tables it runs instead of "every table"."""
    from longred_bench.reproduce import profile_views

    def support(prof):
        return {t: ("refused" if prof.name == "tiny" and t == "kernel" else None) for t in TABLES}

    monkeypatch.setattr(profile_views, "table_support", support)
    rows = {r.split(" | ")[0].strip("| "): r for r in profile_views.profiles_table().splitlines()}
    assert rows["tiny"].endswith(f" | {', '.join(t for t in TABLES if t != 'kernel')} |")
    assert rows["smol"].endswith(" | every table |")
