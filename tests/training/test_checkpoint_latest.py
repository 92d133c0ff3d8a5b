"""``latest_checkpoint`` finds the newest whole checkpoint even where a run stopped between
moving it into place and pointing ``latest`` at it (the checkpoint is kept, not lost)."""

from __future__ import annotations

import torch

from longred_bench.training.checkpoint import latest_checkpoint, save_checkpoint


def test_a_checkpoint_moved_into_place_before_latest_is_found(tmp_path):
    state = {"w": torch.zeros(2)}
    assert latest_checkpoint(tmp_path) is None
    two = save_checkpoint(tmp_path, 2, state, {"step": 2}, keep=3)
    assert latest_checkpoint(tmp_path) == two
    four = save_checkpoint(tmp_path, 4, state, {"step": 4}, keep=3)
    (tmp_path / "checkpoints" / "latest").write_text(two.name + "\n")  # stopped before latest
    assert latest_checkpoint(tmp_path) == four
    (tmp_path / "checkpoints" / "latest").unlink()  # stopped before the first latest
    assert latest_checkpoint(tmp_path) == four
    for f in four.iterdir():  # a folder missing its files is no checkpoint
        f.unlink()
    assert latest_checkpoint(tmp_path) == two
