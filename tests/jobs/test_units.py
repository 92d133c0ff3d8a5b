"""The run cache (:mod:`longred_bench.jobs.units`): a damaged unit is measured again while the
others are kept, and a result is reused only under the config (and tiny-base build) that made
it; that it is also reused only under the code that made it is ``tests/test_unit_code.py``'s."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from longred_bench.cache import cache_dir
from longred_bench.jobs.units import CachedUnit, cached_records, save_records, unit_folder


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
    err = capsys.readouterr().err
    assert f"warning: run cache {runs / 'a'} is corrupt" in err
    assert "not cached (computed again when its unit runs)" in err  # a listing computes none
    (runs / "a" / "manifest.json").unlink()  # a cache of an older version: parsed, no records
    assert cached_records(paths["a"], units["a"]) is None
    assert f"warning: run cache {paths['a']} does not parse" in capsys.readouterr().err
    (runs / "b" / "config.json").write_text("{")
    assert cached_records(paths["b"], units["b"]) is None
    err = capsys.readouterr().err  # one damaged file, one line: its manifest's
    assert err.count("warning:") == 1 and f"{runs / 'b'} is corrupt (config.json is 1 bytes" in err

    save_records(paths["a"], units["a"], [{"score": 2.0, "model": "a"}], 0, "cpu")
    assert cached_records(paths["a"], units["a"])[0]["score"] == 2.0
    assert sorted(p.name for p in runs.iterdir()) == ["a", "b"]
    assert sorted(p.name for p in (runs / "a").iterdir()) == [
        "config.json",
        "eval.jsonl",
        "manifest.json",
    ]


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
    assert stored_config(named) == {**named, "code": stored_config(named)["code"]}


def _checkpoint_eval() -> CachedUnit:
    """An evaluation of a trained checkpoint in the current cache, as the table plans make it."""
    final = str(cache_dir() / "runs" / "train-cpt-0123456789abcdef" / "final")
    config = {"model": final, "base": final, "suite": "ruler", "lengths": [64], "samples": 2}
    return CachedUnit("eval", unit_folder("table3-eval", config), config)


def test_a_moved_cache_keeps_its_results_under_the_keys_the_plan_computes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run cache copied to another folder (a cluster's scratch to a laptop) still answers the
    evaluations of its trained checkpoints, whose configs name them by path: the unit keeps its
    folder, its config names the checkpoint where it is now, and nothing is computed again."""
    cluster, laptop = tmp_path / "scratch" / "cache", tmp_path / "laptop" / "cache"
    monkeypatch.setenv("LONGRED_CACHE", str(cluster))
    before = _checkpoint_eval()
    save_records(before.dir / "eval.jsonl", before.config, [{"score": 7.0}], 0, "cpu")
    assert before.cached()[0]["score"] == 7.0

    shutil.copytree(cluster, laptop)
    monkeypatch.setenv("LONGRED_CACHE", str(laptop))
    after = _checkpoint_eval()
    assert after.config["model"].startswith(str(laptop))  # computed where the model is now
    assert after.folder == before.folder
    assert after.cached()[0]["score"] == 7.0
    # A unit computed after the move is kept and found under the same rule.
    config = {**after.config, "samples": 3}
    again = CachedUnit("eval", unit_folder("table3-eval", config), config)
    save_records(again.dir / "eval.jsonl", again.config, [{"score": 8.0}], 0, "cpu")
    assert again.cached()[0]["score"] == 8.0

    # A fresh cache names paths under its own root: other keys than the copied cache's.
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "fresh"))
    assert _checkpoint_eval().folder != before.folder


