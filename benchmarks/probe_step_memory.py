"""Where one training step's memory goes, phase by phase, with and without activation offload.

For a recipe at a random-init model shape (``benchmarks/shape_runs.py``: no weights read) it runs
``--steps`` optimizer steps and, for the last, records the CUDA allocator's memory at each phase:
allocated before the step, the peak and the allocation at the end of the forward pass (the
recipe's losses), the peak of the backward pass, the peak of the optimizer step; with
``--offload both`` it does so without and then with activation offload. Under offload it also
lists what the saved-tensor hooks moved to the host: bytes, tensors, how many of them share a
storage address with a tensor moved before (the same storage saved twice comes back as two device
copies; an upper bound, since the allocator may reuse a freed tensor's address), and the largest
shapes. Prints one JSON line per configuration and writes them to ``--out`` (JSON lines).

    python benchmarks/probe_step_memory.py --shape llama-1b --recipe linearard --seq-len 32768 \\
        --offload both --out reports/bench/h200/step_memory.jsonl
"""

from __future__ import annotations

import argparse
import collections
import json
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import cuda_sync, provenance
from shape_runs import build, one_step, release, shape_config

from longred_bench.results import device_name
from longred_bench.training.memory_model import estimate_train_memory
from longred_bench.training.offload import HostOffload
from longred_bench.training.shapes import shape

MIB = 2**20


class CountingOffload(HostOffload):
    """:class:`HostOffload` that also records what it moved: shapes, bytes, aliased storage."""

    def __init__(self) -> None:
        super().__init__()
        self.shapes: collections.Counter = collections.Counter()
        self.storages: set[int] = set()
        self.aliased = 0

    def pack(self, tensor: torch.Tensor):
        packed = super().pack(tensor)
        if isinstance(packed, tuple):
            self.shapes[(tuple(tensor.shape), str(tensor.dtype))] += 1
            ptr = tensor.untyped_storage().data_ptr()
            self.aliased += ptr in self.storages
            self.storages.add(ptr)
        return packed


class Phases:
    """Allocator readings of one step, in MiB (peaks over each phase; nothing off CUDA):
    :meth:`mark` is ``shape_runs.one_step``'s ``mark``."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.device = device
        self.marks: dict[str, float] = {}

    def mark(self, phase: str, when: str) -> None:
        cuda_sync(self.device)
        if not self.cuda:
            return
        if when == "start":
            self.marks[f"{phase}_start_mib"] = torch.cuda.memory_allocated(self.device) / MIB
            torch.cuda.reset_peak_memory_stats(self.device)
        else:
            self.marks[f"{phase}_peak_mib"] = torch.cuda.max_memory_allocated(self.device) / MIB
            self.marks[f"{phase}_end_mib"] = torch.cuda.memory_allocated(self.device) / MIB


def probe(args: argparse.Namespace, offload_on: bool) -> dict:
    device = torch.device(args.device)
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    model_shape = shape(args.shape, args.layers)
    cfg = shape_config(
        args.recipe, args.seq_len, distributed="fsdp", mixed_precision="fsdp",
        dtype=str(dtype).removeprefix("torch."), activation_checkpointing=True,
        activation_offload=offload_on, impl=args.impl,
    )  # fmt: skip
    run = build(model_shape, cfg, args.device, dtype)
    for _ in range(args.steps - 1):
        one_step(run, HostOffload() if offload_on else None)
    offload = CountingOffload() if offload_on else None
    phases = Phases(device)
    one_step(run, offload, phases.mark)
    est = estimate_train_memory(model_shape, cfg, 1, device=args.device, window=args.seq_len // 4)
    row = {
        "shape": model_shape.name, "recipe": args.recipe, "seq_len": args.seq_len,
        "offload": offload_on, **{k: round(v, 1) for k, v in phases.marks.items()},
        "model": est.gib(),
    }  # fmt: skip
    if offload is not None:
        row["moved_mib"] = round(offload.moved / MIB, 1)
        row["moved_tensors"] = sum(offload.shapes.values())
        row["moved_aliased"] = offload.aliased
        row["moved_largest"] = [
            [list(s), dt, n] for (s, dt), n in sorted(
                offload.shapes.items(), key=lambda kv: -torch.Size(kv[0][0]).numel() * kv[1]
            )[:8]
        ]  # fmt: skip
    del run
    release(device)
    return row


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--shape", default="llama-1b")
    p.add_argument("--layers", type=int)
    p.add_argument("--recipe", default="linearard")
    p.add_argument("--seq-len", type=int, default=32768)
    p.add_argument("--steps", type=int, default=2, help="steps run; the last is recorded")
    p.add_argument("--offload", default="both", choices=["off", "on", "both"])
    p.add_argument("--impl", default="auto")
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--out", type=Path)
    args = p.parse_args()
    settings = {"off": [False], "on": [True], "both": [False, True]}[args.offload]
    info = provenance()
    rows = []
    for on in settings:
        row = {**probe(args, on), "device": device_name(args.device), "torch": torch.__version__}
        row.update(commit=info["commit"], source=info["source"])
        rows.append(row)
        print(json.dumps(row), flush=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text("".join(json.dumps(r) + "\n" for r in rows))


if __name__ == "__main__":
    main()
