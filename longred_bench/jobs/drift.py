"""A drift run: load the original and the extended models a config names, measure per-layer drift
on token windows, and return tidy records (one per model and layer, one summary per model).

A summary also lists each window's own drift, in window order (the same windows for every model
of a run, and for every run with the same ``texts``, ``num_texts``, ``seq_len``, ``seed`` and
tokenizer): ``text_hidden_cosine`` and ``text_attention_kl`` (that window's mean over its tokens,
then over layers; ``None`` for a window with no valid token) and ``text_num_tokens``. Their mean
over windows is the summary's ``mean_hidden_cosine`` / ``mean_attention_kl`` (all windows have
``seq_len`` tokens); reports bootstrap over them.

Config keys are those of :class:`DriftConfig`; unknown keys are rejected.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
import yaml

from longred_bench.cache import atomic_write_text
from longred_bench.data.texts import token_windows
from longred_bench.errors import UserError
from longred_bench.jobs.builds import result_builds
from longred_bench.jobs.configs import DRIFT_HOW_KEYS, DriftConfig, drift_what
from longred_bench.jobs.heartbeat import heartbeat
from longred_bench.metrics.drift import DriftResult, TextSums, measure_drift, select_layers
from longred_bench.models.loading import LoadedModel, extend, load
from longred_bench.results import Provenance, write_records


def _dtype(cfg: DriftConfig) -> torch.dtype:
    """The torch dtype of ``cfg`` (one of the floating dtypes its config accepts)."""
    return getattr(torch, cfg.dtype)


def _load_extended(cfg: DriftConfig, original: LoadedModel) -> dict[str, torch.nn.Module]:
    """The models compared with the original, by label: each ``extended`` checkpoint as it is
    (its spec), then each ``rope`` spec as a zero-shot extension of the original (the spec)."""
    models: dict[str, torch.nn.Module] = {}
    for spec in cfg.extended:
        base = (
            original if spec == cfg.original else load(spec, device=cfg.device, dtype=_dtype(cfg))
        )
        if base is not original and base.tokenizer.get_vocab() != original.tokenizer.get_vocab():
            raise UserError(
                f"tokenizer of {spec!r} ({base.tokenizer.name_or_path}) differs from that of "
                f"{cfg.original!r} ({original.tokenizer.name_or_path}): drift needs the same tokens"
            )
        models[spec] = base.model
    for rope in cfg.rope:
        models[rope] = extend(original.model, rope).eval()
    return models


def _finite(values: list[float]) -> list[float | None]:
    """``values`` with NaN (a window with no valid token) as ``None``, which JSON can hold."""
    return [None if math.isnan(v) else v for v in values]


def _records(
    cfg: DriftConfig, results: dict[str, DriftResult], models: dict[str, torch.nn.Module]
) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    for name, res in results.items():
        common = {
            "original": cfg.original,
            "extension": name,
            "texts": cfg.texts,
            "seq_len": cfg.seq_len,
            "num_texts": res.num_texts,
            "num_tokens": res.num_tokens,
        }
        model_config = models[name].config
        rope = {
            "rope_parameters": dict(model_config.rope_parameters),
            "max_position_embeddings": model_config.max_position_embeddings,
        }
        for layer in res.layers:
            values = {
                **asdict(layer),
                "text_hidden_cosine": _finite(list(layer.text_hidden_cosine)),
                "text_attention_kl": _finite(list(layer.text_attention_kl)),
            }
            records.append({"kind": "drift_layer", **common, **values})
        kl = [layer.attention_kl for layer in res.layers]
        records.append(
            {
                "kind": "drift_summary",
                **common,
                **rope,
                "mean_hidden_cosine": res.mean_hidden_cosine,
                "last_hidden_cosine": res.last_hidden_cosine,
                "mean_attention_kl": res.mean_attention_kl,
                "top_m": cfg.top_m,
                "selected_layers": select_layers(kl, min(cfg.top_m, len(kl))),
                "text_hidden_cosine": _finite([t.hidden_cosine for t in res.texts]),
                "text_attention_kl": _finite([t.attention_kl for t in res.texts]),
                "text_num_tokens": [t.num_tokens for t in res.texts],
            }
        )
    return records


PARTIAL = "drift.partial.json"
"""Beside a drift run's results while it runs: the per-text sums of the windows measured so far."""


