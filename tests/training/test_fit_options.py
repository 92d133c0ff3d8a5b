"""``training.distributed.wrap_student`` on one process: FSDP2's mixed-precision policy (bf16
parameters and compute, fp32 master weights and gradients), activation checkpointing per decoder
layer (same loss and gradients), compiled decoder layers (same loss, gradients to fp32 rounding)."""

from __future__ import annotations

import pytest
import torch
import torch.distributed as dist
from test_lm_loss import batch
from train_helpers import smoke, tiny_llama

from longred_bench.errors import UserError
from longred_bench.training.distributed import close_single_process_group, wrap_student
from longred_bench.training.lm_loss import lm_loss


def loss_and_grads(model, impl: str = "chunked") -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    device = next(model.parameters()).device  # FSDP2 moves the model to the GPU where there is one
    ids, mask = (t.to(device) for t in batch())
    model.zero_grad(set_to_none=True)
    loss = lm_loss(model, ids, mask, impl=impl)
    loss.backward()
    return loss.detach(), {n: p.grad for n, p in model.named_parameters()}


def test_fsdp_policy_computes_in_bf16_and_keeps_fp32_master_weights_and_grads() -> None:
    cfg = smoke("cpt", distributed="fsdp", mixed_precision="fsdp", dtype="bfloat16")
    model = tiny_llama()
    seen = []
    proj = model.model.layers[0].self_attn.q_proj
    proj.register_forward_hook(lambda mod, args, out: seen.append((mod.weight.dtype, out.dtype)))
    try:
        model = wrap_student(model, cfg, 1, torch.bfloat16)
        assert dist.is_initialized() and dist.get_world_size() == 1
        loss, grads = loss_and_grads(model)
        assert seen == [(torch.bfloat16, torch.bfloat16)]
        assert torch.isfinite(loss)
        for name, param in model.named_parameters():
            assert param.to_local().dtype == torch.float32, name
            assert grads[name].to_local().dtype == torch.float32, name
    finally:
        close_single_process_group()
    assert not dist.is_initialized()


def test_activation_checkpointing_on_one_process_gives_the_same_step() -> None:
    plain_loss, plain_grads = loss_and_grads(tiny_llama().train())
    model = wrap_student(tiny_llama().train(), smoke("cpt", activation_checkpointing=True), 1)
    assert any(getattr(m, "gradient_checkpointing", False) for m in model.modules())
    loss, grads = loss_and_grads(model)
    assert loss == plain_loss
    for name, grad in grads.items():
        torch.testing.assert_close(grad, plain_grads[name], rtol=0, atol=0, msg=name)


@pytest.mark.integration
def test_compiled_decoder_layers_give_the_same_step() -> None:
    plain_loss, plain_grads = loss_and_grads(tiny_llama().train())
    model = wrap_student(tiny_llama().train(), smoke("cpt", compile=True), 1)
    assert all(layer._compiled_call_impl is not None for layer in model.model.layers)
    loss, grads = loss_and_grads(model)
    assert abs(loss - plain_loss) <= 1e-6 * abs(plain_loss)
    for name, grad in grads.items():
        assert (grad - plain_grads[name]).norm() <= 1e-5 * plain_grads[name].norm(), name


def test_a_built_run_attends_through_sdpa() -> None:
    from longred_bench.training.build import build_run

    method = build_run(smoke("longred")).method
    assert method.student.config._attn_implementation == "sdpa"
    assert method.teacher.config._attn_implementation == "sdpa"


@pytest.mark.integration
def test_linearard_with_checkpointing_follows_the_plain_curve(tmp_path) -> None:
    import json

    from longred_bench.training.loop import train

    curves = []
    for name, ckpt in (("plain", False), ("ckpt", True)):
        train(smoke("linearard", activation_checkpointing=ckpt), tmp_path / name, progress=False)
        lines = (tmp_path / name / "metrics.jsonl").read_text().splitlines()
        curves.append([json.loads(x)["loss"] for x in lines])
    assert len(curves[0]) == 3 and curves[1] == pytest.approx(curves[0], rel=1e-5)


def test_compile_is_refused_for_linearard_in_one_line() -> None:
    with pytest.raises(UserError, match="compile=true does not work with linearard"):
        smoke("linearard", compile=True)
    assert smoke("longred", compile=True).compile
