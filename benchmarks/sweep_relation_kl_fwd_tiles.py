"""Forward tile sweep of the Triton relation KL (CUDA only): this checkout's kernel against a
baseline ``triton_kernels.py`` from another commit, over 18 tile configurations (both
kernels at each configuration before the next, so a run cut short still compares them).
Several baselines, comma-separated, are each labelled by their file name.

Causal, bf16, one batch, 32 query heads, 8 kv heads, head dim 128; time by
``triton.testing.do_bench`` (25 ms warm-up, 100 ms of repetitions); TFLOP/s counts the useful
FLOPs of the causal forward, ``2 n^2 (d_s + d_t) H / 2``; ``maxdiff`` is each output's largest
difference from the first configuration's. ``-`` for the baseline measures this checkout's
kernel alone; tile configurations after it (``BMxBN:WARPS:STAGES``, or
``BMxBN:WARPS:STAGES:MAXNREG`` with a register cap per thread) replace the 18. Prints one
line per (kernel, tiles)::

    git show 756c272:kernels/triton_kernels.py \
      | sed 's/from ._common/from longred_bench.kernels._common/' > /tmp/old_triton_kernels.py
    python benchmarks/sweep_relation_kl_fwd_tiles.py 8192 /tmp/old_triton_kernels.py
"""

import importlib.util
import itertools
import sys
from pathlib import Path

import torch
from triton.testing import do_bench

import longred_bench.kernels.triton_impl as ti
from longred_bench.kernels.triton_impl import TileConfig

n = int(sys.argv[1]) if len(sys.argv) > 1 else 8192
kernels = [("new", ti._relkl_fwd_kernel)]
if len(sys.argv) > 2 and sys.argv[2] != "-":
    files = sys.argv[2].split(",")
    for i, file in enumerate(files):
        spec = importlib.util.spec_from_file_location(f"kernels_{i}", file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        label = "old" if len(files) == 1 else Path(file).stem
        kernels.insert(i, (label, module._relkl_fwd_kernel))
H, KV, d = 32, 8, 128
g = torch.Generator(device="cuda").manual_seed(0)


def r(h: int) -> torch.Tensor:
    return torch.randn(1, h, n, d, device="cuda", dtype=torch.bfloat16, generator=g)


x = (r(H), r(KV), r(H), r(KV))
sc = d**-0.5
flops = 2 * n * n * 2 * d * H / 2
cfgs = [  # (tiles, register cap per thread or None)
    (TileConfig(bm, bn, w, s), None)
    for bm, bn, (w, s) in itertools.product((64, 128), (32, 64, 128), ((4, 2), (8, 2), (8, 3)))
]
if len(sys.argv) > 3:  # BMxBN:WARPS:STAGES[:MAXNREG] ... instead of the 18 above
    cfgs = []
    for spec_ in sys.argv[3:]:
        tiles_, warps_, stages_, *cap_ = spec_.split(":")
        bm_, bn_ = tiles_.split("x")
        cfg_ = TileConfig(int(bm_), int(bn_), int(warps_), int(stages_))
        cfgs.append((cfg_, int(cap_[0]) if cap_ else None))
ref = None
for (c, cap), (name, kern) in itertools.product(cfgs, kernels):  # kernels side by side per tile
    tiles = f"{c.block_m}x{c.block_n} w{c.num_warps} s{c.num_stages}"
    if cap is not None:
        tiles += f" r{cap}"
    try:

        def f(c: TileConfig = c, kern=kern, cap: int | None = cap) -> tuple:
            launch, out = ti.forward_launch(*x, None, True, sc, sc, c)
            # An older kernel may not take every compile-time option of this checkout's.
            meta = {
                k: v
                for k, v in launch.meta.items()
                if k in kern.arg_names or k in ("num_warps", "num_stages")
            }
            if cap is not None:
                meta["maxnreg"] = cap
            kern[launch.grid](*launch.args, **meta)
            return out

        out = f()[0]
        if ref is None:
            ref = out
        err = (out - ref).abs().max().item()
        ms = do_bench(f, warmup=25, rep=100)
        print(f"{name} {tiles}: {ms:.3f} ms {flops / ms / 1e9:.1f} TFLOP/s maxdiff {err:.2e}")
    except Exception as e:
        print(f"{name} {tiles}: failed {type(e).__name__}: {str(e)[:120]}")
