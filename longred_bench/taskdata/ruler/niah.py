"""RULER's eight needle-in-a-haystack tasks.

A needle is the sentence "One of the special magic {numbers|uuids|words} for {key} is: {value}."
hidden in a haystack; the question asks for every value of the queried key(s). Variants, as in
RULER's configuration:

========================  ===========  =====  =======  ============================
task                      haystack     keys   values   needles
========================  ===========  =====  =======  ============================
niah_single_1             noise        words  numbers  1
niah_single_2             essay        words  numbers  1
niah_single_3             essay        words  uuids    1
niah_multikey_1           essay        words  numbers  1 queried + 3 distractor keys
niah_multikey_2           needles      words  numbers  1 queried; haystack = other keys
niah_multikey_3           needles      uuids  uuids    1 queried; haystack = other keys
niah_multivalue           essay        words  numbers  4 values for one key
niah_multiquery           essay        words  numbers  4 keys, all queried
========================  ===========  =====  =======  ============================

Needle depths are drawn from 40 evenly spaced depths (percent of the haystack); the haystack size
is the number of noise sentences, essay words or distractor needles, fitted by the caller. The
"needles" haystack is made of needles for other keys with their own values, so the model must
match the key exactly.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from longred_bench.errors import UserError
from longred_bench.taskdata.ruler import haystack as hs
from longred_bench.taskdata.ruler.phrasings import SINGULAR, Phrasing, draw
from longred_bench.taskdata.ruler.sizing import Draft, Rendered

TEMPLATE = (
    "Some special magic {kind} are hidden within the following text. Make sure to memorize it. "
    "I will quiz you about the {kind} afterwards.\n{context}\n"
    "What are all the special magic {kind} for {query} mentioned in the provided text?"
)
ANSWER_PREFIX = " The special magic {kind} for {query} mentioned in the provided text are"
NEEDLE = "One of the special magic {kind} for {key} is: {value}."
STANDARD = Phrasing(TEMPLATE, ANSWER_PREFIX, NEEDLE)  # RULER's own strings


@dataclass(frozen=True)
class NiahConfig:
    """One NIAH variant."""

    haystack: str  # "noise" | "essay" | "needles"
    keys: str  # "words" | "uuids"
    values: str  # "numbers" | "uuids" | "words"
    num_keys: int = 1
    num_values: int = 1
    num_queries: int = 1


CONFIGS: dict[str, NiahConfig] = {
    "niah_single_1": NiahConfig("noise", "words", "numbers"),
    "niah_single_2": NiahConfig("essay", "words", "numbers"),
    "niah_single_3": NiahConfig("essay", "words", "uuids"),
    "niah_multikey_1": NiahConfig("essay", "words", "numbers", num_keys=4),
    "niah_multikey_2": NiahConfig("needles", "words", "numbers"),
    "niah_multikey_3": NiahConfig("needles", "uuids", "uuids"),
    "niah_multivalue": NiahConfig("essay", "words", "numbers", num_values=4),
    "niah_multiquery": NiahConfig("essay", "words", "numbers", num_keys=4, num_queries=4),
}


class NeedleHaystack(Sequence[str]):
    """A haystack of needles for other keys, drawn in order only as far as it is read.

    Needle ``i`` is the ``i``-th key (distinct from the sample's keys and the ones before it)
    with a value, both from a generator of its own seeded by the sample's, so a sample that
    fits 80 needles draws 80, not ``upper``. Items read as ``prefix + needle``.
    """

    def __init__(
        self,
        rng: random.Random,
        make_key: Callable[[random.Random], str],
        make_value: Callable[[random.Random], str],
        kind: str,
        taken: set[str],
        upper: int,
        prefix: str = "",
        needles: list[str] | None = None,
        needle: str = NEEDLE,
    ) -> None:
        self.rng, self.make_key, self.make_value = rng, make_key, make_value
        self.kind, self.taken, self.upper, self.prefix = kind, taken, upper, prefix
        self.needles = [] if needles is None else needles
        self.needle = needle

    def with_prefix(self, prefix: str) -> NeedleHaystack:
        """The same needles (drawn once, shared), read with ``prefix`` before each."""
        args = (self.rng, self.make_key, self.make_value, self.kind, self.taken, self.upper)
        return NeedleHaystack(*args, prefix, self.needles, self.needle)

    def __len__(self) -> int:
        return self.upper

    def __getitem__(self, index):  # type: ignore[override]
        if isinstance(index, slice):
            indices = range(*index.indices(self.upper))
            if indices:
                self._draw(max(indices) + 1)
            return [self.prefix + self.needles[i] for i in indices]
        if not -self.upper <= index < self.upper:
            raise IndexError(index)
        index %= self.upper
        self._draw(index + 1)
        return self.prefix + self.needles[index]

    def _draw(self, n: int) -> None:
        """Draw needles until ``n`` exist."""
        while len(self.needles) < n:
            key = hs.distinct(self.rng, self.make_key, 1, self.taken)[0]
            self.taken.add(key)
            value = self.make_value(self.rng)
            self.needles.append(_needle(self.needle, self.kind, key, value))


def _needle(template: str, kind: str, key: str, value: str) -> str:
    return template.format(kind=kind, one=SINGULAR[kind], key=key, value=value)


def _join_query(keys: list[str]) -> str:
    if len(keys) == 1:
        return keys[0]
    return ", ".join(keys[:-1]) + ", and " + keys[-1]


def strings(phrasing: str, rng: random.Random) -> Phrasing:
    """RULER's strings (``standard``) or one drawn from the family ``phrasing`` with ``rng``."""
    return STANDARD if phrasing == "standard" else draw(phrasing, rng)


def build(
    task: str,
    rng: random.Random,
    length: int,
    corpus: str,
    phrasing: str = "standard",
    depth: float | None = None,
) -> Iterator[Draft]:
    """The single draft of a NIAH sample (see :mod:`longred_bench.taskdata.ruler.sizing`), in
    RULER's strings or a phrasing family's (:mod:`longred_bench.taskdata.ruler.phrasings`; drawn
    first, from the sample's stream, so the standard samples are unchanged). ``depth`` (percent)
    puts a single-needle task's needle there instead of at its drawn depth (everything else is
    drawn as before)."""
    words = strings(phrasing, rng)
    cfg = CONFIGS[task]
    vocab = hs.vocabulary(corpus)
    make_key = hs.maker(cfg.keys, vocab)
    make_value = hs.maker(cfg.values, vocab)
    kind = cfg.values

    keys = hs.distinct(rng, make_key, cfg.num_keys)
    needles: list[str] = []
    answers: list[str] = []
    used_values: set[str] = set()
    for i, key in enumerate(keys):
        values = hs.distinct(rng, make_value, cfg.num_values, used_values)
        used_values.update(values)
        needles.extend(_needle(words.needle, kind, key, v) for v in values)
        if i < cfg.num_queries:
            answers.extend(values)
    queried = keys[: cfg.num_queries]
    query = _join_query(queried)
    depths = hs.random_depths(rng, len(needles))
    if depth is not None:
        if len(needles) != 1:
            raise UserError(f"RULER {task} has {len(needles)} needles: a fixed depth is for "
                            "single-needle tasks")  # fmt: skip
        depths = [float(depth)]
    order = list(range(len(needles)))
    rng.shuffle(order)  # which needle sits at which depth
    needles = [needles[i] for i in order]

    if cfg.haystack == "noise":
        units: Sequence[str] = hs.noise_sequence(length)
    elif cfg.haystack == "essay":
        upper = length
        units = hs.essay_units(corpus, rng, upper)
    else:
        hay_rng = random.Random(rng.getrandbits(64))
        upper = max(1, length // 4)
        units = NeedleHaystack(
            hay_rng, make_key, make_value, kind, set(keys), upper, needle=words.needle
        )
    snap = cfg.haystack == "essay"
    separator = "\n" if cfg.haystack == "needles" else " "
    outputs = tuple(answers)
    fields = {"kind": kind, "one": SINGULAR[kind], "query": query}
    prefix = words.answer_prefix.format(**fields)
    before, after = (half.format(**fields) for half in words.template.split("{context}"))
    if isinstance(units, NeedleHaystack):
        prefixed: Sequence[str] = units.with_prefix(separator)
    elif cfg.haystack == "noise":
        prefixed = hs.noise_sequence(length, separator)
    else:
        prefixed = [separator + u for u in units]

    def render(n: int) -> Rendered:
        parts = hs.joined_parts(
            before, prefixed[:n], needles, depths, after + prefix, separator=separator, snap=snap
        )
        meta = {
            "depth_percent": depths,
            "haystack": cfg.haystack,
            "haystack_units": n,
            "keys": queried,
            "answer_prefix": prefix,
        }
        return Rendered("".join(parts), outputs, meta, parts)

    yield Draft(render=render, upper=len(units), units=prefixed)
