"""Results name the weights of the suite-built model they were measured on
(:mod:`longred_bench.jobs.builds`): tiny-base's folder is named by its config, so the same name
can hold other weights on another machine; records, training runs and reports say which, and a
cached result measured on other weights than those built now is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import longred_bench.jobs.tiny_base as tiny_base
from longred_bench.cache import write_manifest
from longred_bench.errors import UserError
from longred_bench.jobs.builds import (
    BASE_FILE,
    main,
    manifest_weights,
    result_builds,
    write_run_base,
)
from longred_bench.jobs.units import CachedUnit, cached_records, save_records
from longred_bench.reports import provenance


def _build(run: Path, weights: bytes) -> Path:
    """A fake tiny-base build in ``run``: its final folder with a manifest, as a build writes."""
    final = run / "final"
    final.mkdir(parents=True, exist_ok=True)
    (final / "config.json").write_text("{}")
    (final / "model.safetensors").write_bytes(weights)
    write_manifest(final, {"kind": "model", "model": "tiny-base"})
    return final


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tiny-base's run folder, built with some weights; the cache under ``tmp_path``."""
    run = tmp_path / "models" / "tiny-base-0123"
    _build(run, b"weights one")
    monkeypatch.setattr(tiny_base, "tiny_base_run_dir", lambda: run)
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    return run


def test_weights_hash_follows_the_files(built: Path) -> None:
    manifest = built / "final" / "manifest.json"
    first = manifest_weights(manifest)
    assert first is not None and len(first) == 12
    assert result_builds({"model": "tiny-base", "suite": "ruler"}) == {"tiny-base": first}
    _build(built, b"weights two")  # the same folder name, other weights
    assert manifest_weights(manifest) not in (None, first)
    assert manifest_weights(built / "absent.json") is None
    assert result_builds({"model": "smollm2-135m", "suite": "ruler"}) == {}


def test_unbuilt_tiny_base_is_left_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(tiny_base, "tiny_base_run_dir", lambda: tmp_path / "tiny-base-0123")
    assert result_builds({"model": "tiny-base"}) == {}
    main()
    assert capsys.readouterr().out == "tiny-base not built\n"
    _build(tmp_path / "tiny-base-0123", b"weights")
    main()
    assert capsys.readouterr().out == f"tiny-base {result_builds('tiny-base')['tiny-base']}\n"


def test_records_and_trained_runs_name_the_weights(built: Path, tmp_path: Path) -> None:
    weights = result_builds("tiny-base")["tiny-base"]
    path = tmp_path / "runs" / "u" / "eval.jsonl"
    unit = {"model": "tiny-base", "suite": "ruler"}
    records = save_records(path, unit, [{"score": 1.0}], 0, "cpu")
    assert records[0]["provenance"]["builds"] == {"tiny-base": weights}
    assert f"tiny-base weights `{weights}`" in provenance(records)[1]

    run = tmp_path / "runs" / "train-cpt-abc"
    write_run_base(run, {"model": "tiny-base", "recipe": "cpt"})
    assert json.loads((run / BASE_FILE).read_text()) == {"tiny-base": weights}
    # an evaluation of the trained model names what it was trained from, by its final folder
    assert result_builds({"model": str(run / "final"), "base": str(run / "final")}) == {
        "tiny-base": weights
    }
    # ... and so does one of tiny-base loaded by its own folder
    assert result_builds({"model": str(built / "final")}) == {"tiny-base": weights}
    write_run_base(tmp_path / "runs" / "plain", {"model": "smollm2-135m"})
    assert not (tmp_path / "runs" / "plain" / BASE_FILE).exists()


def test_a_report_shows_every_weights_it_mixes() -> None:
    recs = [{"provenance": {"git_commit": "c", "builds": {"tiny-base": w}}} for w in "ba"]
    assert provenance(recs)[1] == "`c`; tiny-base weights `a`, `b`"
    assert provenance([{"provenance": {"git_commit": "c"}}])[1] == "`c`"


def test_results_on_other_weights_are_refused_and_kept(built: Path, tmp_path: Path) -> None:
    path = tmp_path / "runs" / "u" / "eval.jsonl"
    unit = {"model": "tiny-base", "suite": "ruler"}
    save_records(path, unit, [{"score": 1.0}], 0, "cpu")
    assert cached_records(path, unit)[0]["score"] == 1.0
    run = tmp_path / "runs" / "train-cpt-abc"
    _build(run, b"trained")
    (run / "run.json").write_text(json.dumps({"tokens": 1, "seconds": 1.0}))
    (run / "metrics.jsonl").write_text(json.dumps({"step": 1}) + "\n")
    write_run_base(run, {"model": "tiny-base"})
    train = CachedUnit("train", "runs/train-cpt-abc", {"model": "tiny-base"})
    assert train.cached() is not None

    _build(built, b"weights rebuilt elsewhere")
    with pytest.raises(UserError, match=r"measured on tiny-base weights \w{12}, but .*LONGRED_CAC"):
        cached_records(path, unit)
    with pytest.raises(UserError, match="train-cpt-abc was measured on tiny-base weights"):
        train.cached()
    assert path.is_file() and (run / "final" / "model.safetensors").is_file()  # nothing lost

    old = tmp_path / "runs" / "old" / "eval.jsonl"  # made before records named the weights
    save_records(old, unit, [{"score": 2.0}], 0, "cpu")
    records = [json.loads(line) for line in old.read_text().splitlines()]
    for r in records:
        del r["provenance"]["builds"]
    old.write_text("".join(json.dumps(r) + "\n" for r in records))
    write_manifest(old.parent)
    assert cached_records(old, unit)[0]["score"] == 2.0
