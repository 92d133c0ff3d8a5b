"""``training.lm_loss``: the recipes' next-token CE without whole logits (the output projection
computes the chunked loss for the call) equals the plain one from the logits, in value and in
every parameter's gradient; the config key stays out of the cache key at its default."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from train_helpers import smoke, tiny_llama

from longred_bench.errors import UserError
from longred_bench.kernels.linear_ce import IGNORE_INDEX
from longred_bench.training.lm_loss import lm_loss, resolve_lm_loss, shifted_targets
from longred_bench.training.loop import train


def batch(rows: int = 3, length: int = 37) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(0, 257, (rows, length), generator=gen)
    mask = torch.ones_like(ids, dtype=torch.bool)
    mask[1, 30:] = False  # a padded row
    return ids, mask


def loss_and_grads(model, ids, mask, impl: str, **kwargs):
    model.zero_grad(set_to_none=True)
    loss = lm_loss(model, ids, mask, impl=impl, **kwargs)
    (loss * 1.7).backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters()}
    return loss.detach(), grads


@pytest.mark.parametrize("tied", [True, False])
def test_chunked_equals_plain_in_value_and_every_gradient(tied: bool) -> None:
    model = tiny_llama(tied)
    ids, mask = batch()
    positions = torch.arange(37).repeat(3, 1) * 2  # position ids pass through to the model
    plain, plain_grads = loss_and_grads(model, ids, mask, "plain", position_ids=positions)
    chunked, grads = loss_and_grads(model, ids, mask, "chunked", position_ids=positions)
    # fp32 (the plain loss is fp32 whatever the logits): one part in a million.
    assert abs(chunked - plain) <= 1e-6 * abs(plain)
    assert grads.keys() == plain_grads.keys()
    for name, grad in grads.items():
        assert (grad - plain_grads[name]).norm() <= 1e-5 * plain_grads[name].norm(), name
    assert type(model.lm_head).forward is torch.nn.Linear.forward
    assert "forward" not in vars(model.lm_head)  # the projection is itself again
    assert model(ids).logits.shape == (3, 37, 257)


def test_no_mask_counts_every_token_and_targets_shift() -> None:
    ids, mask = batch(rows=2, length=5)
    target = shifted_targets(ids, mask)
    assert target[0, :4].tolist() == ids[0, 1:].tolist() and target[0, 4] == IGNORE_INDEX
    model = tiny_llama()
    ids, _ = batch()
    plain = lm_loss(model, ids, None, impl="plain")
    chunked = lm_loss(model, ids, None, impl="chunked")
    assert abs(chunked - plain) <= 1e-6 * abs(plain)


def test_padding_is_not_counted() -> None:
    ids, mask = batch()
    target = shifted_targets(ids, mask)
    assert (target[1, 29:] == IGNORE_INDEX).all() and (target[1, :29] != IGNORE_INDEX).all()


def test_resolution_and_refusals() -> None:
    assert resolve_lm_loss("auto", "cpu") == "plain"
    assert resolve_lm_loss("chunked", "cpu") == "chunked"
    with pytest.raises(UserError, match="lm_loss"):
        resolve_lm_loss("fast", "cpu")
    model = tiny_llama()
    model.lm_head.bias = torch.nn.Parameter(torch.zeros(257))
    ids, mask = batch()
    with pytest.raises(UserError, match="lm_loss=plain"):
        lm_loss(model, ids, mask, impl="chunked")


def test_new_keys_stay_out_of_the_cache_key_at_their_defaults() -> None:
    cfg = smoke("cpt")
    assert not {"lm_loss", "mixed_precision", "compile"} & set(cfg.to_dict())
    assert cfg.replace(lm_loss="chunked").to_dict()["lm_loss"] == "chunked"
    with pytest.raises(UserError, match="lm_loss"):
        cfg.replace(lm_loss="fast")
    with pytest.raises(UserError, match="distributed=fsdp"):
        cfg.replace(mixed_precision="fsdp")


def _curve(out: Path) -> list[float]:
    return [json.loads(x)["loss"] for x in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.integration
@pytest.mark.parametrize("recipe", ["cpt", "pose", "longred"])
def test_a_run_with_the_chunked_loss_follows_the_plain_curve(
    recipe: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import longred_bench.training.lm_loss as module

    calls = []
    chunked_ce = module.linear_cross_entropy
    monkeypatch.setattr(
        module, "linear_cross_entropy", lambda *a, **k: calls.append(k) or chunked_ce(*a, **k)
    )
    train(smoke(recipe, lm_loss="plain"), tmp_path / "plain", progress=False)
    assert not calls
    train(smoke(recipe, lm_loss="chunked"), tmp_path / "chunked", progress=False)
    assert calls and all(k["impl"] == "chunked" for k in calls)
    plain, chunked = _curve(tmp_path / "plain"), _curve(tmp_path / "chunked")
    assert len(plain) == 3 and chunked == pytest.approx(plain, rel=1e-5)


def test_a_pad_predicts_nothing_under_left_padding() -> None:
    # The next token counts only where both tokens are real: the pad at 0 predicts nothing,
    # the last token has no next one.
    ids = torch.tensor([[9, 5, 6, 7]])
    mask = torch.tensor([[False, True, True, True]])
    assert shifted_targets(ids, mask).tolist() == [[IGNORE_INDEX, 6, 7, IGNORE_INDEX]]
