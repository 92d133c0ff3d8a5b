"""Training speed with glibc's default malloc against ``longred_bench.heap.keep_freed_memory``.

Trains ``--steps`` steps of tiny-base's pretraining mix (recipe ``pretrain`` at profile ``tiny``
from its seed, copy warm-up and held-out evaluation left out) in a child process per setting,
``LONGRED_MALLOC=default`` and ``keep`` in turn, ``--repeats`` times each. Reports per child the
seconds per step (the first step excluded), user and system CPU seconds, minor page faults, peak
resident memory, and a hash of the final weights, which must be the same for both settings.
Writes ``malloc_tiny_base.csv`` / ``.md`` under ``--out`` and prints the Markdown.

    python benchmarks/bench_malloc.py --out reports/bench
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from statistics import median

sys.path.insert(0, str(Path(__file__).parent))
from bench_common import (
    command_line,
    loadavg,
    markdown_table,
    provenance,
    provenance_lines,
    run_script,
    write_csv,
)

COLUMNS = (
    "malloc", "repeat", "seconds_per_step", "user_s", "system_s", "minor_faults", "peak_rss_mib",
    "weights",
)  # fmt: skip


def child(steps: int) -> dict:
    """Train in this process under the ``LONGRED_MALLOC`` it was started with."""
    from longred_bench.heap import keep_freed_memory

    kept = keep_freed_memory()
    from bench_train import measure
    from safetensors.torch import load_file

    extra = {"copy_warmup_steps": 0, "heldout_every": 0}
    before = resource.getrusage(resource.RUSAGE_SELF)
    with tempfile.TemporaryDirectory() as tmp:
        timing = measure("pretrain", extra, steps, Path(tmp))
        weights = load_file(str(Path(tmp) / "pretrain" / "final" / "model.safetensors"))
    after = resource.getrusage(resource.RUSAGE_SELF)
    digest = hashlib.sha256()
    for name in sorted(weights):
        digest.update(name.encode() + weights[name].numpy().tobytes())
    return {
        "malloc": "keep" if kept else "default",
        "seconds_per_step": timing["seconds_per_step"],
        "user_s": round(after.ru_utime - before.ru_utime, 1),
        "system_s": round(after.ru_stime - before.ru_stime, 1),
        "minor_faults": after.ru_minflt - before.ru_minflt,
        "peak_rss_mib": round(after.ru_maxrss / 1024),
        "weights": digest.hexdigest()[:16],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30, help="optimizer steps per child")
    parser.add_argument("--repeats", type=int, default=2, help="children per setting")
    parser.add_argument("--out", default="reports/bench", help="output folder")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.steps < 2 or args.repeats < 1:
        parser.error("--steps must be at least 2 (the first is not timed), --repeats at least 1")
    if args.child:
        print(json.dumps(child(args.steps)))
        return 0
    info = provenance()
    rows = []
    for repeat in range(1, args.repeats + 1):
        for mode in ("default", "keep"):
            env = {**os.environ, "LONGRED_MALLOC": mode}
            cmd = [sys.executable, __file__, "--child", "--steps", str(args.steps)]
            done = subprocess.run(cmd, env=env, capture_output=True, text=True)
            if done.returncode:
                tail = "\n".join(done.stderr.strip().splitlines()[-15:])
                why = f"the child run with LONGRED_MALLOC={mode} failed (exit {done.returncode})"
                print(f"{tail}\nerror: {why}; its last lines are above", file=sys.stderr)
                return 1
            row = {**json.loads(done.stdout.strip().splitlines()[-1]), "repeat": repeat}
            print(json.dumps(row), flush=True)
            rows.append(row)
    info["loadavg_end"] = loadavg()
    out = Path(args.out)
    write_csv(rows, out / "malloc_tiny_base.csv", COLUMNS)
    step = {
        m: round(median(r["seconds_per_step"] for r in rows if r["malloc"] == m), 3)
        for m in ("default", "keep")
    }
    same = len({r["weights"] for r in rows}) == 1
    cmd = command_line(__file__, argv)
    text = (
        "# Training steps with glibc's default malloc and with freed memory kept\n\n"
        + provenance_lines(info, cmd)
        + f"{args.steps} steps of tiny-base's pretraining mix (8,192 tokens a step) per child "
        "process; seconds per step exclude the first step.\n\n"
        + markdown_table(rows, COLUMNS)
        + f"\nMedian seconds per step: {step['default']} (default) and {step['keep']} (kept): "
        f"**{step['default'] / step['keep']:.2f}x** faster kept. Final weights identical across "
        f"every child: **{'yes' if same else 'no'}**.\n"
    )
    (out / "malloc_tiny_base.md").write_text(text)
    print(text)
    return 0 if same else 1


if __name__ == "__main__":
    run_script(main)
