"""The run grid's units and refusals (:mod:`longred_bench.reproduce.grid`): the keys an
evaluation config gains only away from the defaults (backend, phrasing, task lists), the
perplexity unit beside them, the seeds a grid trains, LongRecipe's replay budget and its share
of the window, and the one-line refusals of a grid the profile cannot train."""

from __future__ import annotations

import dataclasses

import pytest
from profile_helpers import ctx_of, grid_of

from longred_bench.errors import UserError
from longred_bench.reproduce.grid import (
    TrainedRow,
    at_original_window,
    base_steps,
    eval_unit,
    eval_units,
    grid_steps,
    lite_budget,
    merge_source,
    replay_within_budget,
    row_steps,
    trained_rows,
    within_share,
)


def _evaluation(grid, **parts):
    """``grid`` with its evaluation's sections replaced (``ruler={...}``, ``backend=...``)."""
    ev = grid.evaluation
    changes = {k: dataclasses.replace(getattr(ev, k), **v) if isinstance(v, dict) else v
               for k, v in parts.items()}  # fmt: skip
    return dataclasses.replace(grid, evaluation=dataclasses.replace(ev, **changes))


def test_default_evaluation_units_keep_their_earlier_keys() -> None:
    """The hf backend, standard phrasing and no task lists add no key: cached units stay."""
    grid = grid_of("table3", "smoke")
    short, ruler = eval_units(grid, "m", None, grid.extensions[0])
    assert set(short) == {"model", "base", "rope", "batch_size", "device", "seed",
                          "item_scores", "suite", "limit", "max_length"}  # fmt: skip
    assert set(ruler) == {"model", "base", "rope", "batch_size", "device", "seed",
                          "item_scores", "suite", "lengths", "samples"}  # fmt: skip


def test_evaluation_units_name_a_backend_phrasing_and_tasks_other_than_the_defaults() -> None:
    """Another backend, phrasing or task list is a key of the units it changes."""
    grid = _evaluation(grid_of("table3", "smoke"), backend="vllm",
                       ruler={"phrasing": "paraphrase", "tasks": ("vt",)},
                       short={"tasks": ("a", "b")})  # fmt: skip
    short, ruler = eval_units(grid, "m", "abf:theta=1e5", grid.extensions[0])
    assert short["backend"] == ruler["backend"] == "vllm"
    assert short["tasks"] == ["a", "b"] and "phrasing" not in short
    assert ruler["tasks"] == ["vt"] and ruler["phrasing"] == "paraphrase"


def test_a_perplexity_unit_runs_at_the_longest_ruler_length_on_any_backend() -> None:
    """Where the profile names a perplexity corpus, a third unit: kind ``ppl``, no item scores,
    no backend key, at the longest RULER length of the extension."""
    grid = _evaluation(grid_of("table3", "smoke"), backend="vllm",
                       ruler={"lengths": (256, 1024, 512)},
                       ppl={"corpus": "austen", "windows": 3})  # fmt: skip
    _short, ruler, ppl = eval_units(grid, "m", None, None)
    assert ppl["suite"] == "ppl" and ppl["lengths"] == [1024] and ppl["samples"] == 3
    assert ppl["corpus"] == "austen" and ppl["item_scores"] is False and "backend" not in ppl
    assert eval_unit(ppl).kind == "ppl" and eval_unit(ruler).kind == "eval"


def test_rows_outside_the_comparison_train_one_seed_and_control_trains_its_own() -> None:
    """A profile's seed count goes to the compared rows; another row gets one, and ``control``
    (the original RoPE) trains each of its seeds once, whatever the other rows' count."""
    grid = grid_of("table3", "smoke", seeds={"cpt": 2})
    assert grid.seed_count("cpt") == 2 and grid.seed_count("longred-c") == 1
    runs = [(r.row, r.extension, r.seed) for r in trained_rows(grid)]
    ext = grid.extensions[0]
    assert runs == [("control", None, 0), ("cpt", ext, 0), ("longred-c", ext, 0),
                    ("cpt", ext, 1)]  # fmt: skip
    counted = grid_of("table3", "smoke", rows=["cpt", "linearard"], seeds=2)
    assert counted.seeds == {"cpt": 2} and counted.seed_count("linearard") == 1


@pytest.mark.parametrize(
    ("section", "key", "message"),
    [
        ({"seeds": 0}, "tables.table3.seeds", "a row needs at least one seed"),
        ({"extensions": []}, "runs.extensions", "a training table needs at least one extension"),
    ],
)
def test_a_grid_that_cannot_train_is_refused_naming_the_key(section, key, message) -> None:
    """No seed or no extension: one line naming the table, profile and key."""
    with pytest.raises(UserError, match=rf"^table3 cannot run at profile smoke .*{key}: {message}"):
        grid_of("table3", "smoke", **section)


def test_a_null_override_gives_up_an_inherited_one() -> None:
    """``null`` under a table's overrides drops the profile's value: the grid trains without
    that key, not with ``None``."""
    assert grid_of("table3", "smoke").overrides == {"steps": 2}
    assert grid_of("table3", "smoke", overrides={"steps": None}).overrides == {}


