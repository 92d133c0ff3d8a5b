"""The run cache: every unit of work (an evaluation, a drift or PSA measurement, a training run)
kept under ``$LONGRED_CACHE`` beside the config that made it, with one protocol for all of them.

A :class:`CachedUnit` is a kind, a folder (relative to the cache root, named by a hash of the
config) and its config. :meth:`CachedUnit.cached` returns its result only when the stored config
equals the one asked (a damaged entry counts as absent, with a warning); :meth:`CachedUnit.run`
returns the cached result or computes it, saves it whole (the folder is swapped in at once) with
its compute time (``timing.json``), and returns what was saved. The config is the whole
description of the unit: computing it needs nothing else. Results are records: an evaluation's,
a measurement's, or a training run's one summary record (its steps, tokens, seconds, folder).

The stored config also holds a hash of the source files the unit's kind depends on
(:data:`UNIT_CODE`), and a training run's folder is named by it too: a unit of other code reruns.

Paths inside the cache (a trained checkpoint an evaluation measures) enter keys and stored
configs as :func:`longred_bench.jobs.key_root.portable` writes them, so a cache copied to another
machine or folder still holds its results under the keys the plan computes.

``compare``, ``reproduce`` and every table keep their units here.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longred_bench.cache import atomic_write_text, build_lock, cache_dir
from longred_bench.errors import UserError
from longred_bench.jobs import unit_compute
from longred_bench.jobs.builds import check_builds, result_builds, run_base, write_run_base
from longred_bench.jobs.key_root import follow_moved_cache, portable, record_key_root
from longred_bench.jobs.local_files import local_stamps, sources_read
from longred_bench.jobs.unit_compute import IDENTITY_KEYS as IDENTITY_KEYS  # re-exported
from longred_bench.jobs.unit_compute import own_config as own_config
from longred_bench.results import (
    Provenance,
    config_hash,
    read_cached_json,
    read_cached_records,
    read_records,
    save_run_dir,
    warn_damaged_config,
    write_records,
)
from longred_bench.source_tree import source_hash

KINDS = ("eval", "ppl", "drift", "psa", "train")
RECORDS_FILE = {"eval": "eval.jsonl", "ppl": "eval.jsonl", "drift": "drift.jsonl",
                "psa": "psa.jsonl"}  # fmt: skip
PEAK_KEYS = ("peak_memory_mib", "peak_memory_kind")
LOAD_KEYS = ("load_1min_start", "load_1min_end", "cpus")
"""A training run's ``run.json`` figures its summary record carries (with steps, tokens, seconds):
its peak memory and the machine's load while it trained."""
SUMMARY_KEYS = ("tokens", "seconds")
"""What a finished run's ``run.json`` holds at least (its summary record's figures)."""
TIMING = "timing.json"
"""Beside a unit's records: ``{"seconds": ...}``, the compute time of the calls that computed it
(an interrupted one's too; absent where that time is not known: ``unit_compute.spent_before``)."""
PARTIAL = "partial"
"""In a unit's folder while it is computed: its work so far (model responses, drift windows), in
a folder named by the stored config's hash; gone once the result is swapped in."""

