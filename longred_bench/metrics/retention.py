"""Short-text retention and LongReD's summary averages, as pure functions of score mappings.

LongReD (Dong et al., 2025, "LongReD: Mitigating Short-Text Degradation of Long-Context Large
Language Models via Restoration Distillation") reports, per extended model:

* the score of each short-text benchmark and its retention relative to the original model,
  ``retention_t = S_ext(t) / S_orig(t)``;
* category means (general, commonsense, reading comprehension) and their average, the short-text
  average ``Short Avg``;
* ``LongReD Avg = (5 * Short Avg + RULER Avg) / 6`` (Table 3), weighting the short-text side five
  times the long-text one.

Scores are plain numbers (fractions or percentages, as long as all inputs use the same scale).
Two runs are compared on the documents both scored: :func:`common_documents` cuts per-document
scores (group -> member -> doc -> score) to the shared keys, and :func:`common_retention` is the
ratio of the two mean-of-means averages over those documents, so a document one run skipped (e.g.
over its window) counts on neither side.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence

from longred_bench.errors import UserError

Nested = Mapping[Hashable, Mapping[Hashable, Mapping[Hashable, float]]]


def retention(original: Mapping[str, float], extended: Mapping[str, float]) -> dict[str, float]:
    """Per-key retention ``extended[k] / original[k]`` (1.0: nothing lost).

    Both mappings must have the same keys; a key missing on either side is a ``UserError`` naming
    it. Where ``original[k] == 0`` the ratio is undefined and the result is ``NaN`` (rule: an
    original score of zero leaves nothing to retain, so no retention is reported, even when the
    extended score is also zero).
    """
    only_orig = sorted(set(original) - set(extended))
    only_ext = sorted(set(extended) - set(original))
    if only_orig or only_ext:
        parts = []
        if only_orig:
            parts.append(f"missing from extended: {', '.join(only_orig)}")
        if only_ext:
            parts.append(f"missing from original: {', '.join(only_ext)}")
        raise UserError("retention needs the same keys on both sides; " + "; ".join(parts))
    out: dict[str, float] = {}
    for key in original:
        base = float(original[key])
        out[key] = math.nan if base == 0.0 else float(extended[key]) / base
    return out


def category_means(
    scores: Mapping[str, float], categories: Mapping[str, Sequence[str]]
) -> dict[str, float]:
    """Mean score of each category: ``mean_{t in categories[c]} scores[t]``.

    A category whose benchmarks are all absent from ``scores`` is left out (not evaluated); one
    with only some of them present is a ``UserError`` (a partial mean would not be comparable).
    An empty category is a ``UserError`` too.
    """
    out: dict[str, float] = {}
    for name, members in categories.items():
        if not members:
            raise UserError(f"category {name!r} has no benchmarks")
        present = [t for t in members if t in scores]
        if not present:
            continue
        if len(present) != len(members):
            missing = ", ".join(t for t in members if t not in scores)
            raise UserError(f"category {name!r} is missing scores for: {missing}")
        out[name] = sum(float(scores[t]) for t in members) / len(members)
    return out


def short_average(category_scores: Mapping[str, float]) -> float:
    """LongReD's ``Short Avg``: the mean of the category scores present (each category once)."""
    if not category_scores:
        raise UserError("no category scores to average")
    return sum(float(v) for v in category_scores.values()) / len(category_scores)


def longred_avg(short_avg: float, ruler_avg: float) -> float:
    """LongReD Table 3's overall score, ``(5 * Short Avg + RULER Avg) / 6``."""
    return (5.0 * float(short_avg) + float(ruler_avg)) / 6.0


def common_documents(*sides: Nested) -> tuple[list[dict], int]:
    """Each of ``sides`` (group -> member -> doc -> score) cut to the (group, member, doc) keys
    every side has, and the number of those documents (0, with empty cuts, when none is shared).
    """
    if not sides:
        return [], 0
    shared: dict[Hashable, dict[Hashable, set[Hashable]]] = {}
    for g in set.intersection(*(set(x) for x in sides)):
        for m in set.intersection(*(set(x[g]) for x in sides)):
            keys = set.intersection(*(set(x[g][m]) for x in sides))
            if keys:
                shared.setdefault(g, {})[m] = keys
    n = sum(len(keys) for members in shared.values() for keys in members.values())
    cuts = [
        {
            g: {m: {k: x[g][m][k] for k in keys} for m, keys in ms.items()}
            for g, ms in shared.items()
        }
        for x in sides
    ]
    return cuts, n


def mean_of_means(items: Nested) -> float:
    """Mean over groups of the mean over members of the mean over documents (LongReD's Short
    Avg when groups are categories and members tasks); ``NaN`` when there is no document."""
    groups = [
        [sum(docs.values()) / len(docs) for docs in members.values() if docs]
        for members in items.values()
    ]
    groups = [g for g in groups if g]
    if not groups:
        return math.nan
    return sum(sum(g) / len(g) for g in groups) / len(groups)


def common_retention(original: Nested, extended: Nested) -> tuple[float, int]:
    """Short Avg retention over the documents both runs scored, and their number ``n``:
    ``mean_of_means(extended) / mean_of_means(original)``, each cut to the shared documents.

    ``NaN`` when no document is shared (``n = 0``) or the original's average is 0 (nothing to
    retain, as in :func:`retention`).
    """
    (orig, ext), n = common_documents(original, extended)
    if n == 0:
        return math.nan, 0
    base = mean_of_means(orig)
    return (math.nan if base == 0.0 else mean_of_means(ext) / base), n
