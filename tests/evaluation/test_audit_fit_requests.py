"""How many tokens :func:`longred_bench.evaluation.fit_check.request_tokens` counts for one
request, at the edges its docstring names, and that a few-shot document fits by its longest
request, not its first (tokens here are characters: the counter is ``len``)."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from longred_bench.evaluation.fit_check import check_task, request_tokens


def _generation(context: str, gen_kwargs: dict[str, Any] | None) -> Any:
    return SimpleNamespace(request_type="generate_until", arguments=(context, gen_kwargs))


def test_without_a_budget_a_generation_needs_the_models_default_budget() -> None:
    lm = SimpleNamespace(max_length=1000, max_gen_toks=64)
    assert request_tokens(_generation("c" * 10, {"until": ["\n"]}), lm, len) == 10 + 64
    assert request_tokens(_generation("c" * 10, None), lm, len) == 10 + 64
    assert request_tokens(_generation("c" * 10, None), SimpleNamespace(max_length=9), len) == 266


def test_a_budget_of_zero_is_a_budget() -> None:
    """The first budget key given counts, a 0 too (lm-eval reads the first that is set)."""
    lm = SimpleNamespace(max_length=1000, max_gen_toks=64)
    need = request_tokens(_generation("c" * 10, {"max_gen_toks": 0, "max_new_tokens": 50}), lm, len)
    assert need == 10


def test_a_pair_exactly_eight_tokens_from_the_window_is_encoded_as_lm_eval_does() -> None:
    def encode_pair(context: str, continuation: str) -> tuple[list[int], list[int]]:
        return [0] * len(context), [0] * (len(continuation) + 3)

    pair = SimpleNamespace(request_type="loglikelihood", arguments=("c" * 50, "x" * 42))
    assert (
        request_tokens(pair, SimpleNamespace(max_length=100, _encode_pair=encode_pair), len) == 95
    )
    assert (
        request_tokens(pair, SimpleNamespace(max_length=101, _encode_pair=encode_pair), len) == 92
    )


class _Config(dict):
    """``task.config["task"]`` and ``task.config.repeats``, as lm-eval's TaskConfig has them."""

    def __init__(self) -> None:
        super().__init__(task="fake")
        self.repeats = 1


class _FewShotTask:
    """Two answer choices per document, the second the longer: a few-shot task as
    :func:`check_task` builds it, document by document."""

    task_name = "fake"

    def __init__(self, answers: list[tuple[str, str]]) -> None:
        self.answers = answers
        self.fewshot_rnd = random.Random(0)
        self.config = _Config()

    def get_config(self, key: str) -> Any:
        return {"num_fewshot": 1}.get(key)

    def set_fewshot_seed(self, seed: int) -> None:
        self.fewshot_rnd.seed(seed)

    def doc_iterator(self, **_: Any) -> Any:
        return enumerate(self.answers)

    def doc_to_prefix(self, doc: Any) -> str:
        return ""

    def fewshot_context(self, doc: Any, **_: Any) -> str:
        return "q" * 10

    def construct_requests(self, doc: Any, ctx: str, **_: Any) -> list[Any]:
        return [SimpleNamespace(request_type="loglikelihood", arguments=(ctx, answer))
                for answer in doc]  # fmt: skip


def test_a_few_shot_document_fits_by_its_longest_request() -> None:
    task = _FewShotTask([("a", "b" * 5), ("a", "b" * 30)])
    report = check_task(task, SimpleNamespace(max_length=20, tok_encode=list), limit=None, seed=1)
    assert report.fitting == [0] and report.over_length == 1  # 10 + 30 > 20: the second
    assert (report.longest, report.shortest) == (40, 15)
