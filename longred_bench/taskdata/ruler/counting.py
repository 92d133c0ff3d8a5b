"""Exact token counts of ASCII text for GPT-2-style byte-level BPE tokenizers, from cached pieces.

A Hugging Face fast tokenizer whose pipeline is "no normalizer, ``ByteLevel`` pre-tokenizer with
GPT-2's split pattern, a deterministic model" (SmolLM2, GPT-2 and others) encodes a text as the
concatenation of its pre-tokens encoded one by one: the model never merges across a pre-token
boundary. So the token count of a text is the sum of the counts of its pre-tokens. On ASCII text
the split pattern is a plain :mod:`re` pattern (letters, digits, whitespace and the rest are the
ASCII classes), which Python runs several times faster than the tokenizer runs its whole pipeline.

:class:`PieceCounter` splits a text with that pattern and sums the counts of the pieces, each
piece counted by the tokenizer itself (one batch call for the pieces not seen before, then
remembered). The result equals ``len(tokenizer.encode(text))``; texts it cannot vouch for (not
ASCII, or containing an added token such as ``<|endoftext|>``, which the tokenizer splits out
before pre-tokenizing) go through the tokenizer. A prompt given as parts already counted (the
haystack units the sizing counted) is counted from them, without reading it again
(:meth:`PieceCounter.count_joined`). :func:`piece_counter` gives ``None`` for a
tokenizer whose pipeline differs, and callers then tokenize in full.

Digit runs (in UUIDs and numbers) rarely repeat, so they would keep missing the cache. Where no
vocabulary token holds two digits (SmolLM2 splits numbers into digits), a run's digits after
the first cannot merge with anything: each is one token, and the first (with the space before
it, if any) is tokenized as if alone. So for such a tokenizer the pattern splits digit runs into
chunks of up to three digits (a thousand of them, all remembered), and their counts still add up
to the run's.
"""

from __future__ import annotations

import re
import weakref
from collections.abc import Sequence
from typing import Any

_SPACE = r"\t\n\x0b\x0c\r "  # Unicode White_Space restricted to ASCII (not \x1c-\x1f)


def gpt2_pattern(digit_runs: bool = True) -> re.Pattern:
    """GPT-2's pre-tokenizer pattern (``tokenizers``' ``ByteLevel(use_regex=True)``) on ASCII
    text; with ``digit_runs=False`` a run of digits is split into chunks of up to three."""
    digits = "[0-9]+" if digit_runs else "[0-9]{1,3}"
    return re.compile(
        r"'s|'t|'re|'ve|'m|'ll|'d"
        rf"| ?[A-Za-z]+| ?{digits}"
        rf"| ?[^{_SPACE}A-Za-z0-9]+"
        rf"|[{_SPACE}]+(?![^{_SPACE}])|[{_SPACE}]+"
    )


def byte_level_ascii() -> dict[int, str]:
    """How ``ByteLevel`` spells the ASCII bytes for the model (GPT-2's byte-to-unicode map):
    printable characters stay, the others (space, newline, controls) become ``chr(256 + k)``
    in byte order (space is ``Ġ``, newline ``Ċ``)."""
    printable = range(ord("!"), ord("~") + 1)
    others = [b for b in range(256) if not (b in printable or 0xA1 <= b <= 0xAC or b >= 0xAE)]
    spelt = {b: chr(b) for b in printable}
    spelt.update((b, chr(256 + k)) for k, b in enumerate(others))
    return {b: c for b, c in spelt.items() if b < 128}


BYTE_LEVEL_ASCII = byte_level_ascii()
GPT2_PIECES = gpt2_pattern()
GPT2_DIGIT_PIECES = gpt2_pattern(digit_runs=False)

PIECE_CACHE_LIMIT = 2_000_000  # distinct pieces remembered per tokenizer before a reset
TEXT_MEMO_LIMIT = 500_000  # part texts remembered before a reset
_CACHED_CHARS = 64  # longer pieces are counted each time
_MEMO_CHARS = 256  # longer texts are not remembered as parts
_TWO_DIGITS = re.compile(r"[0-9].*[0-9]", re.DOTALL)
_counters: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

Info = tuple[int, tuple[str, ...]]  # a text's token count and its last (at most) two pieces


