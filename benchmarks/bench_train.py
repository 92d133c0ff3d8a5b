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

Step times on a shared CPU vary by 10% or more between calls; ``--repeats N`` measures every
recipe once per round for ``N`` interleaved rounds and reports medians with the range of the
per-round cost ratios.

On a CUDA machine the same steps run with ``--device cuda`` (bf16 autocast by default there;
``--impl triton`` picks LinearARD's relation-KL kernel), written as ``train_throughput_cuda.*``
with the peak GPU memory of each recipe::

    python benchmarks/bench_train.py --device cuda --impl triton --skip-memory --out reports/bench

With ``--shape`` it trains a randomly initialised model of a named shape instead (no weights, no
corpus): tokens/s, MFU and peak memory per recipe and row length
(``benchmarks/bench_train_shapes.py``)::

    python benchmarks/bench_train.py --device cuda --shape llama-1b --seq-len 8192 32768 \
        --recipes cpt longred linearard --impl triton --compile off on --out reports/bench
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import command_line, commit_and_source, run_script, write_csv
from bench_train_shapes import add_arguments, run_shapes

import longred_bench.jobs  # noqa: F401  (registers tiny-base, which these runs load by name)
from longred_bench.cli.devices import check_device

RECIPES = (("cpt", {}), ("mix-cpt", {}), ("longred", {"sampler": "cream"}), ("linearard", {}))


def measure(recipe: str, extra: dict, steps: int, scratch: Path, run: dict | None = None) -> dict:
    """Train ``steps`` steps of ``recipe`` at profile tiny; tokens/s after the first step.
    ``run`` adds config overrides (``device``, ``dtype``, ``impl``) to every recipe's."""
    import torch

    from longred_bench.training.config import resolve_config
    from longred_bench.training.loop import train

    overrides = {**extra, **(run or {}), "steps": steps, "checkpoint_every": 10_000}
    cfg = resolve_config(recipe, profile="tiny", overrides=overrides)
    out = scratch / recipe
    cuda = torch.cuda.is_available() and cfg.device != "cpu"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    train(cfg, out, progress=False)
    rows = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines()]
    tokens = rows[-1]["tokens"] - rows[0]["tokens"]
    seconds = rows[-1]["seconds"] - rows[0]["seconds"]
    result = {
        "recipe": recipe + (f" ({extra['sampler']})" if "sampler" in extra else ""),
        "tokens_per_step": rows[0]["tokens"],
        "seconds_per_step": round(seconds / (len(rows) - 1), 3),
        "tokens_per_second": round(tokens / seconds, 1),
        "rope": cfg.rope,
        "final_loss": round(rows[-1]["loss"], 4),
    }
    info = json.loads((out / "run.json").read_text())
    result.update(device=info["device"], dtype=info["dtype"])
    if cuda:
        result["peak_gpu_mib"] = round(torch.cuda.max_memory_allocated() / 2**20, 1)
    return result


