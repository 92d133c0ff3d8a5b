"""Training throughput at real model shapes with random weights: ``bench_train.py --shape``.

For each recipe it builds the shape's student (and teacher) at random
(``benchmarks/shape_runs.py``), trains ``--steps`` steps on random rows of ``--seq-len`` tokens and
reports tokens/s over the steps after the first two (warm-up, compilation), model FLOPs
utilisation, the peak memory (CUDA allocator, or the CPU process's resident set above its start)
and the memory model's peak for the same config beside it. MFU = model FLOPs per second / the
device's peak: the FLOPs of ``ModelShape.forward_flops_per_token`` (``training/shapes.py``:
matmuls and causal attention; training 3x the forward; the teacher's forward counted for the
distillation recipes; LinearARD's relation KL not counted) over the peak dense bf16 rate of the GPU
(``--peak-tflops``; H100/H200 989), or on CPU over a measured fp32 matmul rate. Writes
``train_shapes_<device>.csv`` / ``.md`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from bench_common import loadavg, markdown_table, provenance, provenance_lines, write_csv

from longred_bench.errors import UserError

PEAK_BF16_TFLOPS = {"H100": 989.0, "H200": 989.0, "A100": 312.0, "L40S": 362.0}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the shape mode (``--shape`` turns it on)."""
    group = parser.add_argument_group("model shapes (random weights)")
    group.add_argument("--shape", help="smollm2-135m, llama-1b or llama3-8b")
    group.add_argument("--layers", type=int, help="decoder layers (default: the shape's)")
    group.add_argument("--seq-len", type=int, nargs="+", default=[8192], help="long row tokens")
    group.add_argument("--mixed-precision", default="fsdp", choices=["autocast", "fsdp"])
    group.add_argument("--no-checkpointing", action="store_true")
    group.add_argument("--offload", action="store_true", help="activation offload to the host")
    group.add_argument("--compile", nargs="+", default=["off"], choices=["off", "on"])
    group.add_argument("--lm-loss", default="auto", help="auto, plain, chunked or liger")
    group.add_argument("--peak-tflops", type=float, help="the device's peak (default: by name)")


def peak_flops(device: str, override: float | None) -> tuple[float, str]:
    """(FLOP/s, what it is) of the device: the named GPU's dense bf16 peak, or a measured fp32
    matmul rate on CPU."""
    import torch

    if override:
        return override * 1e12, f"{override:g} TFLOP/s (given)"
    if device == "cuda":
        name = torch.cuda.get_device_name()
        for key, tflops in PEAK_BF16_TFLOPS.items():
            if key in name:
                return tflops * 1e12, f"{tflops:g} TFLOP/s ({key} dense bf16)"
        raise UserError(f"unknown GPU {name!r}: pass --peak-tflops")
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    a @ b
    began = time.perf_counter()
    for _ in range(5):
        a @ b
    rate = 5 * 2 * 2048**3 / (time.perf_counter() - began)
    return rate, f"{rate / 1e9:.0f} GFLOP/s (measured fp32 2048x2048 matmul)"


def model_flops(run, model_shape, recipe: str) -> float:
    """Model FLOPs of one step (module docstring)."""
    flops = 0.0
    for name, batch in run.batches.items():
        rows, length = batch.ids.shape
        tokens = rows * length
        if recipe == "linearard":
            fwd = model_shape.forward_flops_per_token(length, head=False)
            flops += tokens * 4 * fwd  # student forward and backward, teacher forward
            continue
        head = name == "long" or recipe != "longred"
        flops += tokens * 3 * model_shape.forward_flops_per_token(length, head=head)
        if recipe == "longred" and name != "long":
            flops += tokens * model_shape.forward_flops_per_token(length, head=False)
    return flops


def measure(args, recipe: str, seq_len: int, compiled: bool, peak: float) -> dict:
    """One recipe at one row length: throughput, MFU, peak memory, the model's peak."""
    import torch
    from shape_runs import build, release, shape_config, train_steps

    from longred_bench.training.memory_model import estimate_train_memory
    from longred_bench.training.peak_memory import PeakMemory
    from longred_bench.training.shapes import shape

    model_shape = shape(args.shape, args.layers)
    dtype = torch.bfloat16 if args.device == "cuda" else torch.float32
    cfg = shape_config(
        recipe, seq_len, distributed="fsdp", mixed_precision=args.mixed_precision,
        dtype=str(dtype).removeprefix("torch."), compile=compiled, lm_loss=args.lm_loss,
        activation_checkpointing=not args.no_checkpointing, activation_offload=args.offload,
        **({"impl": args.impl} if args.impl else {}),
    )  # fmt: skip
    memory = PeakMemory(args.device)
    run = build(model_shape, cfg, args.device, dtype)
    seconds = train_steps(run, args.steps)
    info = memory.info()
    timed = seconds[2:] if len(seconds) > 2 else seconds[1:]
    step = statistics.median(timed)
    flops = model_flops(run, model_shape, recipe)
    est = estimate_train_memory(model_shape, cfg, 1, device=args.device, window=seq_len // 4)
    result = {
        "shape": model_shape.name, "recipe": recipe, "seq_len": seq_len,
        "compile": compiled, "offload": args.offload, "tokens_per_step": run.tokens,
        "seconds_per_step": round(step, 4), "tokens_per_second": round(run.tokens / step, 1),
        "mfu": round(flops / step / peak, 4),
        "peak_memory_mib": info.get("peak_memory_mib"),
        "memory_kind": info.get("peak_memory_kind"),
        "model_peak_mib": round(est.peak / 2**20, 1),
    }  # fmt: skip
    del run
    release(args.device)
    return result


def run_shapes(args) -> int:
    """The shape mode of ``bench_train.py``."""
    import torch

    from longred_bench.errors import UserError
    from longred_bench.results import device_name

    info = provenance()
    peak, peak_text = peak_flops(args.device, args.peak_tflops)
    rows = []
    for seq_len in args.seq_len:
        for compiled in [c == "on" for c in args.compile]:
            first = None
            for recipe in args.recipes:
                try:
                    row = measure(args, recipe, seq_len, compiled, peak)
                except UserError as err:  # a setting the recipe refuses (compile, linearard)
                    print(f"skipped {recipe} at {seq_len} (compile {compiled}): {err}")
                    continue
                first = first or row
                row["cost_vs_first"] = round(
                    first["tokens_per_second"] / row["tokens_per_second"], 3
                )
                rows.append(row)
                print(json.dumps(row), flush=True)
    info["loadavg_end"] = loadavg()
    out = Path(args.out)
    stem = f"train_shapes_{args.device}"
    write_csv(rows, out / f"{stem}.csv", list(rows[0]))
    text = (
        f"# Training throughput at model shapes, random weights ({args.device})\n\n"
        + provenance_lines(info, args.command_line)
        + f"Device: {device_name(args.device)}; torch {torch.__version__}; peak {peak_text}; "
        f"mixed precision `{args.mixed_precision}`, activation checkpointing "
        f"{'off' if args.no_checkpointing else 'on'}, activation offload "
        f"{'on' if args.offload else 'off'}, lm_loss `{args.lm_loss}`; {args.steps} "
        "steps per row, the median of those after the first two; `cost_vs_first` is each "
        "recipe's time per token over the first recipe's at the same length and compile "
        "setting; `model_peak_mib` is the memory model's estimate.\n\n"
        + markdown_table(rows, list(rows[0]))
    )
    (out / f"{stem}.md").write_text(text)
    print(text)
    return 0
