"""Cost of a drift measurement against two plain forward passes (original + extended).

``measure_drift`` for one extended model runs the original with q/k capture and hidden states,
then the extended model with capture, computing every layer's attention KL in linear memory and
every layer's hidden cosine. In one run (median of ``--repeats`` after one warm-up each) this
script times:

* two plain forwards of the same models on the same tokens (the floor named in the issue);
* two body forwards (``logits_to_keep=1``: no vocabulary projection, which drift does not need);
* ``measure_drift``;
* the same drift the plain way: eager attention, every attention map kept, KL from the maps.

It then profiles one more ``measure_drift`` with ``torch.profiler`` (phases named by
:func:`torch.profiler.record_function` around the functions drift calls) and writes the times,
ratios and the profile breakdown as CSV + Markdown under ``--out``.

Example::

    python benchmarks/bench_drift_cost.py --model smollm2-135m --seq-len 2048 --out reports/bench

On a GPU (``--device cuda``, bf16 by default there) it also records the peak memory of one plain
pair and of one drift pass; ``--shape`` measures a randomly initialised model of a named shape
(``training/shapes.py``: no weights read); ``--no-eager`` skips the eager-maps comparison (every
layer's ``[heads, n, n]`` map: tens of GB per layer at 32K) and ``--no-profile`` the breakdown::

    python benchmarks/bench_drift_cost.py --device cuda --shape smollm2-135m --seq-len 32768 \
        --no-eager --no-profile --out reports/bench
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from transformers import AttentionInterface
from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

import longred_bench.metrics.drift as drift_module
import longred_bench.models.capture as capture_module
from longred_bench.cli.devices import check_device
from longred_bench.metrics.drift import measure_drift
from longred_bench.models.loading import extend, load
from longred_bench.results import device_name, git_commit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import (
    command_line,
    cuda_sync,
    file_label,
    loadavg,
    run_script,
    source12,
    write_csv,
)

PHASES = {
    "kl_student": ("relation_kl", "relation_kl_stats"),
    "kl_teacher": ("teacher_terms",),
    "hidden_cosine": ("masked_mean_cosine",),
}
"""Profile phase -> names in :mod:`longred_bench.metrics.drift` whose calls it covers."""


def _median_seconds(fn: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``repeats`` calls of ``fn`` after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        cuda_sync()
        start = time.perf_counter()
        fn()
        cuda_sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _peak_mib(fn: Callable[[], object], device: torch.device) -> float | None:
    """Peak GPU memory (MiB) allocated during one call of ``fn`` above what was allocated
    before it (the models' weights); None off CUDA."""
    if device.type != "cuda":
        return None
    cuda_sync()
    base = torch.cuda.memory_allocated(device)
    torch.cuda.reset_peak_memory_stats(device)
    fn()
    cuda_sync()
    return round((torch.cuda.max_memory_allocated(device) - base) / 2**20, 1)


def _map_kl(p_t: torch.Tensor, p_s: torch.Tensor) -> float:
    """Sum over rows of KL(p_t || p_s) of two attention maps ``[B, H, n, n]`` (masked: 0)."""
    log_s = p_s.clamp_min(torch.finfo(p_s.dtype).tiny).log()
    return float((torch.xlogy(p_t, p_t) - p_t * log_s).sum())


@torch.no_grad()
def eager_maps_drift(
    original: torch.nn.Module, extended: torch.nn.Module, ids: torch.Tensor
) -> list[float]:
    """Per-layer mean attention KL computed the plain way: eager attention, the original's maps
    of every layer kept, each extended map compared as its layer runs. Returns the KL list."""
    maps: list[torch.Tensor] = []
    kl: list[float] = []
    rows = ids.numel() * original.config.num_attention_heads

    def keep(_module, _args, out):
        maps.append(out[1])

    def compare(_module, _args, out):
        kl.append(_map_kl(maps.pop(0), out[1]) / rows)

    for model, hook in ((original, keep), (extended, compare)):
        model.set_attn_implementation("eager")
        handles = [layer.self_attn.register_forward_hook(hook) for layer in model.model.layers]
        try:
            model(ids, output_hidden_states=True)
        finally:
            for handle in handles:
                handle.remove()
            model.set_attn_implementation("sdpa")
    return kl


def _labelled(name: str, fn: Callable) -> Callable:
    """``fn`` inside a ``record_function(name)`` range."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        with torch.profiler.record_function(name):
            return fn(*args, **kwargs)

    return wrapper


def profile_phases(run: Callable[[], object], models: list[torch.nn.Module]) -> dict[str, float]:
    """Seconds per phase of one ``run()`` under ``torch.profiler``: the KL (student and teacher
    side), hidden cosine, the models' own attention, the vocabulary projection, and the rest
    (projections, MLPs, norms, RoPE, Python). Phases never nest, so they add up to the wall."""
    targets = [(drift_module, name, phase) for phase, names in PHASES.items() for name in names]
    targets.append((capture_module, "sdpa_attention_forward", "model_attention"))
    # the extended model's own attention, computed in drift's KL sink to keep its log-sum-exp
    targets.append((drift_module, "attention_with_lse", "model_attention"))
    saved = []
    for module, name, phase in targets:
        if hasattr(module, name):
            saved.append((module, name, getattr(module, name)))
            setattr(module, name, _labelled(phase, saved[-1][2]))
    sdpa = ALL_ATTENTION_FUNCTIONS["sdpa"]
    AttentionInterface.register("sdpa", _labelled("model_attention", sdpa))
    heads = [m.lm_head for m in models]
    for head in heads:
        head.forward = _labelled("lm_head", head.forward)
    # the profiler's own log (kineto's "profiler_start"/"profiler_stop" lines on stderr) is
    # off unless the user set its level
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")
    try:
        with torch.profiler.profile() as prof:
            start = time.perf_counter()
            run()
            wall = time.perf_counter() - start
    finally:
        for module, name, fn in saved:
            setattr(module, name, fn)
        for head in heads:
            del head.forward
        AttentionInterface.register("sdpa", sdpa)
    totals = {e.key: e.cpu_time_total / 1e6 for e in prof.key_averages()}
    names = [*PHASES, "model_attention", "lm_head"]
    phases = {name: totals.get(name, 0.0) for name in names}
    phases["rest"] = wall - sum(phases.values())
    phases["wall"] = wall
    return phases


def _markdown(row: dict, plain: dict[str, float] | None, drift: dict[str, float] | None) -> str:
    """The report: the timing table (peak memory on a GPU), then the profile breakdown of plain
    forwards and drift where it was measured."""
    gpu = row["peak_plain_mib"] is not None
    lines = [
        "| model | rope | seq_len | dtype | two plain forwards (s) | two body forwards (s) "
        "| drift (s) | eager maps (s) | drift / two forwards | eager / drift | KL max rel diff "
        + ("| peak two forwards (MiB) | peak drift (MiB) " if gpu else "")
        + "| device | commit |",
        "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|---|" if gpu else "") + "---|---|",
        f"| {row['model']} | {row['rope']} | {row['seq_len']} | {row['dtype']} | "
        f"{row['two_forwards_s']} | {row['two_body_forwards_s']} | {row['drift_s']} | "
        f"{_cell(row['eager_maps_s'])} | {row['ratio']} | {_cell(row['eager_over_drift'])} | "
        f"{_cell(row['kl_max_rel_diff'], '.1e')} | "
        + (f"{row['peak_plain_mib']} | {row['peak_drift_mib']} | " if gpu else "")
        + f"{row['device']} | `{row['commit']}` (source `{row['source']}`) |",
        "",
        "Body forwards skip the vocabulary projection (`logits_to_keep=1`). KL max rel diff: "
        "largest relative difference of a layer's attention KL between drift and the eager maps"
        " (-: not measured)."
        + (
            " Peaks are the GPU memory allocated during one call above the two models' weights."
            if gpu
            else ""
        ),
    ]
    if plain is not None and drift is not None:
        lines += [
            "",
            "Profile of one more run of each (torch.profiler; seconds per phase, phases do not "
            "nest; rest = projections, MLPs, norms, RoPE, Python):",
            "",
            "| phase | two plain forwards (s) | drift (s) | extra (s) |",
            "|---|---:|---:|---:|",
        ]
        for name in drift:
            extra = drift[name] - plain[name]
            lines.append(f"| {name} | {plain[name]:.2f} | {drift[name]:.2f} | {extra:+.2f} |")
    return "\n".join(lines) + "\n"


def _cell(value: float | None, spec: str = "") -> str:
    return "-" if value is None else format(value, spec)


def _file_label(args: argparse.Namespace) -> str:
    """The model's part of the output file names: ``SHAPE_random`` for a random-init shape, a
    model folder's name (its parent's for a run's ``final/``), or the zoo name
    (:func:`bench_common.file_label`)."""
    return f"{args.shape}_random" if args.shape else file_label(args.model)


def _models(args: argparse.Namespace) -> tuple[str, torch.nn.Module]:
    """The original model (named, or a random-init ``--shape``) on the device, in the dtype."""
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype or ("bfloat16" if device.type == "cuda" else "float32"))
    if args.shape:
        from longred_bench.training.shapes import random_model, shape

        original = random_model(shape(args.shape), dtype=dtype, device=device)
        return f"{args.shape} (random init)", original.eval()
    return args.model, load(args.model).model.to(device=device, dtype=dtype).eval()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", default="smollm2-135m")
    p.add_argument("--shape", help="a random-init model of this shape instead of --model")
    p.add_argument("--rope", default="abf:theta=1e7")
    p.add_argument("--seq-len", type=int, default=512)
    p.add_argument("--batch", type=int, default=1)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--impl", default="auto")
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", help="float32, bfloat16 or float16 (default: bf16 on CUDA)")
    p.add_argument("--no-eager", action="store_true", help="skip the eager-maps comparison")
    p.add_argument("--no-profile", action="store_true", help="skip the torch.profiler breakdown")
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--out", type=Path, default=Path("reports/bench"))
    args = p.parse_args()
    check_device(args.device)
    if args.seq_len < 2 or args.batch < 1 or args.repeats < 1 or args.threads < 0:
        p.error("--seq-len must be at least 2, --batch and --repeats at least 1, --threads >= 0")
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    start_load = loadavg()

    label, original = _models(args)
    extended = extend(original, args.rope).eval()
    device = next(original.parameters()).device
    vocab = original.config.vocab_size
    ids = torch.randint(
        0, vocab, (args.batch, args.seq_len), generator=torch.Generator().manual_seed(0)
    ).to(device)

    @torch.no_grad()
    def plain() -> None:
        original(ids)
        extended(ids)

    @torch.no_grad()
    def body() -> None:
        original(ids, logits_to_keep=1)
        extended(ids, logits_to_keep=1)

    def drift():
        return measure_drift(
            original, {"e": extended}, [(ids, None)], impl=args.impl, progress=False
        )

    t_plain = _median_seconds(plain, args.repeats)
    t_body = _median_seconds(body, args.repeats)
    t_drift = _median_seconds(drift, args.repeats)
    peak_plain, peak_drift = _peak_mib(plain, device), _peak_mib(drift, device)
    t_eager = rel = None
    if not args.no_eager:
        t_eager = _median_seconds(lambda: eager_maps_drift(original, extended, ids), 1)
        kl_drift = [x.attention_kl for x in drift()["e"].layers]
        kl_eager = eager_maps_drift(original, extended, ids)
        pairs = zip(kl_drift, kl_eager, strict=True)
        rel = max(abs(a - b) / max(abs(b), 1e-12) for a, b in pairs)
    prof_plain = prof_drift = None
    if not args.no_profile:
        prof_plain = profile_phases(plain, [original, extended])
        prof_drift = profile_phases(drift, [original, extended])
    row = {
        "model": label,
        "rope": args.rope,
        "seq_len": args.seq_len,
        "batch": args.batch,
        "dtype": str(next(original.parameters()).dtype).removeprefix("torch."),
        "two_forwards_s": round(t_plain, 3),
        "two_body_forwards_s": round(t_body, 3),
        "drift_s": round(t_drift, 3),
        "eager_maps_s": None if t_eager is None else round(t_eager, 3),
        "ratio": round(t_drift / t_plain, 3),
        "ratio_body": round(t_drift / t_body, 3),
        "eager_over_drift": None if t_eager is None else round(t_eager / t_drift, 3),
        "kl_max_rel_diff": rel,
        "peak_plain_mib": peak_plain,
        "peak_drift_mib": peak_drift,
        **{f"profile_plain_{k}_s": round(v, 3) for k, v in (prof_plain or {}).items()},
        **{f"profile_drift_{k}_s": round(v, 3) for k, v in (prof_drift or {}).items()},
        "device": device_name(device),
        "torch": torch.__version__,
        "commit": git_commit(),
        "source": source12(),
    }
    where = "" if device.type == "cpu" else f"_{device.type}"
    stem = args.out / f"drift_cost_{_file_label(args)}_{args.seq_len}{where}"
    write_csv([row], stem.with_suffix(".csv"), list(row))  # makes args.out
    command = command_line(__file__, None)
    md = _markdown(row, prof_plain, prof_drift) + (
        f"\nCommand: `{command}`; {torch.get_num_threads()} threads; median of {args.repeats} "
        f"calls; load average (1/5/15 min) at start {start_load}, at end {loadavg()}.\n"
    )
    stem.with_suffix(".md").write_text(md)
    print(md)


if __name__ == "__main__":
    run_script(main)
