"""LongReD Figure 3 at a profile: Short Avg against training step of long-only CPT, with the
paper's claim "the short-text score recovers early, then declines" decided by a rule.

Built from the records of ``reproduce fig3`` (Table 3's record schema plus ``step``: 0 for the
zero-shot extension, ``None`` for the original model, the optimizer step for a snapshot of a CPT
run; each run's ``train`` info names ``table_steps``, Table 3's steps). Per extension:

- *early*: the snapshots before Table 3's steps, averaged document by document per seed;
- *late*: the last snapshot (``multiple`` x Table 3's steps).

(F3) *recovers early, then declines*, with three 95% intervals (over seeds and paired
documents; every comparison on the documents all the compared models scored), in the labels of
:mod:`~longred_bench.reports.verdict_rules`:

- premise: Short Avg(zero-shot) - Short Avg(original) entirely below 0 (the extension lost short
  ability, so there is something to recover) -> the premise is reproduced; otherwise the claim is
  not comparable (:func:`~longred_bench.reports.verdict_rules.premise_gate`, its outcome in the
  verdict's ``premise``);
- recovery: mean over seeds of early - zero-shot, judged above 0;
- decline: mean over seeds of late - early (paired by seed), judged below 0.

Each part: entirely on its side of 0 -> reproduced; entirely on the other -> not reproduced;
otherwise undecided. The claim combines the two (either not reproduced -> not reproduced, else
either undecided -> undecided, else reproduced). The paper gives no size for either part, so no
effect is ruled out.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from longred_bench.errors import UserError
from longred_bench.metrics.retention import common_documents
from longred_bench.metrics.stats import Interval, seed_mean_of_means_diff_ci
from longred_bench.reports.figures import save_figure
from longred_bench.reports.run_sections import base_model_lines, call_lines
from longred_bench.reports.runs import (
    Run,
    collect_runs,
    short_avg_cell,
    short_items,
)
from longred_bench.reports.short_avg import PASSKEY_TASK, short_categories
from longred_bench.reports.verdict_rules import (
    ABOVE,
    BELOW,
    NOT_COMPARABLE,
    Verdict,
    at_paper_setting,
    combine,
    fmt_interval,
    judge,
    premise_gate,
)
from longred_bench.reports.verdict_stats import BOOT_SEED, LEVEL, N_BOOT, SEED_INTERVALS
from longred_bench.reports.verdicts import (
    extension_scope,
    extension_setting,
    longred_ran,
    verdicts_markdown,
)

FIG3_MARK = "[sec]"
PAPER = (
    "Llama-3-8B, ABF base 2e7 at 32K, batch 64: the short-task score recovers within the first "
    f"~32 steps, then declines ({FIG3_MARK})."
)
CLAIM = "During long-only CPT the short-text score recovers early, then declines."
RULE = (
    "{level:.0%} intervals over seeds and paired documents. Premise: "
    "Short Avg(zero-shot) - Short Avg(original) entirely below 0, else not comparable (nothing "
    "lost to recover). Recovery: early (the snapshots before Table 3's {table_steps} steps, "
    "averaged per seed) - zero-shot, judged above 0. Decline: late (step {late}) - early, paired "
    "by seed, judged below 0. Each: entirely on its side of 0 -> reproduced, entirely on the "
    "other -> not reproduced, otherwise undecided; the two combined (either not reproduced -> "
    "not reproduced, else either undecided -> undecided). The paper gives no size for either: "
    "no effect to rule out."
)
PREMISE_CLAIM = "The zero-shot extension loses short-text ability (Short Avg below the original's)."
PREMISE_RULE = "the interval of Short Avg(zero-shot) - Short Avg(original) entirely below 0."

Items = dict[Any, dict[Any, dict[Any, float]]]
PointKey = tuple[str | None, int | None, int]  # (extension, step, seed)


def curve_runs(records: list[dict[str, Any]]) -> dict[PointKey, Run]:
    """The records grouped by (extension, step, seed): the original model (step None), the
    zero-shot extension (step 0) and each CPT snapshot."""
    by_step: dict[int | None, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        if r.get("kind") in ("eval", "eval_item"):
            if "step" not in r:
                raise UserError("a Figure 3 record has no `step`: run `reproduce fig3` again")
            by_step[r["step"]].append(r)
    out: dict[PointKey, Run] = {}
    for step, recs in by_step.items():
        for (ext, _, seed), run in collect_runs(recs).items():
            out[(ext, step, seed)] = run
    if not any(k[1] is None for k in out):
        raise UserError("the Figure 3 report needs the original model's records (step None)")
    return out


def _linear(parts: Sequence[Items], weights: Sequence[float]) -> Items:
    """Document by document, sum of ``weights`` x ``parts`` over the documents all parts scored."""
    cuts, _ = common_documents(*parts)
    out: Items = {}
    for g, members in cuts[0].items():
        out[g] = {}
        for m, docs in members.items():
            out[g][m] = {
                d: sum(w * c[g][m][d] for c, w in zip(cuts, weights, strict=True)) for d in docs
            }
    return out


def _ci(a: Sequence[Items], b: Sequence[Items]) -> Interval:
    return seed_mean_of_means_diff_ci(list(a), list(b), n_boot=N_BOOT, level=LEVEL, seed=BOOT_SEED)


def curve_intervals(
    original: Items, zero: Items, early: Sequence[Sequence[Items]], late: Sequence[Items]
) -> dict[str, Interval]:
    """The premise, recovery and decline intervals (see the module) from per-document scores:
    ``early[s]`` the early snapshots of seed ``s``, ``late[s]`` its last one."""
    cuts, n = common_documents(original, zero, *(e for es in early for e in es), *late)
    if n == 0:
        raise UserError("the Figure 3 models share no scored document")
    orig, zer, rest = cuts[0], cuts[1], cuts[2:]
    per_seed = [len(es) for es in early]
    early_means, i = [], 0
    for k in per_seed:
        early_means.append(_linear(rest[i : i + k], [1.0 / k] * k))
        i += k
    lates = rest[i:]
    zeros = _linear([orig], [0.0])
    declines = [_linear([lt, em], [1.0, -1.0]) for lt, em in zip(lates, early_means, strict=True)]
    return {
        "premise": _ci([orig], [zer]),
        "recovery": _ci([zer], early_means),
        "decline": _ci([zeros], declines),
    }


def premise_verdict(ci: dict[str, Interval], scope: str) -> Verdict:
    """(F3)'s premise, the zero-shot extension lost short-text ability, from its interval."""
    ours = f"zero-shot - original {fmt_interval(ci['premise'])}"
    label = judge(ci["premise"], BELOW)
    return Verdict("zero-shot loses", PREMISE_CLAIM, scope, "-", ours, label, PREMISE_RULE, "ours")