def combine_rounds(rounds: list[list[dict]]) -> list[dict]:
    """One row per recipe from ``rounds`` (each a list of :func:`measure` rows, recipes in the
    same order): the median seconds per step and tokens/s, ``cost_vs_first`` the ratio of the
    medians to the first recipe's, and with several rounds the range of the per-round ratios
    (``cost_range``), so the noise between rounds shows beside the ratio."""
    rows = []
    for i, first in enumerate(rounds[0]):
        runs = [r[i] for r in rounds]
        row = dict(first)
        row["seconds_per_step"] = round(statistics.median(r["seconds_per_step"] for r in runs), 3)
        row["tokens_per_second"] = round(statistics.median(r["tokens_per_second"] for r in runs), 1)
        if "peak_gpu_mib" in first:
            row["peak_gpu_mib"] = max(r["peak_gpu_mib"] for r in runs)
        rows.append(row)
    for i, row in enumerate(rows):
        row["cost_vs_first"] = round(rows[0]["tokens_per_second"] / row["tokens_per_second"], 3)
        ratios = [r[0]["tokens_per_second"] / r[i]["tokens_per_second"] for r in rounds]
        row["cost_range"] = f"{min(ratios):.2f}-{max(ratios):.2f}" if len(rounds) > 1 else ""
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=6, help="optimizer steps per recipe")
    parser.add_argument("--out", default="reports/bench", help="output folder")
    parser.add_argument("--skip-memory", action="store_true", help="throughput only")
    parser.add_argument(
        "--repeats", type=int, default=1,
        help="rounds, each measuring every recipe once (interleaved); medians are reported",
    )  # fmt: skip
    parser.add_argument("--device", default="cpu", help="cpu or cuda (default cpu)")
    parser.add_argument("--dtype", default="auto", help="auto: fp32 on CPU, bf16 on CUDA")
    parser.add_argument(
        "--impl", default=None, help="relation-KL implementation (default: the recipe's)"
    )
    parser.add_argument(
        "--recipes", nargs="+", default=[r for r, _ in RECIPES], choices=[r for r, _ in RECIPES]
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    check_device(args.device)
    if args.steps < 2:
        parser.error("--steps must be at least 2: the first step is not timed (warm-up)")
    if args.shape:
        args.command_line = command_line(__file__, argv)
        return run_shapes(args)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    import torch

    from longred_bench.heap import keep_freed_memory
    from longred_bench.results import device_name

    keep_freed_memory()  # as the command line does

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    run = {"device": args.device, "dtype": args.dtype}
    if args.impl is not None:
        run["impl"] = args.impl
    recipes = [(r, extra) for r, extra in RECIPES if r in args.recipes]
    with tempfile.TemporaryDirectory() as tmp:
        rounds = [
            [measure(r, extra, args.steps, Path(tmp) / str(i), run) for r, extra in recipes]
            for i in range(args.repeats)
        ]
    rows = combine_rounds(rounds)
    stem = "train_throughput" if args.device == "cpu" else f"train_throughput_{args.device}"
    write_csv(rows, out / f"{stem}.csv", list(rows[0]))
    gpu = "peak_gpu_mib" in rows[0]
    command = command_line(__file__, argv)
    several = args.repeats > 1
    how = (
        f"{args.repeats} interleaved rounds (every recipe once per round), medians shown, the "
        "range of the per-round cost ratios beside"
        if several
        else "one round"
    )
    lines = [
        f"# Training throughput on tiny-base (profile tiny, {rows[0]['device']})",
        "",
        f"Device: {device_name(args.device)}; torch {torch.__version__}; commit "
        f"{commit_and_source()}; {args.steps} steps per recipe, the first "
        f"excluded; {how}; "
        f"command: `{command}`.",
        "",
        f"| recipe | RoPE | dtype | tokens/step | s/step | tokens/s | cost per token vs "
        f"{rows[0]['recipe']} |"
        + (" per-round range |" if several else "")
        + " loss at the last step |"
        + (" peak GPU MiB |" if gpu else ""),
        "|---|---|---|---:|---:|---:|---:|"
        + ("---:|" if several else "")
        + "---:|"
        + ("---:|" if gpu else ""),
    ]
    lines += [
        f"| {r['recipe']} | `{r['rope']}` | {r['dtype']} | {r['tokens_per_step']} | "
        f"{r['seconds_per_step']} | {r['tokens_per_second']:.0f} | {r['cost_vs_first']:.2f}x |"
        + (f" {r['cost_range']} |" if several else "")
        + f" {r['final_loss']} |"
        + (f" {r['peak_gpu_mib']} |" if gpu else "")
        for r in rows
    ]
    longred = next((r for r in rows if r["recipe"].startswith("longred")), None)
    if longred is not None and rows[0]["recipe"] == "cpt":
        verdict = "met" if longred["cost_vs_first"] <= 1.25 else "missed"
        lines += [
            "",
            f"Target LongReD <= 1.25x CPT per token: {verdict} ({longred['cost_vs_first']}x, "
            f"from {args.steps - 1} timed step(s) a recipe in {args.repeats} round(s)).",
        ]
    text = "\n".join(lines) + "\n"
    (out / f"{stem}.md").write_text(text)
    print(text)
    if not args.skip_memory:
        script = Path(__file__).with_name("bench_relation_kl_cpu.py")
        cmd = [sys.executable, str(script), "--lengths", "2048", "8192", "--heads", "4",
               "--head-dim", "32", "--out", str(out / "linearard_kl")]  # fmt: skip
        subprocess.run(cmd, check=True)
    return 0


if __name__ == "__main__":
    run_script(main)
