"""LongRecipe's impactful tokens: which tokens a brief context extension changes most, their word
types, and the sentence selection that keeps the text around them.

- :func:`logit_change`: per-token change of the observed token's LM-head score between a model
  and its briefly extended copy, ``S_H'(t | x<t) - S_H(t | x<t)`` (``[B, T]``, fp32; the first
  token of a row has no prediction and gets 0).
- :func:`word_type`: a coarse word type from closed word lists (numeral, pronoun, auxiliary,
  conjunction, adposition, determiner, punctuation, other), enough to rank types the way the
  paper ranks parts of speech, with no tagger to download.
- :func:`type_shares`: at each position, the top ``top_fraction`` of tokens across the batch by
  change; the share of each word type among all of them.
- :func:`type_lifts`: each type's share among those top tokens over its share among all tokens
  (a lift above 1: the brief extension changes that type's tokens more than the average token).
- :func:`measured_anchors`: the anchor types of a measurement, the ``k`` types (other than
  ``other`` and ``punctuation``) with the largest lift above 1.
- :func:`select_sentences`: keep every sentence that holds an anchor-type word and each other
  one with probability ``keep_other``. The anchor ``digit`` (a sentence with a digit character)
  is the released code's shortcut; ``numeral`` also counts number words.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

WORD_TYPES = (
    "numeral",
    "pronoun",
    "auxiliary",
    "conjunction",
    "adposition",
    "determiner",
    "punctuation",
    "other",
)

DIGIT = "digit"
"""Anchor of :func:`select_sentences`: a sentence holding a digit character (the released code's
selection)."""
MEASURED = "measured"
"""Config anchor meaning: the types :func:`measured_anchors` finds for the run's own model."""
ANCHORS = (*WORD_TYPES, DIGIT)
"""Every anchor :func:`select_sentences` takes."""

_WORDS = {
    "numeral": "zero one two three four five six seven eight nine ten eleven twelve twenty "
    "thirty forty fifty sixty seventy eighty ninety hundred thousand million first second third",
    "pronoun": "i me my mine myself you your yours yourself he him his himself she her hers "
    "herself it its itself we us our ours ourselves they them their theirs themselves who whom "
    "whose which what this that these those thee thou thy thine ye",
    "auxiliary": "be am is are was were been being have has had having do does did shall "
    "should will would may might must can could hath doth art",
    "conjunction": "and or but nor so yet because although though while whereas if unless "
    "since when whether",
    "adposition": "of in on at by with from to into onto upon about over under above below "
    "between among through during before after against without within along across toward "
    "towards unto",
    "determiner": "a an the some any no every each all both either neither such",
}
_LOOKUP = {w: kind for kind, words in _WORDS.items() for w in words.split()}
_TOKEN = re.compile(r"[A-Za-z]+|\d+|[^\sA-Za-z\d]")


def word_type(text: str) -> str:
    """The type of a token's text (leading/trailing spaces ignored): digits or a number word are
    ``numeral``; a word of the closed lists its list; punctuation only ``punctuation``; anything
    else ``other``."""
    word = text.strip().lower()
    if not word:
        return "other"
    if any(c.isdigit() for c in word):
        return "numeral"
    if word in _LOOKUP:
        return _LOOKUP[word]
    if all(not c.isalnum() for c in word):
        return "punctuation"
    return "other"


def logit_change(
    original: torch.nn.Module, extended: torch.nn.Module, ids: torch.Tensor
) -> torch.Tensor:
    """``[B, T]`` fp32 on the CPU: the extended model's logit of each observed token minus the
    original's, both given the same prefix at ordinary positions; position 0 is 0. One window
    (row) at a time: a batch's ``[B, T, vocab]`` logits held 13 GB at 32 windows of 1,024 tokens
    (206 GB at 32K)."""
    import torch

    out = torch.zeros(ids.shape, dtype=torch.float32)
    scores = []
    for model in (original, extended):
        rows = []
        for row in ids.split(1):
            with torch.no_grad():
                logits = model(row, use_cache=False).logits[:, :-1]
            rows.append(logits.gather(-1, row[:, 1:].unsqueeze(-1)).squeeze(-1).float().cpu())
            del logits
        scores.append(torch.cat(rows))
    out[:, 1:] = scores[1] - scores[0]
    return out


def type_shares(
    change: torch.Tensor, ids: torch.Tensor, tokenizer, *, top_fraction: float = 0.2
) -> dict[str, float]:
    """Share of each word type (:data:`WORD_TYPES`) among the tokens whose change is in the top
    ``top_fraction`` at their position across the batch (``change``, ``ids``: ``[B, T]``;
    position 0 is skipped)."""
    if not 0 < top_fraction <= 1:
        raise ValueError(f"top_fraction must be in (0, 1], got {top_fraction}")
    batch = change.shape[0]
    keep = max(1, round(batch * top_fraction))
    top = change[:, 1:].topk(keep, dim=0).indices  # [keep, T-1]
    picked = ids[:, 1:].gather(0, top)
    names = {i: word_type(tokenizer.decode([i])) for i in picked.unique().tolist()}
    counts = Counter(names[i] for i in picked.flatten().tolist())
    total = sum(counts.values())
    return {kind: counts.get(kind, 0) / total for kind in WORD_TYPES}


def type_lifts(
    change: torch.Tensor, ids: torch.Tensor, tokenizer, *, top_fraction: float = 0.2
) -> dict[str, float]:
    """Each word type's share among the top tokens (:func:`type_shares`) over its share among
    all tokens at positions ``1..T-1``; types absent from the sample get 0."""
    top = type_shares(change, ids, tokenizer, top_fraction=top_fraction)
    names = {i: word_type(tokenizer.decode([i])) for i in ids[:, 1:].unique().tolist()}
    counts = Counter(names[i] for i in ids[:, 1:].flatten().tolist())
    total = sum(counts.values())
    return {k: top[k] / (counts[k] / total) if counts.get(k) else 0.0 for k in WORD_TYPES}


def measured_anchors(lifts: dict[str, float], k: int = 3) -> tuple[str, ...]:
    """The ``k`` word types other than ``other`` and ``punctuation`` with the largest lift
    above 1, largest first (fewer when fewer are above 1)."""
    ranked = sorted(
        (t for t in WORD_TYPES if t not in ("other", "punctuation") and lifts.get(t, 0) > 1),
        key=lambda t: -lifts[t],
    )
    return tuple(ranked[:k])


def sentence_types(sentence: str) -> set[str]:
    """The word types of a sentence's words and numbers."""
    return {word_type(t) for t in _TOKEN.findall(sentence)}


def select_sentences(
    sentences: Sequence[str],
    anchors: Iterable[str],
    keep_other: float,
    rng: random.Random,
) -> list[str]:
    """Sentences in order: each holding a word of an ``anchors`` type, and each other one with
    probability ``keep_other``."""
    anchors = set(anchors)
    unknown = anchors - set(WORD_TYPES) - {DIGIT}
    if unknown:
        raise ValueError(f"unknown anchor type(s) {sorted(unknown)}; types: {WORD_TYPES}")
    if not 0 <= keep_other <= 1:
        raise ValueError(f"keep_other must be in [0, 1], got {keep_other}")

    def anchored(sentence: str) -> bool:
        if DIGIT in anchors and any(c.isdigit() for c in sentence):
            return True
        return bool(sentence_types(sentence) & anchors)

    return [s for s in sentences if anchored(s) or rng.random() < keep_other]
