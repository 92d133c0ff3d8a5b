"""The copy warm-up of pretraining from scratch: random token sequences repeated, until a
held-out copy accuracy is reached.

A freshly initialised small Llama trained on prose plus retrieval rows can sit on a plateau for
its whole budget without learning to copy from an earlier position chosen by content (an
induction circuit), and then it cannot retrieve anything. Copying a sequence repeated at a
*variable* offset needs that circuit. Short sequences (2-8 tokens) packed into short rows make
it form in a few hundred steps on the tiny architecture, where 8-64-token sequences took over a
thousand with a seed-dependent onset (README, "The tiny profile"). A circuit learnt on short
sequences copies longer ones only in part, so the warm-up goes on in stages of longer ones.

:func:`copy_warmup` trains the model on such rows before the pretraining mix: AdamW with the
run's learning rate (linear warm-up over ``warmup_steps``, then constant), betas, weight decay and
clipping, its own optimizer (the main run starts a fresh one). Stage ``i`` copies sequences of
``copy_min_len`` to ``copy_stages[i]`` tokens, in rows of ``copy_row_len`` tokens or, for long
sequences, up to four times the longest (at most ``long_len``), with the same number of tokens per
step (``copy_batch x copy_row_len``). A stage runs for at most ``copy_warmup_steps`` steps and
ends at the first evaluation (every ``copy_eval_every`` steps) whose held-out copy accuracy
reaches ``copy_until``. The records go to ``DIR/warmup.jsonl`` and the weights it ends with to
``DIR/warmup/``; a run resumed before its first main checkpoint loads them rather than warming up
again (a warm-up killed half-way starts again). Everything is drawn from generators seeded by the
config's seed, so the same config gives the same weights on one machine.

A row is ``<s>`` (when the tokenizer has one) followed by episodes ``s s`` (a random sequence of
non-special token ids and its repetition), cut to the row length. Copy accuracy is the greedy
next-token accuracy on the repetitions, first token of each excepted (it cannot be known); the
warm-up's loss is the cross-entropy on those same tokens.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from safetensors.torch import load_file
from tqdm.auto import tqdm

from longred_bench.cache import atomic_dir
from longred_bench.errors import UserError
from longred_bench.training.checkpoint import save_weights
from longred_bench.training.config import TrainConfig

WARMUP_DIR = "warmup"
WARMUP_METRICS = "warmup.jsonl"
EVAL_ROWS = 128
EVAL_SEED_OFFSET = 1_000_003


def alphabet(tokenizer: Any) -> torch.Tensor:
    """Token ids a copy sequence draws from: every id that is not a special token."""
    special = set(tokenizer.all_special_ids)
    return torch.tensor([i for i in range(len(tokenizer)) if i not in special], dtype=torch.long)


def copy_rows(
    n: int,
    row_len: int,
    lengths: tuple[int, int],
    ids: torch.Tensor,
    bos: int | None,
    generator: torch.Generator,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(rows [n, row_len], scored [n, row_len])``: packed copy episodes (module docstring);
    ``scored[b, t]`` is True where token ``t`` is a repeated token after the first of its
    repetition, i.e. one a copying model predicts from position ``t - 1``."""
    lo, hi = lengths
    rows = torch.empty(n, row_len, dtype=torch.long)
    scored = torch.zeros(n, row_len, dtype=torch.bool)
    for b in range(n):
        toks: list[int] = [] if bos is None else [bos]
        marks: list[bool] = [False] * len(toks)
        while len(toks) < row_len:
            size = int(torch.randint(lo, hi + 1, (1,), generator=generator))
            seq = ids[torch.randint(len(ids), (size,), generator=generator)].tolist()
            toks += seq + seq
            marks += [False] * size + [False] + [True] * (size - 1)
        rows[b] = torch.tensor(toks[:row_len])
        scored[b] = torch.tensor(marks[:row_len])
    return rows, scored


