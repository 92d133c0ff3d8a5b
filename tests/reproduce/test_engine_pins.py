"""What ``reproduce`` refuses before any work and how its rounds end
(:mod:`longred_bench.reproduce.engine`): ``--jobs 0``, a Table 3 data variant that changes no
run (and ``--d1 retrieval``, the default), the unit-by-unit flags together or with ``all``, a
table whose units never settle, a training run a row names that is not finished, the units a
forced call computes again, the lines a call prints per unit, and what ``--rebuild`` hands
the report builder."""

from __future__ import annotations

import pytest

from longred_bench.errors import UserError
from longred_bench.jobs.units import CachedUnit
from longred_bench.profiles import load_profile
from longred_bench.reproduce import engine
from longred_bench.reproduce.spec import Context, NoSettings, Step, TableSpec


def _unit(name: str, kind: str = "eval", **config) -> CachedUnit:
    return CachedUnit(kind, f"runs/test/{name}", {"suite": "fake", "name": name, **config})


def _ctx(**kw) -> Context:
    return Context("fake", load_profile("smoke"), NoSettings(), **{"progress": False, **kw})


def _use(monkeypatch, steps, **kw) -> TableSpec:
    spec = TableSpec("fake", "a table for the engine's tests", NoSettings, steps, **kw)
    monkeypatch.setattr(engine, "get_spec", lambda name: spec)
    return spec


def test_no_worker_processes_is_refused(capsys) -> None:
    """``--jobs 0`` is one line, before any plan is printed."""
    with pytest.raises(UserError, match=r"^--jobs must be at least 1, got 0$"):
        engine.reproduce("table3", "smoke", jobs=0, dry_run=True)
    assert capsys.readouterr().out == ""


def test_a_data_variant_that_changes_no_run_is_refused(capsys) -> None:
    """``--d1 prose`` where the profile sets no long-data key would train the default table
    again under other keys: refused in one line; ``--d1 retrieval`` is the default's plan."""
    with pytest.raises(UserError, match=r"^--d1 prose: at profile smoke Table 3's runs already "
                       r"train on each recipe's own long data .*run it without --d1$"):  # fmt: skip
        engine.reproduce("table3", "smoke", d1="prose", dry_run=True)
    assert capsys.readouterr().out == ""
    engine.reproduce("table3", "smoke", dry_run=True)
    default = capsys.readouterr().out
    engine.reproduce("table3", "smoke", d1="retrieval", dry_run=True)
    assert capsys.readouterr().out == default


@pytest.mark.parametrize(
    "body",
    ["tables: {table3: {overrides: {long_data: austen}}}",
     "runs: {overrides: {retrieval_fraction: 0.0}}"],
)  # fmt: skip
def test_a_data_variant_runs_where_the_profile_sets_a_long_data_key(tmp_path, capsys, body) -> None:
    """A long-data key set under ``tables.table3.overrides`` or ``runs.overrides``, even to
    0, is what ``--d1 prose`` drops: the variant runs."""
    mine = tmp_path / "mine.yaml"
    mine.write_text(f"extends: smoke\n{body}\n")
    assert engine.reproduce("table3", str(mine), d1="prose", dry_run=True) == []
    assert capsys.readouterr().out


@pytest.mark.parametrize(
    ("table", "flags", "message"),
    [
        ("all", {"list_units": True}, "--list-units, --unit and --emit-slurm take one table, not"),
        ("table3", {"list_units": True, "unit": "x"},
         "give one of --list-units, --unit and --emit-slurm"),
    ],
)  # fmt: skip
def test_unit_by_unit_flags_take_one_table_and_one_flag(table, flags, message, capsys) -> None:
    """Refused in one line before anything is listed or run."""
    with pytest.raises(UserError, match=message):
        engine.reproduce(table, "smoke", **flags)
    assert capsys.readouterr().out == ""


def test_a_chain_of_relisted_units_runs_one_round_each(computed, monkeypatch) -> None:
    """Each unit keyed by the one before it is listed once that one is cached: four units, four
    rounds, within the limit."""

    def steps(ctx: Context) -> list[Step]:
        out, prev = [], None
        for name in "abcd":
            got = prev.cached() if prev is not None else [{"value": 0}]
            if got is None:
                break
            unit = _unit(name, source=got[0]["value"])
            out.append(Step(unit, name, labels={}, relisted=prev is not None,
                            after=(prev.folder,) if prev else ()))  # fmt: skip
            prev = unit
        return out

    _use(monkeypatch, steps)
    assert engine.run_steps(_ctx()) == 4 and computed == list("abcd")


def test_a_table_whose_units_never_settle_stops_after_its_rounds(computed, monkeypatch) -> None:
    """A table listing a new unit after every round is refused after the last round, not run
    forever."""
    _use(monkeypatch, lambda ctx: [Step(_unit(f"u{len(computed)}"), "u", labels={})])
    with pytest.raises(UserError, match=r"^fake: units still to compute after 8 rounds$"):
        engine.run_steps(_ctx())
    assert len(computed) == 8


