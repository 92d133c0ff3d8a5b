"""Kernel report section: the Triton kernels compiled for a GPU target without a GPU.

Reads the CSV of ``python -m longred_bench.kernels.triton_compile`` (``nox -s compile_kernels``:
registers, spills and shared memory per kernel, Triton version and configuration) and returns
Markdown lines: one row per (dtype, head dim, kernel) with each Triton version's register range
and largest spill over the KV-head and causal variants.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

KERNEL_LABEL = {"fwd": "forward", "bwd_da": "backward dA", "bwd_db": "backward dB"}


def read_compile_csv(path: Path) -> pd.DataFrame:
    """The compile CSV with the Triton version kept as text."""
    text = ("triton", "git_commit", "source", "timestamp")
    return pd.read_csv(path, dtype={c: str for c in text})


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) if p.isdigit() else 0 for p in version.split("."))


def commits(df: pd.DataFrame) -> str:
    """Each commit the rows name, with its source hash where the rows recorded one (a
    ``source`` column; rows made before it was recorded have none)."""
    if "source" not in df:
        df = df.assign(source="")
    pairs = df[["git_commit", "source"]].fillna("").drop_duplicates().itertuples(index=False)
    return ", ".join(f"`{c}`" + (f" (source `{s}`)" if s else "") for c, s in pairs)


def compile_section(df: pd.DataFrame, csv_name: str) -> list[str]:
    """Markdown lines summarising the compile CSV ``df`` (read from ``csv_name``)."""
    versions = sorted(df["triton"].unique(), key=_version_key)
    archs = ", ".join(f"sm_{a}" for a in sorted(df["arch"].unique()))
    shapes = df.iloc[0]
    spilled = df[df["spill_stores"] > 0]
    spill_list = "; ".join(
        f"triton {r['triton']} {r['kernel']} {r['dtype']} d={r['head_dim']} "
        f"kv={r['kv_heads']} causal={r['causal']}: {r['spill_stores']} B"
        for _, r in spilled.iterrows()
    )
    lines = [
        f"## Compiled for {archs} without a GPU (`{csv_name}`)",
        "",
        "`triton.compile` with an explicit target runs Triton's whole toolchain, its own `ptxas` "
        "included, on this CPU machine; each launch gets the specialisation a real launch of "
        f"that shape gets (n={shapes['n']}, {shapes['heads']} query heads, default tiles). "
        "It shows that the kernels build under each Triton version and whether a tile "
        "configuration spills registers; it says nothing about speed.",
        "",
        f"- Triton versions: {', '.join(versions)}; {len(df)} kernels compiled, "
        f"{len(spilled)} with register spills" + (f" ({spill_list})." if spill_list else "."),
        f"- Commit {commits(df)}, compiled "
        f"{df['timestamp'].min()} to {df['timestamp'].max()}, on a machine without a GPU.",
        "- Registers: min-max over KV heads "
        f"{sorted(int(k) for k in df['kv_heads'].unique())} and causal / not; "
        "spill: largest spill-store bytes.",
        "",
    ]
    head = ["dtype", "d", "kernel", "tiles (m x n, warps, stages)"]
    for v in versions:
        head += [f"triton {v} registers", f"triton {v} spill B"]
    head.append("shared KiB")
    lines += [f"| {' | '.join(head)} |", "|---|---:|---|---|" + "---:|" * (len(head) - 4)]
    order = {k: i for i, k in enumerate(KERNEL_LABEL)}
    groups = df.groupby(["dtype", "head_dim", "kernel"], sort=False)
    keys = sorted(groups.groups, key=lambda k: (k[0], k[1], order.get(k[2], 9)))
    for dtype, d, kernel in keys:
        g = groups.get_group((dtype, d, kernel))
        tiles = sorted(
            {f"{r.block_m}x{r.block_n}, {r.num_warps}, {r.num_stages}" for r in g.itertuples()}
        )
        cells = [dtype, str(d), KERNEL_LABEL.get(kernel, kernel), "; ".join(tiles)]
        for v in versions:
            gv = g[g["triton"] == v]
            if gv.empty:
                cells += ["", ""]
                continue
            lo, hi = int(gv["registers"].min()), int(gv["registers"].max())
            cells += [f"{lo}-{hi}" if lo != hi else str(lo), str(int(gv["spill_stores"].max()))]
        cells.append(f"{g['shared_bytes'].max() / 1024:.0f}")
        lines.append(f"| {' | '.join(cells)} |")
    lines.append("")
    return lines