def curve_label(ci: dict[str, Interval]) -> str:
    """(F3)'s rule (see the module) on the three intervals."""
    passed, _ = premise_gate([premise_verdict(ci, "")])
    if not passed:
        return NOT_COMPARABLE
    return combine([judge(ci["recovery"], ABOVE), judge(ci["decline"], BELOW)])


def _table_steps(runs: dict[PointKey, Run]) -> int:
    found = {(r.train or {}).get("table_steps") for k, r in runs.items() if k[1]}
    found.discard(None)
    if len(found) != 1:
        raise UserError(f"Figure 3 records name Table 3's steps as {sorted(found)}: need one")
    return int(found.pop())


def fig3_verdicts(runs: dict[PointKey, Run], cats: dict[str, tuple[str, ...]]) -> list[Verdict]:
    """(F3) at every extension with its zero-shot model and CPT snapshots."""
    table_steps = _table_steps(runs)
    orig_run = runs[next(k for k in runs if k[1] is None)]
    original = short_items(orig_run, cats)
    out = []
    for ext in sorted({k[0] for k in runs if k[1] is not None}):
        zero = runs.get((ext, 0, 0))
        steps = sorted({k[1] for k in runs if k[0] == ext and k[1]})
        seeds = sorted({k[2] for k in runs if k[0] == ext and k[1]})
        early = [s for s in steps if s < table_steps]
        if zero is None or not early or steps[-1] <= table_steps:
            continue
        late = steps[-1]
        ci = curve_intervals(
            original,
            short_items(zero, cats),
            [[short_items(runs[(ext, s, seed)], cats) for s in early] for seed in seeds],
            [short_items(runs[(ext, late, seed)], cats) for seed in seeds],
        )
        window = runs[(ext, late, seeds[0])].window
        known = window and orig_run.window
        pe, factor = extension_setting(ext, window / orig_run.window if known else None)
        ours = (
            f"{len(seeds)} seed(s); early = steps {', '.join(map(str, early))}, late = step "
            f"{late}. Premise (zero-shot - original) {fmt_interval(ci['premise'])}; recovery "
            f"(early - zero-shot) {fmt_interval(ci['recovery'])}; decline (late - early) "
            f"{fmt_interval(ci['decline'])}."
        )
        rule = RULE.format(level=LEVEL, table_steps=table_steps, late=late)
        scope = extension_scope(ext, pe, factor)
        _, gate = premise_gate([premise_verdict(ci, scope)])
        f3 = Verdict("F3", CLAIM, scope, PAPER, ours, curve_label(ci), rule, premise=gate)
        out.append(at_paper_setting(f3, longred_ran(pe, factor)))
    return out


