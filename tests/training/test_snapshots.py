"""Model snapshots at chosen optimizer steps (``snapshot_steps``): a learning curve from one run."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from train_helpers import smoke

from longred_bench.errors import UserError
from longred_bench.jobs.train import run_training as train
from longred_bench.training.loop import snapshot_dir


def _weights(model_dir: Path) -> dict[str, torch.Tensor]:
    return load_file(str(model_dir / "model.safetensors"))


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"snapshot_steps": [2, 1]}, "increasing"),
        ({"snapshot_steps": [1, 1]}, "increasing"),
        ({"snapshot_steps": [0]}, r"in 1\.\.3"),
        ({"snapshot_steps": [4]}, r"in 1\.\.3"),
    ],
)
def test_bad_snapshot_steps_are_refused(overrides, message) -> None:
    with pytest.raises(UserError, match=message):
        smoke("cpt", **overrides)


def test_snapshot_steps_stay_out_of_the_cache_key_at_their_default() -> None:
    assert "snapshot_steps" not in smoke("cpt").to_dict()
    assert smoke("cpt", snapshot_steps=[1]).to_dict()["snapshot_steps"] == [1]


@pytest.mark.integration
def test_snapshots_are_the_models_of_their_steps(tmp_path: Path) -> None:
    """A snapshot of step k is the model a run of k steps ends with (constant learning rate),
    the last one is the final model, and a killed run resumed keeps and completes them."""
    cfg = smoke("cpt", steps=4, checkpoint_every=2, snapshot_steps=[1, 3, 4])
    train(cfg, tmp_path / "curve", progress=False, stop_after=3)
    assert snapshot_dir(tmp_path / "curve", 3).is_dir()
    assert not snapshot_dir(tmp_path / "curve", 4).exists()
    train(cfg, tmp_path / "curve", resume=True, progress=False)
    train(smoke("cpt", steps=1), tmp_path / "one", progress=False)
    first = _weights(snapshot_dir(tmp_path / "curve", 1))
    one = _weights(tmp_path / "one" / "final")
    assert all(torch.equal(first[k], one[k]) for k in one)
    last = _weights(snapshot_dir(tmp_path / "curve", 4))
    final = _weights(tmp_path / "curve" / "final")
    assert all(torch.equal(last[k], final[k]) for k in final)
    assert any(not torch.equal(first[k], final[k]) for k in final)
    assert (snapshot_dir(tmp_path / "curve", 3) / "config.json").is_file()
