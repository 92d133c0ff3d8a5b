"""The ``tiny-base`` report: its pretraining curve, the convergence check, and its scores inside
and beyond its 256-token window (``reports/tiny/tiny_base.md``).

Convergence rule (written here, applied to the held-out losses of ``metrics.jsonl``): the last
20% of the optimizer steps must improve each held-out loss by less than 2%, i.e.
``(L(0.8 T) - L(T)) / L(0.8 T) < 0.02`` with ``L(0.8 T)`` the held-out loss measured at the last
evaluation at or before 80% of the steps.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

CONVERGED_BELOW = 0.02
LAST_FRACTION = 0.2


def convergence(metrics: list[dict[str, Any]]) -> dict[str, dict[str, float | bool]]:
    """Per held-out set: loss at 80% of the steps, final loss, relative gain, converged?"""
    total = metrics[-1]["step"]
    cut = total * (1 - LAST_FRACTION)
    out: dict[str, dict[str, float | bool]] = {}
    keys = sorted({k for r in metrics for k in r if k.startswith("heldout_")})
    for key in keys:
        points = [(r["step"], r[key]) for r in metrics if key in r]
        before = [v for s, v in points if s <= cut]
        if not before:
            continue
        start, end = before[-1], points[-1][1]
        gain = (start - end) / start
        out[key.removeprefix("heldout_")] = {
            "at_80": start, "final": end, "gain": gain, "converged": gain < CONVERGED_BELOW,
        }  # fmt: skip
    return out


def _score(records: list[dict[str, Any]], task: str, metric: str, length: int | None) -> str:
    for r in records:
        if r.get("task") == task and r.get("metric") == metric and r.get("length") == length:
            return f"{r['value'] * (1 if metric == 'score' else 100):.1f}"
    return "-"


def _warmup_lines(run_info: dict[str, Any]) -> list[str]:
    """The copy warm-up's summary from ``run.json`` (none when the run had no warm-up)."""
    warm = run_info.get("warmup")
    if not warm:
        return []
    verdict = "reached" if warm["reached"] else "**not reached** (ended at its step cap)"
    return [
        "- Copy warm-up before the pretraining mix (`training/pretrain/induction.py`): "
        f"{warm['steps']} steps, {warm['tokens']:,} tokens, {warm['seconds'] / 60:.1f} min; "
        f"held-out copy accuracy {warm['copy_accuracy']:.3f}, threshold {warm['copy_until']} "
        f"{verdict}. "
        f"Copy accuracy after pretraining: {run_info['copy_accuracy']:.3f}.",
    ]


def build_tiny_base_report(
    metrics: list[dict[str, Any]],
    run_info: dict[str, Any],
    evals: dict[str, list[dict[str, Any]]],
    curves_png: Path,
    out: Path,
    *,
    command: str,
    chance: dict[str, float],
) -> list[Path]:
    """Write ``tiny_base.md`` and ``tiny_base_curves.png`` under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    png = out / "tiny_base_curves.png"
    shutil.copyfile(curves_png, png)
    conv = convergence(metrics)
    short = evals["short_tiny"]
    ruler = evals["ruler"]
    prov = short[0]["provenance"]
    lengths = sorted({r["length"] for r in ruler if r.get("length")})
    lines = [
        "# tiny-base: the suite's own pretrained model (profile `tiny`)",
        "",
        f"- Built by `longred-bench train --recipe pretrain --profile tiny` (zoo name "
        f"`tiny-base`): {run_info['tokens']:,} tokens in {metrics[-1]['step']} steps, "
        f"{run_info['seconds'] / 60:.1f} min of training on {run_info['device']} "
        f"({run_info['tokens_per_second']:.0f} tokens/s).",
        f"- Evaluated on {prov['device']}; commit `{prov['git_commit']}`; command: `{command}`.",
        *_warmup_lines(run_info),
        "",
        "## Convergence",
        "",
        f"Rule: the last {LAST_FRACTION:.0%} of the steps improve each held-out loss by less than "
        f"{CONVERGED_BELOW:.0%}.",
        "",
        "| held-out set | loss at 80% of steps | final loss | gain in last 20% | converged |",
        "|---|---:|---:|---:|---|",
    ]
    for name, c in conv.items():
        lines.append(
            f"| {name} (validation split) | {c['at_80']:.4f} | {c['final']:.4f} | "
            f"{c['gain']:.2%} | {'yes' if c['converged'] else 'no'} |"
        )
    lines += [
        "",
        "![pretraining curves](tiny_base_curves.png)",
        "",
        "## Short tasks (`short_tiny`, inside the 256-token window)",
        "",
        "| task | accuracy (%) | chance (%) | n |",
        "|---|---:|---:|---:|",
    ]
    for task in ("longred_tiny_cloze", "longred_tiny_nextsent", "longred_tiny_passkey"):
        n = next((r["n_samples"] for r in short if r.get("task") == task), "-")
        lines.append(
            f"| {task} | {_score(short, task, 'acc', None)} | "
            f"{chance.get(task, float('nan')) * 100:.1f} | {n} |"
        )
    ppl = next((r for r in short if r.get("task") == "longred_tiny_ppl"), None)
    if ppl is not None:
        lines.append(f"\nHeld-out prose perplexity (`longred_tiny_ppl`, {ppl['metric']}): "
                     f"{ppl['value']:.2f}.")  # fmt: skip
    lines += [
        "",
        "## RULER inside and beyond the window (no extension)",
        "",
        "| task | " + " | ".join(f"{n} tokens" for n in lengths) + " |",
        "|---|" + "---:|" * len(lengths),
    ]
    tasks = sorted({r["task"] for r in ruler if r.get("metric") == "score" and r.get("length")})
    for task in tasks:
        cells = " | ".join(_score(ruler, task, "score", n) for n in lengths)
        lines.append(f"| {task} | {cells} |")
    total = next((r.get("n_samples") for r in ruler if r.get("task") != "longred_ruler"), None)
    samples = total // len(lengths) if total and lengths else total  # n counts every length
    lines += [
        "",
        f"Scores 0-100; {samples} samples per task and length. Beyond 256 tokens the model runs "
        "past its trained window with its original RoPE: a collapse there shows the window is "
        "real.",
    ]
    md = out / "tiny_base.md"
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [md, png]
