"""The numbers and words of a dry-run's totals: the compute left with its workers and the units
without an estimate, the GPU-hours summed over the units, the memory bound per GPU, the wall
clock of a node, and a unit two rows of a table share, listed once with the other row named."""

from __future__ import annotations

from types import SimpleNamespace as NS

from longred_bench.cli import main
from longred_bench.reproduce.costs import UnitCost
from longred_bench.reproduce.plan import PlannedUnit, distinct_units, gpu_totals, wall_clock


def _eval(key: str, seconds: float | None = None, cost: UnitCost | None = None,
          cached: bool = False, **kw) -> PlannedUnit:  # fmt: skip
    return PlannedUnit(key, f"eval {key}", "eval", cached, seconds, suite="ruler", cost=cost, **kw)


def _plan(tmp_path, monkeypatch, capsys, units, *extra: str) -> str:
    """``reproduce table2 --profile smoke --dry-run`` of the hand-made ``units``."""
    import longred_bench.reproduce.plan as plan

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(plan, "planned_units", lambda ctx: units)
    assert main(["reproduce", "table2", "--profile", "smoke", "--dry-run", *extra]) == 0
    return capsys.readouterr().out


def test_the_compute_left_is_the_sum_shared_by_the_jobs(tmp_path, monkeypatch, capsys) -> None:
    """60 s, 60 s and 120 s of evaluations over 2 jobs on 4 cores are 2 min (the sum halved);
    a fourth unit without an estimate is counted apart, not as 0 s."""
    import longred_bench.reproduce.pool as pool

    monkeypatch.setattr(pool, "usable_cores", lambda: 4)
    units = [_eval("a", 60.0), _eval("d", 60.0), _eval("b", 120.0),
             _eval("c", cached=True, seconds=5.0)]  # fmt: skip
    out = _plan(tmp_path, monkeypatch, capsys, units, "--jobs", "2")
    assert "table2: 4 units, 1 cached, 3 to run (about 4.0 min of compute)" in out
    footer = next(x for x in out.splitlines() if x.startswith("In all: "))
    assert footer.startswith(
        "In all: 4 distinct units, 1 cached, 3 to run (about 2.0 min of compute with 2 job(s))"
    )


def test_jobs_share_no_more_than_the_cores_and_wait_for_the_longest_unit(monkeypatch) -> None:
    """8 jobs on 2 cores read 19 s for 4 units, one of them 2.1 min alone (the run took 1 min
    23 s): the sum is shared by the cores, and never below the longest unit."""
    import longred_bench.reproduce.pool as pool
    from longred_bench.reproduce.plan import _left

    monkeypatch.setattr(pool, "usable_cores", lambda: 2)
    todo = [_eval(k) for k in "abcd"]
    seconds = {"a": 126.0, "b": 10.0, "c": 10.0, "d": 10.0}
    assert _left(todo, seconds, 8) == "about 2.1 min of compute with 8 job(s) on 2 core(s)"
    seconds["a"] = 30.0  # the sum shared by the 2 cores: 30 s
    assert _left(todo, seconds, 8) == "about 30.0 s of compute with 8 job(s) on 2 core(s)"
    seconds = {"a": 20.0, "b": 20.0, "c": 20.0, "d": 20.0}
    assert _left(todo, seconds, 2) == "about 40.0 s of compute with 2 job(s)"


def test_units_without_an_estimate_are_said_beside_the_sum(monkeypatch) -> None:
    import longred_bench.reproduce.pool as pool
    from longred_bench.reproduce.plan import _left

    monkeypatch.setattr(pool, "usable_cores", lambda: 4)
    todo = [_eval("a"), _eval("b"), _eval("c")]
    seconds = {"a": 30.0, "b": None, "c": 90.0}
    assert _left(todo, seconds) == (
        "about 2.0 min of compute for the 2 with an estimate, 1 without one"
    )
    assert _left(todo, seconds, 3) == (
        "about 1.5 min of compute with 3 job(s) for the 2 with an estimate, 1 without one"
    )
    assert _left(todo, dict.fromkeys(seconds)) == "no estimate"
    assert _left([], {}) == "nothing to compute"


def test_gpu_hours_are_summed_and_the_unestimated_counted() -> None:
    """Three evaluations of 1.0, 2.5 and no GPU-hours on one GPU: 3.5 GPU-hours, one not
    estimated (its memory is still estimated)."""
    units = [_eval("a", cost=UnitCost(1, 1.0, 10.0)), _eval("b", cost=UnitCost(1, 2.5, 5.0)),
             _eval("c", cost=UnitCost(None, None, 30.0))]  # fmt: skip
    text = gpu_totals(units, NS(nproc_per_node=1, gpu_memory_gib=80.0))
    assert text == ("3.5 GPU-hours (3.5 h on 1 GPU), 1 unit(s) not estimated; "
                    "at most 30.0 GiB per GPU")  # fmt: skip


