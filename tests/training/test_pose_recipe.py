"""The ``pose`` and ``rpes`` recipes (PoSE, RPES): CE on short samples at
position ids stretched over the extended window (integration, the random tiny model)."""

from __future__ import annotations

import pytest
import torch

from longred_bench.errors import UserError
from longred_bench.training.build import build_run
from longred_bench.training.config import resolve_config
from longred_bench.training.objectives import causal_lm_loss

pytestmark = pytest.mark.integration


def _positions_seen(cfg) -> tuple[list[torch.Tensor], dict, torch.Tensor]:
    """Position ids the student is called with in one step's losses, the terms, and the CE of
    the same rows at ordinary positions."""
    run = build_run(cfg)
    model = run.method.student
    seen: list[torch.Tensor] = []

    def hook(module, args, kwargs):
        seen.append(kwargs.get("position_ids"))

    handle = model.register_forward_pre_hook(hook, with_kwargs=True)
    batch = run.streams["long"].next(run.method.rows(0)["long"])
    try:
        terms = run.method.losses({"long": batch}, 0)
    finally:
        handle.remove()
    with torch.no_grad():
        plain = causal_lm_loss(model(batch.ids).logits, batch.ids, batch.mask)
    return seen, terms, plain


@pytest.mark.parametrize("transform", ["pose", "rpes"])
def test_pose_trains_on_stretched_positions(transform: str) -> None:
    cfg = resolve_config(transform, profile="smoke")
    seen, terms, plain = _positions_seen(cfg)
    assert len(seen) == 1 and seen[0] is not None
    ids = seen[0]
    rows, length = ids.shape
    assert length == cfg.long_len == 256 and rows == 8
    assert bool((ids.diff(dim=1) > 0).all()) and int(ids.max()) < 1024  # the 4x window
    assert int(ids[:, -1].max()) > 256  # beyond the original window
    assert torch.isfinite(terms["loss"]) and terms["loss"] == terms["ce_long"]
    assert float(terms["loss"]) != pytest.approx(float(plain), abs=1e-6)  # positions matter
    if transform == "pose":
        assert bool((ids[:, 0] == 0).all()) and int(((ids.diff(dim=1) > 1).sum(dim=1)).max()) <= 1
    else:
        assert int(((ids.diff(dim=1) > 1).sum(dim=1)).min()) > 1


def test_pose_checks_its_settings() -> None:
    with pytest.raises(UserError, match="extends the window"):
        resolve_config("pose", profile="smoke", overrides={"rope": None})
    cfg = resolve_config("pose", profile="smoke", overrides={"long_len": 1024})
    with pytest.raises(UserError, match="not below the extended window"):
        build_run(cfg)
