"""RULER sample generation rate: ``longred_bench.taskdata.ruler.generation_rate`` against
lm-eval's own.

For each RULER task and length, the same tokenizer (SmolLM2's from the cache by default) sizes the
samples of both generators:

- ours: :func:`longred_bench.taskdata.ruler.generation_rate` for ``n`` samples (data preloaded,
  so only generation is timed);
- lm-eval: the ``custom_dataset`` function that lm-eval's own RULER task names in its registry
  (found through ``TaskManager``, called as a library with ``tokenizer=`` and
  ``max_seq_lengths=[length]``). It makes a fixed number of samples per length (its calibration
  of the haystack size, its few-shot example for ``vt`` and the ``Dataset`` it returns included);
  ``n`` for ours is set to the number it made. Hugging Face hub access is switched off, so a
  generator that needs the hub fails at once. ``random`` and ``numpy`` are seeded first.

Each run is a forked child of the benchmark process with a time limit (``--timeout``), so one that
never finishes is stopped, and every run starts from the same state: tokenizers loaded and data
preloaded, but nothing a generator remembers between samples (our token counts of words and
pieces, say) carried over from another run. The two generators run alternately ``--repeats``
times and the median time of each is reported, which evens out the load of other jobs on a
shared machine (the load average is recorded too).

Tasks whose lm-eval generator cannot run offline are listed with the reason: the NIAH tasks with
an essay haystack (loaded from the hub), and the QA tasks, which download SQuAD / HotpotQA over
HTTP and are not called. ``prompt_tokens`` is the mean prompt length of the first samples of each
generator in that tokenizer (lm-eval keeps the generation budget free inside the length; ours fills
the length with prompt + answer). Importing lm-eval's NIAH module makes nltk try to download
``punkt_tab`` (needed for essay haystacks only); that download is replaced by a no-op here.

Long contexts, ours only (lm-eval's generators are not run there): seconds per sample of every
task at ``--long-lengths`` (32K and 128K by default), ``--long-samples`` samples each (data
preloaded and one sample generated first, so tokenizer and corpus caches are warm), with the
mean prompt + answer tokens, and ``sweep_100_min``: the minutes 100 samples of that task take.

Example::

    python benchmarks/bench_ruler_rate.py --lengths 4096 --out reports/bench
    python benchmarks/bench_ruler_rate.py --lengths 1024 4096 16384 --timeout 300
    python benchmarks/bench_ruler_rate.py --long-lengths 32768 --long-samples 5
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import multiprocessing as mp
import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

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

# Our task name -> lm-eval 0.4.13's RULER task name.
LM_EVAL_NAMES = {
    "niah_single_1": "niah_single_1",
    "niah_single_2": "niah_single_2",
    "niah_single_3": "niah_single_3",
    "niah_multikey_1": "niah_multikey_1",
    "niah_multikey_2": "niah_multikey_2",
    "niah_multikey_3": "niah_multikey_3",
    "niah_multivalue": "niah_multivalue",
    "niah_multiquery": "niah_multiquery",
    "vt": "ruler_vt",
    "cwe": "ruler_cwe",
    "fwe": "ruler_fwe",
    "qa_1": "ruler_qa_squad",
    "qa_2": "ruler_qa_hotpot",
}
QA_READERS = {"qa_1": "read_squad", "qa_2": "read_hotpotqa"}  # lm_eval.tasks.ruler.qa_utils
FIELDS = (
    "task", "lm_eval_task", "length", "tokenizer", "n_samples", "repeats", "ours_s", "ours_per_s",
    "lm_eval_s", "lm_eval_per_s", "ours_over_lm_eval", "ours_prompt_tokens",
    "lm_eval_prompt_tokens", "status", "load1",
)  # fmt: skip
LONG_FIELDS = (
    "task", "length", "tokenizer", "n_samples", "s_per_sample", "sweep_100_min", "tokens",
    "fill", "load1",
)  # fmt: skip

PROMPT_SAMPLES = 5  # samples per generator whose prompts are tokenized for prompt_tokens


def resolve_function(reference: str, package_root: Path) -> Callable:
    """The function of a registry reference ``<dir>/<module>.<function>`` under ``package_root``
    (lm-eval writes ``!function`` entries of its task configs this way)."""
    path = Path(reference)
    module_file, _, function = path.name.rpartition(".")
    relative = (path.parent / module_file).relative_to(package_root.parent)
    return getattr(importlib.import_module(".".join(relative.parts)), function)


def lm_eval_generators(names: Sequence[str]) -> dict[str, Callable]:
    """lm-eval task name -> the ``custom_dataset`` function its registry entry names."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    index = TaskManager().task_index
    root = Path(lm_eval.__file__).resolve().parent
    return {n: resolve_function(index[n].cfg["custom_dataset"], root) for n in names}


