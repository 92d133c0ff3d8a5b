"""Sizing RULER samples with the target tokenizer: the :class:`Sample` record and the search.

Every task describes one sample as a :class:`Draft`: a function from a haystack size ``n`` (noise
sentences, essay words, distractor needles, list words, documents...) to the rendered prompt and
its reference answers. :func:`fit` finds the largest ``n`` whose prompt plus answer fits in
``length`` tokens of the given tokenizer, as RULER does with its search over the haystack size.

Two ways to search:

- **By unit counts** (a draft that lists its haystack ``units`` as they appear in the prompt):
  the units are tokenized in batches (each distinct text once per tokenizer, cached), the size
  is read off their prefix sums, and the rendered prompt is confirmed with one full
  tokenization. Where merges across unit or needle boundaries make the real count differ from
  the sum, that difference (the drift) corrects the next guess; a size that is confirmed to fit
  and whose next unit, by its own count, would overflow is taken. So a sample costs one full
  tokenization in most cases, at 4K as at 128K tokens. With ``maximal`` the next size is also
  tokenized, so that the fill is provably the largest.
- **By search** (no ``units``): extrapolation from the measured tokens per unit, then bisection
  alternating with interpolation inside the bracket found (about ten full tokenizations).

Either way the returned count is that of the whole returned prompt, so a sample is never over
``length``. "Full tokenization" here means an exact count of the whole text: by the tokenizer,
or for GPT-2-style byte-level tokenizers on ASCII text by :mod:`.counting`, which splits the
text into pre-tokens as the tokenizer does and sums their remembered counts (the same number,
several times faster); where a rendering also gives its prompt as parts (the haystack units
whole among them), the counter adds up the parts' counts after checking that every cut between
two parts is a pre-token boundary, so the units counted for the sizing are not read again.

Token counts: the prompt is encoded with the tokenizer's special tokens (a BOS the model would
see counts), the answer without them. The answer is the expected completion: every reference
joined with ", " for tasks scored "all" (the model must produce all of them) and the longest
reference for tasks scored "any".
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from longred_bench.errors import UserError
from longred_bench.taskdata.ruler.counting import piece_counter


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
    """A task's output for one haystack size.

    ``parts`` (optional) is the prompt cut into consecutive pieces, ``"".join(parts) ==
    prompt``, with the haystack units among them as the draft's ``units`` give them: a counter
    that has seen the units then adds up their counts instead of reading the prompt again.
    """

    prompt: str
    outputs: tuple[str, ...]
    metadata: dict[str, Any] = field(default_factory=dict)
    parts: tuple[str, ...] = ()


@dataclass(frozen=True)
class Draft:
    """How to render one sample for any haystack size in ``[0, upper]``.

    ``accept`` may reject a rendering whose answer is ambiguous (fwe ties); the search then
    shrinks the haystack until a rendering is accepted. ``units`` (optional, at least ``upper``
    of them) is the text each haystack unit adds to the prompt, separator included, so that
    ``render(n)`` costs about ``render(0)`` plus the tokens of ``units[:n]``: :func:`fit` then
    sizes by their prefix sums. ``maximal`` asks it to confirm that one more unit overflows.
    """

    render: Callable[[int], Rendered]
    upper: int
    accept: Callable[[Rendered], bool] | None = None
    units: Sequence[str] | None = None
    maximal: bool = False


class Misfit(UserError):
    """Even the smallest sample of a task does not fit in the requested length; ``needed`` is
    the least length that holds it (0 where unknown)."""

    def __init__(self, message: str, needed: int = 0) -> None:
        super().__init__(message)
        self.needed = needed


_UNIT_CACHE_LIMIT = 1_000_000  # distinct unit texts remembered per tokenizer before a reset
_CACHED_CHARS = 64  # longer unit texts are not remembered
FIRST_UNITS = 32  # units counted before the tokens per unit are known
_unit_caches: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def count_tokens(tokenizer: Any, text: str, *, special: bool = True) -> int:
    """Number of tokens ``tokenizer`` makes of ``text`` (fast path through ``tokenizers``)."""
    return count_many(tokenizer, [text], special=special)[0]


def count_many(tokenizer: Any, texts: Sequence[str], *, special: bool = False) -> list[int]:
    """Token counts of each of ``texts``, as if each were encoded alone.

    A GPT-2-style byte-level tokenizer counts by pre-token pieces (:mod:`.counting`, exact);
    another Hugging Face fast tokenizer encodes the batch in Rust without offsets
    (``encode_batch_fast``); other tokenizers are called once per text.
    """
    counter = piece_counter(tokenizer)
    if counter is not None:
        return counter.count_many(texts, special=special)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    fast = getattr(backend, "encode_batch_fast", None)
    if fast is not None:
        return [len(e) for e in fast(list(texts), add_special_tokens=special)]
    if backend is not None:
        return [len(backend.encode(t, add_special_tokens=special)) for t in texts]
    return [len(tokenizer.encode(t, add_special_tokens=special)) for t in texts]


def count_prompt(tokenizer: Any, rendered: Rendered) -> int:
    """Tokens of ``rendered.prompt`` (special tokens included), from its ``parts`` where the
    tokenizer's :class:`~.counting.PieceCounter` can add them up, else from the whole text."""
    counter = piece_counter(tokenizer)
    if counter is not None and rendered.parts:
        count = counter.count_joined(rendered.prompt, rendered.parts, special=True)
        if count is not None:
            return count
    return count_tokens(tokenizer, rendered.prompt)


