"""``eval``: one evaluation (:class:`~longred_bench.evaluation.config.EvalConfig`), its tidy
records with provenance, lm-eval's raw results and the suite's report and plots.

Every model response is kept under ``out/requests/`` as it is computed
(:mod:`longred_bench.jobs.resume`), so an interrupted ``eval`` run again with the same model
settings computes only the requests (tasks, lengths, documents) it had not finished. With
``--quiet`` a progress line comes at least every minute (:mod:`longred_bench.jobs.heartbeat`).
"""

from __future__ import annotations

import json
from pathlib import Path

from longred_bench.errors import UserError
from longred_bench.evaluation import paper_suite
from longred_bench.evaluation.config import EvalConfig
from longred_bench.evaluation.harness import RulerTooShort, WindowTooSmall
from longred_bench.evaluation.run import run_eval
from longred_bench.evaluation.samples import SAMPLES, keep_samples, write_samples
from longred_bench.jobs.builds import result_builds
from longred_bench.jobs.heartbeat import heartbeat
from longred_bench.jobs.resume import REQUESTS, request_cache, saved_responses, weights_stamp
from longred_bench.reports.eval_report import write_eval_report
from longred_bench.results import Provenance, config_hash, read_records, write_records


def samples_run(cache: Path, cfg: EvalConfig) -> str:
    """The key of a run's logged samples: its responses (the request-cache prefix ``cache``)
    and its config (without ``log_samples``, which changes no document; tasks and lengths in
    any order)."""
    return config_hash({"responses": cache.name, "config": cfg.run_settings()})


def eval_command(
    cfg: EvalConfig, out: Path, *, progress: bool = True, command: str | None = None
) -> list[Path]:
    """Run ``cfg`` and write ``out/eval.jsonl``, ``out/lm_eval_results.json`` (lm-eval suites),
    ``out/eval.md``, the plots and, with ``cfg.log_samples``, ``out/samples/<task>.jsonl.gz``
    (every task's documents, a resumed run's included: the reused responses are logged too;
    without it, an earlier run's ``samples/`` stays only where it is this run's documents,
    :func:`~longred_bench.evaluation.samples.keep_samples`); returns the paths written.
    ``command`` (the command line) heads ``eval.md``, above its device and commit line."""
    cache = request_cache(out, cfg)
    saved = saved_responses(cache)
    stamp = weights_stamp(cfg.model)
    if stamp is not None and _recorded_weights(out) not in (None, stamp):
        print(f"[eval] the files of {cfg.model} changed since {out / 'eval.jsonl'} was written: "
              "evaluated again, its results are replaced", flush=True)  # fmt: skip
    if saved and (out / "eval.jsonl").is_file():  # a finished run of it (another is refused)
        print(f"[eval] {out} holds this evaluation's results: its {saved} saved model "
              f"response(s) (under {out / REQUESTS}) are reused and the results written again",
              flush=True)  # fmt: skip
    elif saved:
        print(f"[eval] resuming: {saved} model response(s) saved under {out / REQUESTS}; those "
              "this run asks again are reused, only the rest is computed", flush=True)  # fmt: skip

    def line() -> str:
        return (
            f"[eval] {cfg.suite} of {cfg.model}: {saved_responses(cache)} model response(s) so far"
        )

    with heartbeat(line, enabled=not progress):
        try:
            result = run_eval(cfg, progress=progress, request_cache=cache)
        except RulerTooShort as exc:
            raise UserError(f"{exc}: pass --lengths from that one on, or other --tasks") from None
        except WindowTooSmall as exc:
            other = "" if cfg.suite == "niah" else " or other --tasks"  # niah runs one task
            raise UserError(
                f"{exc}: pass --max-length {exc.needed} or more (a window past the model's own is "
                f"allowed){other}"
            ) from None
    config = {"command": "eval", **cfg.ran_dict()}
    if stamp is not None:  # a local model's files, to tell when they change at the same path
        config["weights"] = stamp
    provenance = Provenance.collect(
        config, seed=cfg.seed, device=cfg.device, builds=result_builds(config)
    )
    out.mkdir(parents=True, exist_ok=True)
    paths = [write_records(out / "eval.jsonl", result.records, provenance)]
    if result.raw:
        raw_path = out / "lm_eval_results.json"
        raw_path.write_text(json.dumps(result.raw, indent=2, sort_keys=True) + "\n", "utf-8")
        paths.append(raw_path)
    name = cfg.model if cfg.rope is None else f"{cfg.model} [{cfg.rope}]"
    name += " with PCD" if cfg.decoding == "pcd" else ""
    members = None
    title = f"`{cfg.suite}` evaluation of `{name}`"
    if cfg.suite == paper_suite.SUITE:
        members = paper_suite.report_lines(cfg.tasks)  # offline or hub, member by member
        if paper_suite.runs_offline(cfg.tasks):
            title += ", offline members only"
    run = samples_run(cache, cfg)
    if result.samples is not None:
        logged = write_samples(out, result.samples, run=run)
        counts = {p.relative_to(out): len(result.samples[task]) for task, p in logged.items()}
    else:
        kept, aside = keep_samples(out, run=run)
        logged, counts = {}, {p.relative_to(out): n for p, n in kept.items()}
        if aside is not None:
            print(f"[eval] moved the files of {out / SAMPLES} to {aside}: an earlier run's "
                  "documents, of other responses or settings than this run's; pass "
                  "--log-samples to log this run's", flush=True)  # fmt: skip
    paths += write_eval_report(read_records(paths[0]), out, title, members, samples=counts,
                               command=command)  # fmt: skip
    paths += logged.values()
    skipped = sum(f.over_length for f in result.fits)
    if skipped:
        print(f"skipped {skipped} over-length document(s); see n_over_length in eval.jsonl")
    return paths


def _recorded_weights(out: Path) -> str | None:
    """The stamp of the local model's files that ``out/eval.jsonl`` was measured with (None
    where there is none, or records written before stamps were kept)."""
    try:
        with (out / "eval.jsonl").open(encoding="utf-8") as handle:
            return json.loads(handle.readline())["provenance"]["config"].get("weights")
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
