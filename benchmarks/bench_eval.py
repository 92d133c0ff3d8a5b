"""Evaluation throughput of ``longred_bench.evaluation.run.run_eval``: tokens/s, requests/s,
wall time.

One run is ``run_eval(model, suite=..., batch_size=B)``. While it runs, lm-eval's ``HFLM`` request
methods are wrapped: every request sent to the model is recorded with the time spent answering
it, a forward pre-hook counts the model's forward calls, batch rows and input ids (padding and
one-token decode steps included), and the token ids of every generation are kept. After the run
the requests are tokenized with the evaluated model's tokenizer:

- ``input_tokens``: loglikelihood, context + continuation as lm-eval encodes the pair (an empty
  context counts its one prefix token); rolling loglikelihood, the document; generation, the prompt;
- ``generated_tokens``: per generated row, the tokens before its first stop sequence (EOS, the
  task's ``until`` strings, or the budget), so the count does not depend on the batch size even
  though a batch keeps generating until its last row stops.

Rates are given against ``model_s`` (time inside the request methods: model, tokenization and
batching) and ``wall_s`` (the whole ``run_eval`` call: task loading, dataset building, the fit
check, lm-eval's bookkeeping). ``n_docs`` / ``n_over_length`` come from ``run_eval``'s fit reports.

``tiny-random`` (256-token window, byte tokenizer) runs as ``--rope tiny-random=pi:factor=8`` by
default: in its own window no BoolQ, SQuAD, lastword or passkey document fits and ``run_eval``
refuses a task without one. RULER samples are generated into the cache before anything is timed.
Torch runs one intra-op thread by default (``--threads``): on a CPU shared with other jobs a second
OpenMP thread waiting for a busy core made the same run several times slower and erratic.

``--device cuda`` runs the models on the GPU and adds ``peak_gib``, the CUDA allocator's peak of
each run. A model named ``shape:NAME`` is a randomly initialised model of the built-in shape
``NAME`` (``training/shapes.py``; SDPA attention, seed 0), written once with the tokenizer of
``--tokenizer`` (a model folder, SmolLM2's from the cache by default) under ``--work``: real
shapes at real lengths where the weights cannot travel. Its greedy generations run to each task's
token budget (a random model never stops early), so its generation figures are an upper bound.

Example::

    python benchmarks/bench_eval.py --models tiny-random smollm2-135m --out reports/bench
    python benchmarks/bench_eval.py --models smollm2-135m --limit 20 --ruler-lengths 1024 4096 \\
        --ruler-samples 8 --batch-sizes 1 4 16 --threads 0
    python benchmarks/bench_eval.py --models shape:smollm2-135m --suites ruler \\
        --ruler-lengths 32768 --batch-sizes 1 --device cuda --rope shape:smollm2-135m=yarn:factor=4
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from bench_common import (
    command_line,
    file_label,
    loadavg,
    markdown_table,
    provenance,
    provenance_lines,
    run_script,
    write_csv,
)
from eval_models import model_path

from longred_bench.cli.devices import check_device
from longred_bench.errors import UserError

REQUEST_TYPES = ("loglikelihood", "loglikelihood_rolling", "generate_until")
SUITES = ("short", "short_tiny", "ruler")
DEFAULT_ROPE = ("tiny-random=pi:factor=8",)
FIELDS = (
    "model", "rope", "suite", "setting", "batch_size", "request_type", "n_docs", "n_over_length",
    "n_requests", "input_tokens", "generated_tokens", "tokens", "forward_calls",
    "mean_forward_rows", "forward_tokens", "model_s", "wall_s", "tokens_per_s_model",
    "requests_per_s_model", "tokens_per_s_wall", "requests_per_s_wall", "load1_start", "load1_end",
    "peak_gib",
)  # fmt: skip

# --- recording requests ------------------------------------------------------------------------


@dataclass
class RequestCall:
    """One call of an ``HFLM`` request method: its requests, generations and cost."""

    kind: str
    lm: Any
    args: list[tuple]
    seconds: float = 0.0
    forward_calls: int = 0
    forward_rows: int = 0
    forward_tokens: int = 0
    generations: list[tuple[Any, list[str]]] = field(default_factory=list)  # (ids [B, G], stop)


@dataclass
class RequestMeter:
    """Collects a :class:`RequestCall` for every request method call made inside :meth:`watch`."""

    calls: list[RequestCall] = field(default_factory=list)
    _current: RequestCall | None = None

    @contextmanager
    def watch(self, lm_class: type | None = None) -> Iterator[RequestMeter]:
        """Wrap ``lm_class``'s request methods (lm-eval's ``HFLM`` by default) while inside."""
        if lm_class is None:
            from lm_eval.models.huggingface import HFLM

            lm_class = HFLM
        names = (*REQUEST_TYPES, "_model_generate")
        saved = {name: lm_class.__dict__.get(name) for name in names}
        for name in REQUEST_TYPES:
            setattr(lm_class, name, self._wrap_requests(name, getattr(lm_class, name)))
        if hasattr(lm_class, "_model_generate"):
            lm_class._model_generate = self._wrap_generate(lm_class._model_generate)
        try:
            yield self
        finally:
            for name, original in saved.items():
                if original is None:
                    if name in lm_class.__dict__:
                        delattr(lm_class, name)
                else:
                    setattr(lm_class, name, original)

    def _wrap_requests(self, kind: str, method: Callable) -> Callable:
        def measured(lm: Any, requests: list[Any], *args: Any, **kwargs: Any) -> Any:
            call = RequestCall(kind, lm, [tuple(r.args) for r in requests])
            model = getattr(lm, "model", None)
            hook = None
            if hasattr(model, "register_forward_pre_hook"):
                hook = model.register_forward_pre_hook(_forward_counter(call), with_kwargs=True)
            self._current = call
            start = time.perf_counter()
            try:
                return method(lm, requests, *args, **kwargs)
            finally:
                call.seconds = time.perf_counter() - start
                self._current = None
                if hook is not None:
                    hook.remove()
                self.calls.append(call)

        measured.__name__ = kind
        return measured

    def _wrap_generate(self, method: Callable) -> Callable:
        def generate(lm: Any, *args: Any, **kwargs: Any) -> Any:
            out = method(lm, *args, **kwargs)
            context = kwargs["context"] if "context" in kwargs else args[0]
            stop = kwargs["stop"] if "stop" in kwargs else args[2]
            if self._current is not None:
                self._current.generations.append((out[:, context.shape[1] :], list(stop or [])))
            return out

        generate.__name__ = "_model_generate"
        return generate


def _forward_counter(call: RequestCall) -> Callable:
    def count(module: Any, args: tuple, kwargs: dict) -> None:
        ids = args[0] if args else kwargs.get("input_ids")
        if getattr(ids, "ndim", 0) == 2:
            call.forward_calls += 1
            call.forward_rows += int(ids.shape[0])
            call.forward_tokens += int(ids.numel())

    return count


# --- counting tokens ---------------------------------------------------------------------------


def request_tokens(
    kind: str,
    args: Sequence[Any],
    *,
    encode: Callable[[str], list[int]],
    encode_pair: Callable[[str, str], tuple[list[int], list[int]]],
) -> int:
    """Input tokens of one request: context + continuation, the document, or the prompt."""
    if kind == "loglikelihood":
        context, continuation = args[0], args[1]
        if not context:
            return 1 + len(encode(continuation))
        ctx, cont = encode_pair(context, continuation)
        return len(ctx) + len(cont)
    if kind in ("loglikelihood_rolling", "generate_until"):
        return len(encode(args[0]))
    raise ValueError(f"unknown request type {kind!r}")


def kept_tokens(ids: Sequence[int], stop: Sequence[str], decode: Callable[[list], str]) -> int:
    """Generated tokens before the first stop sequence: the fewest leading ``ids`` whose decoding
    covers the text that precedes it (trailing special tokens, which decode to nothing, and the
    tokens of the stop sequence itself are not counted)."""
    ids = list(ids)
    text = decode(ids)
    cut = min((text.find(s) for s in stop if s and s in text), default=len(text))
    target = text[:cut]
    for k in range(len(ids) + 1):
        if decode(ids[:k])[:cut] == target:
            return k
    return len(ids)


@dataclass
class KindTotals:
    """What the requests of one type cost in a run."""

    n_requests: int = 0
    input_tokens: int = 0
    generated_tokens: int = 0
    forward_calls: int = 0
    forward_rows: int = 0
    forward_tokens: int = 0
    seconds: float = 0.0

    def add(self, other: KindTotals) -> None:
        """Accumulate ``other`` into this total."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name) + getattr(other, f.name))


