"""Probe of the `tiny` profile's long data (D1): can long-only CPT learn long-context retrieval?

For each extension (``--extensions``) it evaluates the zero-shot extension of ``tiny-base`` and
trains, from ``tiny-base`` with that extension, one run per probe setting: ``cpt`` on prose-only D1
(``austen+kjv``, today's Table 3 data) and ``cpt`` / ``longred`` (CREAM sampler) on D1 with
retrieval rows built at the long length (``austen+kjv+retrieval``, training phrasing family) at
each ``--fractions`` value, with ``--steps`` and ``--lr`` (one value each per call); an extension
whose window is shorter than the profile's ``long_len`` (e.g. ``pi:factor=2``: 512 tokens) trains
at its whole window. Every model is scored on RULER's phrased tasks (NIAH and ``vt``, those whose
prompts fit) in the held-out phrasing at ``--lengths``, and on the short tasks of Table 3's Short
Avg (swap, replace, lastword, nextsent; ``--short-limit`` docs each) with their mean (Short Avg:
Language = swap and replace, General = lastword, RC = nextsent, as in the Table 3 report). With
``--control`` the call also evaluates ``tiny-base`` itself and trains the ``control`` row (the same
D1, steps and learning rate at the original RoPE, on the first ``--fractions`` value): whether a
learning rate leaves the control's Short Avg where the original's is (a base that more training
does not improve) is what that row shows, with the paired bootstrap interval of the difference.
Runs and evaluations are cached like Table 3's (``$LONGRED_CACHE/runs``), so a probe grid can be
extended call by call. Writes ``<name>.csv`` and ``.md`` under ``--out`` (``--name``, default
``long_data_probe``; appending nothing: the table holds every setting of this call) and prints the
table.

    python benchmarks/probe_long_data.py --fractions 0.3 --steps 64 --lr 3e-4 --jobs 2 \
        --control --out reports/probes --name long_data_probe
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import write_csv

from longred_bench.reports import provenance

PHRASED_TASKS = ("niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "vt")
SHORT_TASKS = ("longred_tiny_swap", "longred_tiny_replace", "longred_tiny_lastword",
               "longred_tiny_nextsent")  # fmt: skip
# Short Avg as the Table 3 report takes it: the mean of its categories' means.
SHORT_CATEGORIES = {
    "Language": ("longred_tiny_swap", "longred_tiny_replace"),
    "General": ("longred_tiny_lastword",),
    "RC": ("longred_tiny_nextsent",),
}
PROSE, WITH_RETRIEVAL = "austen+kjv", "austen+kjv+retrieval"


def _units(model: str, rope: str | None, args: argparse.Namespace) -> list[dict[str, Any]]:
    from longred_bench.jobs.tiny_base import build_identity

    common = {"model": model, "base": build_identity(model), "rope": rope, "batch_size": 16,
              "device": "cpu", "seed": 0, "item_scores": True}  # fmt: skip
    tasks = [f"longred_ruler_{t}" for t in PHRASED_TASKS]
    ruler = {**common, "suite": "ruler", "lengths": list(args.lengths), "samples": args.samples,
             "tasks": tasks, "phrasing": "heldout"}  # fmt: skip
    short = {**common, "suite": "short_tiny", "tasks": list(SHORT_TASKS),
             "limit": args.short_limit}  # fmt: skip
    return [ruler, short]


def _config(
    recipe: str, extension: str | None, long_data: str, fraction: float, args: argparse.Namespace
):
    from longred_bench.models.rope import target_window
    from longred_bench.profiles import load_profile
    from longred_bench.training.config import resolve_config

    overrides: dict[str, Any] = {"long_data": long_data, "steps": args.steps, "lr": args.lr,
                                 "retrieval_fraction": fraction, "model": "tiny-base",
                                 "seed": 0}  # fmt: skip
    if extension is not None:  # the control row keeps the original RoPE
        overrides["rope"] = extension
        # A milder extension (e.g. pi:factor=2) has a shorter window than the profile's
        # long_len: train at its whole window instead.
        window = target_window(extension, load_profile("tiny").model.window)
        default = resolve_config(recipe, profile="tiny").long_len
        if window < default:
            overrides["long_len"] = window
    if recipe == "longred":
        overrides["sampler"] = "cream"
    return resolve_config(recipe, profile="tiny", overrides=overrides)


def settings(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every (extension, row) of the call: zero-shot, CPT on prose, and per fraction CPT and
    LongReD-C on D1 with retrieval."""
    out = []
    if args.control:
        out.append({"extension": "-", "row": "original", "long_data": "-", "fraction": 0.0})
        out.append({"extension": "-", "row": "control", "long_data": WITH_RETRIEVAL,
                    "fraction": args.fractions[0]})  # fmt: skip
    for ext in args.extensions:
        out.append({"extension": ext, "row": "zero-shot", "long_data": "-", "fraction": 0.0})
        out.append({"extension": ext, "row": "cpt", "long_data": PROSE, "fraction": 0.0})
        for f in args.fractions:
            for row in ("cpt", "longred"):
                out.append({"extension": ext, "row": row, "long_data": WITH_RETRIEVAL,
                            "fraction": f})  # fmt: skip
    return out


def _run_setting(setting: dict[str, Any], args: argparse.Namespace) -> list[dict[str, Any]]:
    from longred_bench.jobs.units import train_cached
    from longred_bench.reproduce.grid import eval_unit

    ext = None if setting["extension"] == "-" else setting["extension"]
    if setting["row"] in ("zero-shot", "original"):
        model, rope, info = "tiny-base", ext, None
    else:
        cfg = _config(setting["row"], ext, setting["long_data"], setting["fraction"] or 0.3,
                      args)  # fmt: skip
        final, info = train_cached(cfg, progress=False)
        model, rope = str(final), None
    records = []
    for unit in _units(model, rope, args):
        records += [{**r, "train": info} for r in eval_unit(unit).run(progress=False)]
    return records


