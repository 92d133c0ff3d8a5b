"""Haystack material and random needle parts for the RULER tasks.

- **noise**: RULER's repeated filler sentences ("The grass is green. The sky is blue. ...").
- **essay**: RULER uses Paul Graham's essays; here the prose corpus (Brown, Austen or KJV from
  ``longred-bench data fetch``), all documents concatenated in their stored order and read as
  words, from a random document onward (wrapping around at the end).
- **vocabulary**: the lowercase alphabetic words (3 to 12 letters) of the corpus, sorted; it
  supplies word keys ("adjective-noun" style pairs ``word-word``) and the cwe word lists, where
  RULER draws on the ``wonderwords`` lists.
- **values**: 7-digit numbers, UUIDs (version 4 layout from the seeded generator) and words.

Everything random takes a ``random.Random``, so samples depend only on their seed.
"""

from __future__ import annotations

import bisect
import random
import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path

from longred_bench.cache import cache_dir
from longred_bench.data.corpora import load_documents

NOISE_SENTENCES = (
    "The grass is green.",
    "The sky is blue.",
    "The sun is yellow.",
    "Here we go.",
    "There and back again.",
)
_WORD = re.compile(r"^[a-z]{3,12}$")
_SENTENCE_END = (".", "!", "?", '."', ".'", '?"', '!"')
DISTINCT_ATTEMPTS = 100  # draws per wanted value (plus ten) before distinct() gives up
_SNAP_WORDS = 200  # how far back an essay insertion point may move to reach a sentence end


def noise_units(n: int) -> list[str]:
    """``n`` noise sentences, cycling through RULER's five."""
    return list(noise_sequence(n))


@lru_cache(maxsize=16)
def noise_sequence(n: int, prefix: str = "") -> tuple[str, ...]:
    """``n`` noise sentences, each after ``prefix``: made once per size and shared (samples
    of a task at one length read the same sequence)."""
    sentences = [prefix + s for s in NOISE_SENTENCES]
    return tuple(sentences[i % len(sentences)] for i in range(n))