class PieceCounter:
    """Token counts of texts as sums of remembered pre-token counts (see the module docstring).

    Besides single texts (:meth:`count_many`) it counts a text given as consecutive parts
    (:meth:`count_joined`): the sum of the parts' counts, where every cut between two parts is
    a pre-token boundary of the whole text. With GPT-2's pattern only the last two pieces
    before a cut can change when text follows it (a contraction reaches at most two characters
    on, a greedy run or the whitespace look-ahead one), and matching restarts at the cut; so a
    cut is clean if the pieces of those two pieces followed by the next three characters start
    with the same two pieces. Parts up to a few hundred characters (haystack units) are
    remembered with their count and last pieces, and so are the verdicts on cuts.
    """

    def __init__(
        self, backend: Any, added: Sequence[str], specials: int, *, split_digits: bool = False
    ) -> None:
        """``split_digits``: no vocabulary token holds two digits (see the module docstring)."""
        self.backend = backend
        self.added = tuple(a for a in added if a)
        self.added_starts = frozenset(a[0] for a in self.added)
        self.specials = specials
        self.pattern = GPT2_DIGIT_PIECES if split_digits else GPT2_PIECES
        self.pieces: dict[str, int] = {}
        self.texts: dict[str, Info] = {}
        self.cuts: dict[tuple[tuple[str, ...], str], bool] = {}

    def count_many(self, texts: Sequence[str], *, special: bool = False) -> list[int]:
        """Token counts of ``texts``, each as the tokenizer would count it alone."""
        vouched = [self.vouches(t) for t in texts]
        infos = iter(self._infos([t for t, ok in zip(texts, vouched, strict=True) if ok]))
        rest = [t for t, ok in zip(texts, vouched, strict=True) if not ok]
        full = iter(self._encode(rest, special) if rest else ())
        extra = self.specials if special else 0
        return [next(infos)[0] + extra if ok else next(full) for ok in vouched]

    def count_joined(self, text: str, parts: Sequence[str], *, special: bool = False) -> int | None:
        """Token count of ``text`` from its ``parts`` (``"".join(parts) == text``), or ``None``
        where the parts do not join to it, a cut between them is not clean, or the pattern
        cannot vouch for the text (then count it whole)."""
        if not self.vouches(text) or "".join(parts) != text:
            return None
        parts = [p for p in parts if p]
        total, tail, cut = 0, (), 0
        for part, (count, last) in zip(parts, self._infos(parts), strict=True):
            if tail and not self._clean_cut(tail, text[cut : cut + 3]):
                return None
            total += count
            tail = (tail + last)[-2:]
            cut += len(part)
        return total + (self.specials if special else 0)

    def vouches(self, text: str) -> bool:
        """Whether the pattern splits ``text`` as the tokenizer does: ASCII, and no added token
        (``<|endoftext|>`` and the like, which the tokenizer splits out first) in it."""
        if not text.isascii():
            return False
        if not any(c in text for c in self.added_starts):
            return True
        return not any(a in text for a in self.added)

    def _infos(self, texts: Sequence[str]) -> list[Info]:
        """Count and last two pieces of each of ``texts`` (vouched for), short ones remembered."""
        memo = self.texts
        if len(memo) > TEXT_MEMO_LIMIT:
            memo.clear()
        infos = [memo.get(t) for t in texts]
        todo = [i for i, info in enumerate(infos) if info is None]
        if not todo:
            return infos  # type: ignore[return-value]
        split = [self.pattern.findall(texts[i]) for i in todo]
        for i, pieces, count in zip(todo, split, self._sums(split), strict=True):
            infos[i] = (count, tuple(pieces[-2:]))
            if len(texts[i]) <= _MEMO_CHARS:
                memo[texts[i]] = infos[i]
        return infos  # type: ignore[return-value]

    def _sums(self, split: list[list[str]]) -> list[int]:
        """Total count of each list of pieces; the pieces of lists with unknown ones are
        counted in one batch first."""
        get = self.pieces.__getitem__
        sums: list[int] = []
        failed: list[int] = []
        for i, pieces in enumerate(split):
            try:
                sums.append(sum(map(get, pieces)))
            except KeyError:
                sums.append(0)
                failed.append(i)
        if failed:
            long = self._learn([p for i in failed for p in split[i]])
            for i in failed:
                sums[i] = self._sum_learned(split[i], long)
        return sums

    def _sum_learned(self, pieces: list[str], long: dict[str, int]) -> int:
        """Total count of ``pieces`` once learned: remembered, or in ``long`` (too long to
        remember)."""
        known = self.pieces
        try:
            return sum(map(known.__getitem__, pieces))
        except KeyError:
            return sum(known[p] if p in known else long[p] for p in pieces)

    def _learn(self, pieces: list[str]) -> dict[str, int]:
        """Count the pieces not known yet in one batch call and remember them; return the
        counts of those too long to remember."""
        if len(self.pieces) > PIECE_CACHE_LIMIT:
            self.pieces.clear()
        missing = [p for p in dict.fromkeys(pieces) if p not in self.pieces]
        if not missing:
            return {}
        new = dict(zip(missing, self._encode_pieces(missing), strict=True))
        self.pieces.update((p, c) for p, c in new.items() if len(p) <= _CACHED_CHARS)
        return {p: c for p, c in new.items() if len(p) > _CACHED_CHARS}

    def _clean_cut(self, tail: tuple[str, ...], head: str) -> bool:
        """Whether a text ending in the pieces ``tail`` stays split there when ``head`` (the
        next three characters) follows (see the class docstring)."""
        key = (tail, head)
        verdict = self.cuts.get(key)
        if verdict is None:
            pieces = self.pattern.findall("".join(tail) + head)
            verdict = tuple(pieces[: len(tail)]) == tail
            if len(self.cuts) > TEXT_MEMO_LIMIT:
                self.cuts.clear()
            self.cuts[key] = verdict
        return verdict

    def _encode_pieces(self, pieces: list[str]) -> list[int]:
        """Counts of pre-tokens from the tokenizer's model itself, each piece spelt in the
        byte-level alphabet as the pre-tokenizer hands it over."""
        tokenize = self.backend.model.tokenize
        return [len(tokenize(p.translate(BYTE_LEVEL_ASCII))) for p in pieces]

    def _encode(self, texts: list[str], special: bool) -> list[int]:
        """Counts from the tokenizer itself."""
        encodings = self.backend.encode_batch_fast(texts, add_special_tokens=special)
        return [len(e) for e in encodings]


