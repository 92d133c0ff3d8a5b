"""The dry-run's estimate of an evaluation that is not cached: from the same evaluation cached at
another size (RULER's ``samples``, the short suite's ``limit``), per item; else from its suite's
recorded times in the plan, per item; else a third of a CPT run, which the plan calls a guess.
Times under a minute read in seconds."""

from __future__ import annotations

import json

from longred_bench.cli import main
from longred_bench.reproduce.plan import GUESS, PlannedUnit, estimate
from longred_bench.reproduce.pool import duration, hours_text


def _cache_original_ruler(monkeypatch, seconds: float) -> None:
    """Table 2's RULER evaluation of the original model at profile smoke (1 sample per task),
    cached with a recorded time of ``seconds``."""
    import longred_bench.jobs.unit_compute as unit_compute
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.registry import get_spec

    record = {"kind": "eval", "task": "niah_single_1", "metric": "acc", "value": 1.0}
    monkeypatch.setattr(unit_compute, "run_eval_unit", lambda unit, progress, **_: [dict(record)])
    spec = get_spec("table2")
    ctx = spec.resolve(load_profile("smoke"), progress=False)
    (step,) = [s for s in spec.steps(ctx) if s.label == "eval original ruler"]
    step.unit.run(progress=False)
    (step.unit.dir / "timing.json").write_text(json.dumps({"seconds": seconds}))


def _table2_plan(tmp_path, capsys, name: str, profile: str) -> str:
    """``reproduce table2 --dry-run`` at the profile file ``name.yaml`` holding ``profile``."""
    path = tmp_path / f"{name}.yaml"
    path.write_text(profile)
    assert main(["reproduce", "table2", "--profile", str(path), "--dry-run"]) == 0
    return capsys.readouterr().out


