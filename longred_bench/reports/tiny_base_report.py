"""The ``tiny-base`` report: its pretraining curve, the convergence check, its retrieval targets
and its scores inside and beyond its 256-token window (``reports/tiny/tiny_base.md``).

Convergence rule (written here, applied to the held-out losses of two runs' ``metrics.jsonl``):
tiny-base (``T`` steps, ending on a constant learning-rate tail) is compared with the same run
continued to ``1.5 T`` steps at that tail's rate (:func:`longred_bench.jobs.tiny_base.
tiny_base_longer_dir`). It is converged when the longer run improves each held-out loss by less
than 1%: ``(L(T) - L(1.5 T)) / L(T) < 0.01``. A run stopped early fails it (tested).

Retrieval targets (:func:`targets`), each met when its point estimate passes its threshold, with a
95% percentile-bootstrap interval over the scored documents beside it. At 256 tokens (inside the
window), in the ``heldout`` phrasing no training row uses: ``niah_single_1`` >= 70; the average
over the phrased tasks (NIAH and ``vt``) >= 80% of the same average in ``standard`` (RULER's own)
phrasing; lm-eval's own ``niah_single_1`` samples >= 60. At 1,024 tokens (4x the window, no
extension) the standard-phrasing average over every task is <= 5: the window is real.
"""

from __future__ import annotations

import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longred_bench.metrics.stats import Interval, bootstrap_mean_ci, bootstrap_mean_of_means_ci
from longred_bench.reports import provenance

CONVERGED_BELOW = 0.01
INSIDE, BEYOND = 256, 1024  # the window, and 4x it
HELDOUT_SINGLE_MIN = 70.0
HELDOUT_RATIO_MIN = 0.8
LMEVAL_SINGLE_MIN = 60.0
BEYOND_MAX = 5.0
RULER_PREFIX = "longred_ruler_"
LMEVAL_NIAH = "longred_lmeval_niah_single_1"


def _last_heldout(metrics: list[dict[str, Any]]) -> tuple[int, dict[str, float]]:
    """The step and held-out losses of the last record that has them."""
    for record in reversed(metrics):
        losses = {
            k.removeprefix("heldout_"): v for k, v in record.items() if k.startswith("heldout_")
        }
        if losses:
            return record["step"], losses
    raise ValueError("metrics hold no held-out loss: train with heldout_every > 0")


def convergence(
    metrics: list[dict[str, Any]], longer: list[dict[str, Any]]
) -> dict[str, dict[str, float | bool]]:
    """Per held-out set: the run's final loss, the longer run's, the relative gain and whether
    it is below :data:`CONVERGED_BELOW` (module doc). ``metrics``/``longer``: the records of the
    run and of its continuation (which repeats the run's records first)."""
    steps, base = _last_heldout(metrics)
    longer_steps, more = _last_heldout(longer)
    if longer_steps <= steps:
        raise ValueError(f"the longer run ends at step {longer_steps}, not after {steps}")
    out: dict[str, dict[str, float | bool]] = {}
    for name in sorted(base.keys() & more.keys()):
        gain = (base[name] - more[name]) / base[name]
        out[name] = {
            "steps": steps, "longer_steps": longer_steps, "final": base[name],
            "longer": more[name], "gain": gain, "converged": gain < CONVERGED_BELOW,
        }  # fmt: skip
    return out


def item_values(
    records: Sequence[dict[str, Any]], task: str, metric: str, length: int | None
) -> list[float]:
    """The per-document values (``eval_item`` records) of one task, metric and length."""
    return [
        float(r["value"])
        for r in records
        if r.get("kind") == "eval_item"
        and r.get("task") == task
        and r.get("metric") == metric
        and r.get("length") == length
    ]


def ruler_average(
    records: Sequence[dict[str, Any]], tasks: Sequence[str], length: int
) -> tuple[Interval, int]:
    """Mean over ``tasks`` of their RULER scores at ``length``, its bootstrap interval over
    documents, and the documents per task (the smallest count)."""
    groups = {
        str(length): {t: item_values(records, RULER_PREFIX + t, "score", length) for t in tasks}
    }
    missing = [t for t, v in groups[str(length)].items() if not v]
    if missing:
        raise ValueError(f"no item scores of {missing} at {length} tokens")
    return bootstrap_mean_of_means_ci(groups), min(len(v) for v in groups[str(length)].values())


def _floor(name: str, value: Interval, n: int, floor: float) -> dict[str, Any]:
    return {"name": name, "value": value, "n": n, "rule": f">= {floor:.0f}",
            "met": value.estimate >= floor}  # fmt: skip