def test_the_key_root_is_recorded_and_an_older_cache_reads_it_from_its_own_units(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first saved unit records where the cache was keyed (``runs/.key-root``). A cache made
    before that was recorded reads the root from the units that name one of its own trained
    runs: a unit naming a checkpoint of another cache (a profile whose model was trained there)
    neither moves this cache's keys nor stands for its root."""
    from longred_bench.jobs import key_root as roots

    old = tmp_path / "old" / "cache"
    monkeypatch.setenv("LONGRED_CACHE", str(old))
    own = _checkpoint_eval()
    save_records(own.dir / "eval.jsonl", own.config, [{"score": 1.0}], 0, "cpu")
    assert (old / "runs" / roots.KEY_ROOT_FILE).is_file()
    (old / "runs" / "train-cpt-0123456789abcdef").mkdir()  # the run the unit measures
    foreign = str(tmp_path / "elsewhere" / "runs" / "train-cpt-fedcba9876543210" / "final")
    other = {"original": foreign, "extended": [], "rope": ["pi:factor=2"]}
    other_unit = CachedUnit("drift", "runs/a-foreign/0000", other)  # read first, one folder deep
    save_records(other_unit.dir / "drift.jsonl", other, [{"x": 1}], 0, "cpu")

    (old / "runs" / roots.KEY_ROOT_FILE).unlink()  # as made before the root was recorded
    roots._key_root.cache_clear()
    assert roots.key_root() == str(old) and own.cached()[0]["score"] == 1.0

    new = tmp_path / "new" / "cache"
    shutil.copytree(old, new)
    monkeypatch.setenv("LONGRED_CACHE", str(new))
    moved = _checkpoint_eval()
    assert moved.folder == own.folder and moved.cached()[0]["score"] == 1.0
    roots.record_key_root()
    assert json.loads((new / "runs" / roots.KEY_ROOT_FILE).read_text()) == {"root": str(old)}


def test_a_cache_named_relative_to_the_working_folder_can_move(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LONGRED_CACHE", "cache")
    assert cache_dir() == tmp_path / "cache"  # taken from the working folder, made absolute
    before = _checkpoint_eval()
    save_records(before.dir / "eval.jsonl", before.config, [{"score": 3.0}], 0, "cpu")
    (tmp_path / "cache").rename(tmp_path / "moved")
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "moved"))
    after = _checkpoint_eval()
    assert after.folder == before.folder and after.cached()[0]["score"] == 3.0


def test_a_sibling_of_the_cache_root_is_not_rewritten_as_inside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from longred_bench.jobs.key_root import KEY_ROOT_FILE, portable

    root = tmp_path / "c"
    (root / "runs").mkdir(parents=True)
    (root / "runs" / KEY_ROOT_FILE).write_text(json.dumps({"root": "/old/root"}))
    monkeypatch.setenv("LONGRED_CACHE", str(root))
    sibling = str(tmp_path / "c-other" / "model")  # begins with the root's string, not in it
    inside = str(root / "runs" / "train-x" / "final")
    assert portable({"a": inside, "b": sibling, "c": str(root)}) == {
        "a": "/old/root/runs/train-x/final", "b": sibling, "c": "/old/root"}  # fmt: skip


def test_a_damaged_unit_is_named_once_while_it_stays_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One damaged evaluation unit was named in four identical warnings by one ``reproduce``
    call (its listing, its count, its check before computing, and the check under its lock);
    once now, and again only once its files change."""
    path = tmp_path / "runs" / "a" / "eval.jsonl"
    unit = {"model": "a", "suite": "ruler"}
    save_records(path, unit, [{"score": 1.0}], 0, "cpu")
    _truncate(path, keep=10)
    for _ in range(4):
        assert cached_records(path, unit) is None
    assert capsys.readouterr().err.count("is corrupt") == 1
    _truncate(path, keep=5)  # another damage: said again
    assert cached_records(path, unit) is None
    assert capsys.readouterr().err.count("is corrupt (eval.jsonl is 5 bytes") == 1


def test_a_config_json_replaced_by_another_units_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A unit folder whose ``config.json`` is another unit's (copied over it) was computed
    again without a word, as a result of other code is; its manifest tells the damage."""
    runs = tmp_path / "runs"
    units = {name: {"model": name, "suite": "ruler"} for name in ("a", "b")}
    paths = {name: runs / name / "eval.jsonl" for name in units}
    for name, unit in units.items():
        save_records(paths[name], unit, [{"score": 1.0, "model": name}], 0, "cpu")
    (runs / "b" / "config.json").write_bytes((runs / "a" / "config.json").read_bytes())
    assert cached_records(paths["b"], units["b"]) is None
    err = capsys.readouterr().err
    assert f"warning: run cache {runs / 'b'} is corrupt" in err, err
    assert "not cached (computed again when its unit runs)" in err
    assert cached_records(paths["a"], units["b"]) is None  # another config's result: no word
    assert capsys.readouterr().err == ""


