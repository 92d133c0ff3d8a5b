"""RULER's scoring, as pure functions on a prediction string and the reference answers.

- :func:`score_all` (retrieval tasks): the percentage of references that occur in the
  prediction, compared case-insensitively as substrings.
- :func:`score_any` (QA tasks): 100 when at least one reference occurs in the prediction, else 0.
  RULER credits QA this way; lm-eval's ``string_match_part`` instead scores the fraction found,
  which for QA punishes a model for not repeating every alias of the answer. With
  ``whole_words`` a reference counts only where no letter or digit adjoins it: DROP's answers
  (``qa_2``) are mostly short numbers, and the reference ``2`` would otherwise be found in
  ``2012`` or ``12``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence


def _found(prediction: str, references: Sequence[str], whole_words: bool = False) -> list[bool]:
    text = prediction.lower()
    if not whole_words:
        return [ref.lower() in text for ref in references]
    return [
        re.search(rf"(?<![^\W_]){re.escape(ref.lower())}(?![^\W_])", text) is not None
        for ref in references
    ]


def score_all(prediction: str, references: Sequence[str]) -> float:
    """Percentage (0-100) of references found in the prediction."""
    if not references:
        raise ValueError("score_all needs at least one reference")
    found = _found(prediction, references)
    return 100.0 * sum(found) / len(found)


def score_any(prediction: str, references: Sequence[str], whole_words: bool = False) -> float:
    """100 if any reference is found in the prediction (as a whole word with ``whole_words``),
    else 0."""
    if not references:
        raise ValueError("score_any needs at least one reference")
    return 100.0 if any(_found(prediction, references, whole_words)) else 0.0


SCORERS = {"all": score_all, "any": score_any}
