"""What lm-eval shows while the suite runs it: its per-task request-building bars are not drawn,
its HF model's one unlabelled bar is labelled, and warnings that never apply to the suite are
dropped; every other warning shows."""

from __future__ import annotations

import io
import logging

import pytest

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


def test_the_hf_models_unlabelled_bar_is_labelled_and_its_labelled_ones_kept() -> None:
    """Splitting a perplexity task's documents drew a bare "100%|###| 4/4" among named bars."""
    import lm_eval.models.huggingface as hf

    from longred_bench.evaluation.quiet_output import WINDOWS_BAR

    sink = io.StringIO()
    with lm_eval_output(quiet=False):
        assert hf.tqdm(range(3), file=sink).desc == WINDOWS_BAR
        assert hf.tqdm(total=3, file=sink, desc="Running x").desc == "Running x"
    assert hf.tqdm(range(3), file=sink).desc == ""  # restored after


class _Kept(logging.Handler):
    """Keeps the warnings of ``names``' loggers, attached to the loggers themselves and with
    their level at WARNING: lm-eval may have turned propagation off or raised the level of its
    loggers earlier in this process."""

    def __init__(self, *names: str) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        self.loggers = [logging.getLogger(name) for name in names]

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def __enter__(self) -> _Kept:
        self.levels = [logger.level for logger in self.loggers]
        for logger in self.loggers:
            logger.addHandler(self)
            logger.setLevel(logging.WARNING)
        return self

    def __exit__(self, *exc: object) -> None:
        for logger, level in zip(self.loggers, self.levels, strict=True):
            logger.removeHandler(self)
            logger.setLevel(level)


def test_only_the_warnings_that_never_apply_are_dropped() -> None:
    with _Kept(GROUP, "lm_eval.api.task") as kept, lm_eval_output(quiet=False):
        logging.getLogger(GROUP).warning(PPL + "longred_tiny_ppl")
        logging.getLogger(GROUP).warning(PPL.replace("1/5", "2/5") + "longred_tiny_ppl, x")
        logging.getLogger("lm_eval.api.task").warning("[Task: t] a warning of the suite's own")
    assert not any(m.endswith("Missing in: longred_tiny_ppl") for m in kept.messages)
    assert any(m.endswith("longred_tiny_ppl, x") for m in kept.messages)
    assert "[Task: t] a warning of the suite's own" in kept.messages


def test_the_tiny_ppl_task_states_its_aggregations(request) -> None:
    from data_helpers import ensure_cached

    from longred_bench.evaluation.harness import task_manager

    ensure_cached(request, "brown", "austen", "sotu")
    with _Kept("lm_eval.api.task") as kept:
        task_manager(None, ["longred_tiny_ppl"]).load(["longred_tiny_ppl"])
    assert not [m for m in kept.messages if "is defined, but" in m]


@pytest.mark.parametrize("quiet", [False, True])
def test_the_level_an_evaluation_sets_does_not_carry_into_the_next(quiet):
    logger = logging.getLogger("lm_eval")
    before = logger.level
    with lm_eval_output(quiet=quiet):
        logger.setLevel(logging.INFO)  # as simple_evaluate(verbosity=...) does
    assert logger.level == before


def test_the_environment_is_described_once_per_process_with_lm_evals_keys(
    monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    """lm-eval's environment description (torch's ``collect_env``: ``pip list``, ``nvidia-smi``,
    seconds a call) runs once for any number of evaluations, and each result gets every key
    lm-eval's own ``add_env_info`` adds, with the same values; lm-eval's own is back after."""
    import lm_eval.evaluator
    import torch.utils.collect_env
    from lm_eval.loggers.utils import add_env_info

    from longred_bench.evaluation import quiet_output

    calls: list[int] = []

    def described() -> str:
        calls.append(1)
        return f"environment {len(calls)}"

    monkeypatch.setattr(torch.utils.collect_env, "get_pretty_env_info", described)
    monkeypatch.chdir(tmp_path)
    quiet_output._env_info.cache_clear()
    results = []
    for _ in range(3):
        with lm_eval_output(quiet=True):
            results.append({})
            lm_eval.evaluator.add_env_info(results[-1])
    assert len(calls) == 1
    assert results[0] == results[1] == results[2]
    assert results[0]["pretty_env_info"] == "environment 1"
    own: dict = {}
    add_env_info(own)  # lm-eval's own, which collects again
    assert len(calls) == 2 and set(own) == set(results[0])
    assert {k: v for k, v in own.items() if k != "pretty_env_info"} == {
        k: v for k, v in results[0].items() if k != "pretty_env_info"
    }
    assert lm_eval.evaluator.add_env_info is add_env_info
    quiet_output._env_info.cache_clear()


def test_the_pcd_model_built_by_name_warns_of_no_model_passed_as_an_object() -> None:
    """``longred-lm-eval run --model longred-pcd`` (and the model from Python) printed HFLM's
    two warnings about a model passed as an object: the suite loads it so, on purpose."""
    from longred_bench.pcd.lm import PcdLM

    hf = "lm_eval.models.huggingface"
    with _Kept(hf) as kept:
        PcdLM(pretrained="tiny-random", batch_size=1)
        assert not any("pretrained" in m for m in kept.messages), kept.messages
        logging.getLogger(hf).warning("`pretrained` model kwarg is not of type `str`: elsewhere")
    assert kept.messages[-1].endswith("elsewhere")  # dropped while the model is made only
