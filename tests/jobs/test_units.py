"""The run cache (:mod:`longred_bench.jobs.units`): a damaged unit is measured again while the
others are kept, and a result is reused only under the config (and RULER generator or tiny-task
rows) that made it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longred_bench.jobs.units import cached_records, save_records
from longred_bench.taskdata.ruler import store


def _truncate(path: Path, keep: int) -> None:
    path.write_bytes(path.read_bytes()[:keep])


def test_damaged_run_cache_is_rerun_and_others_are_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    units = {name: {"model": name, "suite": "ruler"} for name in ("a", "b")}
    paths = {name: runs / name / "eval.jsonl" for name in units}
    for name, unit in units.items():
        save_records(paths[name], unit, [{"score": 1.0, "model": name}], 0, "cpu")
    assert cached_records(paths["a"], units["a"])[0]["score"] == 1.0
    assert (runs / "a" / "manifest.json").is_file()

    _truncate(paths["a"], keep=10)
    assert cached_records(paths["a"], units["a"]) is None
    assert f"warning: run cache {runs / 'a'} is corrupt" in capsys.readouterr().err
    (runs / "a" / "manifest.json").unlink()  # a cache of an older version: parsed, no records
    assert cached_records(paths["a"], units["a"]) is None
    assert f"warning: run cache {paths['a']} does not parse" in capsys.readouterr().err
    (runs / "b" / "config.json").write_text("{")
    assert cached_records(paths["b"], units["b"]) is None
    assert "config.json does not parse" in capsys.readouterr().err

    save_records(paths["a"], units["a"], [{"score": 2.0, "model": "a"}], 0, "cpu")
    assert cached_records(paths["a"], units["a"])[0]["score"] == 2.0
    assert sorted(p.name for p in runs.iterdir()) == ["a", "b"]
    assert sorted(p.name for p in (runs / "a").iterdir()) == [
        "config.json",
        "eval.jsonl",
        "manifest.json",
    ]


def test_results_of_an_older_ruler_generator_are_measured_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A RULER evaluation or PSA measurement cached under one sample-generator version is not
    reused under another; a short-task evaluation does not depend on it."""
    units = {
        "ruler": {"model": "m", "suite": "ruler", "lengths": [512]},
        "psa": {"psa": {"models": ["m"]}, "pcd": None},
        "short": {"model": "m", "suite": "short_tiny"},
    }
    paths = {name: tmp_path / name / "eval.jsonl" for name in units}
    for name, unit in units.items():
        save_records(paths[name], unit, [{"score": 1.0}], 0, "cpu")
        assert cached_records(paths[name], unit)[0]["score"] == 1.0
    saved = json.loads((tmp_path / "ruler" / "config.json").read_text())
    assert saved["ruler_generator"] == store.GENERATOR_VERSION
    monkeypatch.setattr(store, "GENERATOR_VERSION", store.GENERATOR_VERSION + 1)
    assert cached_records(paths["ruler"], units["ruler"]) is None
    assert cached_records(paths["psa"], units["psa"]) is None
    assert cached_records(paths["short"], units["short"])[0]["score"] == 1.0


def test_results_of_older_tiny_task_rows_are_measured_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``short_tiny`` evaluation cached under one version of the tiny tasks' rows is not
    reused under another; a RULER evaluation does not depend on it."""
    from longred_bench.taskdata import tiny_tasks

    units = {
        "short": {"model": "m", "suite": "short_tiny"},
        "ruler": {"model": "m", "suite": "ruler", "lengths": [512]},
    }
    paths = {name: tmp_path / name / "eval.jsonl" for name in units}
    for name, unit in units.items():
        save_records(paths[name], unit, [{"score": 1.0}], 0, "cpu")
    saved = json.loads((tmp_path / "short" / "config.json").read_text())
    assert saved["tiny_tasks"] == tiny_tasks.TINY_TASKS_VERSION
    monkeypatch.setattr(tiny_tasks, "TINY_TASKS_VERSION", tiny_tasks.TINY_TASKS_VERSION + 1)
    assert cached_records(paths["short"], units["short"]) is None
    assert cached_records(paths["ruler"], units["ruler"])[0]["score"] == 1.0


def test_tiny_base_key_is_pinned() -> None:
    """tiny-base and every cached training run are keyed by their resolved config's hash: a new
    ``TrainConfig`` field, or a changed default, rebuilds tiny-base (about 15 min) and retrains
    every table's rows. Change this pin only together with such a deliberate change."""
    from longred_bench.jobs.tiny_base import tiny_base_run_dir

    assert tiny_base_run_dir().name == "tiny-base-1dde558c2579acf7"


def test_a_unit_naming_tiny_base_is_tied_to_its_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """A result measured on tiny-base is not reused after tiny-base is rebuilt (a new config
    gives a new build directory); a unit that already names the build (``base``) keeps its key."""
    import longred_bench.jobs.tiny_base as tiny_base
    from longred_bench.jobs.units import stored_config

    unit = {"original": "tiny-base", "extended": [{"rope": "pi:factor=4"}], "suite": "drift"}
    first = stored_config(unit)
    assert first["suite_builds"] == {"tiny-base": tiny_base.tiny_base_run_dir().name}
    monkeypatch.setattr(tiny_base, "tiny_base_run_dir", lambda: Path("/x/tiny-base-0123"))
    assert stored_config(unit)["suite_builds"] == {"tiny-base": "tiny-base-0123"}
    assert "suite_builds" not in stored_config({"model": "smollm2-135m", "suite": "drift"})
    named = {"model": "tiny-base", "base": "tiny-base-0123", "suite": "drift"}
    assert stored_config(named) == named
