"""Which documents fit (``evaluation.fit_check``), on hand-made tasks whose request sizes are
known (tokens are characters): a zero-shot task's documents by their longest request, and a
few-shot task's examples drawn in turn from the stream the fitting documents leave."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

import pytest

from longred_bench.evaluation.fit_check import check_task, fitting_documents, request_tokens


def _ll(doc_id: int, context: str, continuation: str) -> Any:
    return SimpleNamespace(
        request_type="loglikelihood", arguments=(context, continuation), doc_id=doc_id
    )


class _ZeroShotTask:
    """A zero-shot task whose requests (doc_id -> (context, continuation) pairs) are built at
    once, recording the ``limit`` it was built with."""

    def __init__(self, name: str, requests: dict[int, list[tuple[str, str]]]) -> None:
        self.task_name = name
        self.requests = requests
        self.instances: list[Any] = []
        self.built_with: list[Any] = []

    def get_config(self, key: str) -> Any:
        return {"num_fewshot": 0}.get(key)

    def build_all_requests(self, *, limit: int | None, rank: int, world_size: int) -> None:
        self.built_with.append((limit, rank, world_size))
        docs = sorted(self.requests)[:limit]
        self.instances = [_ll(d, c, x) for d in reversed(docs) for c, x in self.requests[d]]


def _lm(max_length: int) -> Any:
    return SimpleNamespace(max_length=max_length, tok_encode=list)


TASK = {
    0: [("c" * 10, "x" * 2), ("c" * 10, "x" * 9)],  # longest 19
    1: [("c" * 10, "x" * 10)],  # 20
    2: [("c" * 4, "x")],  # 5
    3: [("c" * 10, "x" * 11), ("c", "x")],  # 21
}


@pytest.mark.parametrize(
    ("max_length", "fitting"),
    [(20, [0, 1, 2]), (19, [0, 2]), (21, [0, 1, 2, 3]), (4, [])],
)
def test_zero_shot_documents_fit_by_their_longest_request(max_length, fitting) -> None:
    """A document fits when its longest request is at most the window (exactly the window
    fits); the fitting ids come sorted, the rest are counted, and the longest and shortest
    needs are the documents' longest requests."""
    report = check_task(_ZeroShotTask("zs", TASK), _lm(max_length), limit=None)
    assert report.task == "zs"
    assert report.fitting == fitting
    assert report.over_length == 4 - len(fitting)
    assert (report.longest, report.shortest) == (21, 5)


def test_the_limit_keeps_the_first_documents() -> None:
    """``limit`` is passed to the task's build: only the first documents are measured."""
    task = _ZeroShotTask("zs", TASK)
    report = check_task(task, _lm(20), limit=2)
    assert task.built_with == [(2, 0, 1)]
    assert report.fitting == [0, 1] and report.over_length == 0
    assert (report.longest, report.shortest) == (20, 19)


def test_a_task_without_documents_reports_zeros() -> None:
    """No documents: nothing fits, nothing is over, and the longest and shortest are 0."""
    report = check_task(_ZeroShotTask("none", {}), _lm(10), limit=None)
    assert (report.fitting, report.over_length, report.longest, report.shortest) == ([], 0, 0, 0)


def test_one_report_per_task_in_order() -> None:
    """:func:`fitting_documents` reports each task once, in the order given."""
    tasks = {"b": _ZeroShotTask("b", {0: [("c", "x")]}), "a": _ZeroShotTask("a", TASK)}
    reports = fitting_documents(tasks, _lm(20), limit=None)
    assert [(r.task, r.fitting) for r in reports] == [("b", [0]), ("a", [0, 1, 2])]


def test_a_loglikelihood_request_is_context_plus_continuation_far_from_the_window() -> None:
    """Away from the window's edge the pair is counted by its two texts, not encoded as a
    pair."""

    def encode_pair(context: str, continuation: str) -> tuple[list[int], list[int]]:
        raise AssertionError("encoded as a pair")

    lm = SimpleNamespace(max_length=100, _encode_pair=encode_pair)
    assert request_tokens(_ll(0, "c" * 50, "x" * 41), lm, len) == 91
    assert request_tokens(_ll(0, "c" * 60, "x" * 49), lm, len) == 109


@pytest.mark.parametrize(
    ("gen_kwargs", "need"),
    [
        ({"max_new_tokens": 7}, 17),
        ({"max_tokens": 5, "max_completion_tokens": 9}, 15),
        ({"max_completion_tokens": "9"}, 19),
        ({"max_gen_toks": None, "max_new_tokens": 3}, 13),
    ],
)
def test_a_generation_budget_is_read_by_lm_evals_key_order(gen_kwargs, need) -> None:
    """The generation budget is the first of lm-eval's budget keys that is set."""
    instance = SimpleNamespace(request_type="generate_until", arguments=("c" * 10, gen_kwargs))
    assert request_tokens(instance, SimpleNamespace(max_length=100, max_gen_toks=64), len) == need


