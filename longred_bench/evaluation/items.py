"""Per-document scores of an lm-eval run (``eval_item`` records), for bootstrap intervals and
paired comparisons between models scored on the same documents.

Most metrics are means of per-document values that lm-eval logs. SQuAD v2's ``exact`` and ``f1``
are not: lm-eval logs each document's prediction and gold answers and scores the corpus at the
end. Their per-document values (:func:`squad_scores`, in percent like lm-eval's) follow the
SQuAD v2 definition, whose corpus score is their mean when no answer is dropped for its
no-answer probability (lm-eval's threshold of 1.0 drops none).
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any

_MEAN_AGGREGATIONS = frozenset({"mean", "mean_present"})  # lm-eval's, RULER's


def _mean_aggregated(task: Any) -> set[str]:
    """Names of ``task``'s metrics aggregated by a plain mean of per-document values."""
    return {
        name
        for name, fn in task.aggregation().items()
        if getattr(fn, "__name__", "") in _MEAN_AGGREGATIONS
    }


def item_records(
    samples: dict[str, list[dict[str, Any]]],
    tasks: dict[str, Any],
    *,
    suite: str,
    model: str,
    rope: str | None,
) -> list[dict[str, Any]]:
    """One ``eval_item`` record per (task, scored document, per-document metric).

    ``samples`` are lm-eval's logged samples (``simple_evaluate(..., log_samples=True)
    ["samples"]``), keyed by task; ``tasks`` the loaded task objects by name. Kept: the metrics
    a task aggregates by a mean of per-document values (``acc``, ``acc_norm``, ``exact_match``,
    RULER's ``score``); left out: corpus-level ones (perplexities, bits per byte), whose
    per-document values are not scores. Names follow :func:`tidy_records`: a metric named by a
    number (RULER's per-length keys) becomes ``metric="score"`` with ``length`` that number,
    given only for the length the document has (and the document's plain ``score`` is then not
    repeated); others have ``length=None``; a filter other than ``none`` is appended as
    ``"<metric>,<filter>"``. ``doc_id`` is lm-eval's index of the document in the task's split,
    the same for every model scored on the same documents. The mean of the values of one
    (task, metric, length) is the task's tidy ``value`` for that metric (for RULER, over all
    lengths with ``length`` ignored, the value of ``length=None``).
    """
    records: list[dict[str, Any]] = []
    for task in sorted(samples):
        kept = _mean_aggregated(tasks[task])
        generates = getattr(tasks[task], "OUTPUT_TYPE", None) == "generate_until"
        for sample in samples[task]:
            texts = _texts(sample) if generates else {}
            filt = sample.get("filter", "none")
            per_length = any(name.isdigit() for name in sample.get("metrics", ()))
            for name in sample.get("metrics", ()):
                value = sample.get(name)
                if name not in kept:
                    value = _squad_value(name, value)
                if value is None or (per_length and name == "score"):
                    continue
                length = int(name) if name.isdigit() else None
                metric = "score" if length is not None else name
                records.append(
                    {
                        "kind": "eval_item",
                        "suite": suite,
                        "model": model,
                        "rope": rope,
                        "task": task,
                        "metric": metric if filt == "none" else f"{metric},{filt}",
                        "length": length,
                        "doc_id": int(sample["doc_id"]),
                        "value": float(value),
                        **texts,
                    }
                )
    return records


def _texts(sample: dict[str, Any]) -> dict[str, Any]:
    """``response`` and ``target`` of a generation task's logged sample (see
    :func:`item_records`)."""
    resps = sample.get("resps") or [[None]]
    response = resps[0][0] if resps[0] else None
    return {"response": None if response is None else str(response),
            "target": sample.get("target")}  # fmt: skip


_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = frozenset(string.punctuation)


def _squad_tokens(text: str) -> list[str]:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces;
    then its tokens."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return _ARTICLES.sub(" ", text).split()


def squad_scores(prediction: str, answers: list[str]) -> dict[str, float]:
    """``{"exact": ..., "f1": ...}`` (0-100) of one SQuAD v2 prediction against its gold
    ``answers``: the best over the answers (an unanswerable question has none and counts the
    empty answer) of exact match and token F1 after normalisation; an empty side scores 100
    only when both are empty."""
    golds = [a for a in answers if _squad_tokens(a)] or [""]
    pred = _squad_tokens(prediction)
    exact, f1 = 0.0, 0.0
    for gold in golds:
        ref = _squad_tokens(gold)
        exact = max(exact, float(pred == ref))
        if not pred or not ref:
            f1 = max(f1, float(pred == ref))
            continue
        common = sum((Counter(pred) & Counter(ref)).values())
        if common:
            precision, recall = common / len(pred), common / len(ref)
            f1 = max(f1, 2 * precision * recall / (precision + recall))
    return {"exact": 100.0 * exact, "f1": 100.0 * f1}


def _squad_value(name: str, value: Any) -> float | None:
    """A SQuAD v2 document's ``exact`` or ``f1`` from lm-eval's logged ``(prediction,
    reference)`` pair; ``None`` for any other metric that is not a mean of documents."""
    if name not in ("exact", "f1") or not isinstance(value, (list, tuple)) or len(value) != 2:
        return None
    pred, ref = value
    if not isinstance(pred, dict) or not isinstance(ref, dict) or "prediction_text" not in pred:
        return None
    answers = (ref.get("answers") or {}).get("text") or []
    return squad_scores(str(pred["prediction_text"]), [str(a) for a in answers])[name]
