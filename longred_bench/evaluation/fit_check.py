"""Which documents of lm-eval tasks fit in the evaluated model's window, before anything runs.

lm-eval left-truncates a request that is longer than the model's ``max_length`` (with a log
warning) and scores the truncated text. The suite never does that: :func:`fitting_documents`
builds each task's requests exactly as the evaluation will (same few-shot examples, same
generation budget, and with a few-shot task the examples each document gets when only the
fitting documents are built), measures them with the model's own tokenizer and returns, per
task, the documents whose every request fits and the number that does not. The evaluation then
runs only the documents that fit (lm-eval's ``samples=`` argument) and reports the others as
skipped.

A request fits when

- ``loglikelihood``: context + continuation tokens <= ``max_length``;
- ``generate_until``: context tokens + the request's ``max_gen_toks`` (or an alias lm-eval
  accepts: ``max_new_tokens``...; the model's default without one) <= ``max_length``;
- ``loglikelihood_rolling``: always (lm-eval scores long documents in windows, by design).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_EXACT_MARGIN = 8  # within this many tokens of the limit, encode the pair as lm-eval does
# The generation budget's names, in the priority order of lm-eval's ``normalize_gen_kwargs``.
_BUDGET_KEYS = ("max_gen_toks", "max_new_tokens", "max_tokens", "max_completion_tokens")


@dataclass(frozen=True)
class FitReport:
    """Documents of one task that fit (ids, in order) and how many were skipped as too long."""

    task: str
    fitting: list[int]
    over_length: int
    longest: int  # the longest request, in tokens (context + continuation or generation budget)
    shortest: int = 0  # the shortest document's longest request: the least window that holds one


def _counter(encode: Callable[[str], list[int]]) -> Callable[[str], int]:
    cache: dict[str, int] = {}

    def count(text: str) -> int:
        if text not in cache:
            cache[text] = len(encode(text))
        return cache[text]

    return count


def request_tokens(instance: Any, lm: Any, count: Callable[[str], int]) -> int:
    """Tokens one lm-eval request needs in the window (see the module docstring)."""
    kind = instance.request_type
    args = instance.arguments
    if kind == "loglikelihood":
        context, continuation = args[0], args[1]
        total = count(context) + count(continuation)
        # An empty context: lm-eval feeds its prefix token and all but the last continuation
        # token (the continuation's length is the need), and ``_encode_pair`` refuses it.
        near = abs(total - lm.max_length) <= _EXACT_MARGIN
        if context and near and hasattr(lm, "_encode_pair"):
            ctx, cont = lm._encode_pair(context, continuation)
            total = len(ctx) + len(cont)
        return total
    if kind == "generate_until":
        context, gen_kwargs = args[0], (args[1] if len(args) > 1 else {}) or {}
        given = (gen_kwargs.get(key) for key in _BUDGET_KEYS)
        budget = next((int(v) for v in given if v is not None), None)
        if budget is None:
            budget = int(getattr(lm, "max_gen_toks", 256))
        return count(context) + budget
    return 0  # loglikelihood_rolling and anything windowed by lm-eval itself


def _needs(task: Any, lm: Any, count: Callable[[str], int], *, limit: int | None) -> dict[int, int]:
    """Tokens of each document's longest request, built as lm-eval builds them."""
    task.build_all_requests(limit=limit, rank=0, world_size=1)
    longest: dict[int, int] = {}
    for instance in task.instances:
        longest[instance.doc_id] = max(
            longest.get(instance.doc_id, 0), request_tokens(instance, lm, count)
        )
    return longest


def _needs_in_turn(
    task: Any, lm: Any, count: Callable[[str], int], *, limit: int | None, seed: int | None
) -> tuple[dict[int, int], list[int]]:
    """A few-shot task's needs (as :func:`_needs`) and fitting documents, each document's
    examples drawn as lm-eval will draw them when it builds the fitting documents alone: in turn,
    from the stream the fitting documents before it leave (a document that does not fit is
    dropped and the stream put back as it was before it)."""
    if seed is not None:
        task.set_fewshot_seed(seed=seed)
    sampler = getattr(task, "sampler", None)
    streams = [r for r in (getattr(task, "fewshot_rnd", None), getattr(sampler, "rnd", None))
               if r is not None]  # fmt: skip
    shots = task.get_config("num_fewshot") or 0
    needs: dict[int, int] = {}
    fitting: list[int] = []
    for doc_id, doc in task.doc_iterator(rank=0, limit=limit, world_size=1):
        states = [r.getstate() for r in streams]
        context = task.fewshot_context(doc, num_fewshot=shots, gen_prefix=task.doc_to_prefix(doc))
        made = task.construct_requests(
            doc=doc, ctx=context, metadata=(task.config["task"], doc_id, task.config.repeats)
        )
        made = made if isinstance(made, list) else [made]
        needs[doc_id] = max(request_tokens(i, lm, count) for i in made)
        if needs[doc_id] <= lm.max_length:
            fitting.append(doc_id)
        else:
            for stream, state in zip(streams, states, strict=True):
                stream.setstate(state)
    return needs, fitting


def check_task(task: Any, lm: Any, *, limit: int | None, seed: int | None = None) -> FitReport:
    """Build ``task``'s requests (first ``limit`` documents) and split its documents by fit.

    A few-shot task draws each document's examples in turn from one stream (seeded with
    ``seed``), so when lm-eval builds only the fitting documents (``samples=``) those after a
    dropped one would get other examples than a build of all of them: its documents are measured
    in turn with the examples they will get (:func:`_needs_in_turn`)."""
    count = _counter(lm.tok_encode)
    if task.get_config("num_fewshot"):
        needs, fitting = _needs_in_turn(task, lm, count, limit=limit, seed=seed)
    else:
        needs = _needs(task, lm, count, limit=limit)
        fitting = sorted(doc for doc, need in needs.items() if need <= lm.max_length)
    return FitReport(
        task=task.task_name,
        fitting=fitting,
        over_length=len(needs) - len(fitting),
        longest=max(needs.values(), default=0),
        shortest=min(needs.values(), default=0),
    )


def fitting_documents(
    tasks: dict[str, Any], lm: Any, *, limit: int | None, seed: int | None = None
) -> list[FitReport]:
    """One :class:`FitReport` per task of ``tasks`` (name -> lm-eval ``Task``), in order
    (``seed``: the few-shot seed the evaluation draws examples with)."""
    return [check_task(task, lm, limit=limit, seed=seed) for task in tasks.values()]