# The source a unit's result depends on, by kind: folders (ending in ``/``) and files of the
# repository (see :mod:`longred_bench.source_tree`). A unit's key holds the hash of these files
# (:func:`code_identity`), so a change to any of them computes the unit again. Left out, as they
# do not change what a unit computes: the report builders, the command line and the table plans
# (``reports/``, ``cli/``, ``reproduce/``), the run cache and its helpers (this module,
# ``unit_compute.py``, ``key_root.py``, ``results.py``, ``cache.py``, ``heartbeat.py``,
# ``builds.py``, ``local_files.py``: the stamps of the files a unit reads), ``profiles/`` (a
# unit's config is already resolved), and a model the suite
# builds (tiny-base is keyed by its own build). A training run depends on what builds and feeds it
# (objectives, kernels, streams, tokenizers, retrieval rows from ``taskdata/``, the distances in
# ``metrics/``); an evaluation on the harness, lm-eval's task registry (``tasks/``) and what
# builds its rows; ``ppl`` on the harness's perplexity path; drift on the drift metrics and their
# kernels; PSA on its probe, its RULER samples and PCD. ``tests/test_unit_code.py`` checks each
# list against the modules its code imports.
_MODELS = ("longred_bench/models/", "longred_bench/data/")
UNIT_CODE: dict[str, tuple[str, ...]] = {
    "train": (*_MODELS, "training/", "kernels/", "longred_bench/metrics/",
              "longred_bench/taskdata/", "longred_bench/jobs/train.py",
              "longred_bench/jobs/tiny_base.py"),
    "eval": (*_MODELS, "longred_bench/evaluation/", "tasks/", "longred_bench/taskdata/",
             "longred_bench/metrics/", "longred_bench/pcd/"),
    "ppl": (*_MODELS, "longred_bench/evaluation/", "longred_bench/taskdata/",
            "longred_bench/metrics/", "longred_bench/pcd/"),
    "drift": (*_MODELS, "kernels/", "longred_bench/metrics/", "longred_bench/jobs/drift.py",
              "longred_bench/jobs/configs.py"),
    "psa": (*_MODELS, "longred_bench/metrics/", "longred_bench/taskdata/", "longred_bench/pcd/",
            "longred_bench/jobs/psa.py", "longred_bench/jobs/configs.py"),
}  # fmt: skip


def code_identity(kind: str) -> dict[str, str]:
    """What a unit's key holds of its code: the source hash of :data:`UNIT_CODE` ``[kind]``."""
    return {"code": source_hash(UNIT_CODE[kind])}


def unit_kind(config: dict[str, Any]) -> str:
    """The kind of a unit that is not a training run, by its config: ``psa`` (a ``psa``
    section), ``ppl`` or ``eval`` (a ``suite``), ``drift`` (an ``original`` model); an
    evaluation's response-cache keys (model, RoPE, decoding, ...) count as ``eval``."""
    if "psa" in config:
        return "psa"
    if "suite" in config:
        return "ppl" if config["suite"] == "ppl" else "eval"
    return "drift" if "original" in config else "eval"