def files_of(cfg: DriftConfig) -> dict[str, str]:
    """The stamps of the local files ``cfg`` reads (its model folders, a text file or folder:
    :func:`~longred_bench.jobs.local_files.local_stamps`): files replaced at the same path make
    another drift, never answered from the old files' windows or results."""
    from longred_bench.jobs.local_files import local_stamps

    return local_stamps(cfg.to_dict()).get("local_files", {})


def files_changed(out: Path, cfg: DriftConfig) -> str:
    """The local files (comma-separated paths) whose stamps differ from those the drift saved
    in ``out/config.yaml`` recorded (a model retrained or a text file replaced at its path),
    or ``""``. Results saved before stamps were recorded count as unchanged."""
    try:
        saved = yaml.safe_load((out / "config.yaml").read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return ""
    if not isinstance(saved, dict) or "local_files" not in saved:
        return ""
    return _changed(saved["local_files"] or {}, files_of(cfg))


def _changed(theirs: dict[str, str], mine: dict[str, str]) -> str:
    """The paths (comma-separated) whose stamps differ between ``theirs`` and ``mine``."""
    return ", ".join(sorted(p for p in {*theirs, *mine} if theirs.get(p) != mine.get(p)))


def _read_partial(path: Path | None, cfg: DriftConfig) -> dict[str, list[TextSums]]:
    """The sums an interrupted run of ``cfg`` saved at ``path`` (none when absent, of another
    config but for its :data:`~longred_bench.jobs.configs.DRIFT_HOW_KEYS`, or of other files at
    its paths)."""
    if path is None or not path.is_file():
        return {}
    try:
        saved = json.loads(path.read_text())
        if drift_what(saved["config"]) != drift_what(cfg.to_dict()):
            return {}
        changed = _changed(saved.get("files", {}), files_of(cfg))
        if changed:  # said: the windows of the old files are measured again
            if kept := partial_windows(path):
                print(f"[drift] the files of {changed} changed since {kept} window(s) were saved "
                      f"in {path}: every window is measured again", flush=True)  # fmt: skip
            return {}
        return {
            name: [TextSums.from_list(t) for t in texts] for name, texts in saved["texts"].items()
        }
    except (ValueError, KeyError, TypeError, AttributeError):  # AttributeError: texts not a map
        return {}


def _measured_how(path: Path | None, cfg: DriftConfig) -> str:
    """``; measured at batch_size 4 (now 1)``: the settings of
    :data:`~longred_bench.jobs.configs.DRIFT_HOW_KEYS` the saved windows at ``path`` were
    measured with where they differ from ``cfg``'s, else ``""``."""
    try:
        saved = json.loads(path.read_text())["config"] if path is not None else {}
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    mine = cfg.to_dict()
    other = [f"{k} {saved[k]} (now {mine[k]})" for k in DRIFT_HOW_KEYS
             if k in saved and saved[k] != mine[k]]  # fmt: skip
    return f"; measured at {', '.join(other)}" if other else ""


def _partial_writer(
    path: Path, cfg: DriftConfig, seconds: Callable[[], float]
) -> Callable[[dict[str, list[TextSums]]], None]:
    """Saves the sums so far at ``path`` with ``seconds()``, the compute time they took."""
    files = files_of(cfg)

    def write(sums: dict[str, list[TextSums]]) -> None:
        texts = {name: [t.as_list() for t in rows] for name, rows in sums.items()}
        path.parent.mkdir(parents=True, exist_ok=True)
        saved = {"config": cfg.to_dict(), "files": files, "texts": texts, "seconds": seconds()}
        atomic_write_text(path, json.dumps(saved))

    return write


def _saved_seconds(path: Path | None) -> float:
    """The compute seconds the windows saved at ``path`` took (0 when not recorded)."""
    try:
        value = json.loads(path.read_text())["seconds"] if path is not None else 0.0
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0
    return float(value) if isinstance(value, (int, float)) and value >= 0 else 0.0


def partial_windows(path: Path) -> int:
    """How many windows an interrupted run saved at ``path`` had measured (0 when none)."""
    try:
        texts = json.loads(path.read_text())["texts"]
        return min((len(rows) for rows in texts.values()), default=0)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return 0


def run_drift(
    cfg: DriftConfig, *, progress: bool = True, partial: Path | None = None
) -> tuple[list[dict[str, Any]], Provenance]:
    """Measure ``cfg`` and return (records, provenance). With ``partial``, the per-text sums are
    saved there after every batch, and a run of the same config interrupted before resumes from
    the windows it finished (the caller deletes the file once the results are saved)."""
    if not cfg.extended and not cfg.rope:
        raise UserError("drift needs an extended checkpoint or a RoPE spec to compare with the "
                        "original (extended=... or rope=...)")  # fmt: skip
    torch.manual_seed(cfg.seed)
    original = load(cfg.original, device=cfg.device, dtype=_dtype(cfg))
    extended = _load_extended(cfg, original)
    limit = original.model.config.max_position_embeddings
    longest = max(m.config.max_position_embeddings for m in extended.values())
    if cfg.seq_len > max(limit, longest):  # before the texts: a corpus had too few such windows
        raise UserError(
            f"seq_len {cfg.seq_len} exceeds every model's window: use a sequence length of at "
            f"most {max(limit, longest)} (--seq-len {max(limit, longest)}; in a profile, "
            f"drift.seq_len: {max(limit, longest)})"
        )
    windows = token_windows(
        original.tokenizer, cfg.texts, cfg.num_texts, cfg.seq_len, seed=cfg.seed
    )
    done = _read_partial(partial, cfg)
    skip = min((len(done.get(name, ())) for name in extended), default=0)
    done = {name: done[name][:skip] for name in extended} if skip else {}
    if skip:  # under --quiet too: one line saying what is reused
        print(f"[drift] resuming after {skip} of {len(windows)} windows ({partial})"
              f"{_measured_how(partial, cfg)}", flush=True)  # fmt: skip
    batches = [(chunk, None) for chunk in windows[skip:].split(cfg.batch_size)]
    start, before = time.perf_counter(), _saved_seconds(partial) if skip else 0.0

    def seconds() -> float:  # the whole drift's: the saved windows' time and this run's
        return round(before + time.perf_counter() - start, 2)

    writer = None if partial is None else _partial_writer(partial, cfg, seconds)
    results = measure_drift(
        original.model, extended, batches, impl=cfg.impl, progress=progress, total=len(batches),
        done=done, on_batch=writer,
    )  # fmt: skip
    config = {**cfg.to_dict(), "seconds": seconds()}
    if files := files_of(cfg):  # which files were read, to tell when they change
        config["local_files"] = files
    return _records(cfg, results, extended), Provenance.collect(
        config, seed=cfg.seed, device=cfg.device, builds=result_builds(config)
    )


def save_run(out: Path, records: list[dict[str, Any]], provenance: Provenance) -> Path:
    """Write ``drift.jsonl`` and the resolved ``config.yaml`` under ``out``; returns the JSONL."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump(provenance.config, sort_keys=True))
    return write_records(out / "drift.jsonl", records, provenance)


def drift_command(
    cfg: DriftConfig, out: Path, *, progress: bool = True, command: str | None = None
) -> list[Path]:
    """``drift``: measure, then write ``out/drift.jsonl``, ``drift.md`` (headed by ``command``,
    the command line) and ``drift.png``."""
    from longred_bench.reports.drift_plot import plot_drift_layers
    from longred_bench.reports.drift_report import drift_frames, drift_markdown
    from longred_bench.results import read_records

    def line() -> str:
        return f"[drift] {partial_windows(out / PARTIAL)} of {cfg.num_texts} window(s) measured"

    with heartbeat(line, enabled=not progress):
        records, provenance = run_drift(cfg, progress=progress, partial=out / PARTIAL)
    jsonl = save_run(out, records, provenance)
    (out / PARTIAL).unlink(missing_ok=True)
    records = read_records(jsonl)
    title = f"Drift of extended models from `{cfg.original}`"
    (out / "drift.md").write_text(drift_markdown(records, title, command), encoding="utf-8")
    _, layers = drift_frames(records)
    plot_drift_layers(layers, out / "drift.png", title.replace("`", ""))
    return [jsonl, out / "drift.md", out / "drift.png"]