@torch.no_grad()
def copy_accuracy(model: torch.nn.Module, rows: torch.Tensor, scored: torch.Tensor) -> float:
    """Greedy next-token accuracy of ``model`` on the ``scored`` tokens of ``rows``."""
    was_training = model.training
    model.eval()
    hits, count = 0, 0
    device = next(model.parameters()).device
    for chunk, marks in zip(rows.split(32), scored.split(32), strict=True):
        pred = model(chunk.to(device)).logits[:, :-1].argmax(-1).cpu()
        ok = (pred == chunk[:, 1:]) & marks[:, 1:]
        hits += int(ok.sum())
        count += int(marks[:, 1:].sum())
    model.train(was_training)
    return hits / max(count, 1)


def copy_loss(model: torch.nn.Module, rows: torch.Tensor, scored: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy (fp32) of ``model`` on the ``scored [B, T]`` tokens of
    ``rows [B, T]`` only: the unpredictable first half of an episode adds nothing but noise to
    the gradient. The output layer runs on the scored positions alone (a third of the cost)."""
    target = scored[:, 1:]
    hidden = model.get_decoder()(rows).last_hidden_state[:, :-1][target]
    logits = model.get_output_embeddings()(hidden).float()
    return F.cross_entropy(logits, rows[:, 1:][target])


@dataclass(frozen=True)
class Stage:
    """One stage of the warm-up: episode lengths ``shortest..longest``, ``batch`` rows of
    ``row_len`` tokens per step."""

    shortest: int
    longest: int
    row_len: int
    batch: int

    @property
    def lengths(self) -> tuple[int, int]:
        """Shortest and longest copied sequence."""
        return self.shortest, self.longest


def stages(cfg: TrainConfig) -> list[Stage]:
    """The warm-up's stages: one per ``copy_stages`` entry (its longest sequence), rows long
    enough for about two episodes of it (at most ``long_len``), the same tokens per step."""
    out = []
    budget = cfg.copy_batch * cfg.copy_row_len
    for longest in cfg.copy_stages:
        row_len = min(cfg.long_len, max(cfg.copy_row_len, 4 * longest))
        out.append(Stage(cfg.copy_min_len, longest, row_len, max(1, budget // row_len)))
    return out


def heldout_copy_set(stage: Stage, tokenizer: Any, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Held-out copy rows of ``stage`` (a seed no training row uses)."""
    gen = torch.Generator().manual_seed(seed + EVAL_SEED_OFFSET + stage.longest)
    return copy_rows(
        EVAL_ROWS, stage.row_len, stage.lengths, alphabet(tokenizer), tokenizer.bos_token_id, gen
    )


def copy_warmup(
    model: torch.nn.Module,
    tokenizer: Any,
    cfg: TrainConfig,
    out: Path,
    *,
    device: torch.device,
    progress: bool = True,
) -> dict[str, Any]:
    """Warm ``model`` up on copying (module docstring), or load the finished warm-up of ``out``;
    returns its summary: per stage ``longest``, ``steps``, ``copy_accuracy``, ``reached``, and
    the totals ``steps``, ``tokens``, ``seconds``, ``reached`` (every stage reached)."""
    done = out / WARMUP_DIR / "summary.json"
    if done.is_file():
        model.load_state_dict(load_file(str(out / WARMUP_DIR / "student.safetensors")))
        return json.loads(done.read_text())
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(
        params, lr=cfg.lr, betas=tuple(cfg.betas), weight_decay=cfg.weight_decay
    )
    gen = torch.Generator().manual_seed(cfg.seed + 17)
    ids, bos = alphabet(tokenizer), tokenizer.bos_token_id
    metrics = out / WARMUP_METRICS
    out.mkdir(parents=True, exist_ok=True)
    metrics.write_text("")  # a killed warm-up starts again from the beginning
    plan = stages(cfg)
    tokens, began, total, done_stages = 0, time.perf_counter(), 0, []
    bar = tqdm(
        total=cfg.copy_warmup_steps * len(plan), desc="copy warm-up", unit="step",
        disable=not progress,
    )  # fmt: skip
    model.train()
    for number, stage in enumerate(plan, start=1):
        eval_rows, eval_scored = heldout_copy_set(stage, tokenizer, cfg.seed)
        accuracy, step = 0.0, 0
        while step < cfg.copy_warmup_steps:
            warm = min(1.0, (total + 1) / cfg.warmup_steps) if cfg.warmup_steps else 1.0
            for group in optimizer.param_groups:
                group["lr"] = cfg.lr * warm
            rows, scored = copy_rows(stage.batch, stage.row_len, stage.lengths, ids, bos, gen)
            rows, scored = rows.to(device), scored.to(device)
            loss = copy_loss(model, rows, scored)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            optimizer.step()
            step, total, tokens = step + 1, total + 1, tokens + rows.numel()
            bar.update(1)
            if step % cfg.copy_eval_every and step != cfg.copy_warmup_steps:
                continue
            accuracy = copy_accuracy(model, eval_rows, eval_scored)
            record = {"stage": number, "longest": stage.longest, "step": total,
                      "loss": float(loss.detach()), "copy_accuracy": accuracy, "tokens": tokens,
                      "seconds": round(time.perf_counter() - began, 3)}  # fmt: skip
            with metrics.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(record, sort_keys=True) + "\n")
            bar.set_postfix(
                stage=number, loss=f"{float(loss.detach()):.3f}", copy=f"{accuracy:.2f}"
            )
            if accuracy >= cfg.copy_until:
                break
        reached = accuracy >= cfg.copy_until
        done_stages.append({"longest": stage.longest, "steps": step, "copy_accuracy": accuracy,
                            "reached": reached})  # fmt: skip
        if not reached:  # on a line of its own, not at the end of the bar's
            tqdm.write(
                f"warning: copy warm-up stage {number} (sequences up to {stage.longest} tokens) "
                f"ended at its cap of {step} steps with held-out copy accuracy {accuracy:.2f} < "
                f"copy_until={cfg.copy_until}; training goes on from there"
            )
    bar.close()
    summary = {
        "stages": done_stages, "steps": total, "tokens": tokens, "copy_until": cfg.copy_until,
        "reached": all(s["reached"] for s in done_stages),
        "copy_accuracy": done_stages[-1]["copy_accuracy"],
        "seconds": round(time.perf_counter() - began, 2),
    }  # fmt: skip
    with atomic_dir(out / WARMUP_DIR, replace=True) as tmp:
        save_weights(model.state_dict(), tmp / "student.safetensors")
        (tmp / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


class CopyWarmup:
    """The copy warm-up as a :class:`~longred_bench.training.loop.Phase`: run before the first
    step of a fresh pretraining run; ``run.json`` gets its summary and the final copy accuracy."""

    def before(self, run: Any, cfg: TrainConfig, out: Path, *, world: int, progress: bool) -> None:
        """Run the warm-up on the run's student (one process only)."""
        if world > 1:
            raise UserError(
                "the copy warm-up runs in one process: build the pretrained model without torchrun"
            )
        copy_warmup(
            run.method.student, run.tokenizer, cfg, out, device=run.device, progress=progress
        )

    def info(self, run: Any, cfg: TrainConfig, out: Path) -> dict[str, Any]:
        """The final copy accuracy on held-out episodes and the warm-up's summary."""
        model = getattr(run.method.student, "module", run.method.student)
        rows = heldout_copy_set(stages(cfg)[-1], run.tokenizer, cfg.seed)
        extra: dict[str, Any] = {"copy_accuracy": copy_accuracy(model, *rows)}
        done = out / WARMUP_DIR / "summary.json"
        if done.is_file():
            extra["warmup"] = json.loads(done.read_text())
        return extra


def pretrain_phases(cfg: TrainConfig) -> tuple[CopyWarmup, ...]:
    """The phases a config adds around the loop: the copy warm-up when it has steps."""
    return (CopyWarmup(),) if cfg.copy_warmup_steps else ()
