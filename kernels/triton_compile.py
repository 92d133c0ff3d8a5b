"""Compile the Triton relation-KL kernels for a CUDA target without a GPU.

``triton.compile`` with an explicit ``GPUTarget`` runs the whole toolchain (Triton IR, PTX, and
the ``ptxas`` that ships with Triton) on a machine with no GPU and no driver.  This module builds
the very launches the wrappers in :mod:`.triton_impl` would run (same arguments, constexprs,
tiles, warps and stages), gives every argument the specialisation a real launch gets (Triton's
own ``specialize`` rule: 16-byte-aligned pointers and integers divisible by 16 are marked, an
integer equal to 1 becomes a constant), compiles each kernel for the target and reads
``ptxas``'s resource report: registers per thread, spill stores and loads, stack frame, and
shared memory.  It proves the kernels build for the target under the installed Triton, and
shows whether a tile configuration spills; it says nothing about speed.

It needs Triton's compiler, not its interpreter: run it in a process without
``TRITON_INTERPRET=1``.  ``python -m longred_bench.kernels.triton_compile --help``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as dt
import io
import itertools
import re
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import triton

from longred_bench.results import git_commit
from longred_bench.source_tree import source_hash

from .triton_impl import (
    KernelLaunch,
    TileConfig,
    _interpreted,
    backward_launch,
    default_tile_configs,
    forward_launch,
)

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
KERNELS = ("fwd", "bwd_da", "bwd_db")
_PTXAS_REGS = re.compile(r"Used (\d+) registers")
_PTXAS_SPILLS = re.compile(
    r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads"
)
KEY = ("triton", "arch", "kernel", "dtype", "head_dim", "heads", "kv_heads", "n", "causal")
"""Columns that identify a row of the compile CSV; a rerun replaces rows with the same key."""


@dataclass(frozen=True)
class CompileRecord:
    """ptxas's resource report for one kernel compiled for one target and configuration."""

    triton: str
    arch: int
    kernel: str
    dtype: str
    head_dim: int
    heads: int
    kv_heads: int
    n: int
    causal: bool
    block_m: int
    block_n: int
    num_warps: int
    num_stages: int
    registers: int
    spill_stores: int
    spill_loads: int
    stack_bytes: int
    shared_bytes: int
    compile_s: float
    git_commit: str
    source: str  # hash of the source that compiled (longred_bench.source_tree)
    timestamp: str


def parse_ptxas_log(log: str) -> tuple[int, int, int, int]:
    """``(registers, stack_bytes, spill_stores, spill_loads)`` from a ``ptxas -v`` log.

    Raises ``ValueError`` naming the log when it holds no resource report.
    """
    regs, spills = _PTXAS_REGS.findall(log), _PTXAS_SPILLS.findall(log)
    if not regs or not spills:
        raise ValueError(f"no ptxas resource report in the compile log: {log.strip()[:300]!r}")
    stack, stores, loads = (int(x) for x in spills[-1])
    return int(regs[-1]), stack, stores, loads


def specialisation(launch: KernelLaunch, backend) -> tuple[dict, dict, dict]:
    """``(signature, constexprs, attrs)`` of ``launch`` as a real launch would specialise it."""
    from triton._C.libtriton import native_specialize_impl
    from triton.backends.compiler import BaseBackend

    names = launch.kernel.arg_names
    signature, constexprs, attrs = {}, {}, {}
    for index, (name, value) in enumerate(zip(names, launch.args, strict=False)):
        kind, spec = native_specialize_impl(BaseBackend, value, False, True, True)
        if kind == "constexpr":
            signature[name], constexprs[name] = "constexpr", spec
            continue
        signature[name] = kind
        if isinstance(spec, str):
            attrs[(index,)] = backend.parse_attr(spec)
    for name in names[len(launch.args) :]:
        signature[name], constexprs[name] = "constexpr", launch.meta[name]
    return signature, constexprs, attrs


