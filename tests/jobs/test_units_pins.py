"""The run cache (:mod:`longred_bench.jobs.units`): a unit's kind by its config, its folder and
name, the records and the compute time it keeps (with the seed its provenance names), a
finished training run's summary record, and how a training run is trained, reused, set aside
and refused (its work stood in for by a fake that writes a run's files)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from longred_bench.errors import UserError
from longred_bench.jobs import unit_compute, units
from longred_bench.jobs.units import (
    TIMING,
    CachedUnit,
    aside_of,
    finished_run,
    save_records,
    stored_config,
    unit_kind,
)


@pytest.fixture
def run_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty run cache of the test's own."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.mark.parametrize(
    ("config", "kind"),
    [({"psa": {}, "suite": "ppl", "original": "m"}, "psa"), ({"suite": "ppl"}, "ppl"),
     ({"suite": "ruler", "original": "m"}, "eval"), ({"original": "m"}, "drift"),
     ({"model": "m", "rope": None}, "eval")],
)  # fmt: skip
def test_a_units_kind_follows_its_config(config: dict, kind: str) -> None:
    """The kind decides which code's hash keys a result: a PSA section first, then a suite
    (``ppl`` apart), then drift's original; a response cache's keys count as an evaluation."""
    assert unit_kind(config) == kind
    assert stored_config(config)["code"] == units.code_identity(kind)["code"]


def test_the_kind_given_keys_the_result_over_the_configs() -> None:
    config = {"model": "m", "suite": "ruler"}
    assert stored_config(config, "drift")["code"] == units.code_identity("drift")["code"]
    assert units.code_identity("drift") != units.code_identity("eval")


def test_an_unknown_kind_is_refused_naming_the_kinds() -> None:
    with pytest.raises(ValueError, match="unknown unit kind 'evals'; kinds: eval, ppl, drift"):
        CachedUnit("evals", "runs/x/y", {})


def test_a_units_name_is_its_folders_last_part(run_cache: Path) -> None:
    unit = CachedUnit("eval", "runs/table3-eval/0123abcd", {"model": "m", "suite": "ruler"})
    assert unit.name == "0123abcd" and unit.dir == run_cache / "runs" / "table3-eval" / "0123abcd"


def test_a_suite_build_among_a_tuples_values_ties_the_unit_to_it() -> None:
    import longred_bench.jobs.tiny_base as tiny_base

    got = stored_config({"models": ("tiny-base", "m"), "suite": "drift"})
    assert got["suite_builds"] == {"tiny-base": tiny_base.tiny_base_run_dir().name}


def test_a_computed_unit_keeps_its_time_seed_and_device(
    run_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A unit computed by ``run`` keeps its compute time beside its records (read back by
    ``seconds``), and its records' provenance names the config's seed; a ``ppl`` unit's records
    are its ``eval.jsonl``."""
    monkeypatch.setattr(unit_compute, "compute", lambda *a: [{"score": 1.0}])
    config = {"model": "m", "suite": "ppl", "seed": 3, "device": "cpu"}
    unit = CachedUnit("ppl", "runs/t/one", config)
    outcome: list[str] = []
    got = unit.run(progress=False, outcome=outcome)
    assert outcome == ["computed"] and got[0]["provenance"]["seed"] == 3
    assert (unit.dir / "eval.jsonl").is_file() and isinstance(unit.seconds(), float)
    assert json.loads((unit.dir / TIMING).read_text())["seconds"] == unit.seconds()
    assert json.loads((run_cache / "runs" / ".key-root").read_text()) == {"root": str(run_cache)}
    assert unit.cached() == got
    outcome.clear()
    assert unit.run(progress=False, outcome=outcome) == got and outcome == ["cached"]


def test_the_time_kept_has_two_decimals(tmp_path: Path) -> None:
    path = tmp_path / "u" / "eval.jsonl"
    save_records(path, {"model": "m", "suite": "ruler"}, [{"score": 1.0}], 0, "cpu", 3.14159)
    assert json.loads((path.parent / TIMING).read_text()) == {"seconds": 3.14}
    assert units.unit_seconds(path.parent) == 3.14
    save_records(path, {"model": "m", "suite": "ruler"}, [{"score": 1.0}], 0, "cpu", 0.0)
    assert units.unit_seconds(path.parent) == 0.0  # a time of nothing is a time


def _finished(run: Path, info: dict[str, Any], step: int = 4) -> Path:
    """A finished training run's files: ``final/``, ``run.json`` holding ``info`` and a step's
    metrics."""
    (run / "final").mkdir(parents=True, exist_ok=True)
    (run / "final" / "config.json").write_text("{}")
    (run / "run.json").write_text(json.dumps(info))
    (run / "metrics.jsonl").write_text(json.dumps({"step": step, "loss": 1.0}) + "\n")
    return run


