"""Cost of a drift measurement against two plain forward passes (original + extended).

``measure_drift`` for one extended model runs the original with q/k capture and hidden states,
then the extended model with capture, computing every layer's attention KL in linear memory and
every layer's hidden cosine. The floor is two plain forwards of the same models on the same
tokens; this script prints the ratio (median of ``--repeats`` runs each, after one warm-up) and
writes it as CSV + Markdown under ``--out``.

Example::

    python benchmarks/bench_drift_cost.py --model smollm2-135m --seq-len 512 --out reports/bench
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time
from pathlib import Path

import torch

from longred_bench.metrics.drift import measure_drift
from longred_bench.models import extend, load
from longred_bench.results import device_name, git_commit


def _median_seconds(fn, repeats: int) -> float:
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--rope", default="abf:theta=1e7")
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--impl", default="auto")
    p.add_argument("--out", type=Path, default=Path("reports/bench"))
    args = p.parse_args()

    original = load(args.model).model
    extended = extend(original, args.rope).eval()
    vocab = original.config.vocab_size
    ids = torch.randint(
        0, vocab, (args.batch, args.seq_len), generator=torch.Generator().manual_seed(0)
    )

    @torch.no_grad()
    def plain() -> None:
        original(ids)
        extended(ids)

    def drift() -> None:
        measure_drift(original, {"e": extended}, [(ids, None)], impl=args.impl, progress=False)

    t_plain = _median_seconds(plain, args.repeats)
    t_drift = _median_seconds(drift, args.repeats)
    row = {
        "model": args.model,
        "rope": args.rope,
        "seq_len": args.seq_len,
        "batch": args.batch,
        "two_forwards_s": round(t_plain, 3),
        "drift_s": round(t_drift, 3),
        "ratio": round(t_drift / t_plain, 3),
        "device": device_name("cpu"),
        "torch": torch.__version__,
        "commit": git_commit(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"drift_cost_{args.model}_{args.seq_len}"
    with open(stem.with_suffix(".csv"), "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(row))
        writer.writeheader()
        writer.writerow(row)
    md = (
        "| model | rope | seq_len | two plain forwards (s) | drift (s) | ratio | device "
        "| commit |\n"
        "|---|---|---|---|---|---|---|---|\n"
        f"| {row['model']} | {row['rope']} | {row['seq_len']} | {row['two_forwards_s']} | "
        f"{row['drift_s']} | {row['ratio']} | {row['device']} | `{row['commit']}` |\n"
    )
    stem.with_suffix(".md").write_text(md)
    print(md)


if __name__ == "__main__":
    main()