def qa_reason(task: str) -> str:
    """Why lm-eval's QA generator is not run: the URL its reader downloads at run time."""
    from lm_eval.tasks.ruler import qa_utils

    reader = getattr(qa_utils, QA_READERS[task])
    url = inspect.signature(reader).parameters["url"].default
    return f"not compared: lm-eval's generator downloads {url} at run time (no access here)"


def mean_prompt_tokens(texts: Sequence[str], tokenizer: Any) -> float | None:
    """Mean token count of ``texts`` (special tokens included), ``None`` for no texts."""
    counts = [len(tokenizer(t).input_ids) for t in texts]
    return round(sum(counts) / len(counts), 1) if counts else None


def lm_eval_job(fn: Callable, tokenizer_dir: str, length: int, seed: int) -> Callable:
    """A job timing lm-eval's generator: ``() -> (seconds, samples, mean prompt tokens)``
    (``random`` and ``numpy`` seeded first)."""

    def job() -> tuple[float, int, float | None]:
        import numpy as np
        from lm_eval.tasks.ruler.common_utils import get_tokenizer

        random.seed(seed)
        np.random.seed(seed)
        start = time.perf_counter()
        rows = fn(tokenizer=tokenizer_dir, max_seq_lengths=[length])["test"]
        seconds = time.perf_counter() - start
        head = [rows[i]["input"] for i in range(min(PROMPT_SAMPLES, len(rows)))]
        return seconds, len(rows), mean_prompt_tokens(head, get_tokenizer(tokenizer_dir))

    return job


def ours_job(task: str, tok: Any, length: int, n: int, seed: int) -> Callable:
    """A job timing ours on ``n`` samples: ``() -> (seconds, samples, mean prompt tokens)``."""

    def job() -> tuple[float, int, float | None]:
        from longred_bench.taskdata.ruler import generate, generation_rate

        rate = generation_rate(task, tok, length, n, seed=seed)
        head = generate(task, tok, length, min(PROMPT_SAMPLES, n), seed)
        return n / rate, n, mean_prompt_tokens([s.input for s in head], tok)

    return job


def _child(job: Callable, conn: Any) -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    try:
        conn.send(("ok", *job()))
    except BaseException as exc:  # reported, not raised: the parent records why it failed
        first = (str(exc).strip().splitlines() or [""])[0][:160]
        conn.send(("error", f"{type(exc).__name__}: {first}", 0, None))
    finally:
        conn.close()


def time_in_child(job: Callable, timeout: float) -> tuple[str, Any, int, float | None]:
    """Run ``job`` in a forked child (output silenced) with a time limit:
    ``(status, seconds or reason, n, tokens)``. The child starts from the parent's state, so
    every run starts alike (caches the parent never filled stay cold)."""
    ctx = mp.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(job, send))
    proc.start()
    send.close()
    ready = receive.poll(timeout)
    result = receive.recv() if ready else None
    if proc.is_alive():
        proc.terminate()
    proc.join()
    if result is None:
        return "timeout", f"did not finish within {timeout:g} s", 0, None
    return result


def time_both(
    task: str, fn: Callable, length: int, args: argparse.Namespace, tok: Any
) -> tuple[str, dict[str, Any]]:
    """lm-eval's generator then ours, alternately ``args.repeats`` times, each run in a child:
    ``("ok", medians)`` or ``(why lm-eval's was not compared, {})``."""
    lm_runs: list[float] = []
    our_runs: list[float] = []
    for _ in range(args.repeats):
        status, value, n, lm_tokens = time_in_child(
            lm_eval_job(fn, args.tokenizer_dir, length, args.seed), args.timeout
        )
        if status == "timeout":
            return f"not compared: lm-eval's generator {value}", {}
        if status != "ok":
            return f"not compared: lm-eval's generator failed offline ({value})", {}
        lm_runs.append(value)
        status, seconds, _, our_tokens = time_in_child(
            ours_job(task, tok, length, n, args.seed), args.timeout
        )
        if status != "ok":
            raise RuntimeError(f"our generator on {task} at {length}: {seconds}")
        our_runs.append(seconds)
    medians = {"n": n, "lm_s": statistics.median(lm_runs), "ours_s": statistics.median(our_runs)}
    return "ok", {**medians, "lm_tokens": lm_tokens, "our_tokens": our_tokens}


