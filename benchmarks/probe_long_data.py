"""Probe of the `tiny` profile's long data (D1): can long-only CPT learn long-context retrieval?

For each extension (``--extensions``) it evaluates the zero-shot extension of ``tiny-base`` and
trains, from ``tiny-base`` with that extension, one run per probe setting: ``cpt`` on prose-only
D1 (``austen+kjv``, today's Table 3 data) and ``cpt`` / ``longred`` (CREAM sampler) on D1 with
retrieval rows built at the long length (``austen+kjv+retrieval``, training phrasing family) at
each ``--fractions`` value, with ``--steps`` and ``--lr`` (one value each per call). Every model is
scored on RULER's phrased tasks (NIAH and ``vt``, those whose prompts fit) in the held-out
phrasing at ``--lengths``, and on the two general short tasks (cloze, nextsent). Runs and
evaluations are cached like Table 3's (``$LONGRED_CACHE/runs``), so a probe grid can be extended
call by call. Writes ``long_data_probe.csv`` and ``.md`` under ``--out`` (appending nothing: the
table holds every setting of this call) and prints the table.

    python benchmarks/probe_long_data.py --fractions 0.3 --steps 64 --lr 3e-4 --jobs 2 \
        --out reports/probes
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import write_csv

PHRASED_TASKS = ("niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "vt")
SHORT_TASKS = ("longred_tiny_cloze", "longred_tiny_nextsent")
PROSE, WITH_RETRIEVAL = "austen+kjv", "austen+kjv+retrieval"


def _units(model: str, rope: str | None, args: argparse.Namespace) -> list[dict[str, Any]]:
    from longred_bench.reproduce.table3 import base_identity

    common = {"model": model, "base": base_identity(model), "rope": rope, "batch_size": 16,
              "device": "cpu", "seed": 0, "item_scores": True}  # fmt: skip
    tasks = [f"longred_ruler_{t}" for t in PHRASED_TASKS]
    ruler = {**common, "suite": "ruler", "lengths": list(args.lengths), "samples": args.samples,
             "tasks": tasks, "phrasing": "heldout"}  # fmt: skip
    short = {**common, "suite": "short_tiny", "tasks": list(SHORT_TASKS), "limit": 200}
    return [ruler, short]


def _config(recipe: str, extension: str, long_data: str, fraction: float, args: argparse.Namespace):
    from longred_bench.training.config import resolve_config

    overrides: dict[str, Any] = {"rope": extension, "long_data": long_data, "steps": args.steps,
                                 "lr": args.lr, "retrieval_fraction": fraction,
                                 "model": "tiny-base", "seed": 0}  # fmt: skip
    if recipe == "longred":
        overrides["sampler"] = "cream"
    return resolve_config(recipe, profile="tiny", overrides=overrides)


def settings(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every (extension, row) of the call: zero-shot, CPT on prose, and per fraction CPT and
    LongReD-C on D1 with retrieval."""
    out = []
    for ext in args.extensions:
        out.append({"extension": ext, "row": "zero-shot", "long_data": "-", "fraction": 0.0})
        out.append({"extension": ext, "row": "cpt", "long_data": PROSE, "fraction": 0.0})
        for f in args.fractions:
            for row in ("cpt", "longred"):
                out.append({"extension": ext, "row": row, "long_data": WITH_RETRIEVAL,
                            "fraction": f})  # fmt: skip
    return out


def _run_setting(setting: dict[str, Any], args: argparse.Namespace) -> list[dict[str, Any]]:
    from longred_bench.reproduce.table3 import evaluate_cached, train_cached

    if setting["row"] == "zero-shot":
        model, rope, info = "tiny-base", setting["extension"], None
    else:
        cfg = _config(setting["row"], setting["extension"], setting["long_data"],
                      setting["fraction"] or 0.3, args)  # fmt: skip
        final, info = train_cached(cfg, progress=False)
        model, rope = str(final), None
    records = []
    for unit in _units(model, rope, args):
        records += evaluate_cached(unit, {"train": info}, progress=False)
    return records


def summarise(setting: dict[str, Any], records: list[dict[str, Any]], lengths) -> dict[str, Any]:
    """One table row: held-out RULER mean over the phrased tasks per length (with a bootstrap
    interval over samples) and the short tasks' accuracies."""
    from longred_bench.metrics.stats import bootstrap_mean_of_means_ci

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
    p.add_argument("--out", type=Path, default=Path("reports/probes"))
    args = p.parse_args()
    from longred_bench.reproduce.pool import Unit, run_units_parallel

    start = time.perf_counter()
    grid = settings(args)
    if args.jobs > 1:
        units = [Unit(_quiet, (s, args), f"{s['row']} {s['extension']} {s['long_data']}",
                      0.4 if s["row"] == "zero-shot" else 1.0) for s in grid]  # fmt: skip
        run_units_parallel(units, args.jobs, name="probe")
    results = [_run_setting(s, args) for s in grid]
    rows = [summarise(s, r, args.lengths) for s, r in zip(grid, results, strict=True)]
    prov = next(r["provenance"] for rs in results for r in rs if "provenance" in r)
    args.out.mkdir(parents=True, exist_ok=True)
    cols = list(rows[0])
    write_csv(rows, args.out / "long_data_probe.csv", cols)
    lines = [
        f"# Long-data probe (profile tiny): steps {args.steps}, lr {args.lr}, "
        f"{args.samples} RULER samples per task and length, held-out phrasing",
        "",
        f"Command: `python benchmarks/probe_long_data.py {' '.join(sys.argv[1:])}`; "
        f"{(time.perf_counter() - start) / 60:.1f} min for this call (cached units reused); "
        f"evaluated on {prov.get('device')}, commit `{prov.get('git_commit')}`.",
        f"RULER: mean over {', '.join(PHRASED_TASKS)} (0-100) with a 95% bootstrap interval "
        "over samples; short tasks: accuracy (%) on 200 documents.",
        "",
        "| " + " | ".join(cols) + " |",
        "|" + "---|" * len(cols),
    ]
    lines += ["| " + " | ".join(str(r[c]) for c in cols) + " |" for r in rows]
    text = "\n".join(lines) + "\n"
    (args.out / "long_data_probe.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