def targets(
    evals: dict[str, list[dict[str, Any]]], phrased: Sequence[str], every: Sequence[str]
) -> list[dict[str, Any]]:
    """The retrieval targets of the module docstring, one row each: ``name``, ``rule``,
    ``value`` (an :class:`Interval`), ``n``, ``met``. ``evals`` holds ``targets_standard`` and
    ``targets_heldout`` (RULER's ``phrased`` tasks at 256 tokens), ``lmeval_niah`` and
    ``ruler_standard`` (``every`` task, 1,024 tokens among its lengths)."""
    rows = []
    single = item_values(evals["targets_heldout"], RULER_PREFIX + "niah_single_1", "score", INSIDE)
    value = bootstrap_mean_ci(single)
    rows.append(_floor("held-out niah_single_1 at 256", value, len(single), HELDOUT_SINGLE_MIN))
    held, n_held = ruler_average(evals["targets_heldout"], phrased, INSIDE)
    std, _ = ruler_average(evals["targets_standard"], phrased, INSIDE)
    ratio = held.estimate / std.estimate if std.estimate > 0 else float("nan")
    rows.append({
        "name": f"held-out / standard average of {len(phrased)} phrased tasks at 256",
        "value": Interval(ratio, float("nan"), float("nan")), "n": n_held,
        "rule": f">= {HELDOUT_RATIO_MIN:.2f} (held-out {held.estimate:.1f} "
                f"[{held.low:.1f}, {held.high:.1f}], standard {std.estimate:.1f} "
                f"[{std.low:.1f}, {std.high:.1f}])",
        "met": ratio >= HELDOUT_RATIO_MIN,
    })  # fmt: skip
    own = item_values(evals["lmeval_niah"], LMEVAL_NIAH, "score", INSIDE)
    value = bootstrap_mean_ci(own)
    rows.append(_floor("lm-eval's own niah_single_1 at 256", value, len(own), LMEVAL_SINGLE_MIN))
    beyond, n_beyond = ruler_average(evals["ruler_standard"], every, BEYOND)
    rows.append({"name": f"standard average of {len(every)} tasks at 1,024 (4x, no extension)",
                 "value": beyond, "n": n_beyond, "rule": f"<= {BEYOND_MAX:.0f}",
                 "met": beyond.estimate <= BEYOND_MAX})  # fmt: skip
    return rows


def _score(records: list[dict[str, Any]], task: str, metric: str, length: int | None) -> str:
    for r in records:
        if (
            r.get("kind") != "eval_item"
            and r.get("task") == task
            and r.get("metric") == metric
            and r.get("length") == length
        ):
            return f"{r['value'] * (1 if metric == 'score' else 100):.1f}"
    return "-"


def _interval_cell(values: list[float], scale: float = 1.0) -> str:
    if not values:
        return "-"
    ci = bootstrap_mean_ci([v * scale for v in values])
    return f"{ci.estimate:.1f} [{ci.low:.1f}, {ci.high:.1f}]"


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


def _short_lines(evals: dict[str, list[dict[str, Any]]], chance: dict[str, float]) -> list[str]:
    short, standard = evals["short_tiny"], evals.get("passkey_standard", [])
    lines = [
        "## Short tasks (`short_tiny`, inside the 256-token window)",
        "",
        "| task | accuracy (%) [95% CI] | chance (%) | n |",
        "|---|---:|---:|---:|",
    ]
    rows = [
        ("longred_tiny_lastword", "longred_tiny_lastword", short),
        ("longred_tiny_nextsent", "longred_tiny_nextsent", short),
        ("longred_tiny_swap (minimal pairs)", "longred_tiny_swap", short),
        ("longred_tiny_replace (minimal pairs)", "longred_tiny_replace", short),
        ("longred_tiny_passkey (held-out phrasing)", "longred_tiny_passkey", short),
        ("longred_tiny_passkey (standard phrasing)", "longred_tiny_passkey", standard),
    ]
    for label, task, records in rows:
        values = item_values(records, task, "acc", None)
        if not values:
            continue
        lines.append(
            f"| {label} | {_interval_cell(values, 100.0)} | "
            f"{chance.get(task, float('nan')) * 100:.1f} | {len(values)} |"
        )
    ppl = next((r for r in short if r.get("task") == "longred_tiny_ppl"), None)
    if ppl is not None:
        lines.append(f"\nHeld-out prose perplexity (`longred_tiny_ppl`, {ppl['metric']}): "
                     f"{ppl['value']:.2f}.")  # fmt: skip
    lines += [
        "",
        "Passkey is retrieval, not general short-text ability: every one of its four choices "
        "occurs in the passage, and only the noun of the question (a held-out family: "
        '"locker combination", "security pin") tells the key apart.',
    ]
    return lines


