"""The process group a torchrun process joins, and the brief run's rows split over processes."""

from __future__ import annotations

import pytest
import torch

from longred_bench.training import collectives, distributed
from longred_bench.training.anchors import brief_rows
from longred_bench.training.config import resolve_config


@pytest.mark.parametrize(("cuda", "backend"), [(True, "cpu:gloo,cuda:nccl"), (False, "gloo")])
def test_a_gpu_group_carries_cpu_tensors_too(monkeypatch, cuda: bool, backend: str) -> None:
    """NCCL alone carries no CPU tensor ("No backend type associated with device type cpu"): the
    logged values' mean (a CPU tensor) and the objects processes share go over gloo."""
    joined = []
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: cuda)
    monkeypatch.setattr(torch.cuda, "set_device", lambda device: None)
    monkeypatch.setattr(distributed.dist, "is_initialized", lambda: bool(joined))
    monkeypatch.setattr(distributed.dist, "init_process_group", joined.append)
    monkeypatch.setattr(distributed.dist, "get_rank", lambda: 1)
    monkeypatch.setattr(distributed.dist, "get_world_size", lambda: 2)
    assert distributed.init_distributed() == (1, 2)
    assert joined == [backend]


def test_one_process_shares_nothing() -> None:
    assert collectives.on_every_process({"a": 1}, 1) == {"a": 1}
    assert collectives.every_process(3, 1) == [3]


def test_the_brief_runs_rows_split_over_the_processes() -> None:
    cfg = resolve_config("longrecipe", profile="smoke", overrides={"tokens_per_step": 4096})
    share = cfg.tokens_per_step * cfg.mix["long"]
    assert brief_rows(cfg, 1024) == round(share / 1024) == 3
    assert brief_rows(cfg, 1024, world=2) == 4  # rounded up to a multiple of the processes
    assert brief_rows(cfg, 1024, world=3) == 3
    assert brief_rows(cfg, 1 << 20, world=4) == 4  # at least one row a process


def test_a_merge_is_written_by_process_0_alone(monkeypatch, tmp_path) -> None:
    """A recipe that trains nothing (``merge``) is produced by process 0; under ``torchrun`` the
    others wait for it (each held both models and wrote the same folder)."""
    from longred_bench.jobs import train as job
    from longred_bench.training.methods import METHODS

    produced, shared = [], []

    def produce(cls, cfg, out, progress):
        produced.append(out)
        return out

    def from_process_0(value, world):
        shared.append((value, world))
        return tmp_path / "final"

    monkeypatch.setattr(METHODS["merge"], "produce", classmethod(produce))
    monkeypatch.setattr(job, "on_every_process", from_process_0)
    cfg = resolve_config("merge", profile="smoke", overrides={"merge_with": str(tmp_path)})
    assert job.run_training(cfg, tmp_path / "m", rank=1, world=2) == tmp_path / "final"
    assert produced == [] and shared == [(None, 2)]
    assert job.run_training(cfg, tmp_path / "m", rank=0, world=2) == tmp_path / "final"
    assert produced == [tmp_path / "m"] and shared[-1] == (tmp_path / "m", 2)