def short_items(records: list[dict[str, Any]]) -> dict[str, dict[str, dict[Any, float]]]:
    """category -> task -> doc_id -> accuracy (0-100) of the Short Avg tasks."""
    return {
        cat: {t: {r["doc_id"]: 100 * r["value"] for r in records if r.get("kind") == "eval_item"
                  and r["task"] == t and r.get("metric") == "acc"} for t in tasks}
        for cat, tasks in SHORT_CATEGORIES.items()
    }  # fmt: skip


def summarise(
    setting: dict[str, Any], records: list[dict[str, Any]], lengths, original=None
) -> dict[str, Any]:
    """One table row: held-out RULER mean over the phrased tasks per length (with a bootstrap
    interval over samples), the short tasks' accuracies and Short Avg, and (given the original's
    records) the paired interval of Short Avg minus the original's."""
    from longred_bench.metrics.stats import (
        bootstrap_mean_of_means_ci,
        paired_bootstrap_mean_of_means_diff_ci,
    )

    row = dict(setting)
    for n in lengths:
        groups = {str(n): {
            t: [r["value"] for r in records if r.get("kind") == "eval_item"
                and r["task"] == f"longred_ruler_{t}" and r.get("length") == n]
            for t in PHRASED_TASKS
        }}  # fmt: skip
        ci = bootstrap_mean_of_means_ci(groups)
        row[f"ruler_{n}"] = round(ci.estimate, 1)
        row[f"ruler_{n}_ci"] = f"[{ci.low:.1f}, {ci.high:.1f}]"
    for task in SHORT_TASKS:
        acc = [r["value"] for r in records if r.get("kind") == "eval" and r["task"] == task
               and r["metric"] == "acc"]  # fmt: skip
        row[task.removeprefix("longred_tiny_")] = round(100 * acc[0], 1) if acc else None
    items = short_items(records)
    if all(items[c][t] for c, ts in SHORT_CATEGORIES.items() for t in ts):
        lists = {c: {t: list(docs.values()) for t, docs in ts.items()} for c, ts in items.items()}
        row["short_avg"] = round(bootstrap_mean_of_means_ci(lists).estimate, 2)
    if original is not None and original is not records and "short_avg" in row:
        base = short_items(original)
        diff = paired_bootstrap_mean_of_means_diff_ci(base, items)
        row["short_vs_original"] = f"{diff.estimate:+.2f} [{diff.low:+.2f}, {diff.high:+.2f}]"
    info = next((r.get("train") for r in records if r.get("train")), None)
    row["train_min"] = round(info["seconds"] / 60, 1) if info else None
    return row


def _quiet(setting: dict[str, Any], args: argparse.Namespace) -> None:
    _run_setting(setting, args)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--extensions", nargs="+", default=["abf:theta=4e5", "pi:factor=4"])
    p.add_argument("--fractions", nargs="+", type=float, default=[0.3])
    p.add_argument("--steps", type=int, default=64)
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--lengths", nargs="+", type=int, default=[512, 1024])
    p.add_argument("--samples", type=int, default=20)
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--short-limit", type=int, default=500)
    p.add_argument(
        "--control",
        action="store_true",
        help="also evaluate tiny-base and train the control row (original RoPE)",
    )
    p.add_argument("--name", default="long_data_probe", help="output file stem")
    p.add_argument("--out", type=Path, default=Path("reports/probes"))
    args = p.parse_args()
    from longred_bench.reproduce.pool import Unit, run_units_parallel

    start = time.perf_counter()
    grid = settings(args)
    if args.jobs > 1:
        units = [Unit(_quiet, (s, args), f"{s['row']} {s['extension']} {s['long_data']}",
                      0.4 if s["row"] in ("zero-shot", "original") else 1.0)
                 for s in grid]  # fmt: skip
        run_units_parallel(units, args.jobs, name="probe")
    results = [_run_setting(s, args) for s in grid]
    original = next((r for s, r in zip(grid, results, strict=True) if s["row"] == "original"), None)
    rows = [summarise(s, r, args.lengths, original) for s, r in zip(grid, results, strict=True)]
    cols = list(dict.fromkeys(c for row in rows for c in row))
    rows = [{c: row.get(c, "") for c in cols} for row in rows]
    devices, code = provenance([r for rs in results for r in rs])
    args.out.mkdir(parents=True, exist_ok=True)
    write_csv(rows, args.out / f"{args.name}.csv", cols)
    lines = [
        f"# Long-data probe (profile tiny): steps {args.steps}, lr {args.lr}, "
        f"{args.samples} RULER samples per task and length, held-out phrasing",
        "",
        f"Command: `python benchmarks/probe_long_data.py {' '.join(sys.argv[1:])}`; "
        f"{(time.perf_counter() - start) / 60:.1f} min for this call (cached units reused); "
        f"evaluated on {devices}, commit {code}.",
        f"RULER: mean over {', '.join(PHRASED_TASKS)} (0-100) with a 95% bootstrap interval "
        f"over samples; short tasks: accuracy (%) on the first {args.short_limit} documents each; "
        "short_avg: the mean of the Language (swap, replace), General (lastword) and RC (nextsent) "
        "means; short_vs_original: Short Avg minus tiny-base's, paired 95% bootstrap over "
        "documents.",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    text = "\n".join(lines) + "\n"
    (args.out / f"{args.name}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
