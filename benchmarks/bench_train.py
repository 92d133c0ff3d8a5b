"""Training throughput of the recipes on ``tiny-base`` (CPU), and LinearARD's relation-KL memory.

For each recipe (``cpt``, ``mix-cpt``, ``longred``, ``linearard``) at profile ``tiny`` it trains
``--steps`` optimizer steps into a scratch directory with the recipe's own settings (the same
tokens per step for every recipe) and reports tokens/s over the steps after the first (warm-up),
and each recipe's cost per token relative to CPT (target for LongReD: <= 1.25x at the 4:3:1 mix).
Then it runs ``benchmarks/bench_relation_kl_cpu.py`` at tiny-base's attention shape (4 heads,
head_dim 32) at 2K and 8K tokens: peak memory of the chunked relation KL LinearARD trains with,
against the naive form. Writes ``train_throughput.csv`` / ``.md`` and the KL memory table under
``--out`` and prints them.

    python benchmarks/bench_train.py --out reports/bench
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import write_csv

RECIPES = (("cpt", {}), ("mix-cpt", {}), ("longred", {"sampler": "cream"}), ("linearard", {}))


def measure(recipe: str, extra: dict, steps: int, scratch: Path) -> dict:
    """Train ``steps`` steps of ``recipe`` at profile tiny; tokens/s after the first step."""
    from longred_bench.training.config import resolve_config
    from longred_bench.training.loop import train

    overrides = {**extra, "steps": steps, "checkpoint_every": 10_000}
    cfg = resolve_config(recipe, profile="tiny", overrides=overrides)
    out = scratch / recipe
    train(cfg, out, progress=False)
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    tokens = rows[-1]["tokens"] - rows[0]["tokens"]
    seconds = rows[-1]["seconds"] - rows[0]["seconds"]
    return {
        "recipe": recipe + (f" ({extra['sampler']})" if "sampler" in extra else ""),
        "tokens_per_step": rows[0]["tokens"],
        "seconds_per_step": round(seconds / (len(rows) - 1), 3),
        "tokens_per_second": round(tokens / seconds, 1),
        "rope": cfg.rope,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6, help="optimizer steps per recipe")
    parser.add_argument("--out", default="reports/bench", help="output folder")
    parser.add_argument("--skip-memory", action="store_true", help="throughput only")
    args = parser.parse_args(argv)
    import torch

    from longred_bench.heap import keep_freed_memory
    from longred_bench.results import device_name, git_commit

    keep_freed_memory()  # as the command line does

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        rows = [measure(r, extra, args.steps, Path(tmp)) for r, extra in RECIPES]
    base = rows[0]["tokens_per_second"]
    for row in rows:
        row["cost_vs_cpt"] = round(base / row["tokens_per_second"], 3)
    write_csv(rows, out / "train_throughput.csv", list(rows[0]))
    lines = [
        "# Training throughput on tiny-base (profile tiny)",
        "",
        f"Device: {device_name('cpu')}; torch {torch.__version__}; commit `{git_commit()}`; "
        f"{args.steps} steps per recipe, the first excluded; command: "
        f"`python benchmarks/bench_train.py --steps {args.steps} --out {args.out}`.",
        "",
        "| recipe | RoPE | tokens/step | s/step | tokens/s | cost per token vs CPT |",
        "|---|---|---:|---:|---:|---:|",
    ]
    lines += [
        f"| {r['recipe']} | `{r['rope']}` | {r['tokens_per_step']} | {r['seconds_per_step']} | "
        f"{r['tokens_per_second']:.0f} | {r['cost_vs_cpt']:.2f}x |"
        for r in rows
    ]
    longred = next(r for r in rows if r["recipe"].startswith("longred"))
    verdict = "met" if longred["cost_vs_cpt"] <= 1.25 else "missed"
    lines += ["", f"Target LongReD <= 1.25x CPT per token: {verdict} ({longred['cost_vs_cpt']}x)."]
    text = "\n".join(lines) + "\n"
    (out / "train_throughput.md").write_text(text)
    print(text)
    if not args.skip_memory:
        script = Path(__file__).with_name("bench_relation_kl_cpu.py")
        cmd = [sys.executable, str(script), "--lengths", "2048", "8192", "--heads", "4",
               "--head-dim", "32", "--out", str(out / "linearard_kl")]  # fmt: skip
        subprocess.run(cmd, check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
