"""The one training loop: AdamW, schedule, gradient accumulation, precision, checkpoints, resume.

It knows nothing of any method: each step it asks the recipe's
:class:`~longred_bench.training.methods.Method` which streams to read, draws the rows, and
minimises the ``"loss"`` term the method returns. Outputs under ``DIR``:

- ``config.yaml``: the resolved config (a ``--resume`` with another config is refused);
- ``metrics.jsonl``: one record per optimizer step (``step``, ``loss``, each term, ``tokens``,
  ``lr``, ``seconds``, ``grad_norm``; ``heldout_<corpus>`` where measured);
- ``checkpoints/``: atomic checkpoints every ``checkpoint_every`` steps and at the end;
- ``final/``: a Hugging Face model directory (tokenizer and extended ``rope_parameters`` in it);
- ``steps/step-NNNNNN/``: the same, at each of the config's ``snapshot_steps``.

Precision: float32 on CPU; on CUDA the student keeps float32 weights and runs under bfloat16
autocast (the config's ``dtype``), or, with ``mixed_precision: fsdp``, under FSDP2's policy
(bfloat16 parameters and compute, float32 gradient reduction and master weights; see
:mod:`~longred_bench.training.distributed`); nothing else depends on the device. A NaN or
infinite loss stops the run naming the step; the last good checkpoint stays.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

import torch
import yaml
from tqdm.auto import tqdm

from longred_bench.cache import atomic_dir, atomic_write_text
from longred_bench.errors import UserError
from longred_bench.results import Provenance
from longred_bench.training.build import Run, build_run, schedule_factor
from longred_bench.training.checkpoint import (
    latest_checkpoint,
    load_checkpoint,
    rng_state,
    save_checkpoint,
    set_rng_state,
)
from longred_bench.training.config import BOOKKEEPING, LABEL_KEYS, TrainConfig
from longred_bench.training.layout import METRICS, snapshot_dir
from longred_bench.training.lm_loss import lm_loss, resolve_lm_loss
from longred_bench.training.machine_load import MachineLoad
from longred_bench.training.offload import HostOffload, offloaded
from longred_bench.training.peak_memory import PeakMemory


class Phase(Protocol):
    """Work a recipe adds around the loop (e.g. pretraining's copy warm-up): ``before`` runs
    once before the first step of a fresh run, ``info`` adds keys to ``run.json``."""

    def before(
        self, run: Run, cfg: TrainConfig, out: Path, *, world: int, progress: bool
    ) -> None: ...

    def info(self, run: Run, cfg: TrainConfig, out: Path) -> dict[str, Any]: ...


def total_steps(cfg: TrainConfig) -> int:
    """Optimizer steps of the run, as its method counts them (LinearARD's optional CPT stage and
    LongRecipe's replay included)."""
    from longred_bench.training.methods import METHODS

    return METHODS[cfg.recipe].total_steps(cfg)


def is_finished(out: Path) -> bool:
    """Whether ``out`` holds a finished run: its ``final/`` and ``run.json`` written."""
    return (out / "final" / "config.json").is_file() and (out / "run.json").is_file()


def check_run_dir(cfg: TrainConfig, out: Path, resume: bool) -> bool:
    """Refuse, before any work (a recipe's preparation included), an ``out`` holding a run of
    another config (but for :data:`BOOKKEEPING`), a run without ``resume``, or nothing to
    resume; True where ``resume`` finds the run of this config finished, its checkpoints kept
    or not (its ``final/`` and ``run.json`` written: nothing to
    train, and its records stay those of the call that trained it)."""
    saved = out / "config.yaml"
    finished = is_finished(out)
    # A finished run whose checkpoints were deleted (to save disk) is a run all the same.
    if latest_checkpoint(out) is not None or (finished and saved.is_file()):
        previous = _same_models(_saved_config(saved), cfg)
        mine = cfg.trained_dict()  # not the profile's name: the run of another that agrees
        previous = {k: v for k, v in previous.items() if k not in (*LABEL_KEYS, *BOOKKEEPING)}
        changed = sorted(k for k in mine if previous.get(k) != mine[k])
        if changed or any(k not in mine for k in previous):
            raise UserError(
                f"{out} holds a run of another config (differs in {', '.join(changed) or 'keys'}):"
                " use a new --out"
                + ("" if finished else f", or the same config to resume (--config {saved})")
            )
        if not resume and finished:
            raise UserError(f"{out} holds this run, finished ({out / 'final'}): nothing to "
                            "train; use a new --out to train it again")  # fmt: skip
        if not resume:
            raise UserError(f"{out} already holds a run: pass --resume, or use a new --out")
        return finished
    if resume and not out.is_dir():  # a mistyped path: a run without --resume would start there
        raise UserError(f"--resume: {out} does not exist: give the --out of the run to resume "
                        "(a run's folder holds its config.yaml and checkpoints/)")  # fmt: skip
    if resume:  # a run stopped (a kill) before its first checkpoint: say what to run instead
        raise UserError(f"--resume: {out} holds no checkpoint to resume from (a run stopped "
                        "before its first checkpoint keeps none): run the same command without "
                        "--resume, which trains the run from its first step")  # fmt: skip
    return False


def _saved_config(saved: Path) -> dict[str, Any]:
    """The config a run was trained with, from its ``config.yaml``; refused in one line where
    that file is missing or damaged (cut short, overwritten), as the run cannot be checked."""
    try:
        config = yaml.safe_load(saved.read_text())
        if not isinstance(config, dict):
            raise ValueError("no mapping")
    except (OSError, ValueError, yaml.YAMLError) as exc:
        why = str(exc) if str(exc) == "no mapping" else type(exc).__name__
        raise UserError(f"{saved} is damaged ({why}): the run in {saved.parent} cannot be "
                        f"checked against its config; delete {saved.parent} to train it again"
                        ) from None  # fmt: skip
    return config


def _same_models(previous: dict[str, Any], cfg: TrainConfig) -> dict[str, Any]:
    """A saved config with each model or data source it names by a relative path (saved so
    before they were named by absolute paths) given as ``cfg``'s absolute one where, read from
    this folder, it is the same."""
    from longred_bench.training.model_plan import absolute_paths

    same = {k: v for k, v in absolute_paths(previous).items() if v == getattr(cfg, k, None)}
    return {**previous, **same}


def _prepare_dir(cfg: TrainConfig, out: Path, resume: bool) -> None:
    saved = out / "config.yaml"
    check_run_dir(cfg, out, resume)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(saved, yaml.safe_dump(cfg.to_dict(), sort_keys=True))


def continue_run(src: Path, out: Path, cfg: TrainConfig) -> None:
    """Make ``out`` a copy of the finished run ``src`` (its last checkpoint, metrics and any
    warm-up files) under ``cfg``, the same config with more ``steps``, so that training ``out``
    with ``resume=True`` continues ``src`` to ``cfg.steps``. With a constant tail
    (``decay_steps``) that is exactly the longer run. Nothing in ``src`` is changed."""
    saved = yaml.safe_load((src / "config.yaml").read_text())
    changed = sorted(k for k, v in cfg.trained_dict().items() if k != "steps" and saved.get(k) != v)
    if changed or cfg.steps <= saved["steps"]:
        raise UserError(
            f"continue_run: {out} must continue {src} with more steps and nothing else changed "
            f"(differs in {', '.join(changed) or 'steps: not more'})"
        )
    if not cfg.decay_steps and cfg.schedule != "constant":
        raise UserError(
            "continue_run: a decaying schedule without decay_steps would change the learning rate "
            "of the steps already taken; set decay_steps (a constant tail) to continue a run"
        )
    last = latest_checkpoint(src)
    if last is None or load_checkpoint(last)[1]["step"] != saved["steps"]:
        raise UserError(f"continue_run: {src} has no checkpoint of its last step; finish it first")
    out.mkdir(parents=True, exist_ok=True)
    target = out / "checkpoints" / last.name
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(last, target)
    atomic_write_text(out / "checkpoints" / "latest", last.name + "\n")
    for name in ("warmup", "warmup.jsonl"):  # the pretrain recipe's copy warm-up, if any
        if (src / name).is_dir():
            shutil.copytree(src / name, out / name, dirs_exist_ok=True)
        elif (src / name).is_file():
            shutil.copyfile(src / name, out / name)
    shutil.copyfile(src / METRICS, out / METRICS)
    atomic_write_text(out / "config.yaml", yaml.safe_dump(cfg.to_dict(), sort_keys=True))


def _trainable(model: torch.nn.Module) -> list[torch.nn.Parameter]:
    return [p for p in model.parameters() if p.requires_grad]


@torch.no_grad()
def heldout_losses(run: Run) -> dict[str, float]:
    """Mean next-token CE of the student on each held-out window set."""
    model = run.method.student
    model.eval()
    impl = resolve_lm_loss(run.method.cfg.lm_loss, run.device)
    out = {}
    for name, windows in run.heldout.items():
        total = 0.0
        for chunk in windows.split(8):
            chunk = chunk.to(run.device)
            with _autocast(run):
                total += float(lm_loss(model, chunk, None, impl=impl)) * len(chunk)
        out[f"heldout_{name}"] = total / len(windows)
    model.train()
    return out


def _autocast(run: Run) -> torch.autocast:
    """Autocast to the run's dtype, unless float32 or FSDP2's policy sets the compute dtype."""
    on = run.dtype != torch.float32 and run.method.cfg.mixed_precision == "autocast"
    return torch.autocast(run.device.type, dtype=run.dtype, enabled=on)


def _read_metrics(path: Path, upto: int) -> list[str]:
    """The lines of ``path`` up to step ``upto``; a line that does not parse (one an
    interruption cut short) is left out, not raised."""
    if not path.is_file():
        return []
    kept = []
    for line in path.read_text().splitlines():
        try:
            step = json.loads(line)["step"]
        except (ValueError, KeyError, TypeError):
            continue
        if step <= upto:
            kept.append(line)
    return kept


def _save_model(
    model: torch.nn.Module, tokenizer: Any, target: Path, weights: dict | None = None
) -> Path:
    """``target``: ``model`` as a Hugging Face directory with ``tokenizer`` (under FSDP2 the
    gathered full ``weights``), written atomically in place of any older one."""
    from longred_bench.training.checkpoint import save_weights

    with atomic_dir(target, replace=True) as tmp:
        if weights is None:
            model.save_pretrained(tmp)
        else:  # the config names its class, as save_pretrained writes it (vLLM reads it)
            model.config.architectures = [_model_class(model).__name__]
            model.config.save_pretrained(tmp)
            save_weights(weights, tmp / "model.safetensors")
        tokenizer.save_pretrained(tmp)
    return target


def _model_class(model: torch.nn.Module) -> type:
    """``model``'s own class: not the one FSDP2's ``fully_shard`` made of it (``FSDP<class>``)."""
    from torch.distributed.fsdp import FSDPModule

    return next(c for c in type(model).__mro__ if not issubclass(c, FSDPModule))


def _save_final(run: Run, out: Path, weights: dict | None = None) -> Path:
    """``out/final``: the student as a Hugging Face directory with its tokenizer (LoRA merged;
    under FSDP2 the gathered full ``weights``)."""
    model = run.method.student
    if hasattr(model, "merge_and_unload") and weights is not None:  # sharded: merged by hand
        from longred_bench.training.build import merged_lora_weights

        weights, model = merged_lora_weights(model, weights), model.get_base_model()
    elif hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    return _save_model(model, run.tokenizer, out / "final", weights)


def train(
    cfg: TrainConfig,
    out: Path,
    *,
    resume: bool = False,
    progress: bool = True,
    rank: int = 0,
    world: int = 1,
    stop_after: int | None = None,
    phases: tuple[Phase, ...] = (),
    anchors: tuple[str, ...] | None = None,
) -> Path:
    """Train ``cfg`` into ``out``; returns ``out/final`` (``stop_after``: stop after that many
    steps without a final model, as a killed run would, for tests). ``phases`` are the recipe's
    extra work around the loop (:class:`Phase`); ``anchors``: LongRecipe's measured anchor types,
    used instead of the config's ``measured``."""
    if cfg.copy_warmup_steps and not phases:
        raise UserError(
            "copy_warmup_steps is set but no warm-up phase was given: train the pretrain recipe "
            "with `longred-bench train` (longred_bench.jobs.train.run_training)"
        )
    main = rank == 0
    if main:
        _prepare_dir(cfg, out, resume)
    run = build_run(cfg, rank=rank, world=world, anchors=anchors)
    # What trains, taken before any training (a warm-up phase's too): not an edit made meanwhile.
    prov = (
        asdict(Provenance.collect(cfg.to_dict(), seed=cfg.seed, device=run.device)) if main else {}
    )
    if main:
        for note in run.notes:
            print(note, file=sys.stderr, flush=True)
    method = run.method
    from longred_bench.training.distributed import (
        close_single_process_group,
        full_states,
        load_full_states,
        mean_over_processes,
        place_teacher,
        wrap_student,
    )

    if not resume or latest_checkpoint(out) is None:
        for phase in phases:
            phase.before(run, cfg, out, world=world, progress=progress)
    method.student = wrap_student(method.student, cfg, world, run.dtype)
    if method.teacher is not None:
        method.teacher = place_teacher(method.teacher, cfg, world)
    peak = PeakMemory(run.device)
    load = MachineLoad()
    offload = HostOffload() if cfg.activation_offload else None
    params = _trainable(method.student)
    optimizer = torch.optim.AdamW(
        params, lr=cfg.lr, betas=tuple(cfg.betas), weight_decay=cfg.weight_decay
    )
    steps = total_steps(cfg)
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: schedule_factor(cfg, s, steps)
    )
    start, tokens, seconds = 0, 0, 0.0
    checkpoint = latest_checkpoint(out) if resume else None
    if checkpoint is not None:
        weights, state = load_checkpoint(checkpoint)
        load_full_states(method.student, optimizer, weights, state["optimizer"])
        scheduler.load_state_dict(state["scheduler"])
        for name, stream in run.streams.items():
            stream.load_state_dict(state["streams"][name])
        method.generator.set_state(state["generator"])
        set_rng_state(state["rng"])
        start, tokens, seconds = state["step"], state["tokens"], state["seconds"]
        if main:  # under --quiet too, as eval and drift say what they reuse
            print(f"resuming {out} from {checkpoint.name}: step {start} of {steps}", flush=True)
    tokens_at_start, seconds_at_start = tokens, seconds
    metrics_path = out / METRICS
    if main:
        kept = _read_metrics(metrics_path, start)
        atomic_write_text(metrics_path, "".join(line + "\n" for line in kept))
    bar = tqdm(
        total=steps, initial=start, desc=f"train {cfg.recipe}", unit="step", disable=not progress
    )
    end = steps if stop_after is None else min(steps, start + stop_after)
    with bar:  # closed on Ctrl-C too: its last redraw came after the interrupt line
        for step in range(start, end):
            began = time.perf_counter()
            optimizer.zero_grad(set_to_none=True)
            sums: dict[str, float] = {}
            step_tokens = 0
            for _ in range(run.micro_steps):
                batches = {
                    name: run.streams[name].next(rows, rank=rank, world=world).to(run.device)
                    for name, rows in method.rows(step).items()
                }
                with _autocast(run), offloaded(offload):
                    terms = method.losses(batches, step)
                (terms["loss"] / run.micro_steps).backward()
                for key, value in terms.items():
                    sums[key] = sums.get(key, 0.0) + float(value.detach()) / run.micro_steps
                step_tokens += sum(b.tokens for b in batches.values()) * world
            sums = mean_over_processes(sums, world)
            if not all(map(_finite, sums.values())):
                bad = ", ".join(f"{k}={v}" for k, v in sums.items() if not _finite(v))
                last = latest_checkpoint(out)
                raise UserError(
                    f"non-finite loss at step {step + 1} ({bad}): training stopped; the last "
                    f"good checkpoint is {last or 'none (none was written yet)'}; lower lr or "
                    "check the data"
                )
            grad_norm = torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            if not _finite(float(grad_norm)):
                raise UserError(
                    f"non-finite gradient norm at step {step + 1}: training stopped; the last good "
                    f"checkpoint is {latest_checkpoint(out) or 'none'}; lower lr or check the data"
                )
            lr = scheduler.get_last_lr()[0]
            optimizer.step()
            scheduler.step()
            tokens += step_tokens
            seconds += time.perf_counter() - began
            record: dict[str, Any] = {
                "step": step + 1, **sums, "tokens": tokens, "lr": lr,
                "seconds": round(seconds, 3), "grad_norm": float(grad_norm),
            }  # fmt: skip
            if cfg.heldout_every and ((step + 1) % cfg.heldout_every == 0 or step + 1 == steps):
                record.update(heldout_losses(run))
            bar.update(1)
            rate = (tokens - tokens_at_start) / max(seconds - seconds_at_start, 1e-9)
            bar.set_postfix(loss=f"{sums['loss']:.4f}", tok_s=f"{rate:.0f}")
            if main:
                with metrics_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(record, sort_keys=True) + "\n")
            if (step + 1) % cfg.checkpoint_every == 0 or step + 1 == steps:
                student_state, optimizer_state = full_states(method.student, optimizer)
                state = {
                    "step": step + 1, "tokens": tokens, "seconds": seconds,
                    "optimizer": optimizer_state, "scheduler": scheduler.state_dict(),
                    "streams": {n: s.state_dict() for n, s in run.streams.items()},
                    "generator": method.generator.get_state(), "rng": rng_state(),
                    "layers": list(method.layers),
                }  # fmt: skip
                if main:
                    save_checkpoint(out, step + 1, student_state, state, cfg.keep_checkpoints)
            if step + 1 in cfg.snapshot_steps:  # every process joins in gathering FSDP2 weights
                weights = _full_state(method.student)
                if main:
                    model = _unwrapped(method.student)
                    _save_model(model, run.tokenizer, snapshot_dir(out, step + 1), weights)
    if end < steps:
        close_single_process_group()
        return out / "final"
    weights = run.method.finish(_full_state(method.student))
    if main:  # run.json before final/: a finished final/ always has its run.json
        info = {**_run_info(run, cfg, out, tokens, seconds, phases), **peak.info(), **load.info(),
                "provenance": prov}  # fmt: skip
        if offload is not None:
            info.update(offload.info())
        atomic_write_text(out / "run.json", json.dumps(info, indent=2))
    close_single_process_group()
    method.student = _unwrapped(method.student)
    return _save_final(run, out, weights) if main else out / "final"