def _moved_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Any, Path]:
    """A cache at ``old`` holding one evaluation of its own trained run, copied to ``new`` and
    used there: (old, the unit, the copy's key-root file)."""
    from longred_bench.jobs import key_root as roots

    old = tmp_path / "old" / "cache"
    monkeypatch.setenv("LONGRED_CACHE", str(old))
    own = _checkpoint_eval()
    save_records(own.dir / "eval.jsonl", own.config, [{"score": 1.0}], 0, "cpu")
    (old / "runs" / "train-cpt-0123456789abcdef").mkdir()  # the run the unit measures
    new = tmp_path / "new" / "cache"
    shutil.copytree(old, new)
    monkeypatch.setenv("LONGRED_CACHE", str(new))
    return old, own, new / "runs" / roots.KEY_ROOT_FILE


def test_a_damaged_key_root_is_named_and_recorded_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``runs/.key-root`` cut short was read as absent without a word, and never written
    again: each call read the root from the stored unit configs."""
    from longred_bench.jobs import key_root as roots

    old, own, recorded = _moved_cache(tmp_path, monkeypatch)
    recorded.write_text('{"ro')  # cut short
    roots._key_root.cache_clear()
    moved = _checkpoint_eval()
    assert moved.folder == own.folder and moved.cached()[0]["score"] == 1.0
    assert f"warning: run cache {recorded} is damaged" in capsys.readouterr().err
    roots.record_key_root()
    assert json.loads(recorded.read_text()) == {"root": str(old)}


def test_a_key_root_its_units_contradict_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``runs/.key-root`` holding a valid path that is not where the cache's units were keyed
    (copied from another cache) made every unit naming a trained run compute again without a
    word; deleting the file, as the warning says, reuses them."""
    from longred_bench.jobs import key_root as roots

    old, _, recorded = _moved_cache(tmp_path, monkeypatch)
    recorded.write_text(json.dumps({"root": str(tmp_path / "third")}))  # another cache's
    roots._key_root.cache_clear()
    assert _checkpoint_eval().cached() is None
    err = capsys.readouterr().err
    assert (
        f"warning: run cache {recorded} records the root {tmp_path / 'third'}, but its units "
        f"name their trained runs under {old}" in err
    ), err
    recorded.unlink()
    roots._key_root.cache_clear()
    assert _checkpoint_eval().cached()[0]["score"] == 1.0
    assert capsys.readouterr().err == ""
    recorded.write_text(json.dumps({"root": str(old)}))  # the right one, moved: no word
    roots._key_root.cache_clear()
    assert _checkpoint_eval().cached()[0]["score"] == 1.0 and capsys.readouterr().err == ""


def test_a_config_json_that_does_not_parse_is_named_in_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A unit whose ``config.json`` was cut short was named in two warnings (that it does not
    parse, then that its folder is corrupt), every time a call read it; one line now."""
    path = tmp_path / "runs" / "a" / "eval.jsonl"
    unit = {"model": "a", "suite": "ruler"}
    save_records(path, unit, [{"score": 1.0}], 0, "cpu")
    (path.parent / "config.json").write_text('{"garbage')
    for _ in range(2):
        assert cached_records(path, unit) is None
    err = capsys.readouterr().err
    assert err.count("warning:") == 1, err
    assert f"run cache {path.parent} is corrupt (config.json is 9 bytes" in err
