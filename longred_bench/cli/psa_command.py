"""The body of ``longred-bench psa``: every value and the ``--out`` folder checked before a
model loads, a measured run's report written from its records (nothing measured again), else
the measurement."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from longred_bench.cli.commands import command_line, wrote
from longred_bench.cli.flags import (
    check_long_lengths,
    check_pcd_flags,
    check_psa_depths,
    pcd_settings,
)
from longred_bench.cli.named import (
    check_corpus_name,
    check_extensions,
    check_models,
    check_pcd_model,
    local_names,
)
from longred_bench.cli.outputs import check_out_dir, check_out_outside, check_results_config
from longred_bench.errors import UserError


def cmd_psa(args: argparse.Namespace) -> int:
    start = time.perf_counter()
    check_out_dir(Path(args.out), "psa")
    check_out_outside(Path(args.out), *args.model)
    check_models(*args.model)
    check_pcd_flags(args)
    from longred_bench.jobs.configs import PsaConfig
    from longred_bench.pcd.config import PcdConfig

    cfg = PsaConfig(
        models=tuple(local_names(m) for m in args.model), ropes=tuple(args.rope),
        tasks=tuple(args.tasks), lengths=tuple(args.lengths), samples=args.samples,
        seed=args.seed, corpus=args.corpus, device=args.device, depths=tuple(args.depths or ()),
    )  # fmt: skip
    cfg.check()  # before torch is imported
    check_psa_depths(cfg.tasks, cfg.depths)
    check_long_lengths(cfg.lengths, "psa")
    pcd = pcd_settings(args)
    decodings = list(args.decoding)  # a value listed twice is refused as it is parsed
    mine = {**cfg.to_dict(), "decoding": decodings,
            "pcd": (pcd or PcdConfig()).as_dict() if "pcd" in decodings else None}  # fmt: skip
    try:
        check_results_config(Path(args.out), "psa.jsonl", "a psa", mine, free=("device",))
    except UserError:  # a typo beside another run's results: the typo, not "another config"
        check_corpus_name(cfg.corpus)
        raise
    check_corpus_name(cfg.corpus)  # before a model loads
    from longred_bench.reports.psa_report import TOP_K, write_psa_report_from_records

    top_k = TOP_K if args.top_k is None else args.top_k
    if written := write_psa_report_from_records(Path(args.out), top_k, command_line(args)):
        print(f"{args.out} holds this psa, measured: nothing to measure (delete psa.jsonl there "
              "to measure it again); wrote its report from the records")  # fmt: skip
        wrote(written, start)
        return 0
    from longred_bench.jobs.configs import ORIGINAL

    for model in cfg.models:  # every model's extensions before the first model is scored
        check_extensions(model, [r for r in cfg.ropes if r != ORIGINAL])
        if "pcd" in decodings:
            check_pcd_model(model, tuple(None if r == ORIGINAL else r for r in cfg.ropes), pcd)
    from longred_bench.jobs.psa import psa_command

    paths = psa_command(
        cfg, Path(args.out), decodings=tuple(args.decoding), pcd=pcd, top_k=top_k,
        command=command_line(args), progress=not args.quiet,
    )  # fmt: skip
    wrote(paths, start)
    return 0
