"""How recipes name and weigh their loss terms (``training.methods``): LongReD's
``L_long + a1 L_short + a2 L_s2l`` gives each term its own weight, LinearARD's relation KL
is averaged over the distilled layers (all layers together = the mean of each layer alone), and
the next-token CE on the long stream is ``ce_long`` in every recipe that computes it."""

from __future__ import annotations

import pytest
import torch
from train_helpers import smoke

from longred_bench.models.loading import extend, load
from longred_bench.training.methods import CrossEntropy, LinearARD, LongReD
from longred_bench.training.streams import Batch


def _batch(rows: int, length: int, seed: int = 0) -> Batch:
    ids = torch.randint(0, 200, (rows, length), generator=torch.Generator().manual_seed(seed))
    return Batch(ids, torch.ones_like(ids, dtype=torch.bool))


def test_each_longred_term_takes_its_own_weight() -> None:
    teacher = load("tiny-random").model
    student = extend(teacher, "pi:factor=2")
    cfg = smoke("longred")
    assert cfg.a1 != cfg.a2  # the smoke profile's weights tell the terms apart
    window = teacher.config.max_position_embeddings
    method = LongReD(cfg, student, teacher, {"short": 2, "s2l": 2}, window, layers=(1,),
                     target_window=2 * window)  # fmt: skip
    with torch.no_grad():
        short = method.losses({"short": _batch(2, 48)}, 0)
        s2l = method.losses({"s2l": _batch(2, window, seed=1)}, 0)
    assert float(short["short"]) > 0 and float(s2l["s2l"]) > 0
    assert float(short["loss"]) == pytest.approx(cfg.a1 * float(short["short"]), rel=1e-6)
    assert float(s2l["loss"]) == pytest.approx(cfg.a2 * float(s2l["s2l"]), rel=1e-6)


def test_linearard_averages_its_kl_over_the_layers() -> None:
    teacher = load("tiny-random").model
    student = extend(teacher, "pi:factor=2")
    cfg = smoke("linearard")
    n = teacher.config.num_hidden_layers
    assert n >= 2
    batch = {"s2l": _batch(2, 48)}

    def kl(layers: tuple[int, ...]) -> dict[str, float]:
        method = LinearARD(cfg, student, teacher, {"s2l": 2}, 256, layers)
        with torch.no_grad():
            return {k: float(v) for k, v in method.losses(batch, 0).items()}

    alone = [kl((layer,)) for layer in range(1, n + 1)]
    every = kl(tuple(range(1, n + 1)))
    for kind in cfg.ard_kinds:
        mean = sum(one[f"kl_{kind}"] for one in alone) / n
        assert every[f"kl_{kind}"] == pytest.approx(mean, rel=1e-4)


def test_the_long_streams_ce_is_ce_long_in_every_recipe() -> None:
    teacher = load("tiny-random").model
    student = extend(teacher, "pi:factor=2")
    window = teacher.config.max_position_embeddings
    batch = {"long": _batch(2, 2 * window)}
    rows, ard = {"long": 2}, smoke("linearard", cpt_steps=1)
    methods = {
        "cpt": CrossEntropy(smoke("cpt"), student, None, rows, window),
        "longred": LongReD(smoke("longred"), student, teacher, rows, window, layers=(1,)),
        "linearard": LinearARD(ard, student, teacher, rows, window, (1,)),
    }
    with torch.no_grad():
        terms = {name: method.losses(batch, 0) for name, method in methods.items()}
    assert {name: sorted(t) for name, t in terms.items()} == {
        name: ["ce_long", "loss"] for name in methods
    }
    ce = float(terms["cpt"]["ce_long"])
    assert all(float(t["ce_long"]) == pytest.approx(ce, rel=1e-6) for t in terms.values())


def test_cross_entropy_weighs_each_stream_by_its_real_tokens() -> None:
    """mix-CPT's loss is the CE of every real token of its streams: each stream's mean CE
    weighed by its tokens (a plain mean of the two would weigh a short row like a long one)."""
    teacher = load("tiny-random").model
    window = teacher.config.max_position_embeddings
    method = CrossEntropy(smoke("mix-cpt"), teacher, None, {"long": 2, "short": 3}, window)
    long, short = _batch(2, 96), _batch(3, 16, seed=1)
    short.mask[:, 12:] = False  # padding: not counted
    with torch.no_grad():
        terms = {k: float(v) for k, v in method.losses({"long": long, "short": short}, 0).items()}
    assert (long.tokens, short.tokens) == (192, 36)
    weighed = (terms["ce_long"] * 192 + terms["ce_short"] * 36) / 228
    assert terms["loss"] == pytest.approx(weighed, rel=1e-6)
    assert abs(terms["loss"] - (terms["ce_long"] + terms["ce_short"]) / 2) > 1e-3