def compare(task: str, fn: Callable | None, length: int, args: argparse.Namespace, tok: Any):
    """One row: both generators on ``task`` at ``length`` (or the reason they were not)."""
    row: dict[str, Any] = dict.fromkeys(FIELDS)
    row.update(task=task, lm_eval_task=LM_EVAL_NAMES[task], length=length, tokenizer=args.tokenizer)
    row["load1"] = round(os.getloadavg()[0], 2)
    if fn is None:
        row["status"] = qa_reason(task)
        return row
    status, t = time_both(task, fn, length, args, tok)
    if status != "ok":
        row["status"] = status
        return row
    n = t["n"]
    row.update(
        n_samples=n,
        repeats=args.repeats,
        ours_s=round(t["ours_s"], 3),
        ours_per_s=round(n / t["ours_s"], 1),
        lm_eval_s=round(t["lm_s"], 3),
        lm_eval_per_s=round(n / t["lm_s"], 1),
        ours_over_lm_eval=round(t["lm_s"] / t["ours_s"], 2),
        ours_prompt_tokens=t["our_tokens"],
        lm_eval_prompt_tokens=t["lm_tokens"],
        status="compared",
    )
    return row


def time_long(task: str, length: int, n: int, args: argparse.Namespace, tok: Any) -> dict:
    """One row of the long-context table: our seconds per sample of ``task`` at ``length``."""
    from longred_bench.taskdata.ruler import generate

    generate(task, tok, length, 1, args.seed + 1)  # warm: corpus, unit counts, QA files
    load1 = round(os.getloadavg()[0], 2)
    start = time.perf_counter()
    samples = generate(task, tok, length, n, args.seed)
    seconds = (time.perf_counter() - start) / n
    tokens = sum(s.token_count for s in samples) / n
    return {
        "task": task,
        "length": length,
        "tokenizer": args.tokenizer,
        "n_samples": n,
        "s_per_sample": round(seconds, 4),
        "sweep_100_min": round(100 * seconds / 60, 2),
        "tokens": round(tokens, 1),
        "fill": round(tokens / length, 4),
        "load1": load1,
    }


def long_report(rows: list[dict[str, Any]]) -> str:
    """The Markdown section of long-context seconds per sample, with the 13-task sweep time."""
    text = (
        "\n## Long contexts: our seconds per sample\n\n"
        "`s_per_sample`: mean over `n_samples` after one warm-up sample; `sweep_100_min`: 100 "
        "samples of the task; `tokens`: mean prompt + answer tokens; `fill`: `tokens / length`."
        "\n\n" + markdown_table(rows, [c for c in LONG_FIELDS if c != "tokenizer"])
    )
    for length in sorted({r["length"] for r in rows}):
        mins = sum(r["sweep_100_min"] for r in rows if r["length"] == length)
        tasks = sum(1 for r in rows if r["length"] == length)
        text += f"\n{tasks} tasks x 100 samples at {length}: about {mins:.1f} min.\n"
    return text


def report(rows: list[dict[str, Any]], info: dict[str, Any], cmd: str) -> str:
    """The Markdown report: compared tasks, then the ones that were not and why."""
    done = [r for r in rows if r["status"] == "compared"]
    skipped = {(r["task"], r["length"]): r for r in rows if r["status"] != "compared"}
    columns = [c for c in FIELDS if c not in ("tokenizer", "status")]
    text = (
        f"# RULER sample generation rate: ours vs lm-eval ({info['lm_eval']})\n\n"
        f"{provenance_lines(info, cmd)}Tokenizer `{rows[0]['tokenizer']}` for both. `*_per_s`:"
        " samples per second; `ours_over_lm_eval` > 1 means ours is faster. Times are medians of"
        " `repeats` alternating runs of the two generators, each in a fresh child process.\n\n"
        + markdown_table(done, columns)
    )
    if skipped:
        text += "\nNot compared:\n\n"
        for (task, length), r in skipped.items():
            why = r["status"].removeprefix("not compared: ")
            text += f"- `{task}` (lm-eval `{r['lm_eval_task']}`) at {length}: {why}\n"
    return text


