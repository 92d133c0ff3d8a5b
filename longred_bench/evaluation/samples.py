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

``samples/run.json`` names the responses the records were scored from (the run's request-cache
key, :func:`longred_bench.jobs.resume.request_cache`), so that a later run into the same folder
keeps them only where they are its own documents (:func:`keep_samples`).
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
    out: Path, records: dict[str, list[dict[str, Any]]], *, responses: str
) -> dict[str, Path]:
    """Write each task's records as gzipped JSON lines under ``out/samples/``, replacing what a
    previous run wrote there (another task's file included), and ``run.json`` naming the
    ``responses`` they were scored from; return the path of each task, in task order."""
    paths = {}
    (out / SAMPLES).mkdir(parents=True, exist_ok=True)
    for task in sorted(records):
        path = samples_path(out, task)
        tmp = path.with_name(path.name + ".tmp")
        with gzip.open(tmp, "wt", encoding="utf-8") as fh:
            for record in records[task]:
                fh.write(json.dumps(record, ensure_ascii=False) + "\n")
        tmp.replace(path)
        paths[task] = path
    for other in set((out / SAMPLES).glob("*.jsonl.gz")) - set(paths.values()):
        other.unlink()
    (out / SAMPLES / RUN).write_text(json.dumps({"responses": responses}) + "\n", "utf-8")
    return paths


def keep_samples(out: Path, *, responses: str) -> tuple[dict[Path, int], bool]:
    """What a run that logs no samples does with ``out/samples/`` from an earlier one: the
    files (each with its document count) are kept when they were scored from the same
    ``responses`` as this run's (its request-cache key: the same model files and settings),
    so they are this run's documents; otherwise (other weights at the same path, another dtype,
    or files without ``run.json``) they describe no result in the folder and are deleted.
    Returns the kept files and whether any were deleted."""
    folder = out / SAMPLES
    files = sorted(folder.glob("*.jsonl.gz")) if folder.is_dir() else []
    try:
        theirs = json.loads((folder / RUN).read_text("utf-8"))["responses"]
    except (OSError, ValueError, KeyError, TypeError):
        theirs = None
    if theirs == responses:
        return {p: sum(1 for _ in read_samples(p)) for p in files}, False
    for path in files:
        path.unlink()
    (folder / RUN).unlink(missing_ok=True)
    return {}, bool(files)


def read_samples(path: Path) -> Iterator[dict[str, Any]]:
    """The records of one ``samples/<task>.jsonl.gz`` file."""
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)
