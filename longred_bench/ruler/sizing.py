"""Sizing RULER samples with the target tokenizer: the :class:`Sample` record and the search.

Every task describes one sample as a :class:`Draft`: a function from a haystack size ``n`` (noise
sentences, essay words, distractor needles, list words, documents...) to the rendered prompt and
its reference answers. :func:`fit` finds the largest ``n`` whose prompt plus answer fits in
``length`` tokens of the given tokenizer, as RULER does with its binary search over the haystack
size. The search extrapolates from the measured tokens per unit first, then bisects (alternating
with interpolation) inside the bracket it found, so a 128K-token sample costs about ten
tokenizations rather than one per unit.

Token counts: the prompt is encoded with the tokenizer's special tokens (a BOS the model would
see counts), the answer without them. The answer is the expected completion: every reference
joined with ", " for tasks scored "all" (the model must produce all of them) and the longest
reference for tasks scored "any".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from longred_bench.errors import UserError


@dataclass(frozen=True)
class Sample:
    """One RULER example: the full prompt (question and answer prefix included) and references."""

    task: str
    length: int
    index: int
    input: str
    outputs: tuple[str, ...]
    token_count: int
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (``outputs`` as a list)."""
        record = dataclasses.asdict(self)
        record["outputs"] = list(self.outputs)
        return record

    @classmethod
    def from_dict(cls, record: dict[str, Any]) -> Sample:
        """Inverse of :meth:`to_dict`."""
        return cls(
            task=str(record["task"]),
            length=int(record["length"]),
            index=int(record["index"]),
            input=str(record["input"]),
            outputs=tuple(str(o) for o in record["outputs"]),
            token_count=int(record["token_count"]),
            metadata=dict(record.get("metadata") or {}),
        )


@dataclass(frozen=True)
class Rendered:
    """A task's output for one haystack size."""

    prompt: str
    outputs: tuple[str, ...]
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Draft:
    """How to render one sample for any haystack size in ``[0, upper]``.

    ``accept`` may reject a rendering whose answer is ambiguous (fwe ties); the search then
    shrinks the haystack until a rendering is accepted.
    """

    render: Callable[[int], Rendered]
    upper: int
    accept: Callable[[Rendered], bool] | None = None


class Misfit(UserError):
    """Even the smallest sample of a task does not fit in the requested length."""


def count_tokens(tokenizer: Any, text: str, *, special: bool = True) -> int:
    """Number of tokens ``tokenizer`` makes of ``text`` (fast path through ``tokenizers``)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None:
        return len(backend.encode(text, add_special_tokens=special).ids)
    return len(tokenizer.encode(text, add_special_tokens=special))


def answer_tokens(tokenizer: Any, outputs: tuple[str, ...], metric: str) -> int:
    """Tokens of the expected completion (see the module docstring)."""
    if not outputs:
        return 0
    if metric == "all":
        return count_tokens(tokenizer, " " + ", ".join(outputs), special=False)
    return max(count_tokens(tokenizer, " " + o, special=False) for o in outputs)


def fit(
    draft: Draft, tokenizer: Any, length: int, metric: str, *, task: str = "task"
) -> tuple[int, Rendered, int]:
    """Largest haystack size whose prompt + answer fits in ``length`` tokens.

    Returns ``(n, rendering, token_count)``. Raises :class:`Misfit` when even ``n = 0`` is too
    long (or no accepted rendering fits).
    """
    memo: dict[int, tuple[int, Rendered]] = {}

    def total(n: int) -> int:
        if n not in memo:
            rendered = draft.render(n)
            tokens = count_tokens(tokenizer, rendered.prompt)
            memo[n] = (tokens + answer_tokens(tokenizer, rendered.outputs, metric), rendered)
        return memo[n][0]

    if total(0) > length:
        raise Misfit(
            f"RULER task {task!r} needs at least {total(0)} tokens with this tokenizer "
            f"(its prompt with an empty haystack plus the answer); length {length} is too small"
        )
    n = _largest_fitting(total, length, draft.upper)
    if draft.accept is not None:
        # The acceptance check is cheap next to a tokenization: test it first.
        while n > 0 and not (draft.accept(draft.render(n)) and total(n) <= length):
            n -= 1
        total(n)
        if not draft.accept(memo[n][1]):
            raise Misfit(f"RULER task {task!r}: no unambiguous sample fits in {length} tokens")
    return n, memo[n][1], memo[n][0]


def _largest_fitting(total: Callable[[int], int], length: int, upper: int) -> int:
    """The largest ``n`` in ``[0, upper]`` with ``total(n) <= length`` (``total(0)`` fits)."""
    lo, hi = 0, upper + 1  # total(lo) fits; hi is the smallest size known not to (or a sentinel)
    t0 = total(0)
    step = 0
    while hi - lo > 1:
        if hi > upper:  # no size known to overflow yet: extrapolate from tokens per unit
            if lo == 0:
                guess = min(upper, 16)
            else:
                rate = max((total(lo) - t0) / lo, 1e-6)
                guess = lo + int((length - total(lo)) / rate * 1.02) + 1
        elif step % 2 == 0:
            t_lo, t_hi = total(lo), total(hi)
            guess = lo + int((length - t_lo) * (hi - lo) / max(t_hi - t_lo, 1))
        else:
            guess = (lo + hi) // 2
        guess = min(max(guess, lo + 1), hi - 1)
        if total(guess) <= length:
            lo = guess
        else:
            hi = guess
        step += 1
    return lo