def test_longrecipes_replay_takes_a_quarter_of_the_steps_within_the_budget() -> None:
    """The last quarter of the steps (at least one) replays original-window text, each stage
    at twice the tokens a step; fewer than two steps cannot be split."""
    cfg = TrainedRow("longrecipe", "abf:theta=1e5", 0).config(grid_of("longrecipe", "smoke"))
    eight = replay_within_budget(cfg.replace(steps=8, replay_steps=0))
    assert (eight.steps, eight.replay_steps) == (6, 2)
    assert eight.tokens_per_step == 2 * cfg.tokens_per_step
    two = replay_within_budget(cfg.replace(steps=2, replay_steps=0))
    assert (two.steps, two.replay_steps) == (1, 1)
    with pytest.raises(UserError, match="needs steps >= 2, got 1"):
        replay_within_budget(cfg.replace(steps=1))


def test_a_longrecipe_length_beyond_its_own_window_takes_the_default_share() -> None:
    """A profile ``long_len`` at or past the window its own RoPE gives is no share: 0.3."""
    spec = ctx_of("longrecipe", "smoke").profile.source
    over = {"rope": "pi:factor=2", "long_len": 512, "model": "tiny-random"}
    assert within_share("longrecipe", spec, over, 256) == 0.3
    assert within_share("longrecipe", spec, {**over, "long_len": 128}, 256) == 0.25
    assert within_share("cpt", spec, over, 256) is None


def test_only_original_window_recipes_are_cut_to_the_models_window() -> None:
    """``cpt`` trains at its long length whatever the model's window; ``control`` does not."""
    grid = grid_of("table3", "smoke")
    cfg = TrainedRow("cpt", grid.extensions[0], 0).config(grid)
    assert at_original_window(cfg.replace(long_len=1024), 256).long_len == 1024
    control = TrainedRow("control", None, 0).config(grid)
    assert at_original_window(control.replace(long_len=1024), 256).long_len == 256


def test_a_merge_row_needs_an_extension() -> None:
    """A merge interpolates with a trained model's RoPE: at the original RoPE it is refused."""
    with pytest.raises(UserError, match="a merge row needs an extension"):
        merge_source(TrainedRow("merge", None, 0))


def test_the_base_model_is_scored_as_it_is_then_zero_shot_at_each_extension() -> None:
    """The base model's rows: original first, then each extension in the grid's order."""
    grid = grid_of("table3", "smoke", extensions=["abf:theta=1e5", "pi:factor=4"])
    assert [s.label for s in base_steps(grid)] == [
        "eval original short_tiny", "eval original ruler",
        "eval zero-shot abf:theta=1e5 short_tiny", "eval zero-shot abf:theta=1e5 ruler",
        "eval zero-shot pi:factor=4 short_tiny", "eval zero-shot pi:factor=4 ruler",
    ]  # fmt: skip


def test_control_is_trained_once_and_scored_at_every_extension() -> None:
    """``control`` keeps the original RoPE: one run, its checkpoint in every extension's rows."""
    grid = grid_of("table3", "smoke", extensions=["abf:theta=1e5", "pi:factor=4"])
    steps = row_steps(grid, TrainedRow("control", None, 0))
    assert [s.label for s in steps] == [
        "train control original RoPE seed 0",
        "eval control abf:theta=1e5 seed 0 short_tiny", "eval control abf:theta=1e5 seed 0 ruler",
        "eval control pi:factor=4 seed 0 short_tiny", "eval control pi:factor=4 seed 0 ruler",
    ]  # fmt: skip
    assert {s.labels["extension"] for s in steps[1:]} == {"abf:theta=1e5", "pi:factor=4"}


def test_only_a_merge_run_is_listed_again_once_its_source_is_trained() -> None:
    """A merge's key names its source run's checkpoint: its training step is relisted."""
    steps = [s for s in grid_steps(grid_of("table7", "smoke")) if s.labels is None]
    relisted = [s.label.split()[1] for s in steps if s.relisted]
    assert relisted == ["merge"] and len(steps) == 4


def test_longrecipes_rows_carry_its_anchors_with_the_runs_data_settings() -> None:
    """Each evaluation names its run's data settings; LongRecipe's also its anchors."""
    extras = {s.label.split()[1]: s.train_extra for s in grid_steps(grid_of("longrecipe", "smoke"))
              if s.train}  # fmt: skip
    assert set(extras["cpt"]) == {"long_data", "retrieval_fraction", "long_len", "short_len"}
    assert set(extras["longrecipe"]) == {*extras["cpt"], "anchors"}


def test_linearards_lite_budget_keeps_at_least_one_step() -> None:
    """A budget too small to divide still trains: one step at a 16th of the tokens a step."""
    grid = grid_of("linearard", "smoke")
    cfg = TrainedRow("linearard", grid.extensions[0], 0).config(grid)
    lite = lite_budget(cfg.replace(steps=3), 256, 1)
    assert lite.steps == 1 and lite.tokens_per_step == cfg.tokens_per_step // 16
