"""How long tiny-base would have to train to pass its convergence rule: the rule of
``longred_bench.reports.tiny_base_report.convergence`` (the run continued to 1.5x its steps at
the tail's constant rate improves each held-out loss by less than 1%) applied at every step ``S``
of one long pretraining run, comparing its records up to ``S`` with those up to ``1.5 S``.

tiny-base's schedule is a cosine decay to ``decay_steps`` followed by a constant tail, so a run of
``k`` times its steps is tiny-base continued on the same tail, and the run's records up to any
``S >= decay_steps`` are those of a build with ``S`` steps (same config, same seed). Train the
long run first (on a GPU it takes minutes; the numbers match the CPU build's to about 0.3% where
they overlap), then point this script at its directory::

    longred-bench train --recipe pretrain --profile tiny \\
        --set steps=4000 device=cuda dtype=float32 checkpoint_every=100000 --out RUN
    python benchmarks/probe_convergence.py RUN --reference ~/.cache/longred-bench/models/tiny-base-*

Writes ``convergence_probe.csv`` (held-out losses by step), ``convergence_probe.md`` (the rule's
gain at each ``S``) and ``convergence_probe.png`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import markdown_table, write_csv

from longred_bench.reports.tiny_base_report import CONVERGED_BELOW, convergence


def _records(run: Path) -> list[dict]:
    return [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines() if x]


def _heldout_rows(records: list[dict]) -> list[dict]:
    return [
        {"step": r["step"], **{k.removeprefix("heldout_"): round(v, 4) for k, v in r.items()
                               if k.startswith("heldout_")}}
        for r in records
        if any(k.startswith("heldout_") for k in r)
    ]  # fmt: skip


def gains(records: list[dict], start: int) -> list[dict]:
    """The rule at every held-out step ``S >= start`` whose ``1.5 S`` is also a held-out step."""
    steps = {row["step"] for row in _heldout_rows(records)}
    rows = []
    for s in sorted(steps):
        longer = round(1.5 * s)
        if s < start or longer not in steps:
            continue
        result = convergence(
            [r for r in records if r["step"] <= s], [r for r in records if r["step"] <= longer]
        )
        row = {"steps": s, "longer_steps": longer}
        for name, res in result.items():
            row[f"{name} loss"] = round(res["final"], 4)
            row[f"{name} gain %"] = round(100 * res["gain"], 2)
        row["converged"] = "yes" if all(r["converged"] for r in result.values()) else "no"
        rows.append(row)
    return rows


def _plot(rows: list[dict], names: list[str], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for name in names:
        ax.plot([r["steps"] for r in rows], [r[f"{name} gain %"] for r in rows], marker=".",
                label=f"held-out {name}")  # fmt: skip
    ax.axhline(100 * CONVERGED_BELOW, color="k", ls="--", lw=1, label="rule: gain < 1%")
    ax.set_xlabel("steps S of the build (8,192 tokens a step)")
    ax.set_ylabel("held-out loss gain from S to 1.5 S (%)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def _code(info: dict, commit: str) -> str:
    """The commit and source hash the run trained with, from its ``run.json`` provenance; for a
    run recorded without one, ``commit`` as given (``--commit``)."""
    from longred_bench.reports import provenance

    if isinstance(info.get("provenance"), dict):
        return provenance([info])[1]
    return f"`{commit or 'not given'}` (no source hash recorded)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="directory of the long pretraining run")
    parser.add_argument("--reference", type=Path, help="tiny-base's own run directory")
    parser.add_argument("--start", type=int, default=800, help="smallest S (the tail's start)")
    parser.add_argument(
        "--commit", default="", help="commit of a run whose run.json holds no provenance"
    )
    parser.add_argument("--out", type=Path, default=Path("reports/probes"))
    args = parser.parse_args(argv)
    records = _records(args.run)
    info = json.loads((args.run / "run.json").read_text())
    rows = gains(records, args.start)
    if not rows:
        print(f"probe_convergence: {args.run} has no held-out step S >= {args.start} with 1.5 S")
        return 1
    names = [k.removesuffix(" gain %") for k in rows[0] if k.endswith(" gain %")]
    args.out.mkdir(parents=True, exist_ok=True)
    curve = _heldout_rows(records)
    write_csv(curve, args.out / "convergence_probe.csv", list(curve[0]))
    _plot(rows, names, args.out / "convergence_probe.png")
    last = records[-1]["step"]
    lines = [
        "# tiny-base convergence probe: the rule at every build length",
        "",
        f"- One pretraining run of the `tiny` profile's recipe to {last} steps "
        f"({info['tokens']:,} tokens; {info['device']}, {info['dtype']}, "
        f"{info['tokens_per_second']:,.0f} tokens/s; commit {_code(info, args.commit)}); "
        "its schedule decays to step 800 and stays at 10% of the peak rate after, so its "
        "records up to any S >= 800 are those of a build with S steps.",
        f"- Rule (`longred_bench.reports.tiny_base_report.convergence`): the gain of each "
        f"held-out loss from S to 1.5 S is below {100 * CONVERGED_BELOW:.0f}%.",
        "- Command: `python benchmarks/probe_convergence.py RUN` (the run's command is in the "
        "script's docstring); held-out losses by step: `convergence_probe.csv`.",
    ]
    if args.reference:
        ref = _heldout_rows(_records(args.reference))[-1]
        mine = next((r for r in curve if r["step"] == ref["step"]), None)
        if mine:
            pairs = ", ".join(f"{k} {ref[k]} here {mine[k]}" for k in ref if k != "step")
            lines.append(f"- tiny-base's own build (CPU) at step {ref['step']}: {pairs}.")
    lines += ["", markdown_table(rows, list(rows[0])), "![gain by build length]"
              "(convergence_probe.png)"]  # fmt: skip
    passing = [r["steps"] for r in rows if r["converged"] == "yes"]
    lines += [
        "",
        f"First build length that passes: {passing[0]} steps."
        if passing
        else f"No build length up to {rows[-1]['steps']} steps (checked against "
        f"{rows[-1]['longer_steps']}) passes the rule.",
    ]
    (args.out / "convergence_probe.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
