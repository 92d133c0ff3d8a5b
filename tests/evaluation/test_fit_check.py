"""``longred_bench.evaluation.fit_check``: which documents' requests fit the evaluated window.

The model is ``tiny-random`` wrapped in lm-eval's ``HFLM``: its byte tokenizer makes one token
of every UTF-8 byte (no BOS), so each request's size is known exactly from its text. The tests
on a real task (``longred_arc_easy``) read the ``benchmarks`` cache: fetched with
``--run-network``, skipped when absent without it.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from data_helpers import ensure_cached
from lm_eval.api.instance import Instance

from longred_bench.errors import UserError
from longred_bench.evaluation.fit_check import check_task, request_tokens

TASK = "longred_arc_easy"
LIMIT = 10


@pytest.fixture(scope="module")
def tiny() -> Any:
    from longred_bench.models.loading import load

    return load("tiny-random")


def _hflm(tiny: Any, max_length: int) -> Any:
    from lm_eval.models.huggingface import HFLM

    return HFLM(
        pretrained=tiny.model,
        tokenizer=tiny.tokenizer,
        max_length=max_length,
        batch_size=1,
        device="cpu",
    )


def _need(lm: Any, request_type: str, *arguments: Any) -> int:
    instance = Instance(request_type=request_type, doc={}, arguments=arguments, idx=0)
    return request_tokens(instance, lm, lambda text: len(lm.tok_encode(text)))


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))


# --- request_tokens --------------------------------------------------------------------------


CONTEXT = "Question: où est la bibliothèque?\nAnswer:"  # 'ù' and 'è' are two bytes each


def test_byte_tokenizer_counts_bytes(tiny: Any) -> None:
    lm = _hflm(tiny, 1000)
    assert len(lm.tok_encode(CONTEXT)) == _bytes(CONTEXT) == len(CONTEXT) + 2


def test_loglikelihood_is_context_plus_continuation(tiny: Any) -> None:
    lm = _hflm(tiny, 1000)
    assert _need(lm, "loglikelihood", CONTEXT, " à droite") == _bytes(CONTEXT) + 10
    # Within a few tokens of the window the pair is encoded as lm-eval encodes it (trailing
    # spaces of the context move to the continuation): the byte count is unchanged.
    total = _bytes(CONTEXT + " ") + _bytes("à droite")
    near = _hflm(tiny, total)
    assert _need(near, "loglikelihood", CONTEXT + " ", "à droite") == total


def test_loglikelihood_empty_context_near_the_window(tiny: Any) -> None:
    # lm-eval gives an empty context its prefix token; it must not reach `_encode_pair`
    # (which refuses an empty context) even when the request is at the window's edge.
    lm = _hflm(tiny, 20)
    assert _need(lm, "loglikelihood", "", "b" * 20) == 20
    assert _need(lm, "loglikelihood", "", "b" * 5) == 5


def test_generate_until_is_context_plus_budget(tiny: Any) -> None:
    lm = _hflm(tiny, 1000)
    context = "Résumé: " + "x" * 30
    base = _bytes(context)
    assert _need(lm, "generate_until", context, {"until": ["\n"], "max_gen_toks": 7}) == base + 7
    # lm-eval's aliases for the budget count too (max_gen_toks first, as lm-eval ranks them).
    assert _need(lm, "generate_until", context, {"max_new_tokens": 9}) == base + 9
    assert _need(lm, "generate_until", context, {"max_tokens": 11, "until": []}) == base + 11
    assert _need(lm, "generate_until", context, {"max_gen_toks": 5, "max_new_tokens": 9}) == (
        base + 5
    )
    # No budget in the request: the model's default (HFLM: 256 in lm-eval 0.4.13).
    assert lm.max_gen_toks == 256
    assert _need(lm, "generate_until", context, {"until": ["\n"]}) == base + 256
    assert _need(lm, "generate_until", context, {"max_gen_toks": None}) == base + 256
    assert _need(lm, "generate_until", context) == base + 256


def test_generate_until_boundary_is_lm_evals(tiny: Any) -> None:
    # HFLM left-truncates a generation context to max_length - max_gen_toks tokens: a request
    # of exactly max_length tokens keeps its whole context, one more loses a token.
    context, budget = "y" * 40, 8
    for max_length in (48, 47):
        lm = _hflm(tiny, max_length)
        need = _need(lm, "generate_until", context, {"max_gen_toks": budget})
        assert need == 48
        ids, _ = lm.tok_batch_encode([context], left_truncate_len=max_length - budget)
        assert (ids.shape[1] == len(context)) == (need <= max_length)


def test_loglikelihood_rolling_needs_nothing(tiny: Any) -> None:
    lm = _hflm(tiny, 16)
    assert _need(lm, "loglikelihood_rolling", "z" * 5000) == 0


# --- check_task and run_eval on a real task --------------------------------------------------


@pytest.fixture(scope="module")
def arc(request: pytest.FixtureRequest) -> Any:
    """The ``longred_arc_easy`` lm-eval task, zero-shot as the evaluation runs it."""
    ensure_cached(request, "benchmarks")
    from longred_bench.evaluation.harness import task_manager

    task = task_manager().load([TASK])["tasks"][TASK]
    task.set_config(key="num_fewshot", value=0)
    return task


@pytest.fixture(scope="module")
def needs(arc: Any) -> dict[int, int]:
    """Bytes (= tokens) of the longest request of each of the first ``LIMIT`` documents."""
    arc.build_all_requests(limit=LIMIT, rank=0, world_size=1)
    out: dict[int, int] = {}
    for instance in arc.instances:
        context, continuation = instance.arguments
        out[instance.doc_id] = max(out.get(instance.doc_id, 0), _bytes(context + continuation))
    assert sorted(out) == list(range(LIMIT))
    return out


def test_check_task_splits_documents_by_fit(arc: Any, tiny: Any, needs: dict[int, int]) -> None:
    report = check_task(arc, _hflm(tiny, 120), limit=LIMIT)
    fitting = [doc for doc, need in sorted(needs.items()) if need <= 120]
    assert 0 < len(fitting) < LIMIT  # the window splits the first ten documents
    assert report.task == TASK
    assert report.fitting == fitting
    assert report.over_length == LIMIT - len(fitting)
    assert report.longest == max(needs.values())


def test_check_task_boundary(arc: Any, tiny: Any, needs: dict[int, int]) -> None:
    doc = max((d for d, n in needs.items() if n <= 120), key=needs.__getitem__)
    exact = check_task(arc, _hflm(tiny, needs[doc]), limit=LIMIT)
    assert doc in exact.fitting  # exactly max_length tokens fits
    over = check_task(arc, _hflm(tiny, needs[doc] - 1), limit=LIMIT)
    assert doc not in over.fitting  # one token over does not
    assert len(over.fitting) == len(exact.fitting) - 1


@pytest.mark.integration
def test_run_eval_skips_what_does_not_fit(needs: dict[int, int]) -> None:
    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.run import run_eval

    result = run_eval(
        EvalConfig(model="tiny-random", tasks=[TASK], limit=LIMIT, max_length=120), progress=False
    )
    fitting = [doc for doc, need in sorted(needs.items()) if need <= 120]
    assert [(f.task, f.fitting) for f in result.fits] == [(TASK, fitting)]
    records = [r for r in result.records if r["task"] == TASK]
    assert {r["metric"] for r in records} >= {"acc", "acc_norm"}
    for record in records:
        assert record["n_samples"] == len(fitting)  # lm-eval scored exactly the fitting ones
        assert record["n_over_length"] == LIMIT - len(fitting) > 0
        assert record["max_length"] == 120


@pytest.mark.integration
def test_run_eval_window_nothing_fits(needs: dict[int, int]) -> None:
    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.run import run_eval

    window = min(needs.values()) - 1
    expected = f"no document fits the {window}-token window in {TASK} ({window + 1})"
    with pytest.raises(UserError, match=re.escape(expected)) as info:
        run_eval(
            EvalConfig(model="tiny-random", tasks=[TASK], limit=LIMIT, max_length=window),
            progress=False,
        )
    assert "\n" not in str(info.value)
    assert info.value.needed == window + 1  # the least window that holds a document


def test_a_few_shot_task_keeps_only_documents_whose_own_examples_fit(
    request: pytest.FixtureRequest, tiny: Any
) -> None:
    """lm-eval draws each document's examples in turn from one seeded stream, so built with the
    fitting documents only (``samples=``, as the evaluation builds them), those after a dropped
    one get other examples. Every request of the documents the check keeps fits when built so."""
    ensure_cached(request, "benchmarks")
    from longred_bench.evaluation.harness import task_manager

    task = task_manager().load([TASK])["tasks"][TASK]
    task.set_config(key="num_fewshot", value=3)
    seed, limit = 1234, 40

    def needs(samples: list[int] | None) -> dict[int, int]:
        task.set_fewshot_seed(seed=seed)
        task.build_all_requests(limit=limit, samples=samples, rank=0, world_size=1)
        out: dict[int, int] = {}
        for instance in task.instances:  # lm-eval numbers the ``samples`` 0, 1, ... in order
            doc = instance.doc_id if samples is None else samples[instance.doc_id]
            context, continuation = instance.arguments
            out[doc] = max(out.get(doc, 0), _bytes(context + continuation))
        return out

    window = sorted(needs(None).values())[3 * limit // 4]  # 3/4 of a build of all of them fit
    report = check_task(task, _hflm(tiny, window), limit=limit, seed=seed)
    assert 0 < len(report.fitting) < limit
    built = needs(report.fitting)
    assert sorted(built) == report.fitting and max(built.values()) <= window
    assert report.over_length == limit - len(report.fitting)
    # zero-shot, nothing is drawn: the documents that fit are those of a build of all of them
    task.set_config(key="num_fewshot", value=0)
    zero = check_task(task, _hflm(tiny, window // 3), limit=limit, seed=seed)
    assert zero.fitting == sorted(d for d, n in needs(None).items() if n <= window // 3)


def test_a_few_shot_document_of_exactly_the_window_fits(
    request: pytest.FixtureRequest, tiny: Any
) -> None:
    """A few-shot document fits where context + continuation <= max_length: at exactly its
    need it is kept, one token fewer drops it (its examples are drawn first from the freshly
    seeded stream, so its need is the same in both builds; byte tokenizer)."""
    ensure_cached(request, "benchmarks")
    from longred_bench.evaluation.harness import task_manager

    task = task_manager().load([TASK])["tasks"][TASK]
    task.set_config(key="num_fewshot", value=3)
    task.set_fewshot_seed(seed=1234)
    task.build_all_requests(limit=5, rank=0, world_size=1)
    need = max(_bytes(i.arguments[0] + i.arguments[1]) for i in task.instances if i.doc_id == 0)
    assert 0 in check_task(task, _hflm(tiny, need), limit=5, seed=1234).fitting
    assert 0 not in check_task(task, _hflm(tiny, need - 1), limit=5, seed=1234).fitting


def test_a_pair_within_eight_tokens_of_the_window_is_encoded_as_lm_eval_encodes_it() -> None:
    """Near the limit (within 8 tokens) the pair is measured by lm-eval's own encoding (50 + 47
    here), not by the separate counts (50 + 45); far from it the counts are enough."""
    from types import SimpleNamespace

    def encode_pair(context: str, continuation: str) -> tuple[list[int], list[int]]:
        return [0] * 50, [0] * 47

    near = SimpleNamespace(max_length=100, _encode_pair=encode_pair)
    instance = SimpleNamespace(request_type="loglikelihood", arguments=("c" * 50, "x" * 45))
    assert request_tokens(instance, near, len) == 97
    far = SimpleNamespace(max_length=1000, _encode_pair=encode_pair)
    assert request_tokens(instance, far, len) == 95
