"""Per-document scores of an lm-eval run (``eval_item`` records), for bootstrap intervals and
paired comparisons between models scored on the same documents."""

from __future__ import annotations

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
                if name not in kept or value is None or (per_length and name == "score"):
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
