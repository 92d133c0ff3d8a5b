"""``reproduce pcd``'s plan and records without running a model: the profile checks of its
section, the dev grid, the setting chosen from the dev units' records (and the note while one
is missing), the evaluations each part asks for, and how PSA records are named by line.

Units are answered by a stand-in for the run cache: an evaluation scores ``10 * alpha`` per
item (greedy 0), so the largest strength wins the dev split; a PSA run gives one sample per
RoPE it measures.
"""

from __future__ import annotations

import pytest
from profile_helpers import ctx_of

from longred_bench.errors import UserError
from longred_bench.jobs.units import CachedUnit
from longred_bench.reproduce import pcd


def _answer(unit: CachedUnit) -> list[dict]:
    """A stand-in unit's records (see the module docstring)."""
    if unit.kind == "psa":
        return [{"kind": "psa_sample", "rope": rope} for rope in unit.config["psa"]["ropes"]]
    alpha = (unit.config.get("pcd") or {}).get("alpha", 0.0)
    return [{"kind": "eval_item", "metric": "score", "value": 10 * alpha}]


@pytest.fixture
def answered(monkeypatch):
    """Every ``pcd-`` unit answered by :func:`_answer`, except the folders listed in the set
    returned (missing from the cache)."""
    missing: set[str] = set()

    def cached(unit: CachedUnit):
        return None if unit.folder in missing else _answer(unit)

    monkeypatch.setattr(CachedUnit, "cached", cached)
    monkeypatch.setattr(CachedUnit, "run", lambda unit, progress=True, **kw: _answer(unit))
    monkeypatch.setattr(CachedUnit, "seconds", lambda unit: 1.5)
    return missing


# --- the profile's section ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ({"grid_alphas": [0.0, 1.0]}, "tables.pcd.grid_alphas"),
        ({"grid_alphas": []}, "tables.pcd.grid_alphas"),
        ({"grid_fractions": []}, "tables.pcd.grid_alphas"),
        ({"dev_seed": 0}, "tables.pcd.dev_seed"),
        ({"trained": [["cpt"]]}, "tables.pcd.trained"),
        ({"dev_lines": ["original", "pi:factor=9", "abf"]}, "tables.pcd.dev_lines"),
    ],
)
def test_a_section_the_table_cannot_run_is_refused_naming_its_key(section, key) -> None:
    """Greedy decoding (alpha 0) is the dev reference, never a candidate; an empty grid, a dev
    seed equal to the test seed 0, a trained entry that is not ``[row, extension]`` and a dev
    line the table does not have are refused, the key named."""
    with pytest.raises(UserError, match=f"cannot run at profile smoke .*: {key}: ") as exc:
        ctx_of("pcd", "smoke", **section)
    if key == "tables.pcd.dev_lines":
        assert "'abf' is not a line of the table" in str(exc.value)


def test_the_dev_grid_runs_each_strength_at_each_fraction_strength_first() -> None:
    """The grid takes PCD's fixed parameters but sets its own window rule: a fixed local window
    in the section gives way to the grid's fractions."""
    ctx = ctx_of("pcd", "smoke", grid_alphas=[1.0, 2.0], grid_fractions=[0.5, 0.125],
                 pcd={"local_window": 64, "beta": 0.2})  # fmt: skip
    grid = ctx.settings.grid()
    assert [(c.alpha, c.local_fraction) for c in grid] == [(1.0, 0.5), (1.0, 0.125), (2.0, 0.5),
                                                         (2.0, 0.125)]  # fmt: skip
    assert all(c.local_window is None and c.local_base is None and c.beta == 0.2 for c in grid)


# --- the dev split and the chosen setting ---------------------------------------------------------


def test_the_dev_units_are_greedy_and_every_grid_setting_on_the_dev_lines(answered) -> None:
    ctx = ctx_of("pcd", "smoke", dev_lines=[])  # every line
    steps = pcd._dev_steps(ctx)
    assert [s.label for s in steps] == [
        f"dev {line} {dec}" for line in ("original", "pi:factor=4")
        for dec in ("greedy", "pcd alpha=0.5 fraction=0.25", "pcd alpha=3 fraction=0.25")
    ]  # fmt: skip
    assert [(s.labels["alpha"], s.labels["local_fraction"]) for s in steps[:3]] == [
        (0.0, None), (0.5, 0.25), (3.0, 0.25)]  # fmt: skip
    first = steps[0].unit.config
    assert (first["seed"], first["lengths"], first["samples"]) == (1, [512], 1)
    assert "decoding" not in first and steps[1].unit.config["decoding"] == "pcd"


def test_the_setting_with_the_best_dev_score_is_chosen_once_every_dev_unit_is_in(answered) -> None:
    ctx = ctx_of("pcd", "smoke")
    assert pcd.chosen(ctx).alpha == 3.0 and pcd._note(ctx) is None
    answered.add(pcd._dev_steps(ctx)[-1].unit.folder)  # the last dev unit not yet run
    assert pcd.chosen(ctx) is None
    assert pcd._note(ctx) == (
        "then the test split, once the dev grid is measured: 8 evaluations and 2 PSA "
        "measurements with greedy decoding and the chosen PCD setting")  # fmt: skip
    assert not [s for s in pcd._steps(ctx) if s.labels and s.labels["part"] != "dev"]


