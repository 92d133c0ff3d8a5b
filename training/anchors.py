"""LongRecipe's measured anchor types: a brief full-length ``cpt`` run of ``impact_steps`` steps
into ``DIR/impact/``, then the per-token logit change between the original and that briefly
extended model over :data:`IMPACT_WINDOWS` D1 windows of the extended length
(:mod:`longred_bench.training.impactful_tokens`), written to ``DIR/impact.json`` and, through
:class:`ImpactInfo`, to the run's ``run.json``; a resumed run reads it back. The recipe's
:meth:`~longred_bench.training.methods.SentenceGapCE.prepare` hook calls it."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from longred_bench.training.config import TrainConfig

IMPACT_WINDOWS = 32
IMPACT = "impact.json"


class ImpactInfo:
    """A loop phase that adds the anchor measurement to ``run.json``."""

    def __init__(self, impact: dict[str, Any]) -> None:
        self.impact = impact

    def before(self, run: Any, cfg: TrainConfig, out: Path, *, world: int, progress: bool) -> None:
        return None

    def info(self, run: Any, cfg: TrainConfig, out: Path) -> dict[str, Any]:
        return {"impact": self.impact}


def brief_rows(cfg: TrainConfig, target: int, world: int = 1) -> int:
    """Rows of ``target`` tokens a step of the brief run reads: about as many tokens as the run's
    long stage reads a step (its share of ``tokens_per_step``), in whole rows, a multiple of the
    ``world`` processes that split them (rounded up)."""
    rows = max(1, round(cfg.tokens_per_step * cfg.mix["long"] / target))
    return -(-rows // world) * world


def brief_config(cfg: TrainConfig, target: int, world: int = 1) -> TrainConfig:
    """The brief run's config: ``cpt`` at the full extended window ``target`` for
    ``impact_steps`` steps of :func:`brief_rows` rows (over ``world`` processes), a micro-step of
    one row a process where the run has micro-steps (its own were sized for rows of about 30% of
    ``target``: three full rows a GPU, 89.5 GiB per GPU at ``paper``). The settings it does not
    read (other recipes' groups, the run's checkpoints kept, held-out evaluations, snapshots) are
    at fixed values, so a change of them to the run measures nothing again."""
    from dataclasses import MISSING, fields

    from longred_bench.training.method_groups import METHOD_GROUPS, read_keys

    defaults = {f.name: f.default for f in fields(TrainConfig) if f.default is not MISSING}
    unread = {k for _, keys in METHOD_GROUPS.values() for k in keys} - read_keys("cpt")
    rows = brief_rows(cfg, target, world)
    return cfg.replace(
        **{k: defaults[k] for k in unread if k in defaults},
        recipe="cpt", steps=cfg.impact_steps, long_len=target, mix_long=1.0, mix_short=0.0,
        mix_s2l=0.0, checkpoint_every=cfg.impact_steps, keep_checkpoints=1, heldout_every=0,
        snapshot_steps=(), schedule="constant", warmup_steps=0, tokens_per_step=rows * target,
        micro_tokens=world * target if cfg.micro_tokens else 0,
    )  # fmt: skip


def brief_key(brief: TrainConfig) -> str:
    """What a measurement is keyed by: its brief run's config and its windows; not the brief
    run's micro-steps (one row a process: a run resumed on another number of GPUs takes its
    measurement as it is)."""
    return _keyed(brief.replace(micro_tokens=0).trained_dict())


def measure_anchors(
    cfg: TrainConfig,
    out: Path,
    *,
    train: Callable[..., Path],
    progress: bool = True,
    rank: int = 0,
    world: int = 1,
) -> dict[str, Any]:
    """LongRecipe's anchor types for ``cfg`` (module docstring): ``anchors``, ``lifts`` and
    ``shares`` per word type, and how they were measured; read from ``out/impact.json`` when
    there and measured for this config (the hash of the run's config it keeps; one of another
    config, left by an interrupted run whose config was then changed, is set aside and the
    anchors measured again; one set aside earlier for this config is moved back). Measured on
    the run's device and dtype, one window at a time. ``train(cfg, out, resume=...,
    progress=...)`` trains the brief run. Under ``torchrun`` every process calls it (``rank`` of
    ``world``): they train the brief run together, each measures its share of the windows, and
    process 0 alone reads, moves and writes the files; every process returns the same anchors."""
    import torch

    from longred_bench.models.loading import extended_config, load, load_config
    from longred_bench.training.checkpoint import latest_checkpoint
    from longred_bench.training.collectives import every_process, on_every_process
    from longred_bench.training.data import window_set
    from longred_bench.training.devices import resolve_device
    from longred_bench.training.impactful_tokens import logit_change
    from longred_bench.training.peak_memory import PeakMemory

    target = int(extended_config(load_config(cfg.model), cfg.rope).max_position_embeddings)
    brief = brief_config(cfg, target, world)
    # Keyed by what the measurement reads (the brief run and its windows), not by the run's own
    # settings (keep_other, steps, replay): another value of those measures nothing again.
    key = brief_key(brief)
    brief_dir = out / "impact"
    found, resume = None, False
    if rank == 0:  # the files as process 0 leaves them; the others take its word
        found = _settled(out, key, cfg, brief, progress)
        resume = found is None and latest_checkpoint(brief_dir) is not None
    found, resume = on_every_process((found, resume), world)
    if found is not None:
        return found
    # process 0 saves the brief model: every process loads it once that is done
    extended = on_every_process(train(brief, brief_dir, resume=resume, progress=progress), world)
    device, dtype = resolve_device(cfg)  # the run's device: two models, long windows
    peak = PeakMemory(device)  # the measurement's own (run.json's is the training call's)
    original = load(cfg.model, device=device, dtype=dtype)
    ids, _ = window_set(original.tokenizer, cfg.long_data, target, seed=cfg.seed)
    ids = ids[:IMPACT_WINDOWS]
    mine = torch.zeros(0, ids.shape[1])  # a process with no window (fewer windows than them)
    if len(ids[rank::world]):  # this process's share of the windows: rank, rank + world, ...
        with torch.no_grad():
            briefly = load(str(extended), device=device, dtype=dtype).model.eval()
            mine = logit_change(original.model.eval(), briefly, ids[rank::world].to(device))
        del briefly
    change = torch.zeros(ids.shape, dtype=torch.float32)
    for r, part in enumerate(every_process(mine, world)):
        change[r::world] = part
    peaks = every_process(peak.info(), world)
    impact = None
    if rank == 0:
        brief_info = json.loads((brief_dir / "run.json").read_text())
        impact = _written(out, key, cfg, change, ids, original.tokenizer, brief_info, peaks,
                          progress)  # fmt: skip
    return on_every_process(impact, world)


def _settled(
    out: Path, key: str, cfg: TrainConfig, brief: TrainConfig, progress: bool
) -> dict[str, Any] | None:
    """The measurement of ``key`` in ``out`` (``impact.json``, or one set aside and moved back),
    else None. What another config left is set aside first: its measurement with its brief run,
    or its brief run alone (a run interrupted before its measurement was written, or whose
    brief run took other micro-steps: it resumes as the run it is); a brief run of this config
    set aside before is moved back, to resume."""
    from longred_bench.results import config_hash

    path = out / IMPACT
    if path.is_file():
        impact = json.loads(path.read_text())
        # One written before the key was kept, keyed by the whole config as before, or by the
        # brief run's with its profile's name (until 2026-12-05): this run's.
        older = (key, config_hash(cfg.to_dict()), _named_key(brief))
        if impact.get("config", key) in older:
            return _reused(impact, path, progress)
        _set_aside(out, impact["config"], progress)  # of a config the run no longer has
    elif (saved := _brief_dir_config(out / "impact")) is not None and not _same(saved, brief):
        _set_aside(out, brief_key(saved), progress)
    elif saved is None and (out / "impact" / "config.yaml").exists():  # one this version refuses
        _set_aside(out, "unreadable", progress)
    if _restore(out, key, brief):  # measured for this config before, then set aside
        return _reused(json.loads(path.read_text()), path, progress)
    return None


def _same(saved: TrainConfig | None, brief: TrainConfig) -> bool:
    """Whether a brief run's ``saved`` config is ``brief``'s, its profile's name aside (a run
    resumed under another profile that resolves it alike resumes its brief run too)."""
    return saved is not None and saved.trained_dict() == brief.trained_dict()


def _named_key(brief: TrainConfig) -> str:
    """:func:`brief_key` as it was until 2026-12-05, with the profile's name in it: a run begun
    then keeps its measurement when it resumes."""
    return _keyed(brief.replace(micro_tokens=0).to_dict())


def _keyed(brief: dict[str, Any]) -> str:
    """The hash of a brief run's config fields ``brief`` and the measured windows."""
    from longred_bench.results import config_hash

    return config_hash({"brief": brief, "windows": IMPACT_WINDOWS})


