"""What a dry-run's lines say of each unit and in its footer: a unit's GPU-hours, memory and
offloaded host memory; a unit on the CPU; an estimated time beside an uncached unit; units that
cannot start, the first one named; how the GPU-hours were estimated and which units were not; the
tables named in the header; and the tiny-base build said only where something is to run."""

from __future__ import annotations

from longred_bench.cli import main
from longred_bench.reproduce.costs import UnitCost
from longred_bench.reproduce.plan import PlannedUnit


def _plan(tmp_path, monkeypatch, capsys, units, *tables: str, profile: str = "smoke") -> str:
    """``reproduce TABLES --profile PROFILE --dry-run`` of the hand-made ``units`` (each
    table's)."""
    import longred_bench.reproduce.plan as plan

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(plan, "planned_units", lambda ctx: units)
    argv = ["reproduce", *(tables or ("table2",)), "--profile", profile, "--dry-run"]
    assert main(argv) == 0
    return capsys.readouterr().out


def _footer(out: str) -> str:
    return next(x for x in out.splitlines() if x.startswith("In all: "))


def _eval(key: str, cost: UnitCost | None = None, suite: str = "ruler",
          seconds: float | None = None, **kw) -> PlannedUnit:  # fmt: skip
    return PlannedUnit(key, f"eval {key}", "eval", False, seconds, suite=suite, cost=cost, **kw)


def test_a_units_line_gives_its_gpu_hours_memory_and_offload(tmp_path, monkeypatch, capsys):
    units = [_eval("a", UnitCost(1, 1.234, 12.34, 0.5)), _eval("b", UnitCost(1, 0.5, 7.0))]
    out = _plan(tmp_path, monkeypatch, capsys, units)
    assert ("   to run  eval a  (1.23 GPU-h, 12.3 GiB per GPU + 0.5 GiB of pinned host memory "
            "(offload))\n") in out  # fmt: skip
    assert "   to run  eval b  (0.50 GPU-h, 7.0 GiB per GPU)\n" in out


def test_a_cpu_unit_and_an_estimated_merge_say_so(tmp_path, monkeypatch, capsys) -> None:
    merge = PlannedUnit("m", "train merge a", "train", False, None, "merge")
    cpu = _eval("c", seconds=90.0, cpu=True)
    out = _plan(tmp_path, monkeypatch, capsys, [merge, cpu])
    assert "   to run  train merge a  (1.0 s" in out
    assert "   to run  eval c  (on the CPU, 1.5 min" in out


def test_units_that_cannot_start_are_counted_and_the_first_named(tmp_path, monkeypatch, capsys):
    units = [PlannedUnit(k, f"train {k}", "train", False, 5.0, "cpt", 1, error=f"{k} too long")
             for k in ("a", "b")]  # fmt: skip
    out = _plan(tmp_path, monkeypatch, capsys, units)
    assert "   to run  train a  (cannot start: a too long; 5.0 s" in out
    assert "2 to run, 2 of which cannot start as configured (e.g. train a: a too long)" in out


def test_the_footer_of_cpu_units_alone_reads_in_gpu_terms(tmp_path, monkeypatch, capsys):
    """A GPU plan whose units to run are all on the CPU: no GPU estimate, their times said; a
    cached CPU unit beside a GPU unit to run adds no word on CPU times."""
    out = _plan(tmp_path, monkeypatch, capsys, [_eval("c", seconds=60.0, cpu=True)])
    footer = _footer(out)
    assert footer.startswith("In all: 1 distinct unit, 0 cached, 1 to run: 1 unit(s) on the CPU "
                             "(about 1.0 min of compute; no GPU estimate).")  # fmt: skip
    assert "The times of the units on the CPU: " in footer
    cached = PlannedUnit("c", "eval c", "eval", True, 60.0, suite="ruler", cpu=True)
    out = _plan(tmp_path, monkeypatch, capsys, [cached, _eval("g", UnitCost(1, 1.0, 1.0))])
    assert "The times of the units on the CPU" not in _footer(out)


