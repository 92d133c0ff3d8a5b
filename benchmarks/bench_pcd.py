"""Cost of Positional Contrastive Decoding against greedy decoding: time and memory.

For each model and prompt length ``P`` (batch 1, a prompt of ``P`` prose tokens from the Brown
corpus when cached, else seeded random tokens):

- ``prefill_s``: seconds to generate one token after the prompt (greedy: transformers'
  ``generate``, as lm-eval's ``hf`` model runs it; PCD: ``PcdModel.generate``);
- ``per_token_ms``: the time of each further token, ``(T(n) - T(1)) / (n - 1)`` within a run;
- ``score_s``: scoring the prompt's last 8 tokens given the rest, as one lm-eval loglikelihood
  request (``HFLM`` vs ``PcdLM``, which scores it again under the local base);
- ``kv_mib``: the KV cache after the prompt (the tensors of the cache objects, summed; PCD keeps
  one per RoPE variant);
- ``peak_rss_mib``: the peak resident memory while ``n`` tokens are generated, above the level
  just before (Linux ``/proc/self/clear_refs`` and ``VmHWM``; the weights already paged in by a
  short warm-up generation), in a fresh process per (mode, length);
- ``extra_state_kib``: what the local-aware variant adds to the model (its rotary buffers).

Each time is the median of ``--repeats`` runs, greedy and PCD interleaved, so that load from other
processes on a shared machine falls on both alike. Writes ``OUT/pcd_cost_<model>.csv`` and
``.md`` with the command, the machine, the thread count and the load average::

    python benchmarks/bench_pcd.py --models tiny-random smollm2-135m --lengths 512 2048 \\
        --new-tokens 32 --threads 1 --out reports/bench
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch

import longred_bench.jobs  # noqa: F401  (registers tiny-base, which these runs load by name)
from longred_bench.pcd.model import returned_cache

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

from longred_bench.errors import UserError

FIELDS = (
    "model", "length", "mode", "prefill_s", "per_token_ms", "per_token_ratio", "score_s",
    "score_ratio", "kv_mib", "peak_rss_mib", "extra_state_kib", "params_mib", "new_tokens",
    "repeats", "threads", "load1",
)  # fmt: skip

MIB = 2**20


def _setup(model: str, threads: int) -> tuple[Any, Any]:
    from longred_bench.models.loading import load
    from longred_bench.pcd.model import PcdConfig, PcdModel

    torch.set_num_threads(threads)
    loaded = load(model)
    return loaded, PcdModel(loaded.model, PcdConfig())


def prompt_ids(tokenizer: Any, length: int) -> torch.Tensor:
    """``[1, length]`` token ids: Brown prose (test split) when cached, else seeded random ids."""
    from longred_bench.data.texts import token_windows
    from longred_bench.errors import UserError

    try:
        return token_windows(tokenizer, "brown", 1, length)
    except UserError:  # no cached corpus: random ids cost the same
        return token_windows(tokenizer, "random", 1, length)


def _generator(mode: str, loaded: Any, pcd: Any) -> Callable[[torch.Tensor, int], Any]:
    pad = loaded.tokenizer.pad_token_id or 0
    if mode == "greedy":
        return lambda ids, n: loaded.model.generate(
            input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
            min_new_tokens=n, do_sample=False, pad_token_id=pad,
        )  # fmt: skip
    return lambda ids, n: pcd.generate(ids, max_new_tokens=n, pad_token_id=pad)


def _timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    with torch.no_grad():
        fn()
    return time.perf_counter() - start


def _score(lm: Any, ids: torch.Tensor, continuation: int = 8) -> Any:
    """Score the last ``continuation`` tokens of ``ids`` given the rest, as lm-eval's
    loglikelihood requests are scored (PCD: the standard pass, then the local one)."""
    tokens = ids[0].tolist()
    request = (("", ""), tokens[:-continuation], tokens[-continuation:])
    return lm._loglikelihood_tokens([request], disable_tqdm=True)


def kv_bytes(loaded: Any, pcd: Any, ids: torch.Tensor, mode: str) -> int:
    """Bytes of the KV cache(s) after a prefill of ``ids`` (one cache, or one per variant)."""
    total = 0
    base = pcd.base_for(ids.shape[-1])  # the local-aware variant's RoPE base at this length
    for variant in (0,) if mode == "greedy" or base is None else (0, 1):
        with torch.no_grad(), pcd.local(base) if variant else _nothing():
            cache = returned_cache(loaded.model(ids, use_cache=True, logits_to_keep=1))
        total += sum(t.nbytes for layer in cache.layers for t in (layer.keys, layer.values))
    return total


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _status_kib(key: str) -> int:
    """A ``/proc/self/status`` field in KiB (``VmRSS``: resident now, ``VmHWM``: its peak)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    raise RuntimeError(f"no {key} in /proc/self/status")