def build_parser() -> argparse.ArgumentParser:
    """Command-line options."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tokenizer", default="smollm2-135m", help="zoo name or HF model directory")
    p.add_argument("--tasks", nargs="+", default=list(LM_EVAL_NAMES), choices=list(LM_EVAL_NAMES))
    p.add_argument("--lengths", nargs="+", type=int, default=[4096])
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per generator call")
    p.add_argument(
        "--repeats", type=int, default=3, help="alternating runs of each generator (median kept)"
    )
    p.add_argument("--long-lengths", nargs="*", type=int, default=[32768, 131072])
    p.add_argument(
        "--long-samples", nargs="*", type=int, default=[10, 3], help="one per --long-lengths"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", type=Path, default=Path("reports/bench"))
    return p


def main(argv: Sequence[str] | None = None) -> list[Path]:
    """Compare the generators, print and write CSV + Markdown; return the written paths."""
    args = build_parser().parse_args(argv)
    if len(args.long_samples) != len(args.long_lengths):
        raise UserError("--long-samples needs one count per --long-lengths")
    os.environ["HF_HUB_OFFLINE"] = "1"  # before datasets / huggingface_hub are imported
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import nltk

    nltk.download = lambda *a, **k: False  # lm-eval's NIAH module asks for punkt_tab on import

    from lm_eval.tasks.ruler.common_utils import get_tokenizer

    from longred_bench.data.corpora import model_dir
    from longred_bench.models.loading import ZOO, load_tokenizer
    from longred_bench.taskdata.ruler import preload

    spec = args.tokenizer
    args.tokenizer_dir = str(model_dir(spec)) if spec in ZOO else spec
    tok = load_tokenizer(args.tokenizer)
    get_tokenizer(args.tokenizer_dir)  # lm-eval caches its tokenizer: loaded before timing
    runnable = [LM_EVAL_NAMES[t] for t in args.tasks if t not in QA_READERS]
    generators = lm_eval_generators(runnable)
    for task in args.tasks:
        if task not in QA_READERS:
            preload(task)
    info = provenance()
    cmd = command_line(__file__, argv)
    rows = []
    for length in args.lengths:
        for task in args.tasks:
            rows.append(compare(task, generators.get(LM_EVAL_NAMES[task]), length, args, tok))
            r = rows[-1]
            rates = (
                ", ".join(
                    f"{who} {r[key]}/s"
                    for who, key in (("ours", "ours_per_s"), ("lm-eval", "lm_eval_per_s"))
                    if r[key] is not None
                )
                or "no rate"
            )
            print(f"{task} L={length}: {rates} ({r['status']})", flush=True)
    long_rows = []
    for length, n in zip(args.long_lengths, args.long_samples, strict=True):
        for task in args.tasks:
            long_rows.append(time_long(task, length, n, args, tok))
            print(f"{task} L={length}: {long_rows[-1]['s_per_sample']} s/sample", flush=True)
    info["loadavg_end"] = loadavg()
    name = Path(args.tokenizer).name
    stem = args.out / f"ruler_rate_{name}"
    stamp = {k: info[k] for k in ("commit", "source", "device", "torch", "transformers", "lm_eval")}
    write_csv([{**r, **stamp} for r in rows], stem.with_suffix(".csv"), (*FIELDS, *stamp))
    paths = [stem.with_suffix(".csv"), stem.with_suffix(".md")]
    md = report(rows, info, cmd)
    if long_rows:
        long_csv = args.out / f"ruler_rate_long_{name}.csv"
        write_csv([{**r, **stamp} for r in long_rows], long_csv, (*LONG_FIELDS, *stamp))
        md += long_report(long_rows)
        paths.insert(1, long_csv)
    stem.with_suffix(".md").write_text(md)
    print(md, flush=True)
    return paths


if __name__ == "__main__":
    run_script(main)
