"""``training.offload``: with activation checkpointing, what passes through the offload hooks
is each decoder layer's input and nothing a layer recomputes; the same step with and without the
hooks, on the CPU also through the copy a device tensor takes; CUDA tensors go to pinned host
memory and come back equal (``gpu``); the config's rule;
the memory model's host term; the 128K plans fit 80 GiB per GPU."""

from __future__ import annotations

import gc
import json
import weakref

import pytest
import torch
from test_lm_loss import batch
from train_helpers import smoke, tiny_llama

from longred_bench.errors import UserError
from longred_bench.training.distributed import wrap_student
from longred_bench.training.lm_loss import lm_loss
from longred_bench.training.memory_model import estimate_train_memory
from longred_bench.training.offload import HostOffload
from longred_bench.training.shapes import shape


class Recording(HostOffload):
    """The hooks, recording the shape of every tensor saved under them."""

    def __init__(self, min_bytes: int = 0) -> None:
        super().__init__(min_bytes)
        self.shapes: list[tuple[int, ...]] = []

    def pack(self, tensor: torch.Tensor):
        self.shapes.append(tuple(tensor.shape))
        return super().pack(tensor)


def _step(model, offload: HostOffload | None):
    device = next(model.parameters()).device
    ids, mask = (t.to(device) for t in batch())
    model.zero_grad(set_to_none=True)
    if offload is None:
        loss = lm_loss(model, ids, mask, impl="chunked")
    else:
        with offload.hooks():
            loss = lm_loss(model, ids, mask, impl="chunked")
    loss.backward()
    return loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}


def test_checkpointed_layers_offload_their_inputs_and_nothing_they_recompute() -> None:
    rows, length = batch()[0].shape
    hidden, mlp = (rows, length, 32), (rows, length, 64)  # tiny_llama: hidden 32, MLP 64
    plain = Recording()
    _step(tiny_llama().train(), plain)
    assert mlp in plain.shapes  # without checkpointing the MLP's activations are saved
    ckpt = Recording()
    model = wrap_student(tiny_llama().train(), smoke("cpt", activation_checkpointing=True), 1)
    _step(model, ckpt)
    assert mlp not in ckpt.shapes
    assert ckpt.shapes.count(hidden) >= len(model.model.layers)
    assert ckpt.seen < plain.seen / 3
    assert ckpt.moved == 0 and ckpt.passes == 1  # on the CPU nothing moves


class Copying(Recording):
    """The hooks with CPU tensors sent through the copy a device tensor takes: each saved
    tensor goes to a fresh host buffer and comes back from it."""

    kept_on = ()

    def __init__(self) -> None:
        super().__init__()
        self.returned: list[int] = []  # the host buffers backward read

    def unpack(self, packed):
        if isinstance(packed, tuple):
            self.returned.append(packed[1].data_ptr())
        return super().unpack(packed)


def test_the_hooks_change_no_number() -> None:
    cfg = smoke("cpt", activation_checkpointing=True)
    loss, grads = _step(wrap_student(tiny_llama().train(), cfg, 1), None)
    copying = Copying()
    for offload in (HostOffload(min_bytes=0), copying):
        got, got_grads = _step(wrap_student(tiny_llama().train(), cfg, 1), offload)
        assert got == loss
        for name, grad in grads.items():
            torch.testing.assert_close(got_grads[name], grad, rtol=0, atol=0, msg=name)
    assert copying.moved > 0 and copying.returned  # the copy path ran, and backward read it


def test_cpu_tensors_parameters_and_small_tensors_stay_where_they_are() -> None:
    offload = HostOffload(min_bytes=16)
    small, large = torch.ones(2), torch.ones(64)
    weight = torch.nn.Parameter(torch.ones(64))
    for t in (small, large, weight):
        kept = offload.pack(t)  # the same storage, detached
        assert kept.data_ptr() == t.data_ptr() and not kept.requires_grad
        assert offload.unpack(kept) is kept
    assert offload.moved == 0 and offload.seen == 4 * (2 + 64 + 64)


