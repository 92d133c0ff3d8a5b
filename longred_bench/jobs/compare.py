"""``compare``: one report on an original model against its extended versions.

For the original, every extended checkpoint (``extended``, compared as it is) and every zero-shot
RoPE extension of the original (``rope``) this runs the short-text suite, RULER and the NIAH grid
through :func:`longred_bench.evaluation.run.run_eval`, and measures drift from the original
(:func:`longred_bench.jobs.drift.run_drift`). Each unit of work (one model and suite, or one
model's drift) is saved under ``<out>/runs/`` beside the config that made it and reused
when the same config is asked again, so an interrupted comparison resumes where it stopped and a
failure loses nothing already measured; inside a unit, each model response is kept under
``<out>/runs/requests/`` as it is computed and each drift window's sums beside the drift units
(:mod:`longred_bench.jobs.resume`), so even the unit in progress resumes. A unit of a local model
is also keyed by its files (names, sizes, modification times: ``weights``), so a checkpoint
trained again at the same path is measured again, never answered from the old one. The report
(:mod:`longred_bench.reports.compare_report`) is built from those saved records only.

With ``decoding`` naming ``pcd`` every model gets one more row, labelled ``<label> +pcd``: its
short suite, RULER and NIAH decoded and scored with Positional Contrastive Decoding (parameters
``pcd``, :mod:`longred_bench.pcd.model`); drift is a property of the weights and has no PCD row.

Every extended checkpoint must share the original's tokenizer (the same vocabulary): drift
compares token by token and retention compares scores on identical inputs.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from longred_bench.errors import UserError
from longred_bench.evaluation.config import EvalConfig
from longred_bench.jobs.compare_units import DAMAGED, make_room, unit_records
from longred_bench.jobs.configs import CompareConfig
from longred_bench.jobs.heartbeat import heartbeat
from longred_bench.jobs.resume import drop_responses, request_cache, saved_responses, weights_stamp
from longred_bench.jobs.unit_compute import run_eval_unit
from longred_bench.jobs.units import own_config, save_records
from longred_bench.pcd.config import PcdConfig
from longred_bench.results import config_hash


@dataclass(frozen=True)
class Entry:
    """One evaluated model: its label in the report, its spec and its RoPE extension."""

    label: str
    spec: str
    rope: str | None = None


def entries(cfg: CompareConfig) -> list[Entry]:
    """The original first, then the checkpoints, then the zero-shot extensions."""
    out = [Entry("original", cfg.original)]
    out += [Entry(spec, spec) for spec in cfg.extended]
    out += [Entry(rope, cfg.original, rope) for rope in cfg.rope]
    labels = [e.label for e in out]
    if len(set(labels)) != len(labels):
        raise UserError(f"a model is listed twice: {', '.join(labels)}")
    check_listed_once(cfg.original, cfg.extended, cfg.rope)
    return out


def check_listed_once(original: str, extended: Sequence[str], ropes: Sequence[str]) -> None:
    """Refuse a model measured twice: a checkpoint by two spellings (``m``, ``./m``, ``/abs/m``),
    the original given as a checkpoint too (measured against itself: cosine 1, KL 0), an
    extension by two spellings (``pi:factor=4``, ``pi:factor=4.0``). A zoo model and its folder
    in the cache (``longred-bench models --path``) are one model."""
    from longred_bench.models.rope import parse_rope_spec
    from longred_bench.models.zoo import ZOO

    paths = any(Path(m).expanduser().exists() for m in [original, *extended])

    def named(spec: str) -> str:
        path = Path(spec).expanduser()
        if path.exists():
            return str(path.resolve())
        if paths and spec in ZOO:  # its folder, where built or fetched (beside a folder given)
            from longred_bench.jobs.limits import model_folder

            try:
                return str(model_folder(spec).resolve())
            except UserError:  # tiny-random (no folder), not fetched or built: no folder given
                return spec
        return spec

    seen = {(named(original), None): "the original"}
    for spec, rope in [*((m, None) for m in extended), *((original, r) for r in ropes)]:
        key = (named(spec), parse_rope_spec(rope).label() if rope else None)
        given = rope or spec
        if key in seen:
            a, what = ("an", "extension") if rope else ("a", "model")
            raise UserError(f"{a} {what} is listed twice: {seen[key]} and {given} are one "
                            f"{what} ({key[1] or key[0]}); give it once")  # fmt: skip
        seen[key] = given


DECODED_SUITES = ("short", "ruler", "niah")
"""The suites a decoding scores (drift reads the weights)."""


def decodes_nothing(decoding: Any, suites: Any) -> bool:
    """Whether PCD is asked of a comparison none of whose ``suites`` decodes: its settings
    would be recorded and never used (``compare``'s flags and a pairs file refuse it)."""
    return "pcd" in decoding and not set(suites) & set(DECODED_SUITES)


def rows(cfg: CompareConfig) -> list[tuple[str, Entry, str]]:
    """``(label, entry, decoding)`` of every report row: each model, once per decoding (PCD
    rows labelled ``<label> +pcd``)."""
    return [
        (entry.label if decoding == "greedy" else f"{entry.label} +{decoding}", entry, decoding)
        for entry in entries(cfg)
        for decoding in cfg.decoding
    ]


def check_tokenizers(cfg: CompareConfig, *, note: bool = True) -> None:
    """Raise :class:`UserError` naming both tokenizers and their first difference if a
    checkpoint's differs; with drift among the suites, one whose layer count or vocabulary size
    drift would refuse (after every evaluation); from tokenizers and configs, before any weights
    load. With ``note``, a checkpoint of the same vocabulary that encodes a text otherwise gets
    one line."""
    from longred_bench.jobs.same_tokens import (
        check_drift_shapes,
        check_same_tokens,
        note_other_encoding,
    )

    if not cfg.extended:
        return
    check_same_tokens(cfg.original, cfg.extended, who="compare", role="original",
                      why="compare needs the same tokenizer")  # fmt: skip
    if "drift" in cfg.suites:
        check_drift_shapes(cfg.original, cfg.extended, who="compare")
    if note:
        note_other_encoding(cfg.original, cfg.extended, who="compare")


def slug(text: str) -> str:
    """``text`` as a folder name (a unit's, or a pair's): at most 80 characters, a longer one
    cut to 71 and ended by 8 hex digits of ``text``'s hash (two paths that share their first 80
    characters shared one folder, each measured over the other's records); never hidden, ``.``
    or ``..`` (``./m`` made a hidden ``._m``, ``..`` the folder above)."""
    name = re.sub(r"[^A-Za-z0-9_.=-]+", "_", text).strip("_.") or "model"
    return name if len(name) <= 80 else _hashed(name, text)


def _hashed(name: str, text: str) -> str:
    """``name`` cut to 71 characters and ended by 8 hex digits of ``text``'s hash."""
    import hashlib

    return f"{name[:71]}-{hashlib.sha256(text.encode('utf-8')).hexdigest()[:8]}"


RUNS_RESERVED = ("drift", "requests")
"""Folders of ``runs/`` that are not a model's (the drift units, the saved model responses)."""


def unit_folders(labels: list[str]) -> dict[str, str]:
    """Each row label's folder under ``runs/``: its :func:`slug`, ended by 8 hex digits of the
    label's hash where two labels' slugs are one (``a/b`` and ``a_b``, a model named ``x_pcd``
    beside ``x +pcd``) or it is a folder of :data:`RUNS_RESERVED`."""
    slugs = {label: slug(label) for label in labels}
    taken = [*slugs.values(), *RUNS_RESERVED]
    return {label: name if taken.count(name) == 1 else _hashed(name, label)
            for label, name in slugs.items()}  # fmt: skip


def _eval_unit(
    cfg: CompareConfig, entry: Entry, suite: str, window: int, decoding: str = "greedy"
) -> dict[str, Any]:
    unit: dict[str, Any] = {
        "model": entry.spec,
        "rope": entry.rope,
        "suite": cfg.short_suite if suite == "short" else suite,
        "batch_size": cfg.batch_size,
        "device": cfg.device,
        "seed": cfg.seed,
    }
    if suite == "short":
        # Every model gets the original's window, so retention compares the same documents.
        unit["limit"] = cfg.short_limit
        unit["max_length"] = window
        if cfg.short_tasks:
            unit["tasks"] = list(cfg.short_tasks)
    else:
        unit["lengths"] = list(cfg.lengths)
    if suite == "ruler":
        unit["samples"] = cfg.ruler_samples
    if suite == "niah":
        unit["samples"] = cfg.niah_samples
        unit["depths"] = list(cfg.niah_depths)
    if decoding != "greedy":  # greedy units keep the keys they always had (their caches stay)
        unit["decoding"] = decoding
        unit["pcd"] = (cfg.pcd or PcdConfig()).as_dict()
    return _with_weights(unit, [entry.spec])


def _with_weights(unit: dict[str, Any], models: list[str]) -> dict[str, Any]:
    """``unit`` keyed also by the files of each local model among ``models``
    (:func:`~longred_bench.jobs.resume.weights_stamp`) and of a local text file or folder it
    reads (``texts``, drift's): other weights or texts at the same path make another unit. A
    unit of hub ids and registry corpora only is left as it is."""
    from longred_bench.jobs.local_files import local_stamps

    stamps = {m: stamp for m in models if (stamp := weights_stamp(m)) is not None}
    texts = local_stamps({"texts": unit.get("texts")}).get("local_files")
    return {**unit, **({"weights": stamps} if stamps else {}),
            **({"texts_files": texts} if texts else {})}  # fmt: skip


def check_drift_window(cfg: CompareConfig, config: Any, key: str) -> None:
    """Refuse drift windows no compared model holds (``cfg.drift_seq_len`` past the window of
    the original, whose ``config`` is given, and every extension's), as drift does, before any
    unit runs (drift is measured last), naming ``key``, where the user sets them; from the
    models' configs alone."""
    if "drift" not in cfg.suites:
        return
    from longred_bench.models.loading import extended_config, load_config

    windows = [int(config.max_position_embeddings),
               *(int(load_config(m).max_position_embeddings) for m in cfg.extended)]  # fmt: skip
    windows += [int(extended_config(config, r).max_position_embeddings) for r in cfg.rope]
    if cfg.drift_seq_len > (longest := max(windows)):
        raise UserError(f"compare: drift's {cfg.drift_seq_len}-token windows exceed every "
                        f"compared model's window: set {key} to at most {longest}")  # fmt: skip


def run_compare(
    cfg: CompareConfig, out: Path, *, progress: bool = True, tasks_key: str = "--short-tasks",
    seq_len_key: str = "--drift-seq-len",
) -> list[dict[str, Any]]:  # fmt: skip
    """Run (or reuse) every unit of the comparison and return all records, labelled
    (``tasks_key``, ``seq_len_key``: where the user sets the short tasks and drift's window
    length, named by a window error)."""
    from longred_bench.models.loading import load_config

    entries(cfg)  # a model listed twice, before anything loads
    check_tokenizers(cfg)
    config = load_config(cfg.original)
    window = int(config.max_position_embeddings)
    check_drift_window(cfg, config, seq_len_key)
    records: list[dict[str, Any]] = []
    runs = out / "runs"
    suites = [suite for suite in DECODED_SUITES if suite in cfg.suites]
    drift_units = _drift_units(cfg) if "drift" in cfg.suites else []
    state = _Progress(total=len(suites) * len(rows(cfg)) + len(drift_units))
    folders = unit_folders([label for label, _, _ in rows(cfg)])
    with heartbeat(state.line, enabled=not progress):
        for suite in suites:
            for label, entry, decoding in rows(cfg):
                unit = _eval_unit(cfg, entry, suite, window, decoding)
                path = runs / folders[label] / unit["suite"] / "eval.jsonl"
                got = unit_records(path, unit)
                if got is None:
                    state.announce(f"{label}: {unit['suite']}", path, progress,
                                   *make_room(path, unit))  # fmt: skip
                    cache = request_cache(runs, EvalConfig.from_dict(own_config(unit)))
                    state.start(f"{label}: {unit['suite']}", cache=cache)
                    measured = _measure(unit, progress, cache, window, tasks_key)
                    got = save_records(path, unit, measured, cfg.seed, cfg.device)
                    drop_responses(cache)  # saved in the unit: the cache holds unfinished ones
                records += [{**r, "label": label} for r in got]
                state.finish()
        if drift_units:
            records += _drift(cfg, drift_units, runs / "drift", progress, state)
    print(f"[compare] {state.total - state.measured} of {state.total} unit(s) reused from "
          f"{runs}, {state.measured} measured{state.again_why()}", flush=True)  # fmt: skip
    return records


def _measure(
    unit: dict[str, Any], progress: bool, cache: Path, window: int, tasks_key: str
) -> list[dict]:
    """One evaluation unit's records; a short suite the original's window cannot hold is an
    error naming compare's own way out (``tasks_key``: ``--short-tasks``, or a pairs file's
    ``settings.short_tasks``)."""
    from longred_bench.evaluation.harness import WindowTooSmall

    try:
        return run_eval_unit(unit, progress, request_cache=cache)
    except WindowTooSmall as exc:
        raise UserError(
            f"{exc}; compare scores every model's short suite at the original's {window}-token "
            f"window: leave {', '.join(exc.tasks)} out with {tasks_key}, or compare models "
            f"whose window holds {exc.needed} tokens"
        ) from None


@dataclass
class _Progress:
    """What the comparison has done so far: the ``--quiet`` progress line."""

    total: int
    done: int = 0
    unit: str = "checking saved units"
    cache: Path | None = None
    partial: Path | None = None
    measured: int = 0
    again: int = 0
    damaged: int = 0

    def start(self, unit: str, *, cache: Path | None = None, partial: Path | None = None) -> None:
        self.unit, self.cache, self.partial = unit, cache, partial

    def finish(self) -> None:
        """Count a unit done (measured or reused): no unit is in progress until the next one
        starts, and the line names none (it named the last one measured, with its responses)."""
        self.done += 1
        self.start("checking saved units")

    def announce(self, unit: str, saved: Path, progress: bool, aside: Path | None,
                 held: str) -> None:  # fmt: skip
        """Say that ``unit`` is measured: always where its folder held records it does not
        reuse (``saved``, set ``aside``, ``held`` what they were: :func:`.compare_units.make_room`),
        else with ``progress``."""
        self.measured += 1
        if aside is not None:
            self.again += 1
            self.damaged += held == DAMAGED
            print(f"[compare] {unit}: measured again; {saved} held {held}, set aside as "
                  f"{aside.name}", flush=True)  # fmt: skip
        elif progress:
            print(f"[compare] {unit}", flush=True)

    def again_why(self) -> str:
        """Why units were measured again, for the closing line ("" where none was)."""
        why = [f"{self.damaged} damaged"] if self.damaged else []
        if self.again > self.damaged:
            why.append("their settings or their code changed")
        return f" ({self.again} again: {'; '.join(why)})" if why else ""

    def line(self) -> str:
        from longred_bench.jobs.in_progress import partial_windows

        now = self.unit
        if self.cache is not None:
            now += f", {saved_responses(self.cache)} model response(s) so far"
        if self.partial is not None:
            now += f", {partial_windows(self.partial)} window(s) measured"
        return f"[compare] {self.done} of {self.total} unit(s) done; now {now}"


def _drift_units(cfg: CompareConfig) -> list[tuple[str, dict[str, Any]]]:
    """The drift units: ``(label, unit config)`` of each checkpoint and each RoPE extension,
    one unit per model, so a model added to the comparison is the only one measured."""
    common = _drift_common(cfg)
    units = [(spec, _with_weights({**common, "extended": [spec]}, [cfg.original, spec]))
             for spec in cfg.extended]  # fmt: skip
    units += [
        (rope, _with_weights({**common, "rope": [rope]}, [cfg.original])) for rope in cfg.rope
    ]
    return units


def _drift_common(cfg: CompareConfig) -> dict[str, Any]:
    """The settings every drift unit shares."""
    return {
        "original": cfg.original,
        "texts": cfg.drift_texts,
        "num_texts": cfg.drift_num_texts,
        "seq_len": cfg.drift_seq_len,
        "seed": cfg.seed,
        "device": cfg.device,
    }


def _drift(
    cfg: CompareConfig, units: list[tuple[str, dict[str, Any]]], root: Path, progress: bool,
    state: _Progress,
) -> list[dict[str, Any]]:  # fmt: skip
    """The drift units' records: those saved are reused, the others measured in one run (the
    original's hidden states computed once for all of them, resuming from its saved windows)
    and saved one unit per model."""
    folders = unit_folders([label for label, _ in units])
    saved: dict[str, list[dict[str, Any]]] = {}
    missing: list[tuple[str, Path]] = []
    for label, unit in units:
        path = root / folders[label] / "drift.jsonl"
        got = unit_records(path, unit)
        if got is None:
            missing.append((label, path))
        else:
            saved[label] = got
            state.finish()
    if missing:
        measured, partial = _measure_drift(cfg, missing, dict(units), root, progress, state)
        for label, path in missing:
            mine = [r for r in measured if r["extension"] == label]
            saved[label] = save_records(path, dict(units)[label], mine, cfg.seed, cfg.device)
            state.finish()
        partial.unlink(missing_ok=True)  # every model's records are saved
    return [{**r, "label": r["extension"]} for label, _ in units for r in saved[label]]


def drift_run(cfg: CompareConfig, labels: list[str]) -> dict[str, Any]:
    """The config of one drift run that measures the models ``labels`` names (checkpoints and
    RoPE extensions of ``cfg``) against the original."""
    extended = [label for label in labels if label in cfg.extended]
    run = {**_drift_common(cfg), "extended": extended,
           "rope": [label for label in labels if label not in extended]}  # fmt: skip
    return _with_weights(run, [cfg.original, *extended])


def partial_name(config: dict[str, Any]) -> str:
    """The file where an interrupted drift run of ``config`` (a DriftConfig's dict) keeps its
    finished windows: named by the config but for how its windows are computed
    (:data:`~longred_bench.jobs.configs.DRIFT_HOW_KEYS`: they resume under another batch size,
    impl or device) and the files of its local models and texts now."""
    from longred_bench.jobs.configs import drift_what

    files = _with_weights({"texts": config.get("texts")},
                          [config["original"], *config.get("extended", [])])  # fmt: skip
    return f"models-{config_hash({'config': drift_what(config), 'weights': files})}.partial.json"


def _resumable(path: Path) -> bool:
    """Whether the saved windows at ``path`` can still resume: the models they were measured on
    have the files they had (see :func:`partial_name`)."""
    import json

    try:
        return path.name == partial_name(json.loads(path.read_text())["config"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return False


def _measure_drift(
    cfg: CompareConfig, missing: list[tuple[str, Path]], units: dict[str, dict[str, Any]],
    root: Path, progress: bool, state: _Progress,
) -> tuple[list[dict[str, Any]], Path]:  # fmt: skip
    """The drift records of the ``missing`` models (``units``: each model's unit), measured in
    one run that resumes from the windows an interrupted run of the same models saved, and the
    file of those windows."""
    from longred_bench.jobs.configs import DriftConfig
    from longred_bench.jobs.drift import run_drift
    from longred_bench.jobs.in_progress import drift_now

    labels = [label for label, _ in missing]
    for label, path in missing:
        state.announce(f"drift: {label}", path, progress, *make_room(path, units[label]))
    config = DriftConfig.from_dict(own_config(drift_run(cfg, labels)))
    # windows of these models, settings and weights only: another call's (other models or
    # settings, interrupted) keep their own file, and resume when it is asked again; the files of
    # weights no longer there can never resume, and go.
    partial = root / partial_name(config.to_dict())
    for other in root.glob("*.partial.json"):
        if other != partial and not _resumable(other):
            other.unlink(missing_ok=True)
    state.start(f"drift: {', '.join(labels)}", partial=partial)
    with drift_now(partial):
        records, _ = run_drift(config, progress=progress, partial=partial)
    return records, partial


def config_dict(cfg: CompareConfig) -> dict[str, Any]:
    """JSON-able form of ``cfg`` (tuples as lists)."""
    return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(cfg).items()}


def compare_command(
    cfg: CompareConfig, out: Path, *, command: str, progress: bool = True,
    tasks_key: str = "--short-tasks", seq_len_key: str = "--drift-seq-len",
) -> list[Path]:  # fmt: skip
    """``compare``: run (or reuse) every unit, then write ``out/compare.md`` and its figures
    (``command`` is the command line quoted in the report)."""
    from longred_bench.reports import model_named
    from longred_bench.reports.compare_report import build_compare_report, report_of_another

    if (earlier := report_of_another(out, command)) is not None:
        print(f"[compare] {out / 'compare.md'} is the report of another comparison (`{earlier}`): "
              f"this one replaces it; that comparison's units stay under {out / 'runs'}, and "
              "its command writes its report again from them", flush=True)  # fmt: skip
    records = run_compare(cfg, out, progress=progress, tasks_key=tasks_key,
                          seq_len_key=seq_len_key)  # fmt: skip
    labels = [label for label, _, _ in rows(cfg)]
    title = f"{model_named(cfg.original)} and its extensions"
    return build_compare_report(records, labels, out, title=title, command=command)