def _brief_dir_config(folder: Path) -> TrainConfig | None:
    """The config of the brief run in ``folder`` (its ``config.yaml``); None where there is no
    readable one."""
    import yaml

    from longred_bench.errors import UserError

    try:
        return TrainConfig.from_dict(yaml.safe_load((folder / "config.yaml").read_text()))
    except (OSError, ValueError, TypeError, AttributeError, yaml.YAMLError, UserError):
        return None  # no folder, no file, or a config this version refuses


def _written(
    out: Path,
    key: str,
    cfg: TrainConfig,
    change: Any,
    ids: Any,
    tokenizer: Any,
    brief_info: dict[str, Any],
    peaks: list[dict[str, Any]],
    progress: bool,
) -> dict[str, Any]:
    """The anchors of the logit ``change`` over ``ids``, written to ``out/impact.json`` (the
    peak memory is the largest of the processes' ``peaks``)."""
    from longred_bench.cache import atomic_write_text
    from longred_bench.training.impactful_tokens import measured_anchors, type_lifts, type_shares

    lifts = type_lifts(change, ids, tokenizer)
    peak = max(peaks, key=lambda p: p.get("peak_memory_mib") or 0)
    impact = {
        "anchors": list(measured_anchors(lifts)),
        "lifts": {k: round(v, 4) for k, v in lifts.items()},
        "shares": {k: round(v, 4) for k, v in type_shares(change, ids, tokenizer).items()},
        "brief_steps": cfg.impact_steps,
        "brief_len": int(ids.shape[1]),
        "brief_tokens": brief_info["tokens"],
        "brief_seconds": brief_info["seconds"],
        "windows": len(ids),
        **{f"measure_{k}": v for k, v in peak.items()},
        "config": key,
    }
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / IMPACT, json.dumps(impact, indent=2))
    if progress:
        print(f"[longrecipe] measured anchors {impact['anchors']} (lifts {impact['lifts']})",
              flush=True)  # fmt: skip
    return impact


