"""Which suite-built weights a result names: a model folder counts as a build only where its
manifest names a model the suite builds; a training run's ``base.json`` that is no mapping
names nothing; and a result naming weights is refused only against weights built now, not
where the model is not built here at all (a copy of a cache that holds its results only)."""

from __future__ import annotations

from pathlib import Path

import pytest

import longred_bench.jobs.tiny_base as tiny_base
from longred_bench.cache import write_manifest
from longred_bench.errors import UserError
from longred_bench.jobs.builds import BASE_FILE, check_builds, result_builds, run_base


def _final(folder: Path, model: str, weights: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(weights)
    write_manifest(folder, {"kind": "model", "model": model})
    return folder


def test_only_a_suite_built_models_folder_names_a_build(tmp_path) -> None:
    built = _final(tmp_path / "a" / "final", "tiny-base", b"one")
    fetched = _final(tmp_path / "b" / "final", "smollm2-135m", b"two")
    assert set(result_builds({"model": str(built)})) == {"tiny-base"}
    assert result_builds({"model": str(fetched)}) == {}


@pytest.mark.parametrize("text", ["[1, 2]", '"tiny-base"', "7"])
def test_a_base_file_that_is_no_mapping_names_nothing(tmp_path, text) -> None:
    (tmp_path / BASE_FILE).write_text(text)
    assert run_base(tmp_path) == {}


def test_weights_are_refused_only_against_those_built_now(tmp_path, monkeypatch) -> None:
    run = tmp_path / "models" / "tiny-base-0123"
    monkeypatch.setattr(tiny_base, "tiny_base_run_dir", lambda: run)
    check_builds({"tiny-base": "0123456789ab"}, tmp_path)  # not built here: nothing to compare
    _final(run / "final", "tiny-base", b"weights")
    with pytest.raises(UserError, match="was measured on tiny-base weights 0123456789ab"):
        check_builds({"tiny-base": "0123456789ab"}, tmp_path)