def _full_state(model: torch.nn.Module) -> dict | None:
    """Under FSDP2 every process joins in gathering the full weights; otherwise None (the
    model's own state is saved)."""
    from longred_bench.training.distributed import is_sharded

    if not is_sharded(model):
        return None
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    return get_model_state_dict(model, options=options)


def _finite(value: float) -> bool:
    return value == value and abs(value) != float("inf")


def _unwrapped(model: torch.nn.Module) -> torch.nn.Module:
    return getattr(model, "module", model)


def _run_info(
    run: Run, cfg: TrainConfig, out: Path, tokens: int, seconds: float, phases: tuple[Phase, ...]
) -> dict[str, Any]:
    """``run.json``'s totals and what each phase adds (the caller adds peak memory, machine load
    and the provenance: commit, source hash and dirty flag of the tree that ran, versions)."""
    extra: dict[str, Any] = {}
    for phase in phases:
        extra.update(phase.info(run, cfg, out))
    return {
        **extra,
        "tokens": tokens,
        "seconds": round(seconds, 2),
        "tokens_per_second": round(tokens / max(seconds, 1e-9), 1),
        "layers": list(run.method.layers),
        "tokens_per_step": run.tokens_per_step,
        "device": str(run.device),
        "dtype": str(run.dtype).removeprefix("torch."),
        "lm_loss": resolve_lm_loss(cfg.lm_loss, run.device),
        "data": run.data,
    }
