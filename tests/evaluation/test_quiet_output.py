"""What lm-eval shows while the suite runs it: its per-task request-building bars are not drawn
and warnings that never apply to the suite are dropped; every other warning shows."""

from __future__ import annotations

import logging

from longred_bench.evaluation.quiet_output import lm_eval_output

GROUP = "lm_eval.api.group"
PPL = "Group 'longred_short_tiny': metric 'acc,none' is missing in 1/5 tasks. Missing in: "


def test_request_building_bars_are_off_and_model_bars_stay() -> None:
    import lm_eval.api.task
    from tqdm import tqdm

    with lm_eval_output(quiet=False):
        assert lm_eval.api.task.tqdm(range(3)).disable
        assert not tqdm(range(3), disable=False).disable  # anyone else's bar is drawn
    assert not lm_eval.api.task.tqdm(range(3), disable=False).disable  # restored after


def test_only_the_warnings_that_never_apply_are_dropped(caplog) -> None:
    with caplog.at_level(logging.WARNING), lm_eval_output(quiet=False):
        logging.getLogger(GROUP).warning(PPL + "longred_tiny_ppl")
        logging.getLogger(GROUP).warning(PPL.replace("1/5", "2/5") + "longred_tiny_ppl, x")
        logging.getLogger("lm_eval.api.task").warning("[Task: t] a warning of the suite's own")
    messages = [r.getMessage() for r in caplog.records]
    assert not any(m.endswith("Missing in: longred_tiny_ppl") for m in messages)
    assert any(m.endswith("longred_tiny_ppl, x") for m in messages)
    assert "[Task: t] a warning of the suite's own" in messages


def test_the_tiny_ppl_task_states_its_aggregations(caplog, request) -> None:
    from data_helpers import ensure_cached

    from longred_bench.evaluation.harness import task_manager

    ensure_cached(request, "brown", "austen")
    with caplog.at_level(logging.WARNING):
        task_manager(None, ["longred_tiny_ppl"]).load(["longred_tiny_ppl"])
    assert not [r for r in caplog.records if "is defined, but" in r.getMessage()]
