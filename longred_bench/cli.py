"""The ``longred-bench`` command line: one entry point, one subcommand per job."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from longred_bench.errors import UserError
from longred_bench.heap import keep_freed_memory


def _cmd_drift(args: argparse.Namespace) -> int:
    from longred_bench.jobs.drift import DriftConfig, run_drift, save_run
    from longred_bench.reports.drift_plot import plot_drift_layers
    from longred_bench.reports.drift_report import drift_frames, drift_markdown
    from longred_bench.results import read_records

    cfg = DriftConfig(
        original=args.original,
        extended=tuple(args.extended or ()),
        rope=tuple(args.rope or ()),
        texts=args.texts,
        num_texts=args.num_texts,
        seq_len=args.seq_len,
        batch_size=args.batch_size,
        seed=args.seed,
        top_m=args.top_m,
        impl=args.impl,
        device=args.device,
        dtype=args.dtype,
    )
    records, provenance = run_drift(cfg, progress=not args.quiet)
    out = Path(args.out)
    jsonl = save_run(out, records, provenance)
    records = read_records(jsonl)
    title = f"Drift of extended models from `{cfg.original}`"
    (out / "drift.md").write_text(drift_markdown(records, title), encoding="utf-8")
    _, layers = drift_frames(records)
    plot_drift_layers(layers, out / "drift.png", title.replace("`", ""))
    print(f"wrote {jsonl}, {out / 'drift.md'}, {out / 'drift.png'}")
    return 0


def _cmd_reproduce(args: argparse.Namespace) -> int:
    from longred_bench.reproduce.tables import reproduce

    paths = reproduce(
        args.table,
        args.profile,
        Path(args.out) if args.out else None,
        force=args.force,
        progress=not args.quiet,
        jobs=args.jobs,
    )
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0


def _wrote(paths: list[Path], start: float) -> None:
    """The closing line of a command: what it wrote and its wall time."""
    from longred_bench.reports import duration

    took = duration(time.perf_counter() - start)
    print(f"wrote {', '.join(str(p) for p in paths)} in {took}")


def _cmd_eval(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    from longred_bench.evaluation.harness import run_eval
    from longred_bench.pcd.config import pcd_from_args
    from longred_bench.reports.eval_report import write_eval_report
    from longred_bench.results import Provenance, write_records

    result = run_eval(
        args.model,
        suite=args.suite,
        rope=args.rope,
        tasks=args.tasks,
        limit=args.limit,
        lengths=args.lengths,
        samples=args.samples,
        depths=args.depths,
        corpus=args.corpus,
        num_fewshot=args.num_fewshot,
        batch_size=args.batch_size,
        max_length=args.max_length,
        backend=args.backend,
        device=args.device,
        seed=args.seed,
        progress=not args.quiet,
        decoding=args.decoding,
        pcd=pcd_from_args(args),
    )
    config = {
        "command": "eval",
        **{k: v for k, v in vars(args).items() if k not in ("func", "argv")},
    }
    provenance = Provenance.collect(config, seed=args.seed, device=args.device)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [write_records(out / "eval.jsonl", result.records, provenance)]
    if result.raw:
        raw_path = out / "lm_eval_results.json"
        raw_path.write_text(json.dumps(result.raw, indent=2, sort_keys=True) + "\n", "utf-8")
        paths.append(raw_path)
    name = args.model if args.rope is None else f"{args.model} [{args.rope}]"
    name += " with PCD" if args.decoding == "pcd" else ""
    paths += write_eval_report(result.records, out, f"`{args.suite}` evaluation of `{name}`")
    skipped = sum(f.over_length for f in result.fits)
    if skipped:
        print(f"skipped {skipped} over-length document(s); see n_over_length in eval.jsonl")
    _wrote(paths, start)
    return 0


def _cmd_compare(args: argparse.Namespace) -> int:
    import shlex

    start = time.perf_counter()

    from longred_bench.jobs.compare import CompareConfig, rows, run_compare
    from longred_bench.pcd.config import pcd_from_args
    from longred_bench.reports.compare_report import build_compare_report

    cfg = CompareConfig(
        original=args.original,
        extended=tuple(args.extended or ()),
        rope=tuple(args.rope or ()),
        suites=tuple(args.suites),
        short_suite=args.short_suite,
        short_tasks=tuple(args.short_tasks or ()),
        short_limit=args.short_limit,
        lengths=tuple(args.lengths),
        ruler_samples=args.ruler_samples,
        niah_depths=tuple(args.niah_depths),
        niah_samples=args.niah_samples,
        drift_texts=args.drift_texts,
        drift_num_texts=args.drift_num_texts,
        drift_seq_len=args.drift_seq_len,
        batch_size=args.batch_size,
        device=args.device,
        seed=args.seed,
        decoding=tuple(args.decoding),
        pcd=pcd_from_args(args),
    )
    out = Path(args.out)
    records = run_compare(cfg, out, progress=not args.quiet)
    labels = [label for label, _, _ in rows(cfg)]
    command = "longred-bench " + shlex.join(sys.argv[1:] if args.argv is None else args.argv)
    paths = build_compare_report(
        records, labels, out, title=f"`{cfg.original}` and its extensions", command=command
    )
    _wrote(paths, start)
    return 0


def _cmd_psa(args: argparse.Namespace) -> int:
    import shlex

    start = time.perf_counter()
    from longred_bench.jobs.psa import PsaConfig, run_psa
    from longred_bench.pcd.config import PcdConfig, pcd_from_args
    from longred_bench.reports.psa_report import write_psa_report
    from longred_bench.results import write_records

    if args.top_k < 1:
        raise UserError(f"psa: --top-k must be >= 1 (got {args.top_k})")
    cfg = PsaConfig(
        models=tuple(args.model),
        ropes=tuple(args.rope),
        tasks=tuple(args.tasks),
        lengths=tuple(args.lengths),
        samples=args.samples,
        seed=args.seed,
        corpus=args.corpus,
        device=args.device,
    )
    pcd = pcd_from_args(args)
    if pcd is not None and "pcd" not in args.decoding:
        raise UserError("psa: PCD parameters given without pcd in --decoding")
    records = []
    for decoding in dict.fromkeys(args.decoding):  # one line per model, extension and decoding
        use = (pcd or PcdConfig()) if decoding == "pcd" else None
        got, provenance = run_psa(cfg, progress=not args.quiet, pcd=use)
        records += got
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    paths = [write_records(out / "psa.jsonl", records, provenance)]
    command = "longred-bench " + shlex.join(sys.argv[1:] if args.argv is None else args.argv)
    names = ", ".join(f"`{m}`" for m in cfg.models)
    paths += write_psa_report(
        records, out, f"PSA: gold-token salience of {names} by length", top_k=args.top_k,
        command=command,
    )  # fmt: skip
    _wrote(paths, start)
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from longred_bench.training.config import parse_set, resolve_config

    cfg = resolve_config(
        args.recipe,
        profile=args.profile,
        config_file=Path(args.config) if args.config else None,
        overrides=parse_set(args.set or []),
    )
    if args.dry_run:
        from longred_bench.training.plan import describe_plan

        print(describe_plan(cfg))
        return 0
    from longred_bench.training.distributed import init_distributed
    from longred_bench.training.loop import train

    rank, world = init_distributed()
    final = train(
        cfg, Path(args.out), resume=args.resume, progress=not args.quiet and rank == 0,
        rank=rank, world=world,
    )  # fmt: skip
    if rank == 0:
        print(f"wrote {final}")
    return 0


def _add_train(sub: argparse._SubParsersAction) -> None:
    from longred_bench.training.config import PROFILES, RECIPES

    p = sub.add_parser(
        "train",
        help="train: pretrain tiny-base, CPT, mix-CPT, control, LongReD, LinearARD",
        description="Train with a recipe (training/recipes/<recipe>.yaml) at a profile; "
        "--config YAML and --set KEY=VALUE override its keys (unknown keys are errors). Writes "
        "OUT/metrics.jsonl, OUT/curves.png, OUT/checkpoints/ and OUT/final/ (a Hugging Face "
        "model directory). Under torchrun, runs data-parallel (DDP, or FSDP2 with "
        "distributed=fsdp).",
    )
    p.add_argument("--recipe", required=True, help=f"one of {', '.join(RECIPES)}")
    p.add_argument("--config", metavar="YAML", help="config file overriding the recipe's keys")
    p.add_argument("--profile", default="tiny", help=f"one of {', '.join(PROFILES)}")
    p.add_argument("--set", nargs="+", metavar="KEY=VALUE", help="override config keys")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--resume", action="store_true", help="continue from OUT's last checkpoint")
    p.add_argument("--dry-run", action="store_true", help="print the resolved config and exit")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_train)


def _add_compare(sub: argparse._SubParsersAction) -> None:
    from longred_bench.evaluation.lm import DECODINGS
    from longred_bench.jobs.compare import SUITES, CompareConfig
    from longred_bench.pcd.config import add_pcd_arguments

    d = CompareConfig(original="", rope=("x",))
    p = sub.add_parser(
        "compare",
        help="drift + short retention + RULER + NIAH of extended models, one report",
        description="Compare an original model with extended checkpoints (--extended) and/or "
        "zero-shot RoPE extensions of it (--rope): short-text retention, RULER by length, NIAH "
        "grid and per-layer drift, in OUT/compare.md with PNGs. Each measured unit is saved "
        "under OUT/runs/ and reused when the command is run again.",
    )
    p.add_argument("--original", required=True, help="model spec of the original model")
    p.add_argument("--extended", nargs="+", metavar="M", help="extended checkpoints")
    p.add_argument("--rope", nargs="+", metavar="SPEC", help="zero-shot extensions of original")
    p.add_argument("--suites", nargs="+", default=list(SUITES), choices=list(SUITES))
    p.add_argument("--short-suite", default=d.short_suite, choices=["short", "short_tiny"])
    p.add_argument("--short-tasks", nargs="+", metavar="T", help="replace the short suite's tasks")
    p.add_argument("--short-limit", type=int, default=d.short_limit, help="documents per task")
    p.add_argument("--lengths", nargs="+", type=int, default=list(d.lengths), metavar="L")
    p.add_argument("--ruler-samples", type=int, default=d.ruler_samples, metavar="N")
    p.add_argument("--niah-depths", nargs="+", type=int, default=list(d.niah_depths))
    p.add_argument("--niah-samples", type=int, default=d.niah_samples, metavar="N")
    p.add_argument("--drift-texts", default=d.drift_texts)
    p.add_argument("--drift-num-texts", type=int, default=d.drift_num_texts)
    p.add_argument("--drift-seq-len", type=int, default=d.drift_seq_len)
    p.add_argument("--batch-size", type=int, default=d.batch_size)
    p.add_argument("--device", default=d.device)
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument(
        "--decoding", nargs="+", default=list(d.decoding), choices=list(DECODINGS),
        help="one row per model and decoding (pcd: Positional Contrastive Decoding)",
    )  # fmt: skip
    add_pcd_arguments(p)
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--quiet", action="store_true", help="less logging")
    p.set_defaults(func=_cmd_compare)


def _add_drift(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "drift",
        help="per-layer hidden cosine + attention KL of extended models vs the original",
        description="Per-layer drift (hidden-state cosine, attention KL) of extended models "
        "from the original. Each --extended checkpoint is compared as is, or once per --rope "
        "spec as a zero-shot extension; without --extended the original itself is extended.",
    )
    p.add_argument("--original", required=True, help="model spec: zoo name, HF dir, .gguf, hub id")
    p.add_argument("--extended", nargs="+", metavar="M", help="extended checkpoint spec(s)")
    p.add_argument(
        "--rope",
        nargs="+",
        metavar="SPEC",
        help="RoPE extension(s): abf:theta=2e7, "
        "pi:factor=4, yarn:factor=4, dynamic:factor=4, llama3:factor=8 or JSON",
    )
    p.add_argument(
        "--texts",
        default="brown",
        help="brown|austen|kjv[:split], a text FILE, or random (default brown)",
    )
    p.add_argument("--num-texts", type=int, default=8)
    p.add_argument("--seq-len", type=int, default=1024)
    p.add_argument("--batch-size", type=int, default=1)
    p.add_argument("--top-m", type=int, default=6, help="LongReD's M: top-KL layers to select")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--impl", default="auto", choices=["auto", "stats", "chunked", "naive", "triton"],
        help="attention-KL implementation (auto: stats on CPU)",
    )  # fmt: skip
    p.add_argument("--device", default="cpu")
    p.add_argument("--dtype", default="float32")
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_drift)


def _add_psa(sub: argparse._SubParsersAction) -> None:
    from longred_bench.evaluation.lm import DECODINGS
    from longred_bench.jobs.psa import DEFAULT_TASKS, ORIGINAL, RETRIEVAL_TASKS, PsaConfig
    from longred_bench.pcd.config import add_pcd_arguments
    from longred_bench.reports.psa_report import TOP_K

    d = PsaConfig(models=("",))
    p = sub.add_parser(
        "psa",
        help="positional salience: gold-token rank, probability and S(L) by context length",
        description="Teacher-force the gold answer of RULER retrieval samples and record, at "
        "every answer token, the gold token's rank and probability, the salience S(L) (mean "
        "reciprocal rank) and where the needle sits. Writes OUT/psa.jsonl (records + "
        "provenance), OUT/psa.md (tables and the PSA verdict) and OUT/psa.png.",
    )
    p.add_argument("--model", required=True, nargs="+", metavar="M", help="model spec(s)")
    p.add_argument(
        "--rope",
        nargs="+",
        metavar="SPEC",
        default=[ORIGINAL],
        help=f"one line per spec: {ORIGINAL} (the model as it is), abf:theta=1e7, yarn:factor=4, "
        f"... (default {ORIGINAL})",
    )
    p.add_argument(
        "--tasks",
        nargs="+",
        default=list(DEFAULT_TASKS),
        metavar="T",
        help=f"RULER retrieval tasks: {', '.join(RETRIEVAL_TASKS)}",
    )
    p.add_argument("--lengths", nargs="+", type=int, default=list(d.lengths), metavar="L")
    p.add_argument("--samples", type=int, default=d.samples, metavar="N", help="per task, length")
    p.add_argument("--top-k", type=int, default=TOP_K, help="'highly ranked' for the verdict")
    p.add_argument("--corpus", default=d.corpus, help="haystack corpus (default brown)")
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--device", default=d.device)
    p.add_argument(
        "--decoding", nargs="+", default=["greedy"], choices=list(DECODINGS),
        help="ranks under greedy decoding and/or PCD (lines labelled '+pcd'; --pcd-* flags)",
    )  # fmt: skip
    add_pcd_arguments(p)
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_psa)


def _add_reproduce(sub: argparse._SubParsersAction) -> None:
    from longred_bench.reproduce.tables import DEFAULT_PROFILE, TABLES

    p = sub.add_parser(
        "reproduce",
        help="regenerate a paper table as Markdown + PNG under reports/<profile>/",
        description="Run (or reuse cached) runs of a paper table and write its report.",
    )
    p.add_argument("table", choices=sorted(TABLES))
    p.add_argument("--profile", default=DEFAULT_PROFILE, help="smoke | smol | paper")
    p.add_argument("--out", help="output directory (default reports/<profile>)")
    p.add_argument("--force", action="store_true", help="recompute even if a cached run exists")
    jobs_help = "table3: worker processes for its independent runs (cores/N threads each)"
    p.add_argument("--jobs", type=int, default=1, help=jobs_help)
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=_cmd_reproduce)


def _add_eval(sub: argparse._SubParsersAction) -> None:
    from longred_bench.evaluation.harness import BACKENDS, SUITES
    from longred_bench.evaluation.lm import DECODINGS
    from longred_bench.pcd.config import add_pcd_arguments

    p = sub.add_parser(
        "eval",
        help="evaluate a (RoPE-extended) model: short benchmarks, RULER, NIAH, long PPL",
        description="Evaluate a model, optionally RoPE-extended, on a suite of the tasks/ "
        "lm-eval registry (or long-document perplexity) and write eval.jsonl (records + "
        "provenance), lm_eval_results.json, eval.md and the suite's plots. Documents that do "
        "not fit the window are skipped and counted, never truncated.",
    )
    p.add_argument("--model", required=True, help="model spec: zoo name, HF dir, .gguf, hub id")
    p.add_argument("--rope", metavar="SPEC", help="RoPE extension, e.g. pi:factor=4, abf:theta=2e7")
    p.add_argument("--suite", default="short", choices=list(SUITES), help="benchmark suite")
    p.add_argument("--tasks", nargs="+", metavar="T", help="lm-eval tasks/groups (default: suite)")
    p.add_argument(
        "--lengths",
        nargs="+",
        type=int,
        metavar="L",
        help="context lengths in tokens for ruler/niah/ppl (default: the window, a power of two)",
    )
    p.add_argument(
        "--samples",
        type=int,
        metavar="N",
        help="samples per task and length (ruler), per cell (niah) or windows (ppl)",
    )
    p.add_argument("--depths", nargs="+", type=int, metavar="D", help="needle depths %% (niah)")
    p.add_argument("--corpus", help="haystack corpus (ruler/niah: brown) or text (ppl: austen)")
    p.add_argument("--limit", type=int, help="at most N documents per task (short suites)")
    p.add_argument("--num-fewshot", type=int, help="few-shot examples (default: each task's own)")
    p.add_argument(
        "--batch-size", type=int, help="requests per batch (default: hf 1, vllm all at once)"
    )
    p.add_argument(
        "--max-length",
        type=int,
        help="tokens per request (default: the model's window; ruler/niah: longest length + "
        "generation budget)",
    )
    p.add_argument("--backend", default="hf", choices=list(BACKENDS), help="lm-eval model")
    p.add_argument(
        "--decoding", default="greedy", choices=list(DECODINGS),
        help="greedy, or pcd (Positional Contrastive Decoding, hf backend; --pcd-* flags)",
    )  # fmt: skip
    add_pcd_arguments(p)
    p.add_argument("--device", default="cpu")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument("--quiet", action="store_true", help="less lm-eval logging")
    p.set_defaults(func=_cmd_eval)


def _cmd_tasks_path(args: argparse.Namespace) -> int:
    from longred_bench.evaluation.harness import tasks_dir

    print(tasks_dir())
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``longred-bench``."""
    from longred_bench.jobs.data import add_data_parser

    parser = argparse.ArgumentParser(
        prog="longred-bench",
        description="Measure and repair what context-window extension does to a RoPE model.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    add_data_parser(sub)
    _add_drift(sub)
    _add_eval(sub)
    _add_compare(sub)
    _add_psa(sub)
    _add_train(sub)
    _add_reproduce(sub)
    p = sub.add_parser(
        "tasks-path",
        help="print the folder of the installed lm-eval task registry",
        description="Print the installed lm-eval task registry's folder, for "
        '`lm_eval --include_path "$(longred-bench tasks-path)"`.',
    )
    p.set_defaults(func=_cmd_tasks_path)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 with a one-line message on bad input)."""
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        keep_freed_memory()
        return int(args.func(args))
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
