"""The memory model (``longred_bench.training.memory_model``) against measured peaks on CPU, and
its figures for the GPU plans.

Part 1, measured: for each case (recipe, LM-loss form, activation checkpointing) it trains 3
steps of a randomly initialised shape (default: SmolLM2-135M's with 4 layers, 1,024-token rows,
fp32) in a fresh process with glibc's mmap threshold fixed at 64 KiB (a freed tensor leaves the
resident set at once), and reports the peak resident memory of steps 2-3 above what the process
held before the model was built, beside the model's peak for the same config; target: within 15%.

Part 2, estimated only: the model's per-GPU figures for Llama-3-8B at 32K and 128K tokens on 8
GPUs (at 128K with and without activation offload) and a 1B Llama at 8K and 32K on one (FSDP2,
bf16 mixed precision, activation checkpointing, chunked loss).

    python benchmarks/bench_memory_model.py --out reports/bench
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import (
    loadavg,
    markdown_table,
    provenance,
    provenance_lines,
    run_script,
    write_csv,
)

CASES = (
    ("cpt", "plain", False),
    ("cpt", "chunked", False),
    ("cpt", "chunked", True),
    ("longred", "chunked", True),
    ("longred", "plain", False),
)

CHILD = r"""
import json, re, sys, torch
sys.path.insert(0, sys.argv[1])
from shape_runs import build, shape_config, train_steps
from longred_bench.training.peak_memory import PeakMemory
from longred_bench.training.shapes import shape
name, layers, recipe, lm_loss, ckpt, tokens = sys.argv[2:]
rss = lambda: int(re.search(r"VmRSS:\s+(\d+)", open("/proc/self/status").read()).group(1)) / 1024
base = rss()
cfg = shape_config(recipe, int(tokens), lm_loss=lm_loss, activation_checkpointing=ckpt == "1")
run = build(shape(name, int(layers)), cfg, "cpu", torch.float32)
box = {}
def reset(i):
    if i == 1:
        box["peak"] = PeakMemory("cpu")
seconds = train_steps(run, 3, before_step=reset)
print(json.dumps({"peak_mib": round(box["peak"].info()["peak_memory_mib"] - base, 1),
                  "seconds": [round(s, 2) for s in seconds], "tokens": run.tokens}))
"""


def measured(name: str, layers: int, recipe: str, lm_loss: str, ckpt: bool, tokens: int) -> dict:
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536"}
    here = str(Path(__file__).resolve().parent)
    args = [here, name, str(layers), recipe, lm_loss, "1" if ckpt else "0", str(tokens)]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def plan_rows() -> list[dict]:
    """The model's per-GPU figures for the GPU plans (nothing measured)."""
    from shape_runs import shape_config

    from longred_bench.training.memory_model import estimate_train_memory
    from longred_bench.training.shapes import shape

    rows = []
    scale = {"distributed": "fsdp", "mixed_precision": "fsdp", "dtype": "bfloat16",
             "activation_checkpointing": True, "lm_loss": "chunked"}  # fmt: skip
    for name, tokens, world, offload in (
        ("llama3-8b", 32768, 8, False), ("llama3-8b", 131072, 8, False),
        ("llama3-8b", 131072, 8, True), ("llama-1b", 8192, 1, False),
        ("llama-1b", 32768, 1, False),
    ):  # fmt: skip
        for recipe in ("cpt", "longred", "linearard"):
            cfg = shape_config(recipe, tokens, rows=world, activation_offload=offload, **scale)
            est = estimate_train_memory(shape(name), cfg, world, window=tokens // 4)
            rows.append({"shape": name, "row_tokens": tokens, "gpus": world, "recipe": recipe,
                         "offload": offload, **est.gib()})  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="smollm2-135m")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=1024)
    parser.add_argument("--out", default="reports/bench")
    args = parser.parse_args(argv)
    import torch
    from shape_runs import shape_config

    from longred_bench.training.memory_model import estimate_train_memory
    from longred_bench.training.shapes import shape

    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
    info = provenance()
    rows = []
    for recipe, lm_loss, ckpt in CASES:
        got = measured(args.shape, args.layers, recipe, lm_loss, ckpt, args.tokens)
        cfg = shape_config(recipe, args.tokens, lm_loss=lm_loss, activation_checkpointing=ckpt)
        est = estimate_train_memory(shape(args.shape, args.layers), cfg, 1, device="cpu",
                                    window=args.tokens // 4)  # fmt: skip
        model_mib = est.peak / 2**20
        rows.append({
            "recipe": recipe, "lm_loss": lm_loss, "checkpointing": ckpt,
            "tokens_per_step": got["tokens"], "measured_mib": got["peak_mib"],
            "model_mib": round(model_mib, 1),
            "model_over_measured": round(model_mib / got["peak_mib"], 3),
            "within_15pct": abs(model_mib / got["peak_mib"] - 1) <= 0.15,
            "largest_transient": est.transient_kind, "step_seconds": got["seconds"],
        })  # fmt: skip
        print(json.dumps(rows[-1]), flush=True)
    info["loadavg_end"] = loadavg()
    out = Path(args.out)
    write_csv(rows, out / "memory_model_cpu.csv", list(rows[0]))
    plans = plan_rows()
    write_csv(plans, out / "memory_model_plans.csv", list(plans[0]))
    cmd = "python benchmarks/bench_memory_model.py " + " ".join(argv or sys.argv[1:])
    met = sum(r["within_15pct"] for r in rows)
    text = (
        "# Memory model against measured peaks (CPU, fp32), and its GPU-plan figures\n\n"
        + provenance_lines(info, cmd.strip())
        + f"Shape `{args.shape}` with {args.layers} layers, random weights, long rows of "
        f"{args.tokens} tokens (original window {args.tokens // 4}), 3 AdamW steps per case in "
        "a fresh process, peak resident memory of steps 2-3 above the process's own before the "
        f"model was built. Within 15%: {met} of {len(rows)}.\n\n"
        + markdown_table(rows, list(rows[0]))
        + "\n## The model's figures per GPU (estimates, nothing measured)\n\n"
        "FSDP2 with bf16 mixed precision, activation checkpointing per decoder layer, the "
        "chunked loss, one long row per GPU, original window a quarter of the row; GiB. "
        "`offload`: activation offload (the saved activations in pinned host memory, `host`; "
        "not in `peak`).\n\n" + markdown_table(plans, list(plans[0]))
    )
    (out / "memory_model.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    run_script(main)