def test_a_finished_runs_summary_carries_its_layers_memory_load_and_anchors(
    tmp_path: Path,
) -> None:
    """What ``run.json`` says of the distilled layers, the peak memory, the machine's load and
    LongRecipe's anchors comes with the summary record; other keys stay behind."""
    info = {"tokens": 64, "seconds": 1.5, "layers": [1, 3], "peak_memory_mib": 12.0,
            "peak_memory_kind": "cpu rss", "load_1min_start": 0.5, "load_1min_end": 0.7,
            "cpus": 2, "impact": {"anchors": [1]}, "other": "x"}  # fmt: skip
    run = _finished(tmp_path / "train-cpt-0", info)
    assert finished_run(run) == {"steps": 4, "dir": str(run),
                                 **{k: v for k, v in info.items() if k != "other"}}  # fmt: skip


def test_a_run_json_that_is_no_mapping_is_damaged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _finished(tmp_path / "train-cpt-0", {"tokens": 1, "seconds": 1.0})
    (run / "run.json").write_text("[1, 2]")
    capsys.readouterr()
    assert finished_run(run) is None
    assert (
        f"{run / 'run.json'} is damaged (ValueError): the run is not taken"
        in capsys.readouterr().err
    )


def test_a_train_units_seconds_are_its_runs(run_cache: Path) -> None:
    """A training unit's compute time is its run's own (``run.json``), not a ``timing.json``."""
    unit = CachedUnit("train", "runs/train-cpt-0123", {})
    assert unit.seconds() is None
    _finished(unit.dir, {"tokens": 8, "seconds": 2})
    assert unit.seconds() == 2.0 and isinstance(unit.seconds(), float)


def test_a_merge_source_outside_a_runs_final_is_named_by_its_path(tmp_path: Path) -> None:
    """Only a run cache's ``train-*/final`` counts by its run; another folder of such a run (a
    checkpoint) or any other folder is its path."""
    run = _finished(tmp_path / "train-cpt-0123", {"tokens": 8, "seconds": 2})
    assert units.merge_source_identity(run / "final").startswith("train-cpt-0123:")
    for other in (run / "final-old", run / "checkpoints" / "step-000002"):
        assert units.merge_source_identity(other) == str(other)
    assert units.merge_source_identity(tmp_path / "m") == str(tmp_path / "m")


def _smoke() -> Any:
    from longred_bench.training.config import resolve_config

    return resolve_config("cpt", profile="smoke", overrides={"long_data": "random"})


class _Training:
    """A stand-in for training: each call recorded as (resume, whether the run's folder was set
    aside); it writes a finished run's files unless ``writes`` is False."""

    def __init__(self) -> None:
        self.calls: list[tuple[bool, bool]] = []
        self.writes = True

    def __call__(self, cfg: Any, out: Path, *, resume: bool = False, progress: bool = True):
        self.calls.append((resume, aside_of(out).exists()))
        if self.writes:
            _finished(out, {"tokens": 16, "seconds": 0.5}, step=cfg.steps)


@pytest.fixture
def training(run_cache: Path, monkeypatch: pytest.MonkeyPatch) -> _Training:
    from longred_bench.jobs import train

    fake = _Training()
    monkeypatch.setattr(train, "run_training", fake)
    monkeypatch.delenv("RANK", raising=False)
    return fake


def test_a_training_run_is_trained_once_then_reused(run_cache: Path, training: _Training) -> None:
    """A run trains into ``runs/train-<recipe>-<key>`` and says so; then it is the cached one,
    and the run records where the cache was keyed."""
    cfg = _smoke()
    outcome: list[str] = []
    final, info = units.train_cached(cfg, progress=False, outcome=outcome)
    run = final.parent
    assert run == run_cache / "runs" / f"train-cpt-{units.train_key(cfg)}" == units.run_dir_of(cfg)
    assert outcome == ["computed"] and training.calls == [(False, False)]
    assert info == {"steps": cfg.steps, "tokens": 16, "seconds": 0.5, "dir": str(run)}
    assert (run_cache / "runs" / ".key-root").is_file()
    outcome.clear()
    assert units.train_cached(cfg.to_dict(), progress=False, outcome=outcome) == (final, info)
    assert outcome == ["cached"] and len(training.calls) == 1
    unit = units.train_unit(cfg)
    assert unit.folder == f"runs/{run.name}" and unit.run(progress=False) == [info]


def test_a_run_with_nothing_to_resume_is_set_aside_while_it_trains_again(
    run_cache: Path, training: _Training
) -> None:
    """A run's folder without a checkpoint (a final model whose records were lost) waits beside
    it, hidden (``.NAME.replaced``), while the run trains from the start, and goes once the new
    run is complete."""
    cfg = _smoke()
    run = units.run_dir_of(cfg)
    (run / "final").mkdir(parents=True)
    (run / "final" / "config.json").write_text("{}")
    units.train_cached(cfg, progress=False)
    assert training.calls == [(False, True)]
    assert aside_of(run).name == f".{run.name}.replaced" and not aside_of(run).exists()


