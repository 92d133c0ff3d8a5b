"""Pinned behaviour of ``training/anchors.py``: the brief run takes micro-steps of one row a
process only where the run has micro-steps, and under several processes the last process
holding a window measures that window itself; a brief run interrupted before its measurement
resumes from its checkpoint."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch
from train_helpers import smoke, stand_in_measurement

from longred_bench.training.anchors import brief_config


def test_the_brief_run_has_micro_steps_only_where_the_run_has_them() -> None:
    """No micro-steps in the run: none in the brief run; with them, one row of ``target``
    tokens a process (``world * target`` tokens a micro-step)."""
    cfg = smoke("longrecipe", impact_steps=2)
    target = 2 * cfg.long_len
    assert brief_config(cfg.replace(micro_tokens=0), target, world=2).micro_tokens == 0
    micro = cfg.replace(micro_tokens=cfg.long_len)
    assert brief_config(micro, target, world=2).micro_tokens == 2 * target
    assert brief_config(micro, target, world=1).micro_tokens == target


def test_the_last_process_with_a_window_measures_it(monkeypatch, tmp_path) -> None:
    """Three windows over four processes: process 2 holds window 2 alone (windows 2, 6, ...)
    and measures it; what it sends is that one window's change."""
    from longred_bench.training.anchors import measure_anchors

    target, windows = 6, 3
    all_ids = torch.arange(windows)[:, None].expand(windows, target).contiguous()
    measured, sent = [], []

    def gathered(value, world):
        if isinstance(value, torch.Tensor):
            sent.append(value)
            return [all_ids[r::world].float() for r in range(world)]
        return [value] * world

    def change(original, extended, ids):
        measured.append(ids.clone())
        return ids.float()

    stand_in_measurement(monkeypatch, all_ids, target, gathered, change)
    (tmp_path / "impact").mkdir()
    (tmp_path / "impact" / "run.json").write_text(json.dumps({"tokens": 1, "seconds": 1.0}))
    cfg = smoke("longrecipe", anchors=["measured"], impact_steps=1)
    got = measure_anchors(
        cfg, tmp_path, train=lambda *a, **k: tmp_path / "impact", progress=False, rank=2, world=4
    )
    assert got is None  # process 0 writes and hands out the measurement
    assert len(measured) == 1 and measured[0].tolist() == [[2] * target]
    assert len(sent) == 1 and sent[0].tolist() == [[2.0] * target]


class _Stop(Exception):
    """Raised by the stand-in brief training once its arguments are recorded."""


def test_an_interrupted_brief_run_is_resumed(monkeypatch, tmp_path) -> None:
    """No measurement yet and a checkpoint of the brief run in ``impact/``: the brief run is
    trained with ``resume=True``; with no checkpoint, from the start."""
    import longred_bench.models.loading as loading
    import longred_bench.training.checkpoint as checkpoint
    from longred_bench.training.anchors import measure_anchors

    monkeypatch.setattr(loading, "load_config", lambda name: None)
    monkeypatch.setattr(
        loading, "extended_config", lambda config, rope: SimpleNamespace(max_position_embeddings=64)
    )
    cfg = smoke("longrecipe", anchors=["measured"], impact_steps=1)
    calls = []

    def train(brief, out, *, resume, progress):
        calls.append((out, resume))
        raise _Stop

    for saved in (tmp_path / "impact" / "checkpoints" / "step-1", None):
        monkeypatch.setattr(checkpoint, "latest_checkpoint", lambda folder, saved=saved: saved)
        with pytest.raises(_Stop):
            measure_anchors(cfg, tmp_path, train=train, progress=False)
    assert calls == [(tmp_path / "impact", True), (tmp_path / "impact", False)]