def totals_by_kind(calls: Sequence[RequestCall]) -> dict[str, KindTotals]:
    """Request counts, tokens, forwards and seconds per request type over ``calls``."""
    out: dict[str, KindTotals] = {}
    for call in calls:
        lm = call.lm
        part = KindTotals(
            n_requests=len(call.args),
            input_tokens=sum(
                request_tokens(call.kind, a, encode=lm.tok_encode, encode_pair=lm._encode_pair)
                for a in call.args
            ),
            generated_tokens=sum(
                kept_tokens(row, stop, lm.tok_decode)
                for ids, stop in call.generations
                for row in ids.tolist()
            ),
            forward_calls=call.forward_calls,
            forward_rows=call.forward_rows,
            forward_tokens=call.forward_tokens,
            seconds=call.seconds,
        )
        out.setdefault(call.kind, KindTotals()).add(part)
    return out


# --- rows ----------------------------------------------------------------------------------------


def _rate(count: float, seconds: float | None) -> float | None:
    return round(count / seconds, 2) if seconds else None


def throughput_row(
    totals: KindTotals, *, request_type: str, wall_s: float | None, **context: Any
) -> dict[str, Any]:
    """One CSV row: ``context`` (model, suite, ...) plus the totals and their rates."""
    tokens = totals.input_tokens + totals.generated_tokens
    calls = totals.forward_calls
    row: dict[str, Any] = dict.fromkeys(FIELDS)
    row.update(context)
    row.update(
        request_type=request_type,
        n_requests=totals.n_requests,
        input_tokens=totals.input_tokens,
        generated_tokens=totals.generated_tokens,
        tokens=tokens,
        forward_calls=calls,
        mean_forward_rows=round(totals.forward_rows / calls, 2) if calls else None,
        forward_tokens=totals.forward_tokens,
        model_s=round(totals.seconds, 3),
        wall_s=None if wall_s is None else round(wall_s, 3),
        tokens_per_s_model=_rate(tokens, totals.seconds),
        requests_per_s_model=_rate(totals.n_requests, totals.seconds),
        tokens_per_s_wall=_rate(tokens, wall_s),
        requests_per_s_wall=_rate(totals.n_requests, wall_s),
    )
    return row


