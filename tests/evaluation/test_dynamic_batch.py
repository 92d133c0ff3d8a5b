"""Dynamic NTK RoPE takes its base from the longest sequence of a forward pass: an evaluation of
a dynamic model scores one request a pass, so a request inside the window scores the same
whatever it is batched with; other models keep their batch size."""

from __future__ import annotations

import torch

from longred_bench.evaluation.config import EvalConfig
from longred_bench.evaluation.lm import open_model


def _scores(rope: str, batch_size: int) -> tuple[list[float], object]:
    from lm_eval.api.instance import Instance

    model = open_model(EvalConfig(model="tiny-random", rope=rope))
    lm = model.lm(window=1024, batch_size=batch_size, seed=0)
    inside = ("A short question inside the window:", " yes")
    beyond = ("It was the best of times, it was the worst of times. " * 12, " the end")
    requests = [Instance("loglikelihood", {}, pair, i) for i, pair in enumerate((inside, beyond))]
    return [score for score, _ in lm.loglikelihood(requests, disable_tqdm=True)], lm


def test_a_dynamic_model_scores_each_request_alone_whatever_the_batch_size() -> None:
    torch.manual_seed(0)
    alone, lm = _scores("dynamic:factor=4", 1)
    batched, lm = _scores("dynamic:factor=4", 4)
    assert batched == alone and lm.batch_size_per_gpu == 1
    _, plain = _scores("pi:factor=4", 4)
    assert plain.batch_size_per_gpu == 4