def _peak_child(model: str, length: int, mode: str, new_tokens: int, threads: int, queue) -> None:
    loaded, pcd = _setup(model, threads)
    ids = prompt_ids(loaded.tokenizer, length)
    with torch.no_grad():  # page the (memory-mapped) weights in before the baseline is taken
        _generator(mode, loaded, pcd)(ids[:, :8], 2)
    Path("/proc/self/clear_refs").write_text("5")  # Linux: reset the peak to the RSS now
    base = _status_kib("VmRSS")
    with torch.no_grad():
        _generator(mode, loaded, pcd)(ids, new_tokens)
    queue.put((_status_kib("VmHWM") - base) / 1024)


def peak_rss_mib(model: str, length: int, mode: str, new_tokens: int, threads: int) -> float:
    """Peak RSS above its level just before generating, in a fresh (spawned) process (Linux)."""
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_peak_child, args=(model, length, mode, new_tokens, threads, queue))
    proc.start()
    value = queue.get()
    proc.join()
    return float(value)


def measure(model: str, length: int, args: argparse.Namespace) -> list[dict[str, Any]]:
    """Both modes' rows for one model and prompt length."""
    from lm_eval.models.huggingface import HFLM

    from longred_bench.pcd.lm import PcdLM

    loaded, pcd = _setup(model, args.threads)
    ids = prompt_ids(loaded.tokenizer, length)
    lms = {
        "greedy": HFLM(pretrained=loaded.model, tokenizer=loaded.tokenizer),
        "pcd": PcdLM(pretrained=loaded.model, tokenizer=loaded.tokenizer),
    }
    times: dict[str, dict[str, list[float]]] = {m: {"one": [], "tok": [], "score": []} for m in lms}
    for _ in range(args.repeats):
        for mode, lm in lms.items():
            generate = _generator(mode, loaded, pcd)
            one = _timed(lambda g=generate: g(ids, 1))
            many = _timed(lambda g=generate: g(ids, args.new_tokens))
            times[mode]["one"].append(one)
            times[mode]["tok"].append((many - one) / (args.new_tokens - 1))
            times[mode]["score"].append(_timed(lambda lm=lm: _score(lm, ids)))
    params = sum(p.nbytes for p in loaded.model.parameters())
    base = pcd.base_for(ids.shape[-1])
    rotaries = pcd.local_rotaries(base) if base is not None else []
    extra = sum(b.nbytes for r in rotaries for b in r.buffers())
    rows = []
    for mode in lms:
        med = {k: statistics.median(v) for k, v in times[mode].items()}
        rows.append(
            {
                "model": model,
                "length": length,
                "mode": mode,
                "prefill_s": round(med["one"], 3),
                "per_token_ms": round(1e3 * med["tok"], 1),
                "score_s": round(med["score"], 3),
                "kv_mib": round(kv_bytes(loaded, pcd, ids, mode) / MIB, 2),
                "peak_rss_mib": round(
                    peak_rss_mib(model, length, mode, args.new_tokens, args.threads), 1
                ),
                "extra_state_kib": 0.0 if mode == "greedy" else round(extra / 1024, 2),
                "params_mib": round(params / MIB, 1),
                "new_tokens": args.new_tokens,
                "repeats": args.repeats,
                "threads": args.threads,
                "load1": loadavg().split()[0],
            }
        )
    for key, ratio in (("per_token_ms", "per_token_ratio"), ("score_s", "score_ratio")):
        rows[1][ratio] = round(rows[1][key] / rows[0][key], 2) if rows[0][key] > 0 else None
    return rows


def report(model: str, rows: Sequence[dict[str, Any]], info: dict[str, Any], cmd: str) -> str:
    return (
        f"# PCD cost: {model}\n\n"
        + provenance_lines(info, cmd)
        + f"Threads: {rows[0]['threads']}; {rows[0]['new_tokens']} generated tokens; median of "
        f"{rows[0]['repeats']} runs. Ratios are PCD / greedy.\n\n"
        + markdown_table(rows, [f for f in FIELDS if f not in ("model", "threads", "repeats")])
    )


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=["tiny-random"])
    p.add_argument("--lengths", nargs="+", type=int, default=[512])
    p.add_argument("--new-tokens", type=int, default=32)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    p.add_argument("--out", default="reports/bench")
    return p


def main(argv: Sequence[str] | None = None) -> list[Path]:
    args = build_parser().parse_args(argv)
    if args.new_tokens < 2 or args.repeats < 1 or args.threads < 0:
        raise UserError("--new-tokens must be >= 2, --repeats >= 1 and --threads >= 0")
    args.threads = args.threads or torch.get_num_threads()
    cmd = command_line(__file__, argv)
    written = []
    for model in args.models:
        info = provenance()
        rows = [row for length in args.lengths for row in measure(model, length, args)]
        info["loadavg_end"] = loadavg()
        stem = Path(args.out) / f"pcd_cost_{model.replace('/', '_')}"
        write_csv(rows, stem.with_suffix(".csv"), FIELDS)
        text = report(model, rows, info, cmd)
        stem.with_suffix(".md").write_text(text, encoding="utf-8")
        written += [stem.with_suffix(".csv"), stem.with_suffix(".md")]
        print(text, flush=True)
        print(f"wrote {written[-2]}, {written[-1]}", flush=True)
    return written


if __name__ == "__main__":
    run_script(main)
