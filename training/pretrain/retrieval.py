"""In-window retrieval examples mixed into the pretraining of the suite's tiny Llama.

A model pretrained on prose alone rarely learns to look things up inside its window, and then
context extension has no retrieval to keep or lose. These examples teach it. Each is one plain
text (no special tokens; the caller adds ``<s>``/``</s>`` if it wants them), built by a small
seeded function per kind (below).

Every prompt string comes from the ``train`` phrasing family
(:mod:`longred_bench.taskdata.ruler.phrasings`), drawn per example, so the model learns to
retrieve under many wordings and is scored on a ``heldout`` family it never saw; ``phrasing=
"standard"`` uses RULER's and the tiny passkey task's own strings instead (the earlier base).
Kinds:

- ``passkey``: prose with a key sentence (a 5-digit key; e.g. ``"Your door code is NNNNN."``) and
  0 to 3 sentences planting other 5-digit numbers, each at a random depth moved back to a
  sentence end, then a question naming the key's noun and the key (``standard``: ``"The pass key
  is NNNNN. Remember it."`` and ``"What is the pass key? The pass key is NNNNN."``, no
  distractors).
- ``kv``: 1 to 4 needles with distinct keys in a drawn needle sentence, inside a drawn
  instruction and question, asking for one of the keys or for all of them, followed by the drawn
  answer prefix and the values (joined with ``", "``, ending ``"."``). The keys, values, depths
  and haystacks are this module's own seeded draws; the noise sentences are RULER's
  (:mod:`longred_bench.taskdata.ruler.haystack`). Values are 7-digit numbers (about 80%) or
  UUIDs; keys are ``word-word`` pairs, or UUIDs with UUID values in a haystack of distractor
  needles. Haystacks: noise sentences, prose (the filler, as words, needles moved back to a
  sentence end) or distractor needles for other keys (one per line), as in RULER's multikey
  tasks.
- ``copy``: a random sequence (words of the filler, digit strings, or a prose passage), then
  ``"\\nRepeat the ... above: "`` and the same sequence again (copying / induction).
- ``vt``: RULER's variable tracking: a chain ``VAR ABCDE = 12345.``, ``VAR FGHIJ = VAR ABCDE.``,
  ... of 1 to 4 hops in noise sentences, sometimes with a second chain of another value as a
  distractor, a drawn question and answer prefix, then the chain's variable names.

Sizes: each example has a target length drawn uniformly between 40% and 100% of ``max_tokens`` and
its haystack (or sequence) is the longest whose whole text, tokenized alone, fits in it
(:func:`longred_bench.taskdata.ruler.sizing.fit`, which counts any special tokens the tokenizer
adds), so the planted facts sit at every distance inside the window. When even an empty haystack
does not fit the target, the example is fitted to ``max_tokens``; when it does not fit that either,
it drops needles (``kv``, last of all to one word key with a number in noise) or hops and the
distractor chain (``vt``); a kind that cannot fit at all is a :class:`UserError`.

``filler`` is a list of prose sentences or passages, from ``train`` splits only (the caller's
duty). Key words and copy words are its lowercase alphabetic words of 3 to 12 letters. Example
``i`` of kind ``k`` depends only on ``(seed, i, k)``, the filler and the tokenizer; kinds take turns
in the order given.
"""

from __future__ import annotations

import math
import random
import re
import string
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from longred_bench.errors import UserError
from longred_bench.taskdata.ruler import haystack as hs
from longred_bench.taskdata.ruler import niah
from longred_bench.taskdata.ruler.phrasings import (
    PASSKEY_FAMILIES,
    SINGULAR,
    Phrasing,
)
from longred_bench.taskdata.ruler.sizing import Draft, Misfit, Rendered, fit
from longred_bench.taskdata.ruler.synthetic import VT_HOPS, vt_prompt
from longred_bench.taskdata.tiny_passkey import passkey_prompt

KINDS: tuple[str, ...] = ("passkey", "kv", "copy", "vt")
PHRASINGS: tuple[str, ...] = ("train", "standard")  # never "heldout": that family is for tests
MIN_FILL = 0.4  # shortest target length, as a fraction of max_tokens
UUID_SHARE = 0.2  # share of kv examples with UUID values
MAX_NEEDLES = 4
_WORD = re.compile(r"^[a-z]{3,12}$")


class _Source:
    """The filler as a word stream, and its vocabulary."""

    def __init__(self, filler: Sequence[str]) -> None:
        self.filler = [text for text in filler if text.split()]
        self.vocab = sorted({w for text in self.filler for w in text.split() if _WORD.match(w)})
        if not self.vocab:
            raise UserError("filler has no prose words: pass train-split sentences or passages")

    def words(self, rng: random.Random, n: int) -> list[str]:
        """``n`` consecutive filler words from the start of a random item (wrapping around)."""
        i = rng.randrange(len(self.filler))
        out: list[str] = []
        while len(out) < n:
            out.extend(self.filler[i % len(self.filler)].split())
            i += 1
        return out[:n]


