"""The run engine: units computed once, in rounds where a unit's key depends on another's result,
waiting for the units they name, records gathered with their labels; the worker pool starts a unit
only once the units it waits for are done."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import longred_bench.jobs.unit_compute as unit_compute
from longred_bench.errors import UserError
from longred_bench.jobs.units import CachedUnit
from longred_bench.profiles import load_profile
from longred_bench.reproduce import engine
from longred_bench.reproduce.spec import Context, NoSettings, Step, TableSpec


def _unit(name: str, **config) -> CachedUnit:
    return CachedUnit("eval", f"runs/test/{name}", {"suite": "fake", "name": name, **config})


def _spec(steps) -> TableSpec:
    return TableSpec("fake", "a table for the engine's tests", NoSettings, steps)


def test_a_tables_own_check_refuses_a_profile_as_it_is_resolved():
    """A table's ``check`` runs when its settings are resolved at a profile, before any step
    is listed: its refusal is one line naming the table, profile and key."""
    from longred_bench.reproduce.spec import refuse

    def check(ctx: Context) -> None:
        raise refuse(ctx, "tables.fake.x", "not at this profile")

    spec = TableSpec("fake", "a table for the engine's tests", NoSettings, lambda ctx: [],
                     check=check)  # fmt: skip
    with pytest.raises(UserError, match=r"^fake cannot run at profile smoke \(.*smoke.yaml\): "
                       r"tables.fake.x: not at this profile$"):  # fmt: skip
        spec.resolve(load_profile("smoke"))
    assert _spec(lambda ctx: []).resolve(load_profile("smoke")).table == "fake"


def test_two_rows_of_one_unit_compute_it_once(computed, monkeypatch):
    """Two rows that are the same unit (Table 6's default row and its named twin at smoke):
    one computation, not two racing into one folder, with one job or a pool; both rows read
    its records."""
    from longred_bench.reproduce import pool

    def steps(ctx: Context) -> list[Step]:
        return [Step(_unit("a"), "a as row 1", labels={"row": "one"}),
                Step(_unit("a"), "a as row 2", labels={"row": "two"})]  # fmt: skip

    spec = _spec(steps)
    monkeypatch.setattr(engine, "get_spec", lambda name: spec)
    ctx = Context("fake", load_profile("smoke"), NoSettings(), progress=False)
    given: list[list[str]] = []

    def in_this_process(units, jobs, **kw):
        given.append([u.key for u in units])
        for u in units:
            u.fn(*u.args)
        return [u.key for u in units]

    monkeypatch.setattr(pool, "run_units_parallel", in_this_process)
    assert engine.run_steps(ctx, jobs=2) == 1
    assert computed == ["a"] and len(given) == 1 and len(given[0]) == 1
    rows = sorted(r["row"] for r in engine.records_of(ctx))
    assert rows == ["one", "two"]
    assert engine.run_steps(ctx, jobs=1) == 0 and computed == ["a"]  # cached for both rows


def test_a_unit_keyed_by_another_ones_result_runs_in_the_next_round(computed, monkeypatch):
    """B's key names A's result (as a merge names its source run's record): B is listed once A
    is cached, runs in the next round, and its records carry A's record as ``train``."""

    def steps(ctx: Context) -> list[Step]:
        a = _unit("a")
        got = a.cached()
        b = _unit("b", source=got[0]["value"] if got else None)
        return [Step(a, "a", labels=None), Step(b, "b", after=(a.folder,), labels={"row": "b"},
                                                train=a.folder, train_extra={"x": 1},
                                                relisted=True)]  # fmt: skip

    spec = _spec(steps)
    monkeypatch.setattr(engine, "get_spec", lambda name: spec)
    ctx = Context("fake", load_profile("smoke"), NoSettings(), progress=False)
    assert engine.run_steps(ctx) == 2
    assert computed == ["a", "b"]  # b once, with a's result in its key
    records = engine.records_of(ctx)
    assert [r["of"] for r in records] == ["b"]
    assert records[0]["row"] == "b" and records[0]["train"] == {**records[0]["train"], "x": 1}
    assert records[0]["train"]["of"] == "a"
    assert engine.run_steps(ctx) == 0 and computed == ["a", "b"]  # all cached: nothing again


def test_a_call_says_how_many_units_it_reuses(computed, monkeypatch, capsys):
    """A second identical call printed nothing but the report it wrote: it says how many units
    it found cached (reused) and how many it computes, once, before any is computed."""
    spec = _spec(lambda ctx: [Step(_unit("a"), "a", labels={}), Step(_unit("b"), "b", labels={})])
    monkeypatch.setattr(engine, "get_spec", lambda name: spec)
    ctx = Context("fake", load_profile("smoke"), NoSettings(), progress=True)
    assert engine.run_steps(ctx) == 2
    assert (
        capsys.readouterr().out.splitlines()[0] == "[fake] 2 units: 0 cached (reused), 2 to compute"
    )
    assert engine.run_steps(ctx) == 0
    assert capsys.readouterr().out == "[fake] 2 units: 2 cached (reused), 0 to compute\n"


def test_a_call_says_so_when_later_rounds_computed_units_the_first_line_did_not_count(
    computed, monkeypatch, capsys
):
    """B is listed only once A is cached (as PCD's test units follow its dev grid): the first
    line counted 1 unit to compute, and the call ends saying it computed 2."""

    def steps(ctx: Context) -> list[Step]:
        a = _unit("a")
        got = a.cached()
        later = [Step(_unit("b", source=got[0]["value"]), "b", after=(a.folder,), labels={},
                      relisted=True)] if got else []  # fmt: skip
        return [Step(a, "a", labels={}), *later]

    spec = _spec(steps)
    monkeypatch.setattr(engine, "get_spec", lambda name: spec)
    ctx = Context("fake", load_profile("smoke"), NoSettings(), progress=True)
    assert engine.run_steps(ctx) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "[fake] 1 unit: 0 cached (reused), 1 to compute"
    assert lines[-1].startswith("[fake] computed 2 units, not 1: the settings of some depended")
    assert engine.run_steps(ctx) == 0  # all listed in round 0 now: the first line is all
    assert capsys.readouterr().out == "[fake] 2 units: 2 cached (reused), 0 to compute\n"


def test_a_run_two_rows_name_adds_its_per_step_record_once_and_a_rows_extras_win(
    tmp_path, monkeypatch
):
    """Two evaluations of one training run: the run's per-step record joins the table once,
    after the first (with the run's own summary as ``train``), and a row's ``train_extra``
    replaces the summary's value of the same key in that row's records only."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))

    def fake(config, progress, **_):
        if config["name"] == "run":
            return [{"kind": "train", "dir": str(tmp_path), "seed": 0}]
        return [{"kind": "eval", "of": config["name"]}]

    monkeypatch.setattr(unit_compute, "run_eval_unit", fake)
    monkeypatch.setattr(engine, "run_steps_record", lambda path: {"kind": "steps"})
    run = _unit("run")
    steps = [Step(run, "run", labels=None),
             Step(_unit("e1"), "e1", after=(run.folder,), labels={"row": "one"},
                  train=run.folder, train_extra={"seed": 7}),
             Step(_unit("e2"), "e2", after=(run.folder,), labels={"row": "two"},
                  train=run.folder)]  # fmt: skip
    ctx = Context("fake", load_profile("smoke"), NoSettings(), progress=False)
    records = engine.gather(ctx, steps)
    assert [(r["kind"], r["row"]) for r in records] == [
        ("eval", "one"), ("steps", "one"), ("eval", "two")]  # fmt: skip
    assert [r["train"]["seed"] for r in records] == [7, 0, 0]


def test_force_computes_every_evaluation_again_once(computed, monkeypatch):
    spec = _spec(lambda ctx: [Step(_unit("a"), "a", labels={})])
    monkeypatch.setattr(engine, "get_spec", lambda name: spec)
    ctx = Context("fake", load_profile("smoke"), NoSettings(), progress=False)
    engine.run_steps(ctx)
    forced = Context("fake", load_profile("smoke"), NoSettings(), progress=False, force=True)
    assert engine.run_steps(forced) == 1 and computed == ["a", "a"]


def test_a_table_that_runs_in_one_process_reports_one_whatever_jobs(
    computed, monkeypatch, tmp_path
):
    """``--jobs 3`` runs a table that does not allow workers (``parallel=False``) in this
    process: its report's command and wall note say one process, not three."""
    got: dict = {}

    def write(ctx, records, out, report):
        got.update(report)
        return []

    spec = TableSpec("fake", "a table for the engine's tests", NoSettings,
                     lambda ctx: [Step(_unit("a"), "a", labels={})], write=write,
                     parallel=False)  # fmt: skip
    monkeypatch.setattr(engine, "get_spec", lambda name: spec)
    ctx = Context("fake", load_profile("smoke"), NoSettings(), progress=False)
    engine.run_table(ctx, tmp_path / "out", jobs=3)
    assert computed == ["a"]
    assert "--jobs" not in got["command"] and got["wall_note"].startswith("1 process(es)")


def test_a_unit_waiting_for_one_that_is_never_made_is_an_error(computed, monkeypatch):
    ghost = _unit("ghost")
    spec = _spec(
        lambda ctx: [
            Step(ghost, "ghost", labels={}),
            Step(_unit("b"), "b", labels={}, after=(ghost.folder,)),
        ]
    )
    monkeypatch.setattr(engine, "get_spec", lambda name: spec)
    monkeypatch.setattr(CachedUnit, "run", lambda self, **kw: [] if self.name == "ghost" else
                        CachedUnit.cached(self))  # fmt: skip
    ctx = Context("fake", load_profile("smoke"), NoSettings(), progress=False)
    with pytest.raises(UserError, match="waits for units that were not made"):
        engine.run_steps(ctx)


def test_only_training_runs_still_to_train_have_their_teacher_checked(monkeypatch):
    """A teacher of another tokenizer refuses a run still to train, in one line naming it; a
    run already cached trains nothing, so its teacher is not loaded nor refused."""
    from types import SimpleNamespace as NS

    import longred_bench.jobs.same_tokens as same_tokens

    asked = []

    def mismatch(config, roles):
        asked.append(config["recipe"])
        raise same_tokens.Mismatch("the teacher has other tokens")

    monkeypatch.setattr(same_tokens, "check_training_models", mismatch)

    def run(recipe, cached):
        return NS(label=f"train {recipe}", unit=NS(kind="train", cached=lambda: cached,
                                                   config={"recipe": recipe}))  # fmt: skip

    prof = load_profile("smoke")
    engine.check_teachers(prof, [run("longred", {"done": True})])
    assert asked == []
    with pytest.raises(UserError, match="train linearard: the teacher has other tokens"):
        engine.check_teachers(prof, [run("longred", {"done": True}), run("linearard", None)])
    assert asked == ["linearard"]


def _write(path: str, label: str) -> None:
    """A worker's task: append ``label`` and the time to ``path``."""
    with open(path, "a") as fh:
        fh.write(json.dumps([label, time.monotonic()]) + "\n")


@pytest.mark.integration
def test_the_pool_starts_a_unit_after_the_units_it_waits_for(tmp_path: Path):
    from longred_bench.reproduce.pool import Unit, run_units_parallel

    log = str(tmp_path / "log")
    work = [
        Unit(_write, (log, "eval"), "eval", cost=5.0, key="e", after=("t",)),
        Unit(_write, (log, "train"), "train", cost=1.0, key="t"),
        Unit(_write, (log, "other"), "other", cost=0.5, key="o"),
        Unit(_write, (log, "never"), "never", cost=9.0, key="n", after=("t",)),
    ]
    done = run_units_parallel(work, 2, name="t", progress=False,
                              ready=lambda u: u.key != "n")  # fmt: skip
    order = [json.loads(line)[0] for line in Path(log).read_text().splitlines()]
    assert sorted(done) == ["e", "o", "t"] and "never" not in order
    assert order.index("train") < order.index("eval")


@pytest.mark.integration
def test_the_pool_starts_a_unit_waiting_for_units_outside_its_batch(tmp_path: Path):
    """A unit waits only for the units of its own batch: one it names outside it (a run cached
    before this round) holds nothing back."""
    from longred_bench.reproduce.pool import Unit, run_units_parallel

    log = str(tmp_path / "log")
    work = [Unit(_write, (log, "eval"), "eval", key="e", after=("cached run",))]
    assert run_units_parallel(work, 1, name="t", progress=False) == ["e"]
    assert [json.loads(line)[0] for line in Path(log).read_text().splitlines()] == ["eval"]


def test_each_worker_gets_its_share_of_the_cores(monkeypatch):
    """``--jobs N`` shares the usable cores out over the N workers (at least one thread
    each): N workers of every core each would oversubscribe the machine N times."""
    from longred_bench.reproduce import pool

    monkeypatch.setattr(pool, "usable_cores", lambda: 8)
    assert [pool.threads_per_job(n) for n in (1, 2, 3, 16)] == [8, 4, 2, 1]


def test_units_run_by_workers_name_where_they_keep_their_work(monkeypatch, tmp_path):
    """Each unit handed to the pool names where it keeps its work (a training run's folder, an
    evaluation's ``partial/`` folder), so Ctrl-C under ``--jobs`` can say what was kept."""
    from types import SimpleNamespace

    from longred_bench.jobs.units import CachedUnit
    from longred_bench.reproduce import engine, pool

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    seen = []
    monkeypatch.setattr(pool, "run_units_parallel",
                        lambda units, jobs, **kw: seen.extend(units) or [])  # fmt: skip
    train = CachedUnit("train", "runs/train-cpt-x", {"recipe": "cpt"})
    evaluation = CachedUnit("eval", "runs/e/y", {"model": "tiny-random", "suite": "niah"})
    steps = [SimpleNamespace(unit=u, label=u.kind, cost=1.0, key=u.folder, after=())
             for u in (train, evaluation)]  # fmt: skip
    ctx = SimpleNamespace(force=False, table="t", progress=False)
    engine._run_round(ctx, steps, 2, lambda step: True)
    assert [u.keeps for u in seen] == [("train", tmp_path / "runs/train-cpt-x"),
                                       ("unit", evaluation.work)]  # fmt: skip
    assert evaluation.work.parent == tmp_path / "runs/e/y/partial"


def test_each_extension_of_a_drift_units_list_is_checked_against_the_model(
    tmp_path, monkeypatch, capsys
):
    """Table 1's drift unit applies a list of extensions (its ``rope``), not one: each is
    checked as a training run's is, so an ABF base below the model's own that only that unit
    applies (no CPT run after it: ``after_cpt: false``) is refused in one line before any job
    is written."""
    from longred_bench.cli import main

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    low = tmp_path / "low.yaml"
    low.write_text("extends: smoke\ntables: {table1: {extensions: ['abf:theta=5e3'], "
                   "after_cpt: false}}\n")  # fmt: skip
    jobs = tmp_path / "jobs"
    argv = ["reproduce", "table1", "--profile", str(low), "--emit-slurm", str(jobs)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "extension abf:theta=5e3 (table1) does not apply to " in err
    assert not jobs.exists()