def _whole_checkpoint(run: Path) -> None:
    """A whole checkpoint (its state and weights files) at step 1 in run folder ``run``."""
    from longred_bench.training.checkpoint import STATE, WEIGHTS

    step = run / "checkpoints" / "step-000001"
    step.mkdir(parents=True)
    (step / STATE).write_bytes(b"x")
    (step / WEIGHTS).write_bytes(b"x")


def test_a_run_resumes_from_its_checkpoint(run_cache: Path, training: _Training) -> None:
    """An interrupted run (a whole checkpoint, no ``run.json``) resumes in its folder."""
    cfg = _smoke()
    _whole_checkpoint(units.run_dir_of(cfg))
    units.train_cached(cfg, progress=False)
    assert training.calls == [(True, False)]


def test_a_run_that_ends_without_records_is_refused_in_one_line(
    run_cache: Path, training: _Training
) -> None:
    cfg = _smoke()
    training.writes = False
    with pytest.raises(UserError) as exc:
        units.train_cached(cfg, progress=False)
    assert str(exc.value) == (
        f"training run {units.run_dir_of(cfg)} finished without readable records"
    )


def test_a_rank_other_than_the_first_moves_no_folder(
    run_cache: Path, training: _Training, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``torchrun`` only rank 0 sets a run's folder aside (and holds its lock)."""
    cfg = _smoke()
    run = units.run_dir_of(cfg)
    (run / "final").mkdir(parents=True)
    monkeypatch.setenv("RANK", "1")
    units.train_cached(cfg, progress=False)
    assert training.calls == [(False, False)]


def test_a_second_retry_removes_the_folder_and_keeps_the_first_aside(tmp_path: Path) -> None:
    """Where an earlier retry's folder already waits aside, this one (nothing to resume either)
    is removed, and the first stays."""
    run = tmp_path / "train-cpt-0"
    aside_of(run).mkdir(parents=True)
    (aside_of(run) / "first").write_text("1")
    run.mkdir()
    (run / "second").write_text("2")
    units.set_aside(run)
    assert not run.exists() and (aside_of(run) / "first").is_file()
    units.set_aside(run)  # nothing there: nothing done
    assert (aside_of(run) / "first").is_file()


def test_a_result_saved_while_waiting_for_the_units_lock_is_taken(
    run_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process that computed the unit while this one waited for its lock: its result is
    taken (said as ``taken``), not computed again."""
    import contextlib

    unit = CachedUnit("eval", "runs/t/one", {"model": "m", "suite": "ruler"})
    lock = units.build_lock

    @contextlib.contextmanager
    def other_process_first(folder: Path, *args: Any, **kwargs: Any):
        save_records(unit.dir / "eval.jsonl", unit.config, [{"score": 2.0}], 0, "cpu")
        with lock(folder, *args, **kwargs):
            yield

    def never(*args: Any) -> None:
        raise AssertionError("computed again")

    monkeypatch.setattr(units, "build_lock", other_process_first)
    monkeypatch.setattr(unit_compute, "compute", never)
    outcome: list[str] = []
    assert unit.run(progress=False, outcome=outcome)[0]["score"] == 2.0
    assert outcome == ["taken"]


def test_a_finished_run_whose_metrics_are_lost_trains_again_despite_a_checkpoint(
    run_cache: Path, training: _Training
) -> None:
    """A finished run whose ``run.json`` and metrics are damaged is not resumed from its
    checkpoint (a resume cannot give its metrics back): it trains again from the start, its
    folder set aside meanwhile."""
    cfg = _smoke()
    run = _finished(units.run_dir_of(cfg), {"tokens": 1, "seconds": 1.0})
    (run / "run.json").write_text('{"tokens": 1')
    (run / "metrics.jsonl").write_text('{"loss": 1.0}\n')
    _whole_checkpoint(run)
    units.train_cached(cfg, progress=False)
    assert training.calls == [(False, True)]


def test_a_finished_run_keeps_the_suite_built_weights_it_started_from(
    run_cache: Path, training: _Training, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run from tiny-base keeps which build it started from (``base.json``), which its
    evaluations' records name."""
    from longred_bench.jobs import builds

    monkeypatch.setattr(builds, "built_weights", lambda name: "0123456789ab")
    final, _ = units.train_cached(_smoke().replace(model="tiny-base"), progress=False)
    assert json.loads((final.parent / builds.BASE_FILE).read_text()) == {
        "tiny-base": "0123456789ab"
    }


def test_only_the_first_rank_sets_a_damaged_run_json_aside(tmp_path: Path) -> None:
    """Under ``torchrun`` each rank asks whether a damaged finished run resumes; only rank 0
    moves its ``run.json`` aside."""
    run = _finished(tmp_path / "train-cpt-0", {"tokens": 1, "seconds": 1.0})
    (run / "run.json").write_text('{"tokens": 1')
    assert units.resumable(run, first=False)
    assert (run / "run.json").is_file() and not (run / "run.json.damaged").exists()
    assert units.resumable(run, first=True)
    assert (run / "run.json.damaged").is_file() and not (run / "run.json").exists()
