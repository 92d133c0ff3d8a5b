"""``reproduce TABLE --profile P``: the declared runs of a paper table at a scale profile, cached
by config hash under ``$LONGRED_CACHE/runs``, then the table's report builder.

Profiles (see the README): ``smoke`` (tiny random Llama, seconds, structure only), ``smol``
(SmolLM2-135M, real weights, CPU minutes; the default) and ``paper`` (the paper's models on a GPU
with hub access). ``tiny`` needs the suite's own pretrained model, which the training module
provides.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

from longred_bench.cache import cache_dir
from longred_bench.drift_run import DriftConfig, run_drift, save_run
from longred_bench.errors import UserError
from longred_bench.reports.table1 import build_table1
from longred_bench.results import config_hash, read_records

DEFAULT_PROFILE = "smol"
# Bumped when the drift measurement changes, so cached runs of older code are not reused.
DRIFT_VERSION = 1

_ABF_PI = ("pi:factor=4", "pi:factor=16")
TABLE1_PROFILES: dict[str, DriftConfig] = {
    "smoke": DriftConfig(
        original="tiny-random",
        rope=("abf:theta=1e5", "abf:theta=1e6", "abf:theta=1e7", *_ABF_PI),
        texts="random",
        num_texts=2,
        seq_len=64,
        top_m=2,
    ),
    "smol": DriftConfig(
        original="smollm2-135m",
        rope=("abf:theta=1e6", "abf:theta=1e7", "abf:theta=1e8", *_ABF_PI),
        texts="brown",
        num_texts=12,
        seq_len=512,
        top_m=6,
    ),
    "paper": DriftConfig(
        original="meta-llama/Meta-Llama-3-8B",
        rope=("abf:theta=2e7", "abf:theta=1e8", *_ABF_PI),
        texts="austen:all",
        num_texts=100,
        seq_len=8192,
        top_m=6,
        device="cuda",
        dtype="bfloat16",
    ),
}


def _table1(profile: str, out: Path, *, force: bool, progress: bool) -> list[Path]:
    if profile not in TABLE1_PROFILES:
        raise UserError(
            f"table1 has no profile {profile!r} yet; available: {', '.join(TABLE1_PROFILES)}"
        )
    cfg = TABLE1_PROFILES[profile]
    key = config_hash({**cfg.to_dict(), "drift_version": DRIFT_VERSION})
    run_dir = cache_dir() / "runs" / f"table1-{profile}-{key}"
    results = run_dir / "drift.jsonl"
    if force or not results.is_file():
        records, provenance = run_drift(cfg, progress=progress)
        save_run(run_dir, records, provenance)
    records = read_records(results)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(results, out / "table1.jsonl")
    command = (
        "nox -s reproduce_table1"
        if profile == DEFAULT_PROFILE
        else f"longred-bench reproduce table1 --profile {profile}"
    )
    md, png = build_table1(records, out, profile=profile, command=command)
    return [md, png, out / "table1.jsonl"]


def _kernel(profile: str, out: Path, *, force: bool, progress: bool) -> list[Path]:
    """The relation-KL kernel table from the committed benchmark CSVs (profile-independent)."""
    from longred_bench.reports.kernel import build_kernel_report

    bench = Path("reports") / "kernels"
    cpu_csv = bench / "relation_kl_cpu.csv"
    if not cpu_csv.is_file():
        raise UserError(f"{cpu_csv} is missing: run `nox -s bench_kernels` first")
    return build_kernel_report(
        cpu_csv, bench / "relation_kl_gpu.csv", out, compile_csv=bench / "compile_sm90.csv"
    )


TABLES: dict[str, Callable[..., list[Path]]] = {"table1": _table1, "kernel": _kernel}


def reproduce(
    table: str,
    profile: str = DEFAULT_PROFILE,
    out: Path | None = None,
    *,
    force: bool = False,
    progress: bool = True,
) -> list[Path]:
    """Run (or reuse) the runs of ``table`` at ``profile`` and write its report; returns paths."""
    if table not in TABLES:
        raise UserError(f"unknown table {table!r}; available: {', '.join(TABLES)}")
    out = out if out is not None else Path("reports") / profile
    return TABLES[table](profile, out, force=force, progress=progress)
