"""Position ids that stretch a short training sample over a long target window: PoSE, RPES and
LongRecipe's sentence-gap transform (the samplers of the ``pose`` and ``longrecipe`` recipes).

Each function returns ``[batch, length]`` long ids for a sample of ``length`` tokens, strictly
increasing and inside ``[0, target)``; all draws come from ``generator`` (CPU), so one seed
gives the same ids. LongReD's skipped ids for distillation are in :mod:`.positions`.

- :func:`pose_position_ids` (PoSE): two chunks. The head ``[0, r)`` keeps its positions,
  ``r ~ U{1, ..., (length + 1) // 2}``; the rest is shifted by ``u ~ U{0, ..., target -
  length}``, so its last id is at most ``target - 1``. (PoSE also takes the second chunk's text
  from further into the document; that is the data's business, not the ids'.)
- :func:`rpes_position_ids` (RPES): a sorted uniform sample of ``length`` distinct ids of
  ``range(target)``.
- :func:`sentence_gap_position_ids` (LongRecipe's position index transformation): the sample is
  split into segments at sentence starts; ids are consecutive inside a segment; a contiguous
  head prefix of random length ``r ~ U{1, ..., (length + 1) // 2}`` sits at ``0 .. r-1``; the
  ``target - length`` skipped ids are split among the gaps before the segments that start at or
  after ``r`` (the head's end counts as one such start) as a uniform random composition, so the
  last id is ``target - 1``. Segments come from :func:`sentence_starts`, per row.
"""

from __future__ import annotations

import torch

from longred_bench.errors import UserError

SENTENCE_END = (".", "!", "?", "\n")
"""A token whose text ends with one of these ends a sentence."""


def _check(length: int, target: int, batch: int) -> None:
    if batch < 1 or length < 1:
        raise UserError(f"position ids need batch >= 1 and length >= 1 (got {batch}, {length})")
    if target < length:
        raise UserError(
            f"target window {target} is shorter than the sample ({length} tokens): a position "
            "transform stretches a sample over a longer window"
        )


def pose_position_ids(
    length: int, target: int, batch: int, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    """PoSE's two-chunk ids ``[batch, length]`` (module docstring)."""
    _check(length, target, batch)
    head = torch.randint(1, (length + 1) // 2 + 1, (batch,), generator=generator)
    shift = torch.randint(0, target - length + 1, (batch,), generator=generator)
    ids = torch.arange(length).expand(batch, length)
    return ids + (ids >= head[:, None]) * shift[:, None]


def rpes_position_ids(
    length: int, target: int, batch: int, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    """RPES's ids ``[batch, length]``: a sorted random subset of ``range(target)`` per row."""
    _check(length, target, batch)
    rows = [
        torch.randperm(target, generator=generator)[:length].sort().values for _ in range(batch)
    ]
    return torch.stack(rows)


def sentence_delimiter_ids(tokenizer) -> torch.Tensor:
    """Ids of the tokens whose text ends a sentence (:data:`SENTENCE_END`), sorted."""
    vocab = tokenizer.get_vocab()
    ends = [
        i
        for i in vocab.values()
        if (text := tokenizer.decode([i])) and text.rstrip(" ").endswith(SENTENCE_END)
    ]
    if not ends:
        raise UserError("the tokenizer has no token ending a sentence (. ! ? or a newline)")
    return torch.tensor(sorted(ends), dtype=torch.long)


def sentence_starts(ids: torch.Tensor, delimiters: torch.Tensor) -> torch.Tensor:
    """``[batch, length]`` bool: True where a token starts a sentence, i.e. follows a delimiter
    token (:func:`sentence_delimiter_ids`) and is not one itself (``?`` then a newline starts
    one sentence); the first token of a row is not marked."""
    ends = torch.isin(ids, delimiters)
    starts = torch.zeros_like(ends)
    starts[:, 1:] = ends[:, :-1] & ~ends[:, 1:]
    return starts


def _composition(total: int, parts: int, generator: torch.Generator | None) -> torch.Tensor:
    """A uniform random composition of ``total`` into ``parts`` non-negative integers (stars and
    bars: ``parts - 1`` bars among ``total + parts - 1`` places)."""
    bars = torch.randperm(total + parts - 1, generator=generator)[: parts - 1].sort().values
    edges = torch.cat([torch.tensor([-1]), bars, torch.tensor([total + parts - 1])])
    return edges.diff() - 1


def sentence_gap_position_ids(
    starts: torch.Tensor, target: int, *, generator: torch.Generator | None = None
) -> torch.Tensor:
    """LongRecipe's ids ``[batch, length]`` for rows whose sentence starts are ``starts``
    (``[batch, length]`` bool, :func:`sentence_starts`); see the module docstring."""
    batch, length = starts.shape
    _check(length, target, batch)
    skipped = target - length
    head = torch.randint(1, (length + 1) // 2 + 1, (batch,), generator=generator)
    rows = []
    for b in range(batch):
        r = int(head[b])
        cuts = torch.nonzero(starts[b]).flatten()
        cuts = cuts[cuts > r]
        if r < length:
            cuts = torch.cat([torch.tensor([r]), cuts])
        gaps = torch.zeros(length, dtype=torch.long)
        if len(cuts):  # none only for a one-token sample, which is all head
            gaps[cuts] = _composition(skipped, len(cuts), generator)
        rows.append(torch.arange(length) + gaps.cumsum(0))
    return torch.stack(rows)