def _frame(template: str, **fields: str) -> tuple[str, str]:
    """The text before and after ``{context}`` in ``template`` filled with ``fields``."""
    before, after = template.format(context="\0", **fields).split("\0")
    return before, after


def _draft(
    units: Sequence[str],
    items: Sequence[str],
    depths: Sequence[float],
    before: str,
    after: str,
    *,
    separator: str = " ",
    snap: bool = False,
) -> Draft:
    """``before + haystack + after``, ``items`` inserted at ``depths`` percent of the haystack."""

    def render(n: int) -> Rendered:
        body = hs.insert_at_depths(units[:n], items, depths, snap=snap)
        return Rendered(before + separator.join(body) + after, ())

    return Draft(render=render, upper=len(units))


def passkey(rng: random.Random, src: _Source, upper: int, phrasing: str) -> Iterator[Draft]:
    """A pass key in prose, a question and the key. ``train``: a drawn phrasing, with 0 to 3
    other numbers planted in sentences of their own; ``standard``: the tiny task's strings."""
    words = src.words(rng, upper)
    joined = " ".join(words)
    numbers = hs.distinct(rng, lambda r: str(r.randint(10_000, 99_999)), 4)
    while any(n in joined for n in numbers):
        numbers = hs.distinct(rng, lambda r: str(r.randint(10_000, 99_999)), 4)
    key, others = numbers[0], numbers[1 : 1 + rng.randint(0, 3)]
    needle, question = passkey_prompt(rng, phrasing)
    distractors = () if phrasing == "standard" else PASSKEY_FAMILIES[phrasing].distractors
    items = [needle.format(key=key)]
    items += [rng.choice(distractors).format(number=n) for n in others if distractors]
    depths = [rng.uniform(0.0, 100.0) for _ in items]
    yield _draft(words, items, depths, "", f"\n{question} {key}.", snap=True)


def kv(rng: random.Random, src: _Source, upper: int, phrasing: str) -> Iterator[Draft]:
    """RULER-style key-value needles in noise, prose or distractor needles; fewer on a misfit.

    When even one needle does not fit (UUID keys in a small window), the last resort is one
    word key with a number value in noise.
    """
    words = niah.strings(phrasing, rng)
    haystack = rng.choice(("noise", "prose", "prose", "needles"))
    kind = "uuids" if rng.random() < UUID_SHARE else "numbers"
    count = rng.randint(1, MAX_NEEDLES)
    query_all = rng.random() < 0.5
    yield from _kv_drafts(rng, src, upper, words, haystack, kind, count, query_all)
    if (haystack, kind) != ("noise", "numbers"):
        yield from _kv_drafts(rng, src, upper, words, "noise", "numbers", 1, False)


