"""Every document an lm-eval suite scored, as ``eval --log-samples`` keeps it: one record per
(task, document) in ``samples/<task>.jsonl.gz`` under the eval output folder.

lm-eval's logged samples (``simple_evaluate(..., log_samples=True)["samples"]``) hold one entry
per document *and filter*; a record here merges a document's entries into one:

- ``task``, ``doc_id`` (lm-eval's index of the document in the task's split), ``decoding``
  (``greedy`` or ``pcd``: what produced the responses);
- ``arguments``: each request's arguments, the prompt first (``[context, continuation]`` for a
  log-likelihood request, ``[context, generation kwargs]`` for a generation);
- ``resps``: each request's raw responses, the generated string or ``[loglikelihood,
  is_greedy]`` (under PCD the log-likelihood is the contrast score of :mod:`longred_bench.pcd.lm`);
- ``filtered_resps``: ``{filter: one response per request}`` after the task's filters;
- ``metrics``: ``{metric: value}``, named as the tidy records name them (``<metric>`` for the
  ``none`` filter, ``<metric>,<filter>`` otherwise; RULER's per-length keys such as ``"4096"`` only
  for the document's own length);
- ``target`` and lm-eval's ``doc_hash``, ``prompt_hash``, ``target_hash``.

The mean of a metric over a task's records is the task's value for it in ``eval.jsonl`` (for the
metrics lm-eval aggregates by a mean; perplexity-like ones are aggregated otherwise).

``samples/run.json`` names the run the records belong to (a key of its responses, the
request-cache key of :func:`longred_bench.jobs.resume.request_cache`, and of its config) and
each file's document count, so that a later run into the same folder keeps them only where they
are its own documents (:func:`keep_samples`); others are set aside under
``samples/earlier-<run>/``, never deleted.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SAMPLES = "samples"
RUN = "run.json"
_HASHES = ("doc_hash", "prompt_hash", "target_hash")


def sample_records(
    samples: dict[str, list[dict[str, Any]]], *, decoding: str
) -> dict[str, list[dict[str, Any]]]:
    """One record per document of each task of lm-eval's logged ``samples`` (JSON-safe), in the
    order lm-eval scored them; see the module docstring for the fields."""
    out: dict[str, list[dict[str, Any]]] = {}
    for task in sorted(samples):
        by_doc: dict[int, dict[str, Any]] = {}
        for sample in samples[task]:
            doc_id = int(sample["doc_id"])
            record = by_doc.setdefault(doc_id, _record(task, doc_id, sample, decoding))
            filt = sample.get("filter", "none")
            record["filtered_resps"][filt] = sample.get("filtered_resps")
            for name in sample.get("metrics", ()):
                value = sample.get(name)
                if value is not None:
                    record["metrics"][name if filt == "none" else f"{name},{filt}"] = value
        out[task] = list(by_doc.values())
    return out


def _record(task: str, doc_id: int, sample: dict[str, Any], decoding: str) -> dict[str, Any]:
    """A document's record from its first logged entry, before filters and metrics are added."""
    return {
        "task": task,
        "doc_id": doc_id,
        "decoding": decoding,
        "arguments": sample.get("arguments"),
        "resps": sample.get("resps"),
        "filtered_resps": {},
        "metrics": {},
        "target": sample.get("target"),
        **{k: sample.get(k) for k in _HASHES},
    }


def samples_path(out: Path, task: str) -> Path:
    """Where ``task``'s records go under the eval output folder ``out``."""
    return out / SAMPLES / f"{task}.jsonl.gz"


def write_samples(
    out: Path, records: dict[str, list[dict[str, Any]]], *, run: str
) -> dict[str, Path]:
    """Write each task's records as gzipped JSON lines under ``out/samples/``, replacing what a
    previous run wrote there, and ``run.json`` naming the ``run`` they belong to (a key of its
    responses and config) with each file's document count; another run's file of a task this
    one did not log is set aside (:func:`set_aside`). Returns the path of each task, in task
    order."""
    folder = out / SAMPLES
    folder.mkdir(parents=True, exist_ok=True)
    others = sorted(set(folder.glob("*.jsonl.gz")) - {samples_path(out, t) for t in records})
    if others:
        set_aside(out, others)
    (folder / RUN).unlink(missing_ok=True)  # until every file is this run's
    paths = {}
    for task in sorted(records):
        path = samples_path(out, task)
        tmp = path.with_name(path.name + ".tmp")
        with gzip.open(tmp, "wt", encoding="utf-8") as fh:
            for record in records[task]:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        tmp.replace(path)
        paths[task] = path
    counts = {paths[t].name: len(records[t]) for t in paths}
    tmp = folder / (RUN + ".tmp")
    tmp.write_text(json.dumps({"run": run, "documents": counts}) + "\n", "utf-8")
    tmp.replace(folder / RUN)
    return paths


def _recorded(folder: Path) -> dict[str, Any]:
    """``run.json`` of a samples folder; ``{}`` where it is missing or unreadable."""
    try:
        data = json.loads((folder / RUN).read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def set_aside(out: Path, files: list[Path]) -> Path:
    """Move ``files`` of ``out/samples/`` (and its ``run.json`` where every file of the folder
    goes) into ``out/samples/earlier-<run>/``, named by the run that wrote them (``unrecorded``
    where no ``run.json`` says); return that folder. Nothing is deleted."""
    folder = out / SAMPLES
    recorded = _recorded(folder)
    name = str(recorded.get("run") or "unrecorded")[:12]
    aside = folder / f"earlier-{name}"
    aside.mkdir(parents=True, exist_ok=True)
    for path in files:
        path.replace(aside / path.name)
    if recorded and not list(folder.glob("*.jsonl.gz")):
        (folder / RUN).replace(aside / RUN)
    return aside


def keep_samples(out: Path, *, run: str) -> tuple[dict[Path, int], Path | None]:
    """What a run that logs no samples does with ``out/samples/`` from an earlier one: the
    files (each with its document count) stay when ``run.json`` names the same ``run`` (the
    same responses and config: they are this run's documents); otherwise (other weights at the
    same path, another batch size, files written before ``run.json`` existed) they describe no
    result in the folder and are set aside (:func:`set_aside`). Returns the kept files, and the
    folder the others went to (None: none)."""
    folder = out / SAMPLES
    files = sorted(folder.glob("*.jsonl.gz")) if folder.is_dir() else []
    if not files:
        return {}, None
    recorded = _recorded(folder)
    if recorded.get("run") == run:
        counts = recorded.get("documents") or {}
        return {p: counts.get(p.name) or sum(1 for _ in read_samples(p)) for p in files}, None
    return {}, set_aside(out, files)


def read_samples(path: Path) -> Iterator[dict[str, Any]]:
    """The records of one ``samples/<task>.jsonl.gz`` file."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)