def test_a_graph_part_never_backpropagated_is_freed() -> None:
    """A saved output kept as it is (small, or on the CPU) must not keep its own graph alive:
    LinearARD's forward builds a tail its loss never reaches, which leaked every step."""
    offload = HostOffload()
    x = torch.randn(8, requires_grad=True)
    with offload.hooks():
        y = x.exp()  # exp saves its output
    freed = weakref.ref(y)
    del y
    gc.collect()
    assert freed() is None


@pytest.mark.gpu
def test_cuda_tensors_wait_in_pinned_host_memory_and_come_back_equal() -> None:
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    offload = HostOffload(min_bytes=1024)
    t = torch.randn(1024, 64, device="cuda")
    packed = offload.pack(t)
    _, host = packed
    assert host.device.type == "cpu" and host.is_pinned() and offload.moved == t.numel() * 4
    assert torch.equal(offload.unpack(packed), t)
    weight = torch.nn.Parameter(t.clone())
    assert offload.pack(weight) is weight
    cfg = smoke("cpt", activation_checkpointing=True, device="cuda")
    loss, grads = _step(wrap_student(tiny_llama().cuda().train(), cfg, 1), None)
    got, got_grads = _step(wrap_student(tiny_llama().cuda().train(), cfg, 1), HostOffload(0))
    assert got == loss
    for name, grad in grads.items():
        torch.testing.assert_close(got_grads[name], grad, rtol=0, atol=0, msg=name)


def test_offload_needs_checkpointing() -> None:
    with pytest.raises(UserError, match="activation_offload=true needs activation_checkpointing"):
        smoke("cpt", activation_offload=True)


def test_the_memory_model_counts_offloaded_activations_as_host_memory() -> None:
    s = shape("llama3-8b")
    cfg = smoke("cpt", long_len=131072, tokens_per_step=131072 * 8, micro_tokens=131072 * 8,
                activation_checkpointing=True, distributed="fsdp")  # fmt: skip
    kept = estimate_train_memory(s, cfg, 8, window=8192)
    off = estimate_train_memory(s, cfg.replace(activation_offload=True), 8, window=8192)
    assert kept.host == 0 and off.host == kept.activations
    # the device keeps the largest saved tensor that comes back at a time: here the head's
    head = 131072 * 12 * s.hidden
    assert off.activations == head
    assert kept.peak - off.peak == kept.activations - head
    # the 32 layer inputs of 131,072 tokens in bf16: 32 GiB moved
    assert off.host - head == 32 * 131072 * 2 * s.hidden == 32 * 2**30


@pytest.mark.parametrize("profile", ["paper-128k", "paper-mistral"])
def test_the_128k_plans_fit_80_gib_per_gpu_with_offload(profile, tmp_path, monkeypatch) -> None:
    from profile_helpers import ctx_of

    from longred_bench.reproduce.costs import unit_cost
    from longred_bench.reproduce.registry import get_spec

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    ctx = ctx_of("table3", profile)
    train = [s for s in get_spec("table3").steps(ctx) if s.unit.kind == "train"]
    costs = {s.label: unit_cost(s, ctx.profile) for s in train}
    long_rows = [k for k in costs if k.startswith(("train cpt ", "train longred-c "))]
    assert len(long_rows) == 2
    for label, cost in costs.items():
        assert cost.gib_per_gpu is None or cost.gib_per_gpu <= 80, label
    for label in long_rows:
        assert costs[label].host_gib_per_gpu > 32, label


@pytest.mark.integration
def test_a_run_with_offload_follows_the_checkpointed_curve(tmp_path) -> None:
    from longred_bench.training.loop import train

    curves, info = [], {}
    for name, offload in (("ckpt", False), ("offload", True)):
        cfg = smoke("cpt", activation_checkpointing=True, activation_offload=offload)
        train(cfg, tmp_path / name, progress=False)
        lines = (tmp_path / name / "metrics.jsonl").read_text().splitlines()
        curves.append([json.loads(x)["loss"] for x in lines])
        info[name] = json.loads((tmp_path / name / "run.json").read_text())
    assert len(curves[0]) >= 2 and curves[1] == curves[0]
    assert "offloaded_mib_per_pass" not in info["ckpt"]
    assert info["offload"]["offloaded_mib_per_pass"] == 0.0  # CPU: nothing moves