def with_speedup(rows: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` plus ``speedup``: model-time tokens/s over the batch-1 run of the same cell."""
    base = {
        (r["model"], r["suite"], r["request_type"]): r["tokens_per_s_model"]
        for r in rows
        if r["batch_size"] == 1
    }
    out = []
    for row in rows:
        ref = base.get((row["model"], row["suite"], row["request_type"]))
        mine = row["tokens_per_s_model"]
        out.append({**row, "speedup": round(mine / ref, 2) if ref and mine is not None else None})
    return out


# --- running -----------------------------------------------------------------------------------


def parse_ropes(items: Sequence[str]) -> dict[str, str]:
    """``MODEL=SPEC`` items as a dict (``MODEL=none`` removes a default)."""
    out: dict[str, str] = {}
    for item in items:
        model, sep, spec = item.partition("=")
        if not sep or not model:
            raise UserError(f"--rope takes MODEL=SPEC, got {item!r}")
        out[model] = spec
    return {m: s for m, s in out.items() if s and s.lower() != "none"}


def suite_kwargs(suite: str, args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """``EvalConfig`` fields of ``suite`` and a short description of the setting."""
    if suite == "short":
        tasks = {"tasks": list(args.short_tasks)} if args.short_tasks else {}
        return {"limit": args.limit, **tasks}, f"limit={args.limit}"
    if suite == "short_tiny":
        return {"limit": args.tiny_limit}, f"limit={args.tiny_limit}"
    lengths = "+".join(map(str, args.ruler_lengths))
    setting = f"{'+'.join(args.ruler_tasks)} L={lengths} n={args.ruler_samples}"
    tasks = [f"longred_ruler_{t}" for t in args.ruler_tasks]
    return {"tasks": tasks, "lengths": args.ruler_lengths, "samples": args.ruler_samples}, setting


def prepare_ruler(model: str, args: argparse.Namespace) -> None:
    """Generate (or find) the cached RULER samples the timed runs will read."""
    from longred_bench.models.loading import load_tokenizer
    from longred_bench.taskdata.ruler import load_or_generate

    tokenizer = load_tokenizer(model)
    for task in args.ruler_tasks:
        for length in args.ruler_lengths:
            load_or_generate(task, tokenizer, length, args.ruler_samples, args.seed)


def run_one(
    model: str, rope: str | None, suite: str, batch: int, args: argparse.Namespace
) -> list[dict[str, Any]]:
    """Time one ``run_eval``; its rows, one per request type and then ``all``."""
    import torch

    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.run import run_eval

    kwargs, setting = suite_kwargs(suite, args)
    meter = RequestMeter()
    cuda = args.device.startswith("cuda")
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    load_start = os.getloadavg()[0]
    start = time.perf_counter()
    cfg = EvalConfig(model_path(model, args), suite=suite, rope=rope, batch_size=batch,
                     seed=args.seed, device=args.device, **kwargs)  # fmt: skip
    with meter.watch():
        result = run_eval(cfg, progress=False)
    wall = time.perf_counter() - start
    context = {
        "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2) if cuda else None,
        "model": model,
        "rope": rope,
        "suite": suite,
        "setting": setting,
        "batch_size": batch,
        "n_docs": sum(len(f.fitting) for f in result.fits),
        "n_over_length": sum(f.over_length for f in result.fits),
        "load1_start": round(load_start, 2),
        "load1_end": round(os.getloadavg()[0], 2),
    }
    per_kind = totals_by_kind(meter.calls)
    everything = KindTotals()
    for kind in per_kind.values():
        everything.add(kind)
    rows = [
        throughput_row(per_kind[k], request_type=k, wall_s=None, **context)
        for k in REQUEST_TYPES
        if k in per_kind
    ]
    return [*rows, throughput_row(everything, request_type="all", wall_s=wall, **context)]


SUMMARY_COLUMNS = (
    "suite", "setting", "batch_size", "n_docs", "n_over_length", "n_requests", "tokens", "model_s",
    "wall_s", "tokens_per_s_model", "requests_per_s_model", "tokens_per_s_wall",
    "requests_per_s_wall", "speedup", "load1_start", "peak_gib",
)  # fmt: skip
KIND_COLUMNS = (
    "suite", "batch_size", "request_type", "n_requests", "input_tokens", "generated_tokens",
    "forward_calls", "mean_forward_rows", "forward_tokens", "model_s", "tokens_per_s_model",
    "requests_per_s_model", "speedup",
)  # fmt: skip
NOTES = """\
`tokens` = `input_tokens` (loglikelihood: context + continuation; rolling: the document;
generation: the prompt) + `generated_tokens` (each generation up to its first stop sequence).
`model_s`: time inside HFLM's request methods; `wall_s`: the whole `run_eval` call.
`forward_tokens`: input ids over all forward calls (padding, one-token decode steps and tokens
generated past a row's stop while its batch runs on included); `mean_forward_rows`: their mean
batch dimension.
`speedup`: model-time tokens/s over batch size 1 (same suite and request type).

What batches (HFLM, lm-eval 0.4.13): loglikelihood requests and rolling windows, up to the batch
size, sorted by length; generations only among requests with identical generation settings, so
RULER tasks with different `max_gen_toks` never share a batch, and a batch generates until its last
row stops. Loglikelihood requests that share a context and have a one-token continuation (MMLU's
letters) share one forward at any batch size. Not batched: task and dataset loading, the fit check
(serial tokenization), lm-eval's request building and scoring: the gap between `wall_s` and
`model_s`.
"""


def report(model: str, rows: list[dict[str, Any]], info: dict[str, Any], cmd: str) -> str:
    """The Markdown report of one model's rows."""
    rows = with_speedup(rows)
    rope = next((r["rope"] for r in rows if r["rope"]), None)
    title = f"# Evaluation throughput: {model}" + (f" (rope `{rope}`)" if rope else "")
    return (
        f"{title}\n\n{provenance_lines(info, cmd)}## Per run\n\n"
        + markdown_table([r for r in rows if r["request_type"] == "all"], SUMMARY_COLUMNS)
        + "\n## Per request type\n\n"
        + markdown_table([r for r in rows if r["request_type"] != "all"], KIND_COLUMNS)
        + "\n"
        + NOTES
    )


def build_parser() -> argparse.ArgumentParser:
    """Command-line options (the defaults finish in a few minutes on 2 CPU cores)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="+", default=["tiny-random", "smollm2-135m"])
    p.add_argument("--suites", nargs="+", choices=SUITES, default=list(SUITES))
    p.add_argument("--batch-sizes", nargs="+", type=int, default=[1, 8])
    p.add_argument("--limit", type=int, default=2, help="documents per task, short suite")
    p.add_argument("--short-tasks", nargs="+", help="replace the short suite's task list")
    p.add_argument("--tiny-limit", type=int, default=4, help="documents per task, short_tiny")
    p.add_argument("--ruler-tasks", nargs="+", default=["niah_single_1", "niah_single_2", "vt"])
    p.add_argument("--ruler-lengths", nargs="+", type=int, default=[512])
    p.add_argument("--ruler-samples", type=int, default=2, help="samples per task and length")
    p.add_argument("--rope", nargs="*", default=list(DEFAULT_ROPE), help="MODEL=SPEC extensions")
    p.add_argument("--threads", type=int, default=1, help="torch threads (0: torch's default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("reports/bench"))
    p.add_argument("--verbose", action="store_true", help="keep lm-eval's log messages")
    p.add_argument("--device", default="cpu", help="cpu or cuda (cuda adds peak_gib)")
    p.add_argument("--tokenizer", type=Path, help="model folder whose tokenizer shape: models use")
    p.add_argument("--work", type=Path, default=Path("/tmp/bench-eval-shapes"),
                   help="where shape: models are written")  # fmt: skip
    return p


def main(argv: Sequence[str] | None = None) -> list[Path]:
    """Run every (model, suite, batch size), print and write the reports; return their paths."""
    args = build_parser().parse_args(argv)
    check_device(args.device)
    if not args.verbose:
        for name in ("lm_eval", "transformers", "datasets"):
            logging.getLogger(name).setLevel(logging.ERROR)
    # Imported before anything is timed: no run pays for them.
    import lm_eval.evaluator
    import lm_eval.models.huggingface  # noqa: F401
    import torch

    if args.threads > 0:
        torch.set_num_threads(args.threads)
    ropes = parse_ropes(args.rope)
    cmd = command_line(__file__, argv)
    written: list[Path] = []
    for model in args.models:
        info = provenance(args.device)
        if "ruler" in args.suites:
            prepare_ruler(model_path(model, args), args)
        rows: list[dict[str, Any]] = []
        for suite in args.suites:
            for batch in args.batch_sizes:
                rows.extend(run_one(model, ropes.get(model), suite, batch, args))
                last = rows[-1]
                print(
                    f"{model} {suite} batch={batch}: {last['n_requests']} requests, "
                    f"{last['tokens']} tokens, model {last['model_s']} s, wall {last['wall_s']} s",
                    flush=True,
                )
        info["loadavg_end"] = loadavg()
        stamp = {
            k: info[k] for k in ("commit", "source", "device", "torch", "transformers", "lm_eval")
        }
        stem = args.out / f"eval_throughput_{file_label(model)}"
        write_csv([{**r, **stamp} for r in rows], stem.with_suffix(".csv"), (*FIELDS, *stamp))
        md = report(model, rows, info, cmd)
        stem.with_suffix(".md").write_text(md)
        print(md, flush=True)
        written += [stem.with_suffix(".csv"), stem.with_suffix(".md")]
    return written


if __name__ == "__main__":
    run_script(main)
