"""Which ``eval`` flags its suite takes and which it refuses in one line (checked on the
parsed command line, before anything loads): ``--allow-code-eval`` with paper_short or with
``--tasks``, ``--num-fewshot`` with a short suite, and the long-context flags and tasks with
the suites they are for."""

from __future__ import annotations

import pytest

from longred_bench.cli import build_parser
from longred_bench.cli.flags import check_eval_flags
from longred_bench.errors import UserError


def _eval(*flags: str):
    """``eval``'s parsed arguments for ``flags`` (a zoo model)."""
    return build_parser().parse_args(["eval", "--model", "tiny-random", *flags])


def _refused(message: str, *flags: str) -> None:
    with pytest.raises(UserError) as caught:
        check_eval_flags(_eval(*flags))
    assert message in str(caught.value)
    assert len(str(caught.value).splitlines()) == 1


@pytest.mark.parametrize(
    "flags",
    [
        ["--suite", "paper_short", "--allow-code-eval"],
        ["--suite", "short_tiny", "--tasks", "humaneval", "--allow-code-eval"],
        ["--suite", "short_tiny", "--num-fewshot", "3"],
        ["--suite", "short", "--num-fewshot", "1"],
    ],
)
def test_flags_a_short_suite_uses_pass(flags) -> None:
    """paper_short runs code tasks, and so may given ``--tasks``: ``--allow-code-eval`` passes
    with either; the short suites take few-shot examples."""
    check_eval_flags(_eval(*flags))


def test_allow_code_eval_with_a_suite_of_no_code_task_is_one_line() -> None:
    """Without ``--tasks``, a suite other than paper_short runs no model-written code."""
    _refused("eval: --allow-code-eval is for tasks that run model-written code (paper_short's "
             "humaneval and mbpp, or such --tasks); the short_tiny suite has none",
             "--suite", "short_tiny", "--allow-code-eval")  # fmt: skip


def test_a_drift_window_not_given_or_of_two_tokens_passes() -> None:
    """No ``--seq-len`` leaves the window to the config; two tokens is the smallest window
    with attention to compare, and one is refused naming the flag."""
    from longred_bench.cli.flags import check_window_tokens

    check_window_tokens(None, "compare", "--drift-seq-len")
    check_window_tokens(2, "drift", "--seq-len")
    with pytest.raises(UserError, match=r"^drift: --seq-len must be at least 2 .*, not 1$"):
        check_window_tokens(1, "drift", "--seq-len")


def test_a_pcd_local_fraction_other_than_the_default_is_kept() -> None:
    """``--pcd-local-fraction`` at its default (0.25) is the run without it, but another value
    is a setting of its own and stays in the run's PCD config."""
    from longred_bench.cli.flags import pcd_settings
    from longred_bench.pcd.config import PcdConfig

    pcd = ["--suite", "short_tiny", "--decoding", "pcd"]
    assert pcd_settings(_eval(*pcd, "--pcd-local-fraction", "0.25")) is None
    assert pcd_settings(_eval(*pcd, "--pcd-local-fraction", "0.5")) == PcdConfig(local_fraction=0.5)
    assert pcd_settings(_eval(*pcd, "--pcd-alpha", "2", "--pcd-local-fraction", "0.25")) == (
        PcdConfig(alpha=2.0)
    )


def test_the_longest_length_passes_and_one_token_more_is_refused() -> None:
    """131,072 tokens, RULER's longest, is a length the suite measures; one more is refused
    with the first such length named."""
    from longred_bench.cli.flags import check_long_lengths

    check_long_lengths([4096, 131072], "eval")
    check_long_lengths(None, "psa")
    with pytest.raises(UserError, match=r"^psa: --lengths 131073 is above 131072 tokens"):
        check_long_lengths([1024, 131073, 262144], "psa")