def _score(run: Run, cats: dict[str, tuple[str, ...]]) -> float | None:
    return short_avg_cell(run, cats).value


def curve_table(runs: dict[PointKey, Run], cats: dict[str, tuple[str, ...]]) -> list[str]:
    """Short Avg per extension and step: mean over seeds, each seed, tokens trained."""
    orig = _score(runs[next(k for k in runs if k[1] is None)], cats)
    lines = [f"Original model: Short Avg {orig:.2f}.", "",
             "| extension | step | tokens (pro rata) | Short Avg (mean over seeds) | seeds |",
             "|---|---:|---:|---:|---|"]  # fmt: skip
    for ext in sorted({k[0] for k in runs if k[1] is not None}):
        for step in sorted({k[1] for k in runs if k[0] == ext and k[1] is not None}):
            keys = sorted(k for k in runs if k[0] == ext and k[1] == step)
            values = [v for v in (_score(runs[k], cats) for k in keys) if v is not None]
            if not values:
                continue
            info = runs[keys[0]].train or {}
            tokens = ""
            if step and info.get("tokens") and info.get("steps"):
                tokens = f"{info['tokens'] * step / info['steps']:,.0f}"
            what = "zero-shot" if step == 0 else ", ".join(f"{v:.2f}" for v in values)
            lines.append(f"| `{ext}` | {step} | {tokens} | {sum(values) / len(values):.2f} | "
                         f"{what} |")  # fmt: skip
    note = ("Tokens (pro rata): the first seed's run's tokens over all its steps, times the "
            "step over its steps; a snapshot's own count is not recorded.")  # fmt: skip
    return [*lines, "", note, ""]


