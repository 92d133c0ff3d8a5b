"""Pinned behaviour of ``training/merge.py``: a merge writes into an empty folder or over the
same merge (its profile's name and checkpoint settings aside), and refuses a folder holding
another config's run, or a run whose config cannot be read, before loading a model; a merge
writes the interpolated weights and the records of a run of no step."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
import yaml
from train_helpers import smoke

from longred_bench.errors import UserError
from longred_bench.models.loading import load
from longred_bench.training.merge import check_out, merge_run


def _merge(**overrides):
    return smoke("merge", **{"merge_with": "trained-dir", "merge_weight": 0.25, **overrides})


def _holding(out: Path, config: dict) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=True))
    return out


def test_an_empty_or_missing_folder_takes_the_merge(tmp_path: Path) -> None:
    """Nothing there (no folder, or an empty one): nothing to refuse."""
    check_out(_merge(), tmp_path / "new")
    (tmp_path / "empty").mkdir()
    check_out(_merge(), tmp_path / "empty")


def test_the_same_merge_is_written_again_under_other_labels(tmp_path: Path) -> None:
    """The folder holds this merge's config, or the same one under another profile name and
    other checkpoint settings: it is the same merge."""
    cfg = _merge()
    check_out(cfg, _holding(tmp_path / "same", cfg.to_dict()))
    relabelled = cfg.to_dict()
    relabelled.update(profile="another", checkpoint_every=7, keep_checkpoints=9)
    check_out(cfg, _holding(tmp_path / "relabelled", relabelled))


def test_a_merge_of_another_config_is_refused(tmp_path: Path) -> None:
    """Another merge weight is another merge: refused, naming the recipe it holds."""
    other = _merge(merge_weight=0.5).to_dict()
    with pytest.raises(UserError, match="holds a merge run of another config"):
        check_out(_merge(), _holding(tmp_path / "m", other))
    cpt = smoke("cpt").to_dict()
    with pytest.raises(UserError, match="holds a cpt run of another config"):
        check_out(_merge(), _holding(tmp_path / "c", cpt))


@pytest.mark.parametrize("what", ["checkpoints", "final", "unreadable"])
def test_a_run_without_a_readable_config_is_refused(tmp_path: Path, what: str) -> None:
    """A folder with checkpoints or a final model but no config, or a config that is not a
    mapping, holds another run."""
    out = tmp_path / what
    if what == "unreadable":
        out.mkdir()
        (out / "config.yaml").write_text("- just\n- a list\n")
    else:
        (out / what).mkdir(parents=True)
    with pytest.raises(UserError, match="holds another run of another config"):
        check_out(_merge(), out)


def test_merge_run_checks_the_folder_before_loading_anything(tmp_path: Path) -> None:
    """With ``merge_with`` set, a folder of another config stops the merge with the check's
    message (the models named do not exist: nothing was loaded) and nothing is written."""
    out = _holding(tmp_path / "m", _merge(merge_weight=0.5).to_dict())
    before = (out / "config.yaml").read_text()
    with pytest.raises(UserError, match="holds a merge run of another config"):
        merge_run(_merge(), out, progress=False)
    assert sorted(p.name for p in out.iterdir()) == ["config.yaml"]
    assert (out / "config.yaml").read_text() == before


def test_a_merge_writes_its_weights_and_a_run_of_no_step(tmp_path: Path) -> None:
    """``merge_weight`` x the trained weights + the rest x the original's in ``final/``, and the
    records of a finished run that trained nothing: one metrics line at step 0 with 0 tokens,
    ``run.json`` with 0 tokens and the merge's inputs, the config as given."""
    trained = load("tiny-random")
    with torch.no_grad():
        for tensor in trained.model.state_dict().values():
            if tensor.is_floating_point():
                tensor.add_(1.0)
    trained.model.save_pretrained(tmp_path / "trained")
    trained.tokenizer.save_pretrained(tmp_path / "trained")
    cfg = smoke("merge", merge_with=str(tmp_path / "trained"), merge_weight=0.25)
    out = tmp_path / "m"
    final = merge_run(cfg, out, progress=False)
    assert final == out / "final"
    original = load(cfg.model).model.state_dict()
    merged = load(str(final)).model.state_dict()
    for name, tensor in original.items():
        if tensor.is_floating_point():
            torch.testing.assert_close(merged[name], tensor + 0.25)
    lines = (out / "metrics.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [{"step": 0, "tokens": 0}]
    info = json.loads((out / "run.json").read_text())
    assert info["tokens"] == 0 and info["merge_weight"] == 0.25
    assert info["merge_with"] == str(tmp_path / "trained")
    assert yaml.safe_load((out / "config.yaml").read_text()) == cfg.to_dict()
