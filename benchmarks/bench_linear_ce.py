"""Memory and time of the chunked linear cross-entropy against the plain one (CPU, fp32).

For each row length it runs, in a fresh process each, the loss and its backward pass of
``hidden [tokens, dim] @ weight^T [dim, vocab]`` by ``plain`` (whole logits, ``F.cross_entropy``)
and by ``chunked`` (``longred_bench.kernels.linear_ce``), and reports the peak resident memory
above what the process held before the call (glibc's mmap threshold fixed at 64 KiB, so a freed
tensor leaves the resident set at once), the seconds, and, where both ran at a length, how far the
chunked loss and gradients are from the plain ones (relative, in norm). Defaults: SmolLM2's width
(576) and a 50,257-token vocabulary (GPT-2's), rows of 2K to 16K tokens. Writes
``linear_ce_cpu.csv`` / ``.md`` under ``--out``.

    python benchmarks/bench_linear_ce.py --out reports/bench

A length whose plain form would need more than ``--max-gib`` (estimated at 3 x the fp32 logits)
is not run plainly; the report says so.
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
    command_line,
    loadavg,
    markdown_table,
    provenance,
    provenance_lines,
    run_script,
    write_csv,
)

CHILD = r"""
import json, sys, time, torch
from longred_bench.kernels.linear_ce import linear_cross_entropy
from longred_bench.training.peak_memory import PeakMemory
tokens, dim, vocab, impl, compare = sys.argv[1:]
tokens, dim, vocab, compare = int(tokens), int(dim), int(vocab), compare == "1"
gen = torch.Generator().manual_seed(0)
hidden = (torch.randn(tokens, dim, generator=gen) * 0.5).requires_grad_(True)
weight = (torch.randn(vocab, dim, generator=gen) * dim ** -0.5).requires_grad_(True)
target = torch.randint(0, vocab, (tokens,), generator=gen)
target[::97] = -100
def run(name):
    hidden.grad = weight.grad = None
    loss = linear_cross_entropy(hidden, weight, target, impl=name)
    loss.backward()
    return loss.detach(), hidden.grad, weight.grad
peak = PeakMemory("cpu")
import re
base = int(re.search(r"VmRSS:\s+(\d+)", open("/proc/self/status").read()).group(1)) / 1024
start = time.perf_counter()
loss, gh, gw = run(impl)
seconds = time.perf_counter() - start
out = {"peak_mib": round(peak.info()["peak_memory_mib"] - base, 1), "seconds": round(seconds, 2),
       "loss": float(loss)}
if compare:
    gh, gw = gh.clone(), gw.clone()
    other, oh, ow = run("chunked")
    out["loss_rel_diff"] = float(abs(other - loss) / abs(loss))
    out["grad_hidden_rel_diff"] = float((oh - gh).norm() / gh.norm())
    out["grad_weight_rel_diff"] = float((ow - gw).norm() / gw.norm())
print(json.dumps(out))
"""


def measure(tokens: int, dim: int, vocab: int, impl: str, compare: bool, threads: int) -> dict:
    """One fresh process: peak resident MiB above its start, seconds, (differences)."""
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "65536", "OMP_NUM_THREADS": str(threads)}
    args = [str(tokens), str(dim), str(vocab), impl, "1" if compare else "0"]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, *args], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lengths", type=int, nargs="+", default=[2048, 4096, 8192, 16384])
    parser.add_argument("--dim", type=int, default=576)
    parser.add_argument("--vocab", type=int, default=50257)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--max-gib", type=float, default=8.0, help="memory allowed a plain run")
    parser.add_argument("--out", default="reports/bench")
    args = parser.parse_args(argv)
    info = provenance()
    rows = []
    for tokens in args.lengths:
        plain_gib = 3 * tokens * args.vocab * 4 / 2**30
        row = {"tokens": tokens, "vocab": args.vocab, "dim": args.dim}
        chunked = measure(tokens, args.dim, args.vocab, "chunked", False, args.threads)
        row.update(chunked_peak_mib=chunked["peak_mib"], chunked_seconds=chunked["seconds"])
        if plain_gib <= args.max_gib:
            plain = measure(tokens, args.dim, args.vocab, "plain", True, args.threads)
            row.update(plain_peak_mib=plain["peak_mib"], plain_seconds=plain["seconds"])
            row["chunked_over_plain"] = round(chunked["peak_mib"] / plain["peak_mib"], 3)
            for key in ("loss_rel_diff", "grad_hidden_rel_diff", "grad_weight_rel_diff"):
                row[key] = f"{plain[key]:.1e}"
        else:
            row["plain_peak_mib"] = f"not run (about {plain_gib:.1f} GiB > --max-gib)"
            measured = [r for r in rows if isinstance(r.get("plain_peak_mib"), float)]
            if measured:  # the plain peak grows with the tokens: a shorter row's is a lower bound
                bound = measured[-1]
                row["ratio_bound"] = round(chunked["peak_mib"] / bound["plain_peak_mib"], 3)
                row["chunked_over_plain"] = (
                    f"<= {row['ratio_bound']:.3f} (plain at {bound['tokens']} tokens as a lower "
                    "bound)"
                )
        rows.append(row)
        print(json.dumps(row), flush=True)
    info["loadavg_end"] = loadavg()
    columns = ["tokens", "vocab", "dim", "plain_peak_mib", "chunked_peak_mib",
               "chunked_over_plain", "plain_seconds", "chunked_seconds", "loss_rel_diff",
               "grad_hidden_rel_diff", "grad_weight_rel_diff"]  # fmt: skip
    out = Path(args.out)
    write_csv(rows, out / "linear_ce_cpu.csv", columns)
    cmd = command_line(__file__, argv)
    text = (
        "# Linear cross-entropy: chunked against plain (CPU, fp32)\n\n"
        + provenance_lines(info, cmd.strip())
        + f"Loss and backward of `hidden [tokens, {args.dim}] @ weight^T` against targets (every "
        "97th ignored), each form in a fresh process with glibc's mmap threshold at 64 KiB; peak "
        "resident memory above the process's own before the call; differences relative, in "
        f"norm, of the chunked form against the plain one; {args.threads} threads.\n\n"
        + markdown_table(rows, columns)
    )
    longest = rows[-1]
    ratio = longest.get("chunked_over_plain")
    bound = longest.get("ratio_bound")  # plain not run there: a shorter row's plain peak
    value = bound if bound is not None else ratio if isinstance(ratio, float) else None
    verdict = "not measured" if value is None else "met" if value <= 0.25 else "missed"
    text += (
        f"\nTarget: at {longest['tokens']} tokens the chunked peak is at most 1/4 of the plain "
        f"one's: {verdict} (chunked / plain = {'-' if ratio is None else ratio}).\n"
    )
    (out / "linear_ce_cpu.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    run_script(main)
