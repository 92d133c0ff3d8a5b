"""Which checkpoint a resumed run starts from: the newest whole one, whatever ``latest`` says
(a run killed between a checkpoint's rename and the pointer's write)."""

from __future__ import annotations

import torch

from longred_bench.training.checkpoint import latest_checkpoint, save_checkpoint


def _save(out, step):
    return save_checkpoint(out, step, {"w": torch.full((2,), float(step))}, {"step": step}, 5)


def test_the_newest_whole_checkpoint_is_found_whatever_the_pointer_says(tmp_path) -> None:
    assert latest_checkpoint(tmp_path) is None
    for step in (1, 2, 3):
        _save(tmp_path, step)
    root = tmp_path / "checkpoints"
    assert latest_checkpoint(tmp_path) == root / "step-000003"
    # killed before the pointer moved: it names step 2, step 3 is whole
    (root / "latest").write_text("step-000002\n")
    assert latest_checkpoint(tmp_path) == root / "step-000003"
    # a dangling pointer (its folder gone while being written again) or none at all
    (root / "latest").write_text("step-000009\n")
    assert latest_checkpoint(tmp_path) == root / "step-000003"
    (root / "latest").unlink()
    assert latest_checkpoint(tmp_path) == root / "step-000003"
    # a folder without its state file is not whole: the one before it is taken
    (root / "step-000003" / "state.pt").unlink()
    assert latest_checkpoint(tmp_path) == root / "step-000002"


def test_a_damaged_checkpoint_is_named_in_one_line(tmp_path) -> None:
    """A state file cut short ended in torch's zip-reader traceback."""
    import pytest

    from longred_bench.errors import UserError
    from longred_bench.training.checkpoint import load_checkpoint

    path = _save(tmp_path, 4)
    state = path / "state.pt"
    state.write_bytes(state.read_bytes()[:20])
    with pytest.raises(UserError, match=r"step-000004 cannot be read .*delete that folder"):
        load_checkpoint(path)