class _Config(dict):
    def __init__(self) -> None:
        super().__init__(task="fake")
        self.repeats = 1


class _DrawingTask:
    """A one-shot task whose context is ``num_fewshot`` examples drawn from its sampler's
    stream: a document of ``size`` characters needs ``size`` plus the drawn example's length."""

    task_name = "draw"
    EXAMPLES = tuple("e" * n for n in range(1, 40))

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes
        self.sampler = SimpleNamespace(rnd=random.Random(0))
        self.config = _Config()
        self.seeds: list[int] = []
        self.drawn: dict[int, str] = {}

    def get_config(self, key: str) -> Any:
        return {"num_fewshot": 1}.get(key)

    def set_fewshot_seed(self, seed: int) -> None:
        self.seeds.append(seed)
        self.sampler.rnd.seed(seed)

    def doc_iterator(self, *, rank: int, limit: int | None, world_size: int) -> Any:
        assert (rank, world_size) == (0, 1)
        return enumerate(self.sizes[:limit])

    def doc_to_prefix(self, doc: Any) -> str:
        return ""

    def fewshot_context(self, doc: int, *, num_fewshot: int, **_: Any) -> str:
        examples = [self.sampler.rnd.choice(self.EXAMPLES) for _ in range(num_fewshot)]
        return "d" * doc + "".join(examples)

    def construct_requests(self, doc: int, ctx: str, metadata: Any) -> Any:
        return SimpleNamespace(
            request_type="loglikelihood", arguments=(ctx, ""), doc_id=metadata[1]
        )


def _draws(seed: int, n: int) -> list[int]:
    rnd = random.Random(seed)
    return [len(rnd.choice(_DrawingTask.EXAMPLES)) for _ in range(n)]


def test_a_dropped_few_shot_document_puts_the_example_stream_back() -> None:
    """Documents are measured in turn with the seeded stream; a document that does not fit
    leaves the stream as it found it, so the next document gets the example it will get when
    only the fitting documents are built."""
    draws = _draws(5, 2)
    sizes = [1, 1000, 2]
    task = _DrawingTask(sizes)
    report = check_task(task, _lm(100), limit=None, seed=5)
    assert task.seeds == [5]
    assert report.fitting == [0, 2] and report.over_length == 1
    # document 0 takes the first draw, document 2 the second (document 1's is undone)
    assert report.shortest == 1 + draws[0]
    assert report.longest == 1000 + draws[1]
    assert task.sampler.rnd.getstate() == _stream_after(5, 2)


def _stream_after(seed: int, n: int) -> Any:
    rnd = random.Random(seed)
    for _ in range(n):
        rnd.choice(_DrawingTask.EXAMPLES)
    return rnd.getstate()


def test_without_a_seed_the_stream_is_not_reseeded() -> None:
    """``seed=None`` keeps the task's stream as it stands."""
    task = _DrawingTask([1])
    check_task(task, _lm(100), limit=None, seed=None)
    assert task.seeds == []
    assert task.sampler.rnd.getstate() == _stream_after(0, 1)


def test_a_few_shot_document_of_exactly_the_window_fits() -> None:
    """A few-shot document whose need equals the window fits; one token more does not."""
    need = 3 + _draws(7, 1)[0]
    assert check_task(_DrawingTask([3]), _lm(need), limit=None, seed=7).fitting == [0]
    over = check_task(_DrawingTask([3]), _lm(need - 1), limit=None, seed=7)
    assert over.fitting == [] and over.over_length == 1


def test_a_few_shot_limit_keeps_the_first_documents() -> None:
    """``limit`` keeps a few-shot task's first documents only."""
    report = check_task(_DrawingTask([1, 2, 500, 3]), _lm(100), limit=2, seed=1)
    assert report.fitting == [0, 1] and report.over_length == 0


class _PrefixedTask(_DrawingTask):
    """A one-shot task whose documents' answers start with a generation prefix, which the
    few-shot context ends with."""

    def doc_to_prefix(self, doc: Any) -> str:
        return "p" * 5

    def fewshot_context(self, doc: int, *, num_fewshot: int, gen_prefix: str = "", **_: Any) -> str:
        return super().fewshot_context(doc, num_fewshot=num_fewshot) + gen_prefix


def test_a_few_shot_context_is_built_with_the_documents_prefix() -> None:
    """Each document's context is built with its generation prefix, whose tokens count."""
    report = check_task(_PrefixedTask([3]), _lm(100), limit=None, seed=7)
    assert report.longest == 3 + _draws(7, 1)[0] + 5