def test_the_footer_says_how_gpu_hours_were_estimated(tmp_path, monkeypatch, capsys) -> None:
    """The rate is smoke's hardware (989 TFLOP/s at MFU 0.35); short evaluations counted from
    tokens are named; those not estimated are counted by suite, a PSA unit as a unit."""
    psa = PlannedUnit("p", "psa p", "psa", False, None, suite="psa", cost=UnitCost(None, None, 1))
    none = UnitCost(None, None, 1.0)
    units = [_eval("s", UnitCost(1, 1.0, 1.0), "short"), _eval("q", none, "short"),
             _eval("r", none), psa]  # fmt: skip
    footer = _footer(_plan(tmp_path, monkeypatch, capsys, units))
    assert " GPU-hours: model FLOPs / (989 TFLOP/s x MFU 0.35), " in footer
    assert "; the short evaluations from their tasks' tokens" in footer
    assert footer.endswith("; not estimated, so not in the GPU-hours: 1 short evaluation(s), "
                           "1 ruler evaluation(s), 1 psa unit(s).")  # fmt: skip
    # a short suite with no unit estimated is not said to be counted
    footer = _footer(_plan(tmp_path, monkeypatch, capsys, units[1:]))
    assert "from their tasks' tokens" not in footer
    ps = _eval("ps", UnitCost(1, 1.0, 1.0), "paper_short")
    footer = _footer(_plan(tmp_path, monkeypatch, capsys, [ps]))
    assert "; the paper_short evaluations from their tasks' tokens" in footer


def test_the_header_names_up_to_three_tables(tmp_path, monkeypatch) -> None:
    import longred_bench.reproduce.plan as plan
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.registry import get_spec

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(plan, "planned_units", lambda ctx: [_eval("a", seconds=1.0)])
    smoke = load_profile("smoke")
    ctxs = [get_spec(t).resolve(smoke, progress=False) for t in ("table2", "table3", "table7")]
    text = plan.plan_text(ctxs, 1)
    assert text.startswith("reproduce table2 table3 table7 --profile smoke --dry-run (1 job(s))")
    ctxs.append(get_spec("fig2").resolve(smoke, progress=False))
    assert plan.plan_text(ctxs, 1).startswith("reproduce 4 tables --profile smoke --dry-run")


def test_tiny_base_is_said_to_be_built_only_where_something_runs(tmp_path, monkeypatch, capsys):
    todo = [_eval("a", seconds=1.0)]
    assert "Before anything runs: tiny-base" in _plan(
        tmp_path, monkeypatch, capsys, todo, profile="tiny")  # fmt: skip
    done = [PlannedUnit("a", "eval a", "eval", True, 1.0, suite="ruler")]
    assert "Before anything runs" not in _plan(tmp_path, monkeypatch, capsys, done, profile="tiny")


def test_a_built_tiny_base_is_not_said_to_be_built(tmp_path, monkeypatch, capsys) -> None:
    from longred_bench.jobs.tiny_base import tiny_base_run_dir

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    final = tiny_base_run_dir() / "final"
    final.mkdir(parents=True)
    (final / "config.json").write_text("{}")
    out = _plan(tmp_path, monkeypatch, capsys, [_eval("a", seconds=1.0)], profile="tiny")
    assert "Before anything runs" not in out


def test_one_tables_note_is_said_once(tmp_path, monkeypatch, capsys) -> None:
    """The kernel table's note sits under its units; only a plan of several tables says each
    table's note again after the counts."""
    out = _plan(tmp_path, monkeypatch, capsys, [_eval("a", seconds=1.0)], "kernel")
    assert "  reads the committed benchmark CSVs in " in out
    assert "Besides the units: " not in out


def test_a_gpu_estimate_stands_alone_on_its_line(tmp_path, monkeypatch, capsys) -> None:
    """An evaluation whose time would be guessed from a cached CPT run reads its GPU estimate
    alone: no guessed time beside it."""
    cpt = PlannedUnit("t", "train cpt", "train", True, 300.0, "cpt", 1000)
    out = _plan(tmp_path, monkeypatch, capsys, [cpt, _eval("g", UnitCost(1, 1.0, 2.0))])
    assert "   to run  eval g  (1.00 GPU-h, 2.0 GiB per GPU)\n" in out