def plot_fig3(
    runs: dict[PointKey, Run], cats: dict[str, tuple[str, ...]], path: Path, title: str
) -> Path:
    """One panel per extension: Short Avg against step (symmetric log axis), each seed thin,
    the mean over seeds thick; the original's score dashed, Table 3's steps dotted."""
    exts = sorted({k[0] for k in runs if k[1] is not None})
    orig = _score(runs[next(k for k in runs if k[1] is None)], cats)
    table_steps = _table_steps(runs)
    fig, axes = plt.subplots(1, max(1, len(exts)), figsize=(5.2 * max(1, len(exts)), 4),
                             constrained_layout=True, squeeze=False)  # fmt: skip
    for ax, ext in zip(axes[0], exts, strict=False):
        zero = runs.get((ext, 0, 0))
        start = [(0, _score(zero, cats))] if zero is not None else []
        seeds = sorted({k[2] for k in runs if k[0] == ext and k[1]})
        steps = sorted({k[1] for k in runs if k[0] == ext and k[1]})
        curves = []
        for seed in seeds:
            pts = start + [(s, _score(runs[(ext, s, seed)], cats)) for s in steps
                           if (ext, s, seed) in runs]  # fmt: skip
            curves.append(pts)
            ax.plot(*zip(*pts, strict=True), color="C0", alpha=0.35, linewidth=0.9)
        if curves:
            xs = [p[0] for p in curves[0]]
            mean = [sum(c[i][1] for c in curves) / len(curves) for i in range(len(xs))]
            ax.plot(xs, mean, "o-", color="C0", linewidth=2, label=f"CPT, mean of {len(curves)}")
        if orig is not None:
            ax.axhline(orig, color="black", linestyle="--", linewidth=1, label="original")
        ax.axvline(table_steps, color="gray", linestyle=":", linewidth=1, label="Table 3's steps")
        ax.set_xscale("symlog", linthresh=max(1, min(steps, default=1)))
        ax.set_xticks([0, *steps], [str(s) for s in (0, *steps)])
        ax.minorticks_off()
        ax.set_xlabel("optimizer step (0: zero-shot extension)")
        ax.set_ylabel("Short Avg")
        ax.set_title(ext)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    return save_figure(fig, path)


def build_fig3(
    records: list[dict[str, Any]],
    out_dir: Path,
    *,
    profile: str,
    command: str,
    wall_seconds: float | None = None,
    wall_note: str = "",
) -> list[Path]:
    """Write ``fig3.md`` and ``fig3.png`` under ``out_dir``; returns their paths."""
    runs = curve_runs(records)
    cats = short_categories(records)
    out_dir.mkdir(parents=True, exist_ok=True)
    title = f"LongReD Figure 3: Short Avg against CPT step (profile {profile})"
    png = plot_fig3(runs, cats, out_dir / "fig3.png", title)
    n_docs = {t: len(d) for r in runs.values() for t, d in r.short_items.items()}
    lines = [
        f"# LongReD Figure 3: short-text score against training step (profile `{profile}`)",
        "",
        *base_model_lines(records),
        *call_lines(records, command, wall_seconds, wall_note),
        f"- Intervals: {LEVEL:.0%}, {N_BOOT} bootstrap resamples (resampling seed {BOOT_SEED}); "
        f"{SEED_INTERVALS}.",
        "- Short tasks (documents): "
        + ", ".join(f"`{t}` ({n})" for t, n in sorted(n_docs.items()) if t != PASSKEY_TASK)
        + (
            f"; `{PASSKEY_TASK}` ({n_docs[PASSKEY_TASK]}) is scored too, not in Short Avg "
            "(retrieval inside the window)"
            if PASSKEY_TASK in n_docs
            else ""
        )
        + ".",
        "",
        "Each extension's long-only CPT run is trained for several times Table 3's steps at "
        "its constant learning rate, with its model kept at log-spaced steps; step 0 is the "
        "zero-shot extension. The runs use Table 3's data, tokens per step and learning rate, "
        "so the snapshot at Table 3's steps is Table 3's CPT model of the same seed.",
        "",
        f"Paper: {PAPER}",
        "",
        *curve_table(runs, cats),
        "## Verdicts",
        "",
        *verdicts_markdown(fig3_verdicts(runs, cats)),
        "![Short Avg against step](fig3.png)",
    ]
    md = out_dir / "fig3.md"
    md.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return [md, png]