@dataclass(frozen=True, eq=True)
class CachedUnit:
    """One unit of work in the run cache (see the module docstring)."""

    kind: str
    folder: str
    config: dict[str, Any]

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown unit kind {self.kind!r}; kinds: {', '.join(KINDS)}")

    @property
    def dir(self) -> Path:
        """Where the unit lives."""
        return cache_dir() / self.folder

    @property
    def name(self) -> str:
        """The unit's folder name: its id across tables."""
        return Path(self.folder).name

    def cached(self) -> list[dict[str, Any]] | None:
        """The saved result if it was made by exactly this config and is intact, else None."""
        if self.kind == "train":
            info = finished_run_checked(self.dir)
            return None if info is None else [info]
        return cached_records(self.dir / RECORDS_FILE[self.kind], self.config, self.kind)

    def seconds(self) -> float | None:
        """The compute time recorded with the unit (a training run's own), or None."""
        if self.kind == "train":
            info = finished_run(self.dir)
            return None if info is None else float(info["seconds"])
        return unit_seconds(self.dir)

    @property
    def work(self) -> Path:
        """Where the unit keeps its work as it is computed (a training run: its folder, which
        holds its checkpoints; else its model responses or drift windows, in ``partial/``)."""
        if self.kind == "train":
            return self.dir
        return self.dir / PARTIAL / config_hash(stored_config(self.config, self.kind))

    def _drop_stale_work(self) -> None:
        """Remove the work a ``--force`` call left in ``partial/`` beside this cached result when
        it was interrupted: nothing resumes from it (a call without ``--force`` takes the result;
        one with it starts the unit again). Left where another process holds the unit's lock
        (computing it again now)."""
        stale = self.dir / PARTIAL
        if stale.is_dir():
            with contextlib.suppress(UserError), build_lock(self.dir, busy="computed now"):
                shutil.rmtree(stale, ignore_errors=True)

    def run(
        self, *, progress: bool = True, force: bool = False, outcome: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """The cached result, or the unit computed and saved (``force``: computed again);
        ``outcome`` gets which: ``cached``, ``computed`` or ``taken`` (from another process
        that computed it while this one waited)."""
        outcome = [] if outcome is None else outcome
        if self.kind == "train":
            return [train_cached(self.config, progress=progress, outcome=outcome)[1]]
        got = None if force else self.cached()
        if got is not None:
            outcome.append("cached")
            self._drop_stale_work()
            return got
        # One process at a time (two array tasks or calls of one unit): the second waits, then
        # takes the first one's result instead of computing it again.
        with build_lock(self.dir, f"waiting for another process computing {self.folder}"):
            got = None if force else self.cached()
            if got is not None:
                outcome.append("taken")
                return got
            outcome.append("computed")
            work = self.work
            if force:  # computed again from the start, not from an interrupted call's work
                shutil.rmtree(self.dir / PARTIAL, ignore_errors=True)
            from longred_bench.jobs.in_progress import unit_now

            with unit_now(work):  # the folder goes when the result is swapped in
                records, seconds = unit_compute.compute_timed(self.kind, self.config, progress,
                                                              work)  # fmt: skip
            seed, device = self.config.get("seed", 0), self.config.get("device", "cpu")
            if self.kind == "psa":
                seed, device = self.config["psa"]["seed"], self.config["psa"]["device"]
            path = self.dir / RECORDS_FILE[self.kind]
            return save_records(path, self.config, records, seed, device, seconds,
                                kind=self.kind)  # fmt: skip


def unit_folder(group: str, key: dict[str, Any]) -> str:
    """``runs/<group>/<hash of key>``: the folder of a unit of ``group`` (``table3-eval``,
    ``fig2-drift``, ...); paths inside the cache count as :func:`portable` writes them, local
    files outside it by their stamps (:func:`~longred_bench.jobs.local_files.local_stamps`), a
    source with an offline fallback by the side read (:func:`.local_files.sources_read`)."""
    key = {**key, **local_stamps(key), **sources_read(key)}
    return f"runs/{group}/{config_hash(portable(key))}"


def _suite_builds(config: Any) -> set[str]:
    """Names of models the suite builds itself (``tiny-base``) anywhere among ``config``'s
    values."""
    from longred_bench.jobs.tiny_base import SUITE_BUILT

    if isinstance(config, str):
        return {config} & set(SUITE_BUILT)
    if isinstance(config, dict):
        config = list(config.values())
    if isinstance(config, list | tuple):
        return set().union(*(_suite_builds(x) for x in config)) if config else set()
    return set()


def stored_config(config: dict[str, Any], kind: str | None = None) -> dict[str, Any]:
    """The config a cached result is saved and matched under: ``config`` plus the hash of the
    code a unit of ``kind`` depends on (:func:`code_identity`; ``kind`` None: by
    :func:`unit_kind`), so results computed by other code are computed again rather than
    reused. A config that names a model the suite builds (``tiny-base``) and not already its
    build (``base``) also names the build, so a rebuilt model is measured again."""
    from longred_bench.jobs.tiny_base import build_identity

    builds = _suite_builds(config)
    if builds and "base" not in config:
        config = {**config, "suite_builds": {name: build_identity(name) for name in sorted(builds)}}
    return portable({**config, **code_identity(kind or unit_kind(config))})


def cached_records(
    path: Path, config: dict[str, Any], kind: str | None = None
) -> list[dict[str, Any]] | None:
    """The records saved at ``path`` if they were made by exactly ``config`` (and the code of
    a unit of ``kind``: :func:`stored_config`) and are intact (a damaged cache is treated as
    absent, with a warning naming the file)."""
    if not path.is_file():
        return None
    if read_cached_json(path.parent / "config.json", quiet=True) != stored_config(config, kind):
        warn_damaged_config(path.parent)  # not this config's, or a file of it damaged: said once
        return None
    records = read_cached_records(path)
    if records:
        check_builds((records[0].get("provenance") or {}).get("builds") or {}, path.parent)
    return records


def save_records(
    path: Path,
    config: dict[str, Any],
    records: list[dict[str, Any]],
    seed: int,
    device: str,
    seconds: float | None = None,
    *,
    kind: str | None = None,
) -> list[dict[str, Any]]:
    """Write ``records`` (with provenance) to ``path`` and ``config`` (as
    :func:`stored_config` gives it for a unit of ``kind``) beside it, swapping the whole
    directory in at once (see :func:`longred_bench.results.save_run_dir`); read back.
    ``seconds``, where given, is kept in :data:`TIMING` (plans estimate from it)."""
    builds = result_builds(config)  # read where the models are now, not where keys name them
    config = stored_config(config, kind)
    provenance = Provenance.collect(config, seed=seed, device=device, builds=builds)

    def write(tmp: Path) -> None:
        write_records(tmp / path.name, records, provenance)
        atomic_write_text(tmp / "config.json", json.dumps(config, sort_keys=True, indent=1))
        if seconds is not None:
            atomic_write_text(tmp / TIMING, json.dumps({"seconds": round(seconds, 2)}))

    save_run_dir(path.parent, write)
    record_key_root()
    return read_records(path)


def unit_seconds(run_dir: Path) -> float | None:
    """The wall seconds recorded beside a cached unit (:data:`TIMING`), or None."""
    try:
        value = json.loads((run_dir / TIMING).read_text())["seconds"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return float(value) if isinstance(value, (int, float)) else None


def train_unit(cfg: Any) -> CachedUnit:
    """The training run of :class:`~longred_bench.training.config.TrainConfig` ``cfg`` as a unit:
    ``runs/train-<recipe>-<key>``."""
    return CachedUnit("train", f"runs/train-{cfg.recipe}-{train_key(cfg)}", cfg.to_dict())


def run_dir_of(cfg: Any) -> Path:
    """Where training run ``cfg`` is cached."""
    return train_unit(cfg).dir


def train_key(cfg: Any) -> str:
    """Cache key of a training run: its config, the starting model's identity and the hash of
    the code training depends on (:func:`code_identity`). A merge's trained model counts by
    what it is (:func:`merge_source_identity`), not where it lies; so does a student's starting
    checkpoint (``init``) in the run cache: by its run's name, which holds that run's key."""
    from longred_bench.jobs.tiny_base import build_identity

    fields = cfg.trained_dict()  # not the profile's name: profiles that agree share the run
    if cfg.recipe == "merge" and cfg.merge_with:
        fields["merge_with"] = merge_source_identity(Path(cfg.merge_with))
    init = getattr(cfg, "init", None)
    if init and Path(init).name == "final" and Path(init).parent.name.startswith("train-"):
        fields["init"] = Path(init).parent.name
    fields = {**fields, **local_stamps(fields), **sources_read(fields),
              "base": build_identity(cfg.model), **code_identity("train")}  # fmt: skip
    return config_hash(portable(fields))  # a model or teacher in the cache: as keys name it


def merge_source_identity(final: Path) -> str:
    """What a merge's trained model is: its cached run's name (which holds that run's config
    hash) and a hash of the run's ``run.json`` (its own tokens and seconds), so a source trained
    again makes a new merge, and moving the cache does not. A directory outside the run cache is
    named by its path."""
    run = final.parent
    info = run / "run.json"
    if not (final.name == "final" and run.name.startswith("train-") and info.is_file()):
        return str(final)
    import hashlib

    return f"{run.name}:{hashlib.sha256(info.read_bytes()).hexdigest()[:16]}"


DAMAGED_RUN = ("the run is not taken as finished (resumed from its last checkpoint where its "
               "metrics are whole, else trained again)")  # fmt: skip
"""What a training run with a damaged ``run.json`` or ``metrics.jsonl`` becomes."""


def finished_run(run_dir: Path) -> dict[str, Any] | None:
    """A finished training run's summary record (steps, tokens, seconds, folder, distilled
    layers, peak memory, LongRecipe's measured anchors), or None if it is not finished or its
    records do not parse (then a warning names the file)."""
    from longred_bench.cache import warn_once

    final, info_path, metrics = run_dir / "final", run_dir / "run.json", run_dir / "metrics.jsonl"
    if not ((final / "config.json").is_file() and info_path.is_file()):
        return None
    for path, read, keys in ((info_path, lambda p: json.loads(p.read_text()), SUMMARY_KEYS),
                             (metrics, lambda p: read_records(p)[-1], ("step",))):  # fmt: skip
        try:
            value = read(path)
            if not isinstance(value, dict):
                raise ValueError(type(value).__name__)
        except (OSError, ValueError, IndexError) as exc:
            warn_once(f"{path} is damaged ({exc.__class__.__name__}): {DAMAGED_RUN}", path)
            return None
        bad = [k for k in keys if not isinstance(value.get(k), int | float)]  # or not a number
        if bad:  # parses, but is not a finished run's record (cut short, or edited)
            why = f"no {bad[0]!r}" if bad[0] not in value else f"{bad[0]!r} is not a number"
            warn_once(f"{path} is damaged ({why}): {DAMAGED_RUN}", path)
            return None
        if path == info_path:
            info = value
    layers = {"layers": info["layers"]} if "layers" in info else {}  # the distilled layers
    peak = {k: info[k] for k in (*PEAK_KEYS, *LOAD_KEYS) if k in info}  # memory, machine load
    impact = {"impact": info["impact"]} if "impact" in info else {}  # LongRecipe's anchors
    return {"steps": value["step"], "tokens": info["tokens"], "seconds": info["seconds"],
            "dir": str(run_dir), **layers, **peak, **impact}  # fmt: skip


def finished_run_checked(run_dir: Path) -> dict[str, Any] | None:
    """:func:`finished_run`, refused in one line where the run started from other weights of a
    suite-built model than those built now (:func:`~longred_bench.jobs.builds.check_builds`)."""
    info = finished_run(run_dir)
    if info is not None:
        check_builds(run_base(run_dir), run_dir)
    return info


def train_cached(
    cfg: Any, *, progress: bool, outcome: list[str] | None = None
) -> tuple[Path, dict[str, Any]]:
    """Train ``cfg`` (a TrainConfig or its dict; or reuse its finished run; resume an
    interrupted one): (final dir, summary record); ``outcome`` gets ``cached``, ``computed``
    or ``taken`` as :meth:`CachedUnit.run`'s does.

    A finished run whose ``run.json`` or ``metrics.jsonl`` does not parse counts as unfinished:
    it resumes from its latest checkpoint where every line of its metrics reads back (a damaged
    ``run.json`` set aside as ``run.json.damaged``), else it is trained again from the start.
    A run trained again goes into the run's own folder, so its checkpoints survive another
    interruption; the folder it replaces waits beside it, hidden, until the new run is complete.
    A resumed run that still ends without readable records is trained again once.

    Processes that need one run at once (two ``reproduce`` calls sharing a CPT run) train it
    once: the first holds a lock on the run (:func:`~longred_bench.cache.build_lock`), the
    others wait and then find it finished. A finished run is read without the lock (a read-only
    copy of a cache serves its reports). (A ``torchrun`` launch of a training unit goes through
    :func:`longred_bench.reproduce.cluster.run_unit`, which locks the run its own way.)"""
    from longred_bench.training.config import TrainConfig

    if isinstance(cfg, dict):
        cfg = TrainConfig.from_dict(cfg)
    run_dir = run_dir_of(cfg)
    outcome = [] if outcome is None else outcome
    info = finished_run_checked(run_dir)
    if info is not None:
        outcome.append("cached")
        return run_dir / "final", info
    first = os.environ.get("RANK", "0") == "0"  # under torchrun, one rank moves files and locks
    waiting = f"[train] another process is training {run_dir}: waiting for it to finish"
    with build_lock(run_dir, waiting) if first else contextlib.nullcontext():
        info = _train_once(cfg, run_dir, first=first, progress=progress, outcome=outcome)
    return run_dir / "final", info


def _train_once(
    cfg: Any, run_dir: Path, *, first: bool, progress: bool, outcome: list[str]
) -> dict[str, Any]:
    """:func:`train_cached`'s work, under its lock: the finished run's summary record."""
    from longred_bench.jobs.in_progress import training_now
    from longred_bench.jobs.train import run_training
    from longred_bench.training.checkpoint import latest_checkpoint

    info = finished_run_checked(run_dir)  # finished while this process waited
    if info is not None:
        outcome.append("taken")
        return info
    outcome.append("computed")
    if progress:
        print(f"[train] {cfg.recipe} rope={cfg.rope} seed={cfg.seed} -> {run_dir}", flush=True)
    aside = aside_of(run_dir)
    with training_now(run_dir):  # an interrupt's line names its checkpoint
        if latest_checkpoint(run_dir) is not None and resumable(run_dir, first=first):
            if first:  # under torchrun, rank 0 writes the run's files
                follow_moved_cache(run_dir, cfg)
            run_training(cfg, run_dir, resume=True, progress=progress)
            info = finished_run(run_dir)
        if info is None:
            if first:  # nothing to resume from: set aside, trained again
                set_aside(run_dir)
            run_training(cfg, run_dir, progress=progress)
            info = finished_run(run_dir)
        if info is None:
            raise UserError(f"training run {run_dir} finished without readable records")
        finish_run(run_dir, cfg)
        shutil.rmtree(aside, ignore_errors=True)
    return info


def resumable(run_dir: Path, *, first: bool) -> bool:
    """Whether a run with a checkpoint resumes from it: an interrupted one does; a finished one
    whose records are damaged (:func:`finished_run` said which) does where every line of its
    ``metrics.jsonl`` reads back, its damaged ``run.json`` set aside as ``run.json.damaged`` so
    the run writes it again (it took the folder as finished, said "nothing to resume" and was
    trained again from the start); with metrics lost, a resume would not give them back, and
    the run is trained again."""
    from longred_bench.training.loop import is_finished

    if not is_finished(run_dir):
        return True
    try:
        lines = read_records(run_dir / "metrics.jsonl")
        whole = bool(lines) and all("step" in line for line in lines)
    except (OSError, ValueError, TypeError):
        whole = False
    if whole and first:  # under torchrun, rank 0 moves files
        (run_dir / "run.json").replace(run_dir / "run.json.damaged")
    return whole


def aside_of(run_dir: Path) -> Path:
    """Where a run's folder waits while the run is trained again: ``.NAME.replaced``."""
    return run_dir.with_name(f".{run_dir.name}.replaced")


def set_aside(run_dir: Path) -> None:
    """Move a run's folder that has nothing to resume from to :func:`aside_of` (its final
    model, if any, kept until the run is trained again); where an earlier retry's folder is
    already there, this one (without a checkpoint either) is removed."""
    if not run_dir.exists():
        return
    if aside_of(run_dir).exists():
        shutil.rmtree(run_dir)
    else:
        run_dir.rename(aside_of(run_dir))


def finish_run(run_dir: Path, cfg: Any) -> None:
    """What a finished run keeps beside it: the suite-built models it started from
    (:data:`~longred_bench.jobs.builds.BASE_FILE`), and the cache's key root."""
    write_run_base(run_dir, cfg.to_dict())
    record_key_root()
