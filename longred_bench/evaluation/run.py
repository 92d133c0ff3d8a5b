"""``run_eval``: one evaluation, dispatched before anything is loaded. The ``ppl`` suite is
perplexity by position (:mod:`longred_bench.evaluation.ppl`, no lm-eval); every other suite runs
in the lm-eval harness (:mod:`longred_bench.evaluation.harness`) on the model resolved once by
:func:`longred_bench.evaluation.lm.open_model` (backend, decoding and window)."""

from __future__ import annotations

from pathlib import Path

from longred_bench.errors import UserError
from longred_bench.evaluation import paper_suite
from longred_bench.evaluation.config import EvalConfig
from longred_bench.evaluation.harness import EvalResult


def run_eval(
    cfg: EvalConfig,
    *,
    progress: bool = True,
    item_scores: bool = False,
    request_cache: Path | None = None,
) -> EvalResult:
    """Run the evaluation ``cfg`` describes (already checked). ``item_scores`` adds one
    ``eval_item`` record per scored document and per-document metric
    (:func:`longred_bench.evaluation.items.item_records`; not for the ``ppl`` suite, which has no
    lm-eval documents).

    ``request_cache`` (a path prefix) keeps every model response as it is computed, in lm-eval's
    request cache (``<prefix>_rank0.db``, lm-eval's ``use_cache``), and the ``ppl`` suite's
    records of each finished length in the folder ``<prefix>``: an evaluation interrupted and
    run again with the same cache computes only what it had not finished. The caller keys the
    prefix by everything a response depends on (model, RoPE, decoding, ...).

    ``paper_short`` checks the hub first, unless its tasks are its members' offline tasks
    (``eval --offline-members``); its hub error names that flag where some member has one. Its
    records all carry :func:`~longred_bench.evaluation.paper_suite.ran_fields`."""
    if cfg.suite == "ppl":
        if item_scores:
            raise UserError("item scores are for the lm-eval suites; the ppl suite has no "
                            "documents")  # fmt: skip
        from longred_bench.evaluation.ppl import run_ppl_config

        return EvalResult(run_ppl_config(cfg, progress=progress, done_dir=request_cache))
    paper = cfg.suite == paper_suite.SUITE
    if paper:  # the hub (not for its offline members), before any model loads
        hint = paper_suite.offline_hint(cfg.tasks)
        paper_suite.prepare_run(cfg.tasks, cfg.allow_code_eval, hint)
    from longred_bench.evaluation.harness import check_task_names, run_harness
    from longred_bench.evaluation.lm import open_model

    check_task_names(cfg.tasks)  # a typo fails before the weights load
    result = run_harness(cfg, open_model(cfg), progress=progress, item_scores=item_scores,
                         request_cache=request_cache)  # fmt: skip
    if paper:  # every record says which task ran for its member: hub or offline
        for r in result.records:
            r.update(paper_suite.ran_fields(r.get("member")))
    return result