def _ruler_lines(evals: dict[str, list[dict[str, Any]]]) -> list[str]:
    standard, heldout = evals["ruler_standard"], evals["ruler_heldout"]
    lengths = sorted({r["length"] for r in standard if r.get("length")})
    lines = [
        "## RULER inside and beyond the window (no extension)",
        "",
        "Each cell: standard (RULER's phrasing) / held-out phrasing; `cwe` and `fwe` have RULER's "
        "phrasing only.",
        "",
        "| task | " + " | ".join(f"{n} tokens" for n in lengths) + " |",
        "|---|" + "---:|" * len(lengths),
    ]
    tasks = sorted({r["task"] for r in standard if r.get("metric") == "score" and r.get("length")})
    for task in tasks:
        cells = " | ".join(
            f"{_score(standard, task, 'score', n)} / {_score(heldout, task, 'score', n)}"
            for n in lengths
        )
        lines.append(f"| {task.removeprefix(RULER_PREFIX)} | {cells} |")
    per_length = (
        [len(item_values(standard, tasks[0], "score", n)) for n in lengths] if tasks else [0]
    )
    lines += [
        "",
        f"Scores 0-100; {min(per_length)} samples per task and length. Beyond 256 tokens the "
        "model runs past its trained window with its original RoPE: a collapse there shows the "
        "window is real.",
    ]
    return lines


def build_tiny_base_report(
    metrics: list[dict[str, Any]],
    longer: list[dict[str, Any]],
    run_info: dict[str, Any],
    evals: dict[str, list[dict[str, Any]]],
    curves_png: Path,
    out: Path,
    *,
    command: str,
    chance: dict[str, float],
    phrased: Sequence[str],
    every: Sequence[str],
) -> list[Path]:
    """Write ``tiny_base.md`` and ``tiny_base_curves.png`` under ``out``. ``evals`` holds the
    records (with ``eval_item`` records) of ``short_tiny``, ``passkey_standard``,
    ``ruler_standard``, ``ruler_heldout``, ``targets_standard``, ``targets_heldout`` and
    ``lmeval_niah`` (see :func:`targets`)."""
    out.mkdir(parents=True, exist_ok=True)
    png = out / "tiny_base_curves.png"
    shutil.copyfile(curves_png, png)
    conv = convergence(metrics, longer)
    devices, code = provenance([r for records in evals.values() for r in records])
    lines = [
        "# tiny-base: the suite's own pretrained model (profile `tiny`)",
        "",
        f"- Built by `longred-bench train --recipe pretrain --profile tiny` (zoo name "
        f"`tiny-base`): {run_info['tokens']:,} tokens in {metrics[-1]['step']} steps, "
        f"{run_info['seconds'] / 60:.1f} min of training on {run_info['device']} "
        f"({run_info['tokens_per_second']:.0f} tokens/s).",
        f"- Evaluated on {devices}; commit {code}; command: `{command}`.",
        *_warmup_lines(run_info),
        "- Its retrieval rows draw every prompt string from the `train` phrasing family "
        "(`longred_bench/taskdata/ruler/phrasings.py`); the `heldout` family, which no training "
        "row uses, is what the targets below are scored in.",
        "",
        "## Retrieval targets",
        "",
        "Each target is met when its estimate passes its rule; intervals are 95% percentile "
        "bootstraps over the scored documents.",
        "",
        "| target | rule | measured [95% CI] | n per task | met |",
        "|---|---|---:|---:|---|",
    ]
    for row in targets(evals, phrased, every):
        v = row["value"]
        shown = (
            f"{v.estimate:.2f}"
            if v.low != v.low
            else f"{v.estimate:.1f} [{v.low:.1f}, {v.high:.1f}]"
        )
        lines.append(
            f"| {row['name']} | {row['rule']} | {shown} | {row['n']} | "
            f"{'yes' if row['met'] else '**no**'} |"
        )
    lines += [
        "",
        "## Convergence",
        "",
        "Rule: tiny-base ends on a constant learning-rate tail; the same run continued to "
        f"1.5x its steps at that rate must improve each held-out loss by less than "
        f"{CONVERGED_BELOW:.0%}.",
        "",
        "| held-out set | steps | final loss | loss after 1.5x steps | gain | converged |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, c in conv.items():
        lines.append(
            f"| {name} (validation split) | {c['steps']} | {c['final']:.4f} | {c['longer']:.4f} | "
            f"{c['gain']:.2%} | {'yes' if c['converged'] else '**no**'} |"
        )
    lines += ["", "![pretraining curves](tiny_base_curves.png)", ""]
    lines += _short_lines(evals, chance)
    lines += [""]
    lines += _ruler_lines(evals)
    md = out / "tiny_base.md"
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [md, png]