def test_a_forced_call_trains_no_run_again_and_names_each_unit(monkeypatch, capsys) -> None:
    """``--force`` computes evaluations again, never a cached training run; with progress each
    unit is named as it starts."""
    forced: dict[str, bool] = {}

    def run(self, progress=True, force=False):
        forced[self.name] = force
        return [{"kind": self.kind}]

    monkeypatch.setattr(CachedUnit, "run", run)
    monkeypatch.setattr(CachedUnit, "cached", lambda self: None)
    monkeypatch.setattr(engine, "fetch_missing", lambda *a, **k: None)
    steps = [Step(_unit("t", kind="train"), "train t", labels=None),
             Step(_unit("e"), "eval e", labels={})]  # fmt: skip
    _use(monkeypatch, lambda ctx: steps)
    engine.run_steps(_ctx(force=True, progress=True))
    assert forced == {"t": False, "e": True}
    lines = capsys.readouterr().out.splitlines()
    assert lines[1:] == ["[fake] train t", "[fake] eval e"]


def test_a_row_naming_a_run_that_is_not_finished_is_refused(computed) -> None:
    """A row whose training run has no summary record stops the gathering in one line."""
    run = _unit("run", kind="train")
    steps = [Step(_unit("e"), "e", labels={"row": "r"}, train=run.folder)]
    with pytest.raises(UserError, match=rf"^fake: the run {run.folder} is not finished$"):
        engine.gather(_ctx(), steps)


def test_a_teacher_refusal_names_the_profile_file(monkeypatch, tmp_path) -> None:
    """The refusal names the profile as given (its file), then the unit."""
    from types import SimpleNamespace as NS

    import longred_bench.jobs.same_tokens as same_tokens

    def mismatch(config, roles):
        raise same_tokens.Mismatch("other tokens")

    monkeypatch.setattr(same_tokens, "check_training_models", mismatch)
    step = NS(label="train x", unit=NS(kind="train", cached=lambda: None, config={"recipe": "x"}))
    prof = load_profile("smoke")
    with pytest.raises(UserError, match=rf"^profile {prof.source}: train x: other tokens$"):
        engine.check_teachers(prof, [step])


def test_a_rebuild_hands_the_builder_its_command_profile_and_models(tmp_path, monkeypatch) -> None:
    """``--rebuild`` at the table's default profile: the builder gets that profile, the call
    line with ``--rebuild`` before ``--out``, and records of the profile's fallback model
    pass as its own."""
    from longred_bench.results import write_table_records

    got: dict = {}

    def build(records, out, **kwargs):
        got.update(kwargs, records=records)
        return []

    _use(monkeypatch, lambda ctx: [], build=build, default_profile="smol")
    records = [{"row": "a", "provenance": {"config": {"model": "smollm2-135m"}}}]
    write_table_records(tmp_path, "fake", records)
    assert engine.reproduce("fake", None, tmp_path, rebuild=True) == []
    assert got["profile"] == "smol" and got["records"] == records
    assert (
        got["command"] == f"longred-bench reproduce fake --profile smol --rebuild --out {tmp_path}"
    )


def test_a_rebuild_of_all_leaves_out_tables_that_write_their_own_outputs(
    tmp_path, monkeypatch
) -> None:
    """``reproduce all --rebuild`` rebuilds every table with a records report, and not
    ``tiny_base`` or ``kernel``, which write their own outputs."""
    from longred_bench.reproduce import output
    from longred_bench.reproduce.registry import TABLES

    rebuilt: list[str] = []
    monkeypatch.setattr(output, "rebuild_outputs", lambda name, *a, **k: rebuilt.append(name) or [])
    assert engine.reproduce("all", "tiny", tmp_path, rebuild=True) == []
    assert rebuilt == [t for t in TABLES if t not in ("tiny_base", "kernel")]


def test_a_report_of_code_tasks_names_the_permission_before_force(
    computed, monkeypatch, tmp_path
) -> None:
    """A table whose short suite runs code: its report's command carries
    ``--allow-code-eval``, then ``--force`` where the call was forced."""
    got: dict = {}

    def write(ctx, records, out, report):
        got.update(report)
        return []

    _use(monkeypatch, lambda ctx: [Step(_unit("a"), "a", labels={})], write=write)
    monkeypatch.setattr(engine, "_runs_code", lambda ctx: True)
    engine.run_table(_ctx(force=True), tmp_path / "out")
    assert got["command"].endswith(" --profile smoke --out " + str(tmp_path / "out")
                                   + " --allow-code-eval --force")  # fmt: skip
    assert got["profile"] == "smoke"


def test_teachers_and_ruler_tasks_are_checked_before_any_table_runs(tmp_path, monkeypatch) -> None:
    """``reproduce`` checks every pending run's teacher and each table's RULER tasks before
    the first unit is computed, not when a unit's turn comes."""
    from longred_bench.reproduce import ruler_fit

    calls: list[str] = []
    for name in ("check_can_run", "check_model", "fetch_missing", "build_tiny_base_first"):
        monkeypatch.setattr(engine, name, lambda *a, **k: None)
    monkeypatch.setattr(engine, "check_teachers", lambda prof, steps: calls.append("teachers"))
    monkeypatch.setattr(ruler_fit, "check_table_tasks", lambda ctx: calls.append("tasks"))
    monkeypatch.setattr(engine, "run_table", lambda ctx, out, jobs: calls.append("run") or [])
    assert engine.reproduce("table3", "smoke", tmp_path / "out", progress=False) == []
    assert calls == ["teachers", "tasks", "run"]