def test_a_unit_at_exactly_the_gpus_memory_fits_and_the_first_over_is_named() -> None:
    units = [
        _eval("a", cost=UnitCost(1, 1.0, 40.0)),
        _eval("b", cost=UnitCost(1, 1.0, 45.0)),
        _eval("c", cost=UnitCost(1, 1.0, 41.0)),
        _eval("d", cost=UnitCost(1, 1.0, 1.0)),
    ]
    text = gpu_totals(units, NS(nproc_per_node=1, gpu_memory_gib=40.0))
    assert text.endswith("; at most 45.0 GiB per GPU; 2 unit(s) over 40 GiB per GPU (e.g. eval b)")


def test_a_node_of_two_gpus_is_a_node_not_one_gpu() -> None:
    """Training runs on both GPUs; a PSA or drift unit runs on one, as an evaluation does."""
    train = PlannedUnit("t", "train t", "train", False, None, "cpt", 1, cost=UnitCost(1, 4.0, 9))
    psa = PlannedUnit("p", "psa p", "psa", False, None, cost=UnitCost(1, 2.0, 9))
    assert wall_clock([train, psa], 2) == (
        "3.0 h on a node of 2 GPUs with the one-GPU units 2 at a time, 4.0 h with them one at "
        "a time")  # fmt: skip
    assert wall_clock([train, psa], 1) == "6.0 h on 1 GPU"


def test_the_cpu_units_of_a_gpu_plan_share_the_jobs_and_say_when_unestimated(monkeypatch):
    """Two CPU units of 1 and 3 min over 2 jobs take the longer one's 3 min."""
    import longred_bench.reproduce.pool as pool

    monkeypatch.setattr(pool, "usable_cores", lambda: 4)
    gpu = _eval("g", cost=UnitCost(1, 1.0, 2.0))
    cpu = [_eval("x", 60.0, cpu=True), _eval("y", 180.0, cpu=True)]
    hw = NS(nproc_per_node=1, gpu_memory_gib=80.0)
    assert gpu_totals([gpu, *cpu], hw, jobs=2) == (
        "1.0 GPU-hours (1.0 h on 1 GPU), 2 unit(s) on the CPU (about 3.0 min of compute with 2 "
        "job(s), not in the GPU-hours); at most 2.0 GiB per GPU")  # fmt: skip
    assert gpu_totals([_eval("z", cpu=True)], hw) == (
        "1 unit(s) on the CPU (no time estimate; no GPU estimate)"
    )


def test_a_unit_two_rows_ask_for_is_listed_once_in_the_order_first_asked() -> None:
    units = [_eval("a"), _eval("b"), PlannedUnit("a", "row two", "eval", False, None),
             PlannedUnit("a", "row three", "eval", False, None)]  # fmt: skip
    once, also = distinct_units(units)
    assert [u.label for u in once] == ["eval a", "eval b"]
    assert also == {"a": ["row two", "row three"], "b": []}


def test_the_plan_names_a_shared_units_other_rows(tmp_path, monkeypatch, capsys) -> None:
    units = [_eval("a", 10.0), PlannedUnit("a", "row two", "eval", False, 10.0, suite="ruler")]
    out = _plan(tmp_path, monkeypatch, capsys, units)
    assert "table2: 1 unit, 0 cached, 1 to run (about 10.0 s of compute)" in out
    assert "   to run  eval a  (10.0 s" in out
    assert "           the same unit as: row two\n" in out


def test_a_gpu_plans_cpu_units_are_timed_as_such(tmp_path, monkeypatch, capsys) -> None:
    """A table whose units to run are all on the CPU still reads in GPU terms (no GPU
    estimate); a CPU merge beside a GPU evaluation takes the plan's estimate of a merge."""
    cpu = [_eval("x", 60.0, cpu=True)]
    out = _plan(tmp_path, monkeypatch, capsys, cpu)
    assert "1 to run (1 unit(s) on the CPU (about 1.0 min of compute; no GPU estimate))" in out
    merge = PlannedUnit("m", "train merge a", "train", False, None, "merge", cpu=True)
    out = _plan(tmp_path, monkeypatch, capsys, [_eval("g", cost=UnitCost(1, 2.0, 3.0)), merge])
    assert ("2 to run (2.0 GPU-hours (2.0 h on 1 GPU), 1 unit(s) on the CPU (about 1.0 s of "
            "compute, not in the GPU-hours); at most 3.0 GiB per GPU)") in out  # fmt: skip


def test_a_tables_counts_are_of_its_distinct_units(tmp_path, monkeypatch, capsys) -> None:
    done = _eval("a", 10.0, cached=True)
    units = [done, PlannedUnit("a", "row two", "eval", True, 10.0, suite="ruler"), _eval("b", 5.0)]
    out = _plan(tmp_path, monkeypatch, capsys, units)
    assert "table2: 2 units, 1 cached, 1 to run (about 5.0 s of compute)" in out
    assert "In all: 2 distinct units, 1 cached, 1 to run (about 5.0 s of compute)" in out
