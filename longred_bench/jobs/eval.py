"""``eval``: one evaluation (:class:`~longred_bench.evaluation.config.EvalConfig`), its tidy
records with provenance, lm-eval's raw results and the suite's report and plots."""

from __future__ import annotations

import json
from pathlib import Path

from longred_bench.evaluation.config import EvalConfig
from longred_bench.evaluation.harness import run_eval
from longred_bench.reports.eval_report import write_eval_report
from longred_bench.results import Provenance, write_records


def eval_command(cfg: EvalConfig, out: Path, *, progress: bool = True) -> list[Path]:
    """Run ``cfg`` and write ``out/eval.jsonl``, ``out/lm_eval_results.json`` (lm-eval suites),
    ``out/eval.md`` and the plots; returns the paths written."""
    result = run_eval(cfg, progress=progress)
    provenance = Provenance.collect(
        {"command": "eval", **cfg.to_dict()}, seed=cfg.seed, device=cfg.device
    )
    out.mkdir(parents=True, exist_ok=True)
    paths = [write_records(out / "eval.jsonl", result.records, provenance)]
    if result.raw:
        raw_path = out / "lm_eval_results.json"
        raw_path.write_text(json.dumps(result.raw, indent=2, sort_keys=True) + "\n", "utf-8")
        paths.append(raw_path)
    name = cfg.model if cfg.rope is None else f"{cfg.model} [{cfg.rope}]"
    name += " with PCD" if cfg.decoding == "pcd" else ""
    paths += write_eval_report(result.records, out, f"`{cfg.suite}` evaluation of `{name}`")
    skipped = sum(f.over_length for f in result.fits)
    if skipped:
        print(f"skipped {skipped} over-length document(s); see n_over_length in eval.jsonl")
    return paths