def test_the_test_units_run_the_chosen_setting_on_the_test_seed(answered) -> None:
    ctx = ctx_of("pcd", "smoke")
    test = [s for s in pcd._steps(ctx) if s.labels["part"] != "dev"]
    evals = {s.label: s.unit.config for s in test if s.unit.kind == "eval"}
    assert sorted(evals) == sorted(
        f"{line} {part} {dec}"
        for line in ("original", "pi:factor=4")
        for part in ("ruler", "short")
        for dec in ("greedy", "pcd")
    )
    assert all(c["seed"] == 0 for c in evals.values())
    ruler = evals["original ruler pcd"]
    assert (ruler["rope"], ruler["lengths"], ruler["samples"]) == (None, [512, 1024], 2)
    assert ruler["pcd"]["alpha"] == 3.0 and "decoding" not in evals["original ruler greedy"]
    short = evals["pi:factor=4 short greedy"]
    assert (short["rope"], short["max_length"], short["limit"]) == ("pi:factor=4", 256, 4)
    psa = [s for s in test if s.unit.kind == "psa"]
    assert [s.label for s in psa] == ["psa greedy", "psa pcd"]
    assert [s.unit.config["pcd"] and s.unit.config["pcd"]["alpha"] for s in psa] == [None, 3.0]


def test_psa_records_are_named_by_line_and_decoding(answered) -> None:
    """The profile's extensions share one PSA run: each sample is named by its RoPE's line, the
    PCD run's with ``+pcd``; every record carries its unit and compute time."""
    ctx = ctx_of("pcd", "smoke")
    records = pcd._records(ctx)
    psa = [(r["line"], r["extension"]) for r in records if r["part"] == "psa"]
    assert psa == [("original", "original"), ("pi:factor=4", "pi:factor=4"),
                   ("original", "original +pcd"), ("pi:factor=4", "pi:factor=4 +pcd")]  # fmt: skip
    assert all(r["unit_seconds"] == 1.5 and r["unit"].startswith("pcd-smoke-") for r in records)
    dev = [r for r in records if r["part"] == "dev"]
    assert [r["alpha"] for r in dev] == [0.0, 0.5, 3.0]


def test_a_trained_line_waits_for_its_run_and_has_a_psa_run_of_its_own(answered) -> None:
    """A trained checkpoint's line is evaluated from its run's ``final`` folder at its saved
    RoPE, every unit of it after the run; its PSA run is its own, named by its line."""
    line = "cpt abf:theta=1e5"
    ctx = ctx_of("pcd", "smoke", ropes=["pi:factor=4"], trained=[["cpt", "abf:theta=1e5"]],
                 dev_lines=[line])  # fmt: skip
    train, *steps = pcd._steps(ctx)
    assert (train.label, train.unit.kind, train.labels) == (f"train {line} seed 0", "train", None)
    final = str(train.unit.dir / "final")
    mine = [s for s in steps if s.labels["line"] == line]
    assert {s.labels["part"] for s in mine} == {"dev", "ruler", "short", "psa"}
    assert all(s.after == (train.key,) for s in mine)
    assert all(s.after == () for s in steps if s not in mine)
    assert all(s.unit.config["model"] == final and s.unit.config["rope"] is None
               for s in mine if s.unit.kind == "eval")  # fmt: skip
    psa = [s for s in mine if s.unit.kind == "psa"]
    assert [s.label for s in psa] == [f"psa {line} greedy", f"psa {line} pcd"]
    assert all(s.unit.config["psa"]["models"] == [final] for s in psa)
    records = [r for r in pcd._records(ctx) if r["part"] == "psa"]
    assert [(r["line"], r["extension"]) for r in records] == [
        ("pi:factor=4", "pi:factor=4"), ("pi:factor=4", "pi:factor=4 +pcd"),
        (line, line), (line, f"{line} +pcd")]  # fmt: skip
    answered.add(steps[0].unit.folder)
    assert "8 evaluations and 4 PSA measurements" in pcd._note(ctx)


def test_a_trained_lines_units_keep_their_folders_when_the_cache_moves(tmp_path, monkeypatch):
    """A trained checkpoint's units name its folder inside the cache; the cache moved elsewhere
    (its recorded key root with it) still holds them under the same keys. Evaluations cost 0.4
    of a training run in the worker pool, PSA runs 0.8."""
    import json

    section = {"ropes": [], "trained": [["cpt", "abf:theta=1e5"]], "dev_lines": []}
    first = tmp_path / "a"
    (first / "runs").mkdir(parents=True)
    (first / "runs" / ".key-root").write_text(json.dumps({"root": str(first)}))

    def planned() -> list[str]:
        ctx = ctx_of("pcd", "smoke", **section)
        steps = [*pcd._dev_steps(ctx), *pcd._test_steps(ctx, ctx.settings.grid()[0])]
        assert {(s.unit.kind, s.cost) for s in steps} == {("eval", 0.4), ("psa", 0.8)}
        psa = [s.labels["line"] for s in steps if s.unit.kind == "psa"]
        assert psa == ["cpt abf:theta=1e5"] * 2  # no PSA run of the profile's model: no RoPEs
        return [s.key for s in steps]

    monkeypatch.setenv("LONGRED_CACHE", str(first))
    before = planned()
    monkeypatch.setenv("LONGRED_CACHE", str(first.rename(tmp_path / "b")))
    assert planned() == before
