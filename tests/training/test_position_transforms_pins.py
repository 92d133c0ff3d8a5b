"""Pinned behaviour of ``training/position_transforms.py``: a batch of one row is a valid
batch for each sampler (one process of a run reading one row a step)."""

from __future__ import annotations

import torch

from longred_bench.training.position_transforms import (
    pose_position_ids,
    rpes_position_ids,
    sentence_gap_position_ids,
)


def test_each_sampler_takes_a_single_row() -> None:
    """One row of 8 tokens over a window of 32: ids ``[1, 8]``, strictly increasing, starting
    at 0 for the head samplers, inside the window."""
    gen = torch.Generator().manual_seed(0)
    starts = torch.zeros(1, 8, dtype=torch.bool)
    starts[0, 4] = True
    rows = {
        "pose": pose_position_ids(8, 32, 1, generator=gen),
        "rpes": rpes_position_ids(8, 32, 1, generator=gen),
        "gaps": sentence_gap_position_ids(starts, 32, generator=gen),
    }
    for name, ids in rows.items():
        assert ids.shape == (1, 8), name
        assert bool((ids.diff(dim=1) > 0).all()) and int(ids.min()) >= 0 and int(ids.max()) < 32
    assert int(rows["pose"][0, 0]) == 0 and int(rows["gaps"][0, 0]) == 0
    assert int(rows["gaps"][0, -1]) == 31  # the sentence gaps use the whole window