def piece_counter(tokenizer: Any) -> PieceCounter | None:
    """The :class:`PieceCounter` of ``tokenizer`` (made once), or ``None`` if its pipeline is not
    GPT-2's byte-level one (then only the tokenizer itself counts exactly)."""
    try:
        if tokenizer in _counters:
            return _counters[tokenizer]
    except TypeError:  # not weakly referenceable
        return _make_counter(tokenizer)
    counter = _make_counter(tokenizer)
    _counters[tokenizer] = counter
    return counter


def _make_counter(tokenizer: Any) -> PieceCounter | None:
    """A counter for a tokenizer that qualifies (see :func:`qualifies`), else ``None``."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None or not qualifies(backend):
        return None
    added = [t.content for t in backend.get_added_tokens_decoder().values()]
    specials = len(backend.encode("a", add_special_tokens=True)) - len(
        backend.encode("a", add_special_tokens=False)
    )
    split_digits = not any(_TWO_DIGITS.search(t) for t in backend.get_vocab())
    return PieceCounter(backend, added, specials, split_digits=split_digits)


def qualifies(backend: Any) -> bool:
    """Whether a ``tokenizers.Tokenizer`` encodes pre-token by pre-token with GPT-2's pattern:
    no normalizer, a plain ``ByteLevel`` pre-tokenizer (regex on, no prefix space), a model
    without dropout, and no truncation or padding."""
    from tokenizers import pre_tokenizers

    pre = backend.pre_tokenizer
    return (
        hasattr(backend, "encode_batch_fast")
        and backend.normalizer is None
        and type(pre) is pre_tokenizers.ByteLevel
        and pre.use_regex
        and not pre.add_prefix_space
        and getattr(backend.model, "dropout", None) is None
        and backend.truncation is None
        and backend.padding is None
    )