def _corpus(corpus: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """The corpus's words and each document's first word index, read once per cache folder."""
    return _corpus_in(corpus, cache_dir())


@lru_cache(maxsize=4)
def _corpus_in(corpus: str, cache: Path) -> tuple[tuple[str, ...], tuple[int, ...]]:
    words: list[str] = []
    starts: list[int] = []
    for document in load_documents(corpus, "all", cache=cache):
        starts.append(len(words))
        words.extend(document.text.split())
    return tuple(words), tuple(starts)


def essay_units(corpus: str, rng: random.Random, n: int) -> list[str]:
    """``n`` consecutive corpus words from the start of a random document (wrapping around)."""
    words, starts = _corpus(corpus)
    begin = starts[rng.randrange(len(starts))]
    out: list[str] = []
    while len(out) < n:
        out.extend(words[begin : begin + n - len(out)])
        begin = 0
    return out


def vocabulary(corpus: str) -> tuple[str, ...]:
    """Sorted distinct lowercase words of the corpus (used for keys and word lists)."""
    return _vocabulary_in(corpus, cache_dir())


@lru_cache(maxsize=4)
def _vocabulary_in(corpus: str, cache: Path) -> tuple[str, ...]:
    words, _ = _corpus_in(corpus, cache)
    return tuple(sorted({w for w in words if _WORD.match(w)}))


def word_key(rng: random.Random, vocab: Sequence[str]) -> str:
    """A two-word key such as ``quiet-harbor``."""
    return f"{vocab[rng.randrange(len(vocab))]}-{vocab[rng.randrange(len(vocab))]}"


def number_value(rng: random.Random) -> str:
    """A 7-digit number, as RULER's numeric needles."""
    return str(rng.randint(1_000_000, 9_999_999))


def uuid_value(rng: random.Random) -> str:
    """A UUID string drawn from ``rng``: ``str(uuid.UUID(int=bits, version=4))`` without the
    object (the variant and version bits set as :class:`uuid.UUID` sets them)."""
    bits = rng.getrandbits(128)
    bits = (bits & ~(0xC000 << 48)) | (0x8000 << 48)  # variant RFC 4122
    bits = (bits & ~(0xF000 << 64)) | (4 << 76)  # version 4
    h = f"{bits:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def maker(kind: str, vocab: Sequence[str]) -> Callable[[random.Random], str]:
    """The generator for a needle part kind: ``words``, ``numbers`` or ``uuids``."""
    if kind == "words":
        return lambda rng: word_key(rng, vocab)
    if kind == "numbers":
        return number_value
    if kind == "uuids":
        return uuid_value
    raise ValueError(f"unknown needle part kind {kind!r}")


def distinct(
    rng: random.Random,
    make: Callable[[random.Random], str],
    k: int,
    exclude: set[str] | None = None,
) -> list[str]:
    """``k`` distinct values from ``make``, none in ``exclude`` (read, not copied: drawing one
    value at a time against a growing set stays linear)."""
    exclude = exclude or set()
    seen: set[str] = set()
    out: list[str] = []
    attempts = 0
    while len(out) < k:
        value = make(rng)
        attempts += 1
        if attempts > DISTINCT_ATTEMPTS * (k + 10):
            raise ValueError("could not draw enough distinct values")
        if value not in seen and value not in exclude:
            seen.add(value)
            out.append(value)
    return out


def random_depths(rng: random.Random, k: int, grid: int = 40) -> list[float]:
    """``k`` distinct depths (percent) from ``grid`` evenly spaced ones in [0, 100], sorted."""
    points = [100.0 * i / (grid - 1) for i in range(grid)]
    return sorted(rng.sample(points, k))


def insert_at_depths(
    units: Sequence[str], items: Sequence[str], depths: Sequence[float], *, snap: bool = False
) -> list[str]:
    """Insert ``items[i]`` at ``depths[i]`` percent of ``units``.

    With ``snap`` (essay haystacks) an insertion point moves back to just after a sentence end
    when one lies within a few hundred words, so needles do not split sentences.
    """
    positions = []
    for depth in depths:
        pos = round(depth / 100.0 * len(units))
        if snap:
            back = pos
            while (
                back > 0
                and pos - back < _SNAP_WORDS
                and not units[back - 1].endswith(_SENTENCE_END)
            ):
                back -= 1
            if back == 0 or units[back - 1].endswith(_SENTENCE_END):
                pos = back
        positions.append(pos)
    order = sorted(range(len(items)), key=lambda i: (positions[i], i))
    out: list[str] = []
    cursor = 0
    for i in order:
        out.extend(units[cursor : positions[i]])
        out.append(items[i])
        cursor = positions[i]
    out.extend(units[cursor:])
    return out


def joined_parts(
    before: str,
    units: Sequence[str],
    items: Sequence[str],
    depths: Sequence[float],
    after: str,
    *,
    separator: str,
    snap: bool = False,
) -> tuple[str, ...]:
    """``before + separator.join(insert_at_depths(...)) + after`` cut into parts, where
    ``units`` are given with ``separator`` in front (as the sizing counts them) and stay whole
    parts (see :class:`~longred_bench.taskdata.ruler.sizing.Rendered`)."""
    body = insert_at_depths(units, [separator + x for x in items], depths, snap=snap)
    if not body:
        return (before + after,)
    return (before + body[0][len(separator) :], *body[1:], after)


def zipf_sampler(rng: random.Random, support: int, alpha: float) -> Callable[[int], list[int]]:
    """Draw ranks from a Zipf(alpha) law; ranks beyond ``support`` come back as ``0``."""
    weights = [r**-alpha for r in range(1, support + 1)]
    zeta = sum(weights) + _zipf_tail(support, alpha)
    cumulative: list[float] = []
    acc = 0.0
    for w in weights:
        acc += w / zeta
        cumulative.append(acc)

    def draw(k: int) -> list[int]:
        out = []
        for _ in range(k):
            idx = bisect.bisect_right(cumulative, rng.random())
            out.append(idx + 1 if idx < support else 0)
        return out

    return draw


def _zipf_tail(support: int, alpha: float) -> float:
    """sum_{r > support} r^-alpha, by the integral with a midpoint correction."""
    start = support + 0.5
    return start ** (1.0 - alpha) / (alpha - 1.0)