def unit_counts(tokenizer: Any, units: Sequence[str]) -> list[int]:
    """Token counts of ``units`` (no special tokens), in one batch call.

    Short texts (noise sentences, corpus words, list entries) recur across samples: each is
    encoded once per tokenizer and remembered; longer ones (needles, documents) are not kept.
    """
    try:
        cache = _unit_caches.setdefault(tokenizer, {})
    except TypeError:  # not weakly referenceable: no cache across calls
        cache = {}
    missing = list(dict.fromkeys(u for u in units if u not in cache))
    if not missing:
        return [cache[u] for u in units]
    found = dict(zip(missing, count_many(tokenizer, missing), strict=True))
    if len(cache) + len(missing) > _UNIT_CACHE_LIMIT:
        cache.clear()
    cache.update((u, c) for u, c in found.items() if len(u) <= _CACHED_CHARS)
    return [cache[u] if u in cache else found[u] for u in units]


class PrefixCounts:
    """Prefix sums of a draft's unit token counts, extended in batches as far as asked."""

    def __init__(self, tokenizer: Any, units: Sequence[str], upper: int) -> None:
        self.tokenizer = tokenizer
        self.units = units
        self.upper = min(upper, len(units))
        self.sums = [0]

    def extend_to(self, n: int) -> None:
        """Count the units up to index ``n`` (at most ``upper``)."""
        n = min(n, self.upper)
        if n >= len(self.sums):
            counts = unit_counts(self.tokenizer, self.units[len(self.sums) - 1 : n])
            start = self.sums[-1]
            self.sums.extend(start + c for c in itertools.accumulate(counts))

    def largest_within(self, budget: int) -> int:
        """The largest ``n <= upper`` whose first ``n`` units hold at most ``budget`` tokens."""
        while self.sums[-1] <= budget and len(self.sums) <= self.upper:
            done = len(self.sums) - 1
            if done == 0:
                self.extend_to(FIRST_UNITS)
                continue
            per_unit = max(self.sums[-1] / done, 1e-3)
            self.extend_to(done + int((budget - self.sums[-1]) / per_unit * 1.02) + 2)
        return max(0, bisect.bisect_right(self.sums, budget) - 1)

    def unit(self, n: int) -> int:
        """Tokens of unit ``n`` (0-based; ``n < upper``)."""
        self.extend_to(n + 1)
        return self.sums[n + 1] - self.sums[n]


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

    Returns ``(n, rendering, token_count)``, the exact count of that whole rendering (see
    :func:`count_many`). Raises :class:`Misfit` when even ``n = 0`` is too long (or no accepted
    rendering fits). Without ``draft.units`` the result is the exact largest size; with them,
    the largest up to merges across the boundary of the next unit (exact with
    ``draft.maximal``).
    """
    memo: dict[int, tuple[int, Rendered]] = {}
    answers: dict[tuple[str, ...], int] = {}

    def total(n: int) -> int:
        if n not in memo:
            rendered = draft.render(n)
            if rendered.outputs not in answers:
                answers[rendered.outputs] = answer_tokens(tokenizer, rendered.outputs, metric)
            tokens = count_prompt(tokenizer, rendered) + answers[rendered.outputs]
            memo[n] = (tokens, rendered)
        return memo[n][0]

    def rendering(n: int) -> Rendered:
        return memo[n][1] if n in memo else draft.render(n)

    if total(0) > length:
        needed = total(0)
        raise Misfit(
            f"RULER task {task!r} needs at least {needed} tokens with this tokenizer "
            f"(its prompt with an empty haystack plus the answer); length {length} is too small: "
            f"the nearest RULER length (a power of two) that holds it is "
            f"{1 << (needed - 1).bit_length()}",
            needed,
        )
    if draft.units is None:
        n = _largest_fitting(total, length, draft.upper)
    else:
        n = _fit_by_units(total, PrefixCounts(tokenizer, draft.units, draft.upper), length)
        if draft.maximal:
            n = _confirm_maximal(total, length, n, draft.upper)
    if draft.accept is not None:
        # The acceptance check is cheap next to a tokenization: test it first.
        while n > 0 and not (draft.accept(rendering(n)) and total(n) <= length):
            n -= 1
        total(n)
        if not draft.accept(memo[n][1]):
            raise Misfit(f"RULER task {task!r}: no unambiguous sample fits in {length} tokens")
    return n, memo[n][1], memo[n][0]


MAX_CORRECTIONS = 6  # unit-count guesses before falling back to the bracketed search


def _fit_by_units(total: Callable[[int], int], units: PrefixCounts, length: int) -> int:
    """A size that fits, found from unit prefix sums and confirmed by full tokenizations.

    Each full count ``total(n)`` gives the drift ``total(n) - total(0) - sums[n]`` (merges at
    boundaries, needles moving with ``n``); the next guess is the largest size whose sum plus
    that drift fits. It stops at a size that fits and whose next unit overflows by its count.
    """
    base = total(0)
    lo, hi = 0, units.upper + 1  # total(lo) fits; total(hi) is known not to (or hi is past upper)
    drift = 0
    for _ in range(MAX_CORRECTIONS):
        n = min(max(units.largest_within(length - base - drift), lo + 1), hi - 1)
        if n <= lo:
            return lo
        tokens = total(n)
        drift = tokens - base - units.sums[n]
        if tokens > length:
            hi = n
            continue
        lo = n
        if n == units.upper or tokens + units.unit(n) > length:
            return n
    return _largest_fitting(total, length, hi - 1, lo=lo)


def _confirm_maximal(total: Callable[[int], int], length: int, n: int, upper: int) -> int:
    """Grow ``n`` (which fits) while the next size, fully tokenized, still fits."""
    while n < upper and total(n + 1) <= length:
        n += 1
    return n


def _largest_fitting(total: Callable[[int], int], length: int, upper: int, *, lo: int = 0) -> int:
    """The largest ``n`` in ``[lo, upper]`` with ``total(n) <= length`` (``total(lo)`` fits)."""
    hi = upper + 1  # total(lo) fits; hi is the smallest size known not to (or a sentinel)
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