def test_an_evaluation_at_more_samples_is_estimated_from_itself_at_fewer(
    tmp_path, monkeypatch, capsys
) -> None:
    """``evaluation.ruler.samples`` 1 -> 2 estimated each RULER evaluation at 0.0 min (a third
    of smoke's seconds-long CPT run) beside 0.4 min measured at 1 sample; it took 1.3 min."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    _cache_original_ruler(monkeypatch, 30.0)
    out = _table2_plan(
        tmp_path, capsys, "two", "extends: smoke\nevaluation: {ruler: {samples: 2}}\n"
    )
    assert "to run  eval original ruler  (1.0 min)\n" in out  # twice the 30 s at 1 sample
    # the zero-shot model's evaluation has no measure of its own: the run cache's RULER
    # evaluation of the same model, of its tasks and lengths, per item
    assert "to run  eval zero-shot abf:theta=1e5 ruler  (1.0 min)\n" in out


def test_a_suites_recorded_times_count_per_item() -> None:
    units = [
        PlannedUnit("r1", "eval ruler", "eval", True, 40.0, suite="ruler", items=1),
        PlannedUnit("r2", "eval ruler", "eval", True, 80.0, suite="ruler", items=2),
        PlannedUnit("r3", "eval ruler", "eval", False, None, suite="ruler", items=4),
        PlannedUnit("r4", "eval ruler", "eval", False, None, suite="ruler", items=4, per_item=5.0),
    ]
    got = {u.key: (u.seconds, u.basis) for u in estimate(units)}
    assert got["r3"] == (160.0, "suite")  # 40 s per item, 4 items
    assert got["r4"] == (20.0, "other sizes")  # its own rate first


def test_an_evaluation_with_nothing_of_its_suite_cached_is_called_a_guess(
    tmp_path, monkeypatch, capsys
) -> None:
    import longred_bench.reproduce.plan as plan

    units = [
        PlannedUnit("t", "train cpt seed 0", "train", True, 3.0, "cpt", 1000),
        PlannedUnit("m1", "train merge a", "train", False, None, "merge"),
        PlannedUnit("m2", "train merge b", "train", False, None, "merge"),
        PlannedUnit("r", "eval zero-shot ruler", "eval", False, None, suite="ruler"),
    ]
    assert {u.key: u.basis for u in estimate(units)}["r"] == GUESS
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(plan, "planned_units", lambda ctx: units)
    assert main(["reproduce", "table2", "--profile", "smoke", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert (
        "to run  eval zero-shot ruler  (1.2 s, a rough guess: a third of a CPT run, no ruler "
        "evaluation in the run cache)" in out
    )
    assert "about 3.2 s of compute" in out  # two merges of a second: it read 0.0 min
    assert (
        "; 1 unit(s) with nothing of their suite and model in the run cache are such "
        "guesses, rough ones" in out
    )
    drift = PlannedUnit("d", "drift pi:factor=2", "drift", False, None, suite="drift")
    monkeypatch.setattr(plan, "planned_units", lambda ctx: [*units, drift])
    assert main(["reproduce", "table2", "--profile", "smoke", "--dry-run"]) == 0
    assert "a rough guess: a third of a CPT run, no drift measurement in the run cache)" in (
        capsys.readouterr().out
    )


def test_no_guess_is_said_beside_a_gpu_estimate(tmp_path, monkeypatch, capsys) -> None:
    """GPU-hours come from the FLOP model, not from the third of a CPT run: "(0.50 GPU-h, 10.0
    GiB per GPU, a guess: ...)" read as if the GPU figure were the guess."""
    import longred_bench.reproduce.plan as plan
    from longred_bench.reproduce.costs import UnitCost

    cost = UnitCost(flops=1e15, gpu_hours=0.5, gib_per_gpu=10.0)
    units = [PlannedUnit("t", "train cpt seed 0", "train", True, 3.0, "cpt", 1000),
             PlannedUnit("r", "eval zero-shot ruler", "eval", False, None, suite="ruler",
                         cost=cost)]  # fmt: skip
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(plan, "planned_units", lambda ctx: units)
    assert main(["reproduce", "table2", "--profile", "smoke", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "eval zero-shot ruler" in out and "a guess" not in out


def test_durations_under_a_minute_are_seconds() -> None:
    assert [duration(s) for s in (None, 0.44, 5.7, 59.9, 60.0, 90.0)] == [
        "unknown", "0.4 s", "5.7 s", "59.9 s", "1.0 min", "1.5 min"]  # fmt: skip


def test_gpu_hours_that_would_read_0_read_under_the_last_digit() -> None:
    """A small model's GPU plan said 0.00 GPU-h for every unit and 0.0 GPU-hours in all."""
    assert [hours_text(h, 2, "GPU-h") for h in (0.0, 0.004, 0.005, 1.234)] == [
        "0 GPU-h", "under 0.01 GPU-h", "0.01 GPU-h", "1.23 GPU-h"]  # fmt: skip
    assert hours_text(0.04, 1, "GPU-hours") == "under 0.1 GPU-hours"
    from types import SimpleNamespace as NS

    from longred_bench.reproduce.plan import _gpu, gpu_totals

    cost = NS(gpu_hours=0.003, gib_per_gpu=1.0, host_gib_per_gpu=0.0)
    assert _gpu(cost) == "under 0.01 GPU-h, 1.0 GiB per GPU"
    units = [PlannedUnit("e", "eval", "eval", False, None, cost=cost)]
    hw = NS(nproc_per_node=1, gpu_memory_gib=80.0)
    assert gpu_totals(units, hw).startswith("under 0.1 GPU-hours (under 0.1 h on 1 GPU)")


def test_the_other_size_rate_is_per_item_and_ignores_the_codes_hash(
    tmp_path, monkeypatch, capsys
) -> None:
    """RULER cached at 2 samples in 30 s (by an older version of the code: its stored ``code``
    differs) estimates the same evaluation at 4 samples at 15 s per item: 1.0 min."""
    import longred_bench.jobs.unit_compute as unit_compute
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.registry import get_spec

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    record = {"kind": "eval", "task": "niah_single_1", "metric": "acc", "value": 1.0}
    monkeypatch.setattr(unit_compute, "run_eval_unit", lambda unit, progress, **_: [dict(record)])
    two, four = tmp_path / "two.yaml", tmp_path / "four.yaml"
    two.write_text("extends: smoke\nevaluation: {ruler: {samples: 2}}\n")
    four.write_text("extends: smoke\nevaluation: {ruler: {samples: 4}}\n")
    spec = get_spec("table2")
    ctx = spec.resolve(load_profile(two), progress=False)
    (step,) = [s for s in spec.steps(ctx) if s.label == "eval original ruler"]
    step.unit.run(progress=False)
    (step.unit.dir / "timing.json").write_text(json.dumps({"seconds": 30.0}))
    stored = json.loads((step.unit.dir / "config.json").read_text())
    (step.unit.dir / "config.json").write_text(json.dumps({**stored, "code": "older"}))
    assert main(["reproduce", "table2", "--profile", str(four), "--dry-run"]) == 0
    assert "to run  eval original ruler  (1.0 min)\n" in capsys.readouterr().out


def test_an_evaluations_items_are_the_product_of_its_sizes() -> None:
    """RULER's ``samples`` and the short suite's ``limit`` both size an evaluation (per task
    and length); one with neither scores a whole task set: no count."""
    from longred_bench.reproduce.plan import count

    assert count({"suite": "ruler", "samples": 3}) == 3
    assert count({"suite": "short_tiny", "limit": 5}) == 5
    assert count({"samples": 3, "limit": 4}) == 12
    assert count({"suite": "short_tiny", "limit": None}) is None


def test_another_batch_size_is_estimated_from_the_cached_evaluation(
    tmp_path, monkeypatch, capsys
) -> None:
    """A profile that only changes the evaluations' batch size planned every evaluation as "a
    guess: no ... evaluation cached to go by", ten of them cached at batch size 1 beside it."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    _cache_original_ruler(monkeypatch, 30.0)
    out = _table2_plan(tmp_path, capsys, "batch2", "extends: smoke\nevaluation: {batch_size: 2}\n")
    assert "to run  eval original ruler  (30.0 s)\n" in out
    assert out.startswith("reproduce table2 --profile batch2 --dry-run")  # the table named


def test_the_other_size_rate_is_the_median_of_the_matching_evaluations(
    tmp_path, monkeypatch
) -> None:
    """Several sizes of the same evaluation cached beside it: the median of their seconds per
    item, not the slowest; another config (a length) and a whole task set (no size) where the
    unit states one are not the same evaluation."""
    from longred_bench.jobs.units import CachedUnit, stored_config
    from longred_bench.reproduce.plan import _sizeless, other_sizes_rate

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    unit = CachedUnit("eval", "runs/test/new", {"suite": "ruler", "samples": 8, "lengths": [512]})
    same = _sizeless(stored_config(unit.config, unit.kind))
    cached = [(same, 2, 20.0), (same, 4, 120.0), (same, 1, 15.0),  # 10, 30 and 15 s an item
              ({**same, "lengths": [1024]}, 1, 1.0), (same, None, 1.0)]  # fmt: skip
    assert other_sizes_rate(unit, {unit.dir.parent: cached}) == 15.0


def test_the_gpu_totals_name_the_largest_memory_per_gpu() -> None:
    """``at most`` is the largest estimate of the units to run, and those over the profile's
    memory per GPU are counted and one is named."""
    from types import SimpleNamespace as NS

    from longred_bench.reproduce.costs import UnitCost
    from longred_bench.reproduce.plan import gpu_totals

    units = [PlannedUnit(k, f"eval {k}", "eval", False, None, cost=UnitCost(1e15, 1.0, gib))
             for k, gib in (("a", 10.0), ("b", 50.0), ("c", None))]  # fmt: skip
    text = gpu_totals(units, NS(nproc_per_node=1, gpu_memory_gib=40.0))
    assert text.endswith("; at most 50.0 GiB per GPU; 1 unit(s) over 40 GiB per GPU (e.g. eval b)")


def test_a_cached_units_command_is_not_printed(tmp_path, monkeypatch, capsys) -> None:
    """The plan prints the command that computes each unit still to run; a cached unit has
    nothing to compute, so its command is left out."""
    import longred_bench.reproduce.plan as plan

    units = [PlannedUnit("old", "eval old ruler", "eval", True, 3.0, suite="ruler",
                         command="longred-bench reproduce table2 --unit eval_old"),
             PlannedUnit("new", "eval new ruler", "eval", False, None, suite="ruler",
                         command="longred-bench reproduce table2 --unit eval_new")]  # fmt: skip
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(plan, "planned_units", lambda ctx: units)
    assert main(["reproduce", "table2", "--profile", "smoke", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "$ longred-bench reproduce table2 --unit eval_new\n" in out
    assert "eval old ruler" in out and "--unit eval_old" not in out


def test_only_training_runs_still_to_run_are_checked_for_startup(monkeypatch) -> None:
    """A cached run trains nothing: the plan lists it as cached, never as one that "cannot
    start" at this profile's processes (it was trained as another profile split its rows)."""
    import dataclasses
    from types import SimpleNamespace as NS

    import longred_bench.reproduce.plan as plan
    import longred_bench.reproduce.registry as registry
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.spec import Context, NoSettings, Step

    smoke = load_profile("smoke")
    two = dataclasses.replace(smoke, hardware=dataclasses.replace(smoke.hardware,
                                                                  nproc_per_node=2))  # fmt: skip

    def run(name: str, cached: bool) -> Step:
        unit = NS(kind="train", folder=f"runs/{name}", seconds=lambda: 4.0,
                  config={"recipe": "cpt", "steps": 2, "tokens_per_step": 8},
                  cached=lambda: {"done": True} if cached else None)  # fmt: skip
        return Step(unit, f"train {name}")

    steps = [run("old", True), run("new", False)]
    monkeypatch.setattr(registry, "get_spec", lambda name: NS(steps=lambda ctx: steps))
    monkeypatch.setattr(plan, "startup_error", lambda config, profile: "rows do not split")
    planned = plan.planned_units(Context("fake", two, NoSettings(), progress=False))
    errors = {u.label: u.error for u in planned}
    assert errors == {"train old": "", "train new": "rows do not split"}