def _reused(impact: dict[str, Any], path: Path, progress: bool) -> dict[str, Any]:
    """``impact``, read from ``path``, said in one line."""
    if progress:
        windows = impact.get("windows", "?")
        print(f"[longrecipe] anchors {impact['anchors']} from {path} (measured over {windows} "
              "window(s)): nothing to measure", flush=True)  # fmt: skip
    return impact


def _aside_tag(out: Path, key: str) -> str:
    """``impact.<hash>`` (the first 12 hex digits of the config's key), or with ``-2``, ``-3``...
    where that name is taken: a set-aside never replaces another."""
    base = f"impact.{str(key)[:12]}"
    for n in itertools.count(1):
        tag = base if n == 1 else f"{base}-{n}"
        if not (out / tag).exists() and not (out / f"{tag}.json").exists():
            return tag
    raise AssertionError("unreachable")


def _set_aside(out: Path, key: str, progress: bool) -> None:
    """Move the brief run and ``impact.json`` of another config out of the way, under names
    carrying that config's hash (``impact.<hash>/``, ``impact.<hash>.json``; :func:`_restore`
    moves them back when that config runs again): nothing is deleted."""
    tag = _aside_tag(out, key)
    for name, aside in (("impact", tag), (IMPACT, f"{tag}.json")):
        if (out / name).exists():
            (out / name).replace(out / aside)
    if progress:
        what = IMPACT if (out / f"{tag}.json").exists() else "impact/ (its brief run)"
        print(f"[longrecipe] {out / what} was for another config: set aside as {tag}; measuring "
              "this config's anchors", flush=True)  # fmt: skip


def _restore(out: Path, key: str, brief: TrainConfig) -> bool:
    """Move back what :func:`_set_aside` put aside for ``key`` (an interrupted run's settings
    changed and changed back): its measurement, under any of its tags (``-2``... where a name
    was taken), with its brief run where ``impact/`` is free and the run is ``brief``'s
    (micro-steps too); else a brief run of ``brief`` set aside unmeasured, to resume. Whether a
    measurement came back."""
    base, measured = f"impact.{str(key)[:12]}", False
    for aside in sorted(out.glob(f"{base}*.json")):
        try:
            if json.loads(aside.read_text()).get("config") != key:
                continue
        except (OSError, ValueError, AttributeError):
            continue
        _brief_back(out, out / aside.name.removesuffix(".json"), brief)
        aside.replace(out / IMPACT)
        measured = True
        break
    for folder in sorted(out.glob(f"{base}*")):  # its brief run under another of its names
        if folder.is_dir() and _brief_back(out, folder, brief):
            break
    return measured


def _brief_back(out: Path, folder: Path, brief: TrainConfig) -> bool:
    """Move the brief run in ``folder`` back to ``out/impact`` where that is free and the run is
    ``brief``'s; whether it moved."""
    if (out / "impact").exists() or not _same(_brief_dir_config(folder), brief):
        return False
    folder.replace(out / "impact")
    return True
