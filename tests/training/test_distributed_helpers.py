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
    others wait for it (each held both models and wrote the same folder), on a gloo group of
    their own with a day's timeout (the default group's ended them during a long merge)."""
    from longred_bench.jobs import train as job
    from longred_bench.training.methods import METHODS

    produced, groups, sent, asked = [], [], [], []

    def produce(cls, cfg, out, progress):
        produced.append(out)
        return out

    def broadcast(box, src, group):
        assert src == 0 and group is groups[-1]
        if box[0] is None:  # a waiting process: process 0's value arrives
            box[0] = ("done", tmp_path / "final")
        sent.append(box[0])

    monkeypatch.setattr(METHODS["merge"], "produce", classmethod(produce))
    monkeypatch.setattr(
        collectives.dist, "new_group", lambda **kw: groups.append(kw) or asked.append(kw) or kw
    )
    monkeypatch.setattr(collectives.dist, "broadcast_object_list", broadcast)
    monkeypatch.setattr(
        collectives.dist, "destroy_process_group", lambda group: groups.remove(group)
    )
    cfg = resolve_config("merge", profile="smoke", overrides={"merge_with": str(tmp_path)})
    timeout = {"backend": "gloo", "timeout": collectives.ALONE_TIMEOUT}
    assert job.run_training(cfg, tmp_path / "m", rank=1, world=2) == tmp_path / "final"
    assert produced == [] and groups == [] and collectives.ALONE_TIMEOUT.total_seconds() >= 86400
    assert job.run_training(cfg, tmp_path / "m", rank=0, world=2) == tmp_path / "m"
    assert produced == [tmp_path / "m"] and sent[-1] == ("done", tmp_path / "m")
    assert asked == [timeout, timeout]


def test_a_failed_merge_stops_the_waiting_processes_without_a_word(monkeypatch) -> None:
    """Process 0 raises its error (it says why); the others, told of it, exit with status 1;
    every process closes its groups first, the default one too (the run ends there)."""
    monkeypatch.setattr(collectives.dist, "new_group", lambda **kw: "g")
    closed = []
    monkeypatch.setattr(
        collectives.dist, "destroy_process_group", lambda group=None: closed.append(group)
    )
    told = []

    def broadcast(box, src, group):
        if box[0] is None:
            box[0] = ("failed", None)
        told.append(box[0])

    def work():
        raise ValueError("no such model")

    monkeypatch.setattr(collectives.dist, "broadcast_object_list", broadcast)
    with pytest.raises(ValueError, match="no such model"):
        collectives.from_process_0(work, 0, 2)
    assert told == [("failed", None)]
    with pytest.raises(SystemExit) as stop:
        collectives.from_process_0(work, 1, 2)
    assert stop.value.code == 1
    assert closed == ["g", None, "g", None]
    assert collectives.from_process_0(lambda: 5, 0, 1) == 5


def test_leaving_waits_for_every_process_then_closes_the_groups(monkeypatch) -> None:
    """Every process waits on a gloo group of a day's timeout (process 0 may write a large
    model), then closes it and the default group; one process has nothing to leave."""
    calls = []
    monkeypatch.setattr(distributed.dist, "is_initialized", lambda: True)
    monkeypatch.setattr(distributed.dist, "new_group", lambda **kw: calls.append(kw) or "g")
    monkeypatch.setattr(distributed.dist, "barrier", lambda group: calls.append(("wait", group)))
    monkeypatch.setattr(
        distributed.dist, "destroy_process_group", lambda *g: calls.append(("close", *g))
    )
    distributed.leave_distributed(1)
    assert calls == []
    distributed.leave_distributed(2)
    timeout = {"backend": "gloo", "timeout": collectives.ALONE_TIMEOUT}
    assert calls == [timeout, ("wait", "g"), ("close", "g"), ("close",)]


@pytest.mark.parametrize("cached", [False, True])
def test_a_torchrun_training_unit_leaves_the_group_after_its_run(
    monkeypatch, tmp_path, cached: bool
) -> None:
    """``--unit`` under torchrun: every rank leaves the process group once the run is trained
    (or found trained meanwhile), after rank 0 let go of the run's lock."""
    import contextlib
    from types import SimpleNamespace

    from longred_bench import cache
    from longred_bench.reproduce import cluster

    calls = []

    @contextlib.contextmanager
    def lock(run_dir, busy):
        calls.append("lock")
        yield
        calls.append("unlock")

    monkeypatch.setattr(distributed, "init_distributed", lambda: (0, 2))
    monkeypatch.setattr(distributed, "leave_distributed", lambda world: calls.append(world))
    monkeypatch.setattr(cache, "build_lock", lock)
    monkeypatch.setattr(torch.distributed, "broadcast_object_list", lambda box, src: None)
    monkeypatch.setattr(cluster, "_train_ranks", lambda *args: calls.append("train"))
    cfg = resolve_config("cpt", profile="smoke").to_dict()
    unit = SimpleNamespace(dir=tmp_path / "run", config=cfg, cached=lambda: cached or None)
    outcome: list[str] = []
    cluster._train(SimpleNamespace(unit=unit), False, outcome)
    trained = [] if cached else ["train"]
    assert calls == ["lock", *trained, "unlock", 2]
    assert outcome == ["taken" if cached else "computed"]


@pytest.mark.parametrize("rank", [0, 1])
def test_a_torchrun_unit_whose_run_is_held_elsewhere_stops_with_its_group_closed(
    monkeypatch, tmp_path, rank: int
) -> None:
    """Another process trains the run: rank 0 says so, the others stop with status 1, each with
    its process group closed and nothing trained."""
    from types import SimpleNamespace

    from longred_bench import cache
    from longred_bench.errors import UserError
    from longred_bench.reproduce import cluster

    calls = []

    def held(run_dir, busy):
        raise UserError(busy)

    def broadcast(box, src):
        box[0] = "busy"  # rank 0's word, on every rank

    monkeypatch.setattr(distributed, "init_distributed", lambda: (rank, 2))
    monkeypatch.setattr(distributed, "leave_distributed", lambda world: calls.append("leave"))
    monkeypatch.setattr(cache, "build_lock", held)
    monkeypatch.setattr(torch.distributed, "broadcast_object_list", broadcast)
    monkeypatch.setattr(torch.distributed, "destroy_process_group", lambda: calls.append("close"))
    monkeypatch.setattr(cluster, "_train_ranks", lambda *args: calls.append("train"))
    cfg = resolve_config("cpt", profile="smoke").to_dict()
    unit = SimpleNamespace(dir=tmp_path / "run", config=cfg, cached=lambda: None)
    stop = (
        pytest.raises(UserError, match="another process is training")
        if rank == 0
        else (pytest.raises(SystemExit, match="1"))
    )
    with stop:
        cluster._train(SimpleNamespace(unit=unit), False, [])
    assert calls == ["close"]
