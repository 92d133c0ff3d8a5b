"""The words of a RULER length refused for a table's tasks, without the tasks' data: the window
named is the smallest one below the length the tasks need (a window of exactly that length
fits), the keys named are the table's own where its section sets them (PCD's own section),
else the profile's, and the advised length is the one that holds the tasks."""

from __future__ import annotations

from types import SimpleNamespace as NS

from longred_bench.reproduce.ruler_fit import none_fits, ruler_keys, too_short


def _ctx(table: str = "table3", **settings) -> NS:
    profile = NS(name="mine", source="/p/mine.yaml")
    return NS(table=table, settings=NS(**settings), profile=profile)


def test_the_smallest_window_below_the_tasks_need_is_named() -> None:
    ctx = _ctx(evaluation={})
    windows = {"pi:factor=4": 1024, "pi:factor=2": 512, "yarn:factor=8": 2048}
    said = none_fits(ctx, windows, 2048)
    assert said.startswith(
        "no RULER length fits pi:factor=2's 512-token window with these tasks "
        "(they need a RULER length of at least 2048 with this tokenizer)"
    )
    assert said.endswith("give runs.extensions a larger factor, or other evaluation.ruler.tasks")
    assert none_fits(ctx, {"pi:factor=4": 1024}, 1024) == ""
    assert "no RULER length holds them" in none_fits(ctx, {"pi:factor=4": 1024}, None)


def test_a_tables_own_keys_are_named() -> None:
    """PCD's lengths and tasks are its own section's; a table's own extensions and RULER tasks
    are named where it sets them."""
    assert ruler_keys(_ctx("pcd")) == ("tables.pcd.lengths", "tables.pcd.ruler_tasks")
    own = _ctx(evaluation={"ruler": {"tasks": ["longred_ruler_vt"]}}, extensions=["pi:factor=2"])
    assert ruler_keys(own) == ("evaluation.ruler.lengths", "tables.table3.evaluation.ruler.tasks")
    assert none_fits(own, {"pi:factor=2": 512}, 1024).endswith(
        "give tables.table3.extensions a larger factor, or other "
        "tables.table3.evaluation.ruler.tasks")  # fmt: skip
    assert ruler_keys(_ctx("table2")) is None


def test_a_length_too_short_advises_the_length_that_holds_the_tasks() -> None:
    ctx = _ctx(evaluation={"ruler": {"lengths": [256]}})
    err = str(too_short(ctx, ValueError("RULER at length 256: too short"), 1024, {"pi": 4096}))
    assert err == (
        "table3 cannot run at profile mine (/p/mine.yaml): tables.table3.evaluation.ruler.lengths:"
        " RULER at length 256: too short: give tables.table3.evaluation.ruler.lengths from that "
        "one on (e.g. tables.table3.evaluation.ruler.lengths: [1024]), or other "
        "evaluation.ruler.tasks")  # fmt: skip
    # a window below that length: no RULER length fits it, whatever the lengths
    err = str(too_short(ctx, ValueError("too short"), 1024, {"pi": 512}))
    assert "no RULER length fits pi's 512-token window" in err


def test_the_shortest_ruler_length_is_the_one_checked(monkeypatch) -> None:
    """Lengths 4096 and 512 where the tasks need 1024: the 512 is refused, whichever order the
    profile lists them in; from 1024 on they run."""
    import pytest

    import longred_bench.reproduce.ruler_fit as ruler_fit
    import longred_bench.taskdata.ruler.registry as registry
    from longred_bench.errors import UserError
    from longred_bench.taskdata.ruler.sizing import Misfit

    def fits_all(tasks, tokenizer, length, seed, **_) -> None:  # the tasks need 1000 tokens
        if length < 1000:
            raise Misfit(f"RULER at length {length}: {len(tasks)} task(s) need more tokens", 1000)

    monkeypatch.setattr(ruler_fit, "least_length", lambda *a, **k: (1024, "vt", ()))
    monkeypatch.setattr(ruler_fit, "tokenizer_at_hand", lambda *a, **k: object())
    monkeypatch.setattr(registry, "check_fits_all", fits_all)
    ctx = _ctx(evaluation={})
    for lengths in ([4096, 512], [512, 4096]):
        ruler = NS(tasks=("longred_ruler_vt",), lengths=lengths, phrasing="pins")
        grid = NS(evaluation=NS(ruler=ruler), model=f"pins-{lengths[0]}", extensions=[],
                  profile=NS(model=NS(window=8192)))  # fmt: skip
        with pytest.raises(UserError) as err:
            ruler_fit.check_tasks_fit(ctx, grid)
        assert ("evaluation.ruler.lengths: RULER at length 512: 1 task(s) need more tokens: "
                "give evaluation.ruler.lengths from that one on (e.g. evaluation.ruler.lengths: "
                "[1024])") in str(err.value)  # fmt: skip
    ruler = NS(tasks=("longred_ruler_vt",), lengths=[1024, 4096], phrasing="pins")
    grid = NS(evaluation=NS(ruler=ruler), model="pins-1024", extensions=[],
              profile=NS(model=NS(window=8192)))  # fmt: skip
    ruler_fit.check_tasks_fit(ctx, grid)
