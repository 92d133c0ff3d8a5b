"""The runs ``reproduce table3`` declares (the run grid of ``longred_bench.reproduce.grid`` at
the profile files' settings): seeds per row at every extension, control once per seed, seed 0's
config independent of the seed count."""

from __future__ import annotations

import pytest
from profile_helpers import ctx_of, grid_of

from longred_bench.errors import UserError
from longred_bench.reproduce.grid import TrainedRow, eval_units, trained_rows


def test_tiny_trains_three_seeds_of_every_verdict_row_at_every_extension():
    from collections import Counter

    from longred_bench.reproduce.table3 import VERDICT_ROWS

    grid = grid_of("table3")
    runs = trained_rows(grid)
    assert len(runs) == len(set(runs)) == 29  # 3 control + 2 x (4 x 3 + 1)
    seeds = Counter((r.row, r.extension) for r in runs)
    for ext in grid.extensions:
        for row in VERDICT_ROWS:
            if row != "control":
                got = sorted(r.seed for r in runs if (r.row, r.extension) == (row, ext))
                assert got == [0, 1, 2], (row, ext)
        assert seeds[("linearard", ext)] == 1
    assert [r for r in runs if r.row == "linearard"] == [
        TrainedRow("linearard", ext, 0) for ext in grid.extensions
    ]
    # control keeps the original RoPE: trained once per seed, shared by the extensions.
    assert sorted(r.seed for r in runs if r.row == "control") == [0, 1, 2]
    assert {r.extension for r in runs if r.row == "control"} == {None}
    # Seed 0 of every row comes first: the first runs make a complete single-seed table.
    first = runs[: 1 + len(grid.extensions) * (len(grid.rows) - 1)]
    assert {r.seed for r in first} == {0}


def test_smoke_trains_one_seed_per_row():
    assert trained_rows(grid_of("table3", "smoke")) == [
        TrainedRow("control", None, 0),
        TrainedRow("cpt", "abf:theta=1e5", 0),
        TrainedRow("longred-c", "abf:theta=1e5", 0),
    ]


def test_seed_zero_config_does_not_depend_on_the_seed_count():
    three, single = grid_of("table3"), grid_of("table3", seeds=1)
    assert single.seeds["cpt"] == 1 and three.seeds["cpt"] == 3
    for row in ("cpt", "longred-c", "linearard"):
        run = TrainedRow(row, "abf:theta=2e6", 0)
        assert run.config(three).to_dict() == run.config(single).to_dict()
    assert TrainedRow("cpt", "abf:theta=2e6", 1).config(three).seed == 1
    with pytest.raises(UserError, match=r"tables.table3.seeds: row 'linear' is not a row"):
        grid_of("table3", seeds={"linear": 2})
    with pytest.raises(UserError, match="at least one seed"):
        grid_of("table3", seeds={"cpt": 0})


def test_tiny_trains_every_row_on_d1_with_retrieval_and_scores_heldout_ruler():
    """Every trained row of the tiny table sees the same D1 (prose plus retrieval rows at the
    long length); RULER is asked in the held-out phrasing, and the smoke profile's RULER unit
    keeps RULER's own strings (and so its earlier cache key)."""
    grid = grid_of("table3")
    for run in trained_rows(grid):
        cfg = run.config(grid)
        assert (cfg.long_data, cfg.retrieval_fraction) == ("austen+kjv+retrieval", 0.3), run
    ruler = [u for u in eval_units(grid, "tiny-base", None, None) if u["suite"] == "ruler"]
    assert [u["phrasing"] for u in ruler] == ["heldout"]
    smoke = grid_of("table3", "smoke")
    smoke_ruler = [u for u in eval_units(smoke, "tiny-random", None, None) if u["suite"] == "ruler"]
    assert "phrasing" not in smoke_ruler[0] and "tasks" not in smoke_ruler[0]


def test_the_prose_d1_variant_trains_on_the_recipes_own_long_data():
    """``--d1 prose``: every trained row on Austen + KJV prose only (the recipes' own D1), in run
    configs of their own; evaluations unchanged; an unknown variant is a one-line error."""
    from dataclasses import replace

    from longred_bench.reproduce.engine import reproduce
    from longred_bench.reproduce.table3 import SPEC

    ctx = ctx_of("table3")
    tiny, prose = SPEC.grid(ctx), SPEC.grid(replace(ctx, options={"d1": "prose"}))
    assert prose.overrides == {} and prose.evaluation == tiny.evaluation
    for run in trained_rows(prose):
        assert run.config(prose).long_data == "austen+kjv", run
        assert run.config(prose) != run.config(tiny)
    with pytest.raises(UserError, match="unknown --d1 'code'"):
        reproduce("table3", "tiny", d1="code", dry_run=True)


def test_d1_is_refused_for_other_tables(capsys):
    from longred_bench.cli import main

    assert main(["reproduce", "tiny_base", "--profile", "tiny", "--d1", "prose"]) == 2
    err = capsys.readouterr().err
    assert "--d1 applies to table3 only" in err and err.count("\n") == 1


def test_an_extension_with_a_shorter_window_trains_and_is_scored_inside_it(monkeypatch, tmp_path):
    """PI x2 of tiny-base (window 512) trains at 512 tokens, not the recipes' 1,024, and its rows
    are scored on RULER at 512 only; ABF x4 keeps 1,024 and both lengths; the original model is
    scored at every length. Planning reads the window from the profile: nothing is built."""
    from longred_bench.reproduce.grid import extension_window, ruler_lengths_for
    from longred_bench.taskdata.ruler.registry import PHRASED_TASKS

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    grid = grid_of("table3")
    assert grid.extensions == ("abf:theta=2e6", "pi:factor=2")
    assert extension_window(grid, "pi:factor=2") == 512
    assert extension_window(grid, "abf:theta=2e6") == 1024
    for row in ("cpt", "mix-cpt", "longred-c", "linearard"):
        assert TrainedRow(row, "pi:factor=2", 0).config(grid).long_len == 512, row
        assert TrainedRow(row, "abf:theta=2e6", 0).config(grid).long_len == 1024, row
    assert TrainedRow("control", None, 0).config(grid).long_len == 256
    assert not (tmp_path / "models").exists()  # tiny-base was not built to plan
    assert ruler_lengths_for(grid, "pi:factor=2") == [512]
    assert ruler_lengths_for(grid, "abf:theta=2e6") == [512, 1024]
    assert ruler_lengths_for(grid, None) == [512, 1024]
    ruler = [u for u in eval_units(grid, "m", None, "pi:factor=2") if u["suite"] == "ruler"]
    assert ruler[0]["lengths"] == [512]
    assert ruler[0]["tasks"] == [f"longred_ruler_{t}" for t in PHRASED_TASKS]
    # the key the lengths came from (the table's own here), and a value that fits
    with pytest.raises(
        UserError, match=r"tables\.table3\.evaluation\.ruler\.lengths: no length of 2048 fits "
        r"abf:theta=2e6.s 1024-token window; give one of at most 1024, e\.g\. "
        r"tables\.table3\.evaluation\.ruler\.lengths: \[512\]"  # pi x2's fits all
        r"( if it holds the tasks \(`longred-bench models --model tiny-base` prints .*\))?$"
    ):  # fmt: skip
        grid_of("table3", evaluation={"ruler": {"lengths": [2048]}})