def _kv_drafts(
    rng: random.Random,
    src: _Source,
    upper: int,
    words: Phrasing,
    haystack: str,
    kind: str,
    count: int,
    query_all: bool,
) -> Iterator[Draft]:
    uuid_keys = kind == "uuids" and haystack == "needles"
    one = SINGULAR[kind]

    def needle(key: str, value: str) -> str:
        return words.needle.format(kind=kind, one=one, key=key, value=value)

    make_key = hs.maker("uuids" if uuid_keys else "words", src.vocab)
    make_value = hs.maker(kind, src.vocab)
    keys = hs.distinct(rng, make_key, count)
    values = hs.distinct(rng, make_value, count)
    if haystack == "noise":
        units, separator = hs.noise_units(upper), " "
    elif haystack == "prose":
        units, separator = src.words(rng, upper), " "
    else:
        others = hs.distinct(rng, make_key, max(1, upper // 8), set(keys))
        fakes = hs.distinct(rng, make_value, len(others), set(values))
        pairs = zip(others, fakes, strict=True)
        units, separator = [needle(k, v) for k, v in pairs], "\n"
    for k in range(count, 0, -1):
        needles = [needle(keys[i], values[i]) for i in range(k)]
        rng.shuffle(needles)  # which needle sits at which depth
        queried = list(range(k)) if query_all else [rng.randrange(k)]
        query = niah._join_query([keys[i] for i in queried])
        answer = ", ".join(values[i] for i in queried)
        fields = {"kind": kind, "one": one, "query": query}
        before, after = _frame(words.template, **fields)
        after += words.answer_prefix.format(**fields) + f" {answer}."
        depths = hs.random_depths(rng, k)
        yield _draft(
            units, needles, depths, before, after, separator=separator, snap=haystack == "prose"
        )


def copy(rng: random.Random, src: _Source, upper: int, phrasing: str) -> Iterator[Draft]:
    """A random sequence of words, digit strings or prose, an instruction, and the repetition."""
    what = rng.choice(("words", "numbers", "text"))
    if what == "words":
        items = [src.vocab[rng.randrange(len(src.vocab))] for _ in range(upper)]
        intro, ask = "Here is a list of words:", "Repeat the list of words above:"
    elif what == "numbers":
        items = ["".join(rng.choices(string.digits, k=rng.randint(1, 7))) for _ in range(upper)]
        intro, ask = "Here is a list of numbers:", "Repeat the list of numbers above:"
    else:
        items = src.words(rng, upper)
        intro, ask = "Here is a passage:", "Repeat the passage above:"

    def render(n: int) -> Rendered:
        sequence = " ".join(items[: max(n, 1)])
        return Rendered(f"{intro} {sequence}\n{ask} {sequence}", ())

    yield Draft(render=render, upper=upper)


def vt(rng: random.Random, src: _Source, upper: int, phrasing: str) -> Iterator[Draft]:
    """RULER's variable tracking chain in noise, with an optional distractor chain, in RULER's
    prompt (``standard``) or a drawn one of the family."""
    template, prefix = vt_prompt(rng, phrasing)
    hops = rng.randint(1, VT_HOPS)
    distractor = rng.random() < 0.5
    names = hs.distinct(rng, lambda r: "".join(r.choices(string.ascii_uppercase, k=5)), 10)
    value, other_value = (str(v) for v in rng.sample(range(10_000, 100_000), 2))
    units = hs.noise_units(upper)
    for length, with_distractor in ((hops, distractor), (hops, False), (1, False)):
        statements = _chain(names[: length + 1], value)
        depths = sorted(rng.uniform(0.0, 100.0) for _ in statements)
        if with_distractor:
            decoy = _chain(names[5 : 5 + rng.randint(2, VT_HOPS + 1)], other_value)
            statements += decoy
            depths += sorted(rng.uniform(0.0, 100.0) for _ in decoy)
        before, after = _frame(template, value=value)
        after += prefix.format(count=length + 1, value=value)
        yield _draft(
            units, statements, depths, before, after + f" {', '.join(names[: length + 1])}."
        )


def _chain(names: Sequence[str], value: str) -> list[str]:
    return [f"VAR {names[0]} = {value}."] + [
        f"VAR {names[i]} = VAR {names[i - 1]}." for i in range(1, len(names))
    ]


BUILDERS: dict[str, Callable[[random.Random, _Source, int, str], Iterator[Draft]]] = {
    "passkey": passkey,
    "kv": kv,
    "copy": copy,
    "vt": vt,
}


def _fitted(kind: str, drafts: Iterator[Draft], tokenizer: Any, target: int, limit: int) -> str:
    for draft in drafts:
        for length in (target, limit):
            try:
                return fit(draft, tokenizer, length, "all", task=kind)[1].prompt
            except Misfit:
                continue
    raise UserError(
        f"retrieval kind {kind!r} does not fit in {limit} tokens with this tokenizer: "
        "raise max_tokens or leave the kind out"
    )


def retrieval_examples(
    tokenizer: Any,
    filler: Sequence[str],
    *,
    n: int,
    max_tokens: int,
    seed: int,
    kinds: Sequence[str] = KINDS,
    phrasing: str = "train",
) -> list[str]:
    """``n`` retrieval texts of at most ``max_tokens`` tokens each, kinds in turn, in the
    ``train`` phrasing family or RULER's and the tiny task's ``standard`` strings (module doc)."""
    if phrasing not in PHRASINGS:
        raise UserError(
            f"retrieval phrasing must be one of {', '.join(PHRASINGS)}, got {phrasing!r} (the "
            "held-out family is never trained on)"
        )
    unknown = sorted(set(kinds) - set(BUILDERS))
    if not kinds or unknown:
        raise UserError(f"unknown retrieval kind(s) {unknown or '(none given)'}; kinds: {KINDS}")
    if n < 0 or max_tokens < 1:
        raise UserError(f"need n >= 0 and max_tokens >= 1 (got {n}, {max_tokens})")
    src = _Source(filler)
    out = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        rng = random.Random(f"longred-retrieval/{seed}/{i}/{kind}")
        target = rng.randint(math.ceil(MIN_FILL * max_tokens), max_tokens)
        drafts = BUILDERS[kind](rng, src, max_tokens, phrasing)
        out.append(_fitted(kind, drafts, tokenizer, target, max_tokens))
    return out