def compile_launch(launch: KernelLaunch, arch: int = 90) -> tuple[object, str]:
    """Compile ``launch``'s kernel for ``sm_<arch>``; returns the compiled kernel and ptxas log."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource, make_backend

    if _interpreted():
        raise RuntimeError(
            "triton_compile needs Triton's compiler: run it in a process without TRITON_INTERPRET=1"
        )
    target = GPUTarget("cuda", arch, 32)
    signature, constexprs, attrs = specialisation(launch, make_backend(target))
    options = {k: launch.meta[k] for k in ("num_warps", "num_stages")}
    source = ASTSource(launch.kernel, signature, constexprs, attrs)
    knobs = triton.knobs
    log = io.StringIO()
    with contextlib.ExitStack() as stack:
        for group, name in (("nvidia", "dump_ptxas_log"), ("compilation", "always_compile")):
            obj = getattr(knobs, group)
            old = getattr(obj, name)
            setattr(obj, name, True)
            stack.callback(setattr, obj, name, old)
        stack.enter_context(contextlib.redirect_stdout(log))
        compiled = triton.compile(source, target=target, options=options)
    return compiled, log.getvalue()


def launches(
    dtype: torch.dtype,
    head_dim: int,
    heads: int,
    kv_heads: int,
    n: int,
    causal: bool,
    tiles: tuple[TileConfig, TileConfig] | None = None,
) -> dict[str, tuple[KernelLaunch, TileConfig]]:
    """The three launches of a masked ``relation_kl`` call of this shape (CPU stand-in tensors:
    only their dtype, strides and alignment matter), with the tiles each one uses."""
    fwd_tiles, bwd_tiles = tiles or default_tile_configs(head_dim, head_dim, dtype)
    a = torch.zeros(1, heads, n, head_dim, dtype=dtype)
    b = torch.zeros(1, kv_heads, n, head_dim, dtype=dtype)
    mask = torch.ones(1, n, dtype=torch.int8)
    scale = head_dim**-0.5
    fwd, (_, lse_s, lse_t) = forward_launch(a, b, a, b, mask, causal, scale, scale, fwd_tiles)
    rows = (mask, lse_s, lse_t, lse_s)
    out = {"fwd": (fwd, fwd_tiles)}
    for kernel, wrt in (("bwd_da", "a"), ("bwd_db", "b")):
        launch, _ = backward_launch(wrt, a, b, a, b, *rows, causal, scale, scale, bwd_tiles)
        out[kernel] = (launch, bwd_tiles)
    return out


def compile_records(
    dtypes: Sequence[str] = ("bf16", "fp16", "fp32"),
    head_dims: Sequence[int] = (64, 128),
    kv_heads: Sequence[int] = (8, 2),
    heads: int = 8,
    n: int = 4096,
    causals: Sequence[bool] = (True, False),
    arch: int = 90,
    kernels: Sequence[str] = KERNELS,
) -> Iterator[CompileRecord]:
    """Compile every kernel for every configuration; one record each, in order."""
    commit, source = git_commit(), source_hash()[:12]
    for dtype, head_dim, kv, causal in itertools.product(dtypes, head_dims, kv_heads, causals):
        built = launches(DTYPES[dtype], head_dim, heads, kv, n, causal)
        for kernel in kernels:
            launch, tiles = built[kernel]
            start = time.perf_counter()
            compiled, log = compile_launch(launch, arch)
            regs, stack, stores, loads = parse_ptxas_log(log)
            yield CompileRecord(
                triton=triton.__version__, arch=arch, kernel=kernel, dtype=dtype,
                head_dim=head_dim, heads=heads, kv_heads=kv, n=n, causal=causal,
                block_m=tiles.block_m, block_n=tiles.block_n, num_warps=tiles.num_warps,
                num_stages=tiles.num_stages, registers=regs, spill_stores=stores,
                spill_loads=loads, stack_bytes=stack, shared_bytes=int(compiled.metadata.shared),
                compile_s=round(time.perf_counter() - start, 2), git_commit=commit, source=source,
                timestamp=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            )  # fmt: skip


def write_csv(records: Sequence[CompileRecord], path: Path) -> None:
    """Write ``records`` to ``path``, keeping old rows whose :data:`KEY` is not among them."""
    fields = list(CompileRecord.__dataclass_fields__)
    new = [{k: str(v) for k, v in asdict(r).items()} for r in records]
    keys = {tuple(row[k] for k in KEY) for row in new}
    old = []
    if path.is_file():
        with path.open() as fh:
            old = [r for r in csv.DictReader(fh) if tuple(r[k] for k in KEY) not in keys]
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(old + new)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m longred_bench.kernels.triton_compile",
        description="Compile the relation-KL Triton kernels for a CUDA target (no GPU needed) "
        "and report registers, spills and shared memory per kernel.",
    )
    parser.add_argument("--arch", type=int, default=90, help="compute capability x10 (90: H100)")
    parser.add_argument("--dtypes", nargs="+", default=["bf16", "fp16", "fp32"], choices=DTYPES)
    parser.add_argument("--head-dims", nargs="+", type=int, default=[64, 128])
    parser.add_argument("--kv-heads", nargs="+", type=int, default=[8, 2])
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--n", type=int, default=4096, help="sequence length (specialisation)")
    parser.add_argument("--causal", nargs="+", default=["true", "false"], choices=["true", "false"])
    parser.add_argument("--kernels", nargs="+", default=list(KERNELS), choices=KERNELS)
    parser.add_argument("--out", type=Path, help="CSV to write (rows of the same key replaced)")
    args = parser.parse_args(argv)
    for kv in args.kv_heads:
        if kv < 1 or args.heads % kv:
            parser.error(f"--kv-heads {kv} must divide --heads {args.heads}")
    records = []
    print(
        f"triton {triton.__version__}, sm_{args.arch}: kernel dtype d kv causal tiles "
        "-> registers, spill stores/loads, shared"
    )
    for r in compile_records(
        args.dtypes, args.head_dims, args.kv_heads, args.heads, args.n,
        [c == "true" for c in args.causal], args.arch, args.kernels,
    ):  # fmt: skip
        records.append(r)
        print(
            f"{r.kernel:7s} {r.dtype} d={r.head_dim} kv={r.kv_heads} causal={r.causal!s:5s} "
            f"{r.block_m}x{r.block_n} w{r.num_warps} s{r.num_stages} -> {r.registers} regs, "
            f"spills {r.spill_stores}/{r.spill_loads} B, shared {r.shared_bytes} B "
            f"({r.compile_s:.1f} s)",
            flush=True,
        )
    if args.out is not None:
        write_csv(records, args.out)
        print(f"wrote {args.out}")
    spilled = sum(r.spill_stores > 0 for r in records)
    print(f"{len(records)} kernels compiled, {spilled} with register spills")
    return 0


if __name__ == "__main__":
    sys.exit(main())
