"""One-off timing of ``v_tma.patch`` (column tiles by tensor descriptors) against the kernel of
its commit, as ``benchmarks/sweep_relation_kl_fwd_tiles.py`` times them, its B operands passed as
host tensor descriptors. On CPU (``TRITON_INTERPRET=1``) it checks the outputs only, at small
shapes. Usage: ``python sweep_tma.py N PATCHED_KERNELS_FILE BMxBN:WARPS:STAGES ...``.
"""

import importlib.util
import sys

import torch
from triton.tools.tensor_descriptor import TensorDescriptor

import longred_bench.kernels.triton_impl as ti
from longred_bench.kernels.triton_impl import TileConfig

dev = "cuda" if torch.cuda.is_available() else "cpu"
spec = importlib.util.spec_from_file_location("v_tma", sys.argv[2])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
n = int(sys.argv[1])
H, KV, d = (32, 8, 128) if dev == "cuda" else (4, 2, 64)
dtype = torch.bfloat16 if dev == "cuda" else torch.float32
g = torch.Generator(device=dev).manual_seed(0)


def r(h: int) -> torch.Tensor:
    return torch.randn(1, h, n, d, device=dev, dtype=dtype, generator=g)


x = (r(H), r(KV), r(H), r(KV))
sc = d**-0.5
flops = 2 * n * n * 2 * d * H / 2


def parse(spec_: str) -> TileConfig:
    tiles, warps, stages = spec_.split(":")
    bm, bn = tiles.split("x")
    return TileConfig(int(bm), int(bn), int(warps), int(stages))


for spec_ in sys.argv[3:]:
    c = parse(spec_)

    def new(c: TileConfig = c) -> tuple:
        launch, out = ti.forward_launch(*x, None, True, sc, sc, c)
        ti._relkl_fwd_kernel[launch.grid](*launch.args, **launch.meta)
        return out

    def tma(c: TileConfig = c) -> tuple:
        launch, out = ti.forward_launch(*x, None, True, sc, sc, c)
        args = list(launch.args)
        for i, t in ((1, x[1]), (3, x[3])):
            block = [1, 1, c.block_n, launch.meta["DS"]]
            args[i] = TensorDescriptor(t, list(t.shape), list(t.stride()), block)
        mod._relkl_fwd_kernel[launch.grid](*args, **launch.meta)
        return out

    ref = new()
    for name, f in (("new", new), ("v_tma", tma)):
        try:
            out = f()
            err = max((o - q).abs().max().item() for o, q in zip(out, ref, strict=True))
            if dev == "cuda":
                from triton.testing import do_bench

                ms = do_bench(f, warmup=25, rep=100)
                tf = flops / ms / 1e9
                print(f"{name} {spec_}: {ms:.3f} ms {tf:.1f} TFLOP/s maxdiff {err:.2e}", flush=True)
            else:
                print(f"{name} {spec_}: maxdiff {err:.2e}", flush=True)
        except Exception as e:
            print(f"{name} {spec_}: failed {type(e).__name__}: {str(e)[:300]}", flush=True)
