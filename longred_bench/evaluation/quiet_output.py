"""What lm-eval writes to the terminal while the suite runs it (:func:`lm_eval_output`).

Four of lm-eval's warnings never apply to the suite's runs and are always dropped: HFLM's two
about a model passed as an object (the suite loads and extends the model itself, on purpose,
in one process), the task loader's hint to pass ``max_seq_lengths`` (the suite passes its own
lengths through its task metadata) and the ``short_tiny`` group's note that its perplexity
task has no ``acc`` (by design: the group averages the scored tasks). lm-eval's per-task
progress bar of request building (one bar per task and pass, each done at once: 26 of them for
RULER) is not drawn; the bars of the model's requests are, and the one bar of them lm-eval
leaves unlabelled (a perplexity task's documents split into windows) is labelled
(:data:`WINDOWS_BAR`). Every other warning shows.

lm-eval describes the environment in every result (``add_env_info``: torch's ``collect_env``,
which runs ``pip list``, ``nvidia-smi`` and compiler probes: 1.1-1.4 s a call on a 2-core CPU); the
suite collects that description once per process and working folder and gives every later
evaluation the same one.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
from collections.abc import Iterator
from unittest import mock

from longred_bench.pcd.hflm_notes import HFLM_GIVEN_A_MODEL, dropped

# (logger, text in the message) of the warnings dropped on every run.
NOT_FOR_THIS_SUITE = (
    *HFLM_GIVEN_A_MODEL,
    ("lm_eval.api.task", "Custom kwargs can be passed to `--metadata`"),
    ("lm_eval.api.group", "is missing in 1/5 tasks. Missing in: longred_tiny_ppl"),
)

WINDOWS_BAR = "Splitting documents into windows"
"""The label of the bar lm-eval's HF model draws, without one, as it splits a perplexity task's
documents into rolling windows (before its "Running loglikelihood requests" bar)."""


def _labelled_bar(*args: object, **kwargs: object) -> object:
    """lm-eval's HF model's ``tqdm``, with :data:`WINDOWS_BAR` where it gives no label."""
    from tqdm import tqdm

    kwargs.setdefault("desc", WINDOWS_BAR)
    return tqdm(*args, **kwargs)


@functools.cache
def _env_info(cwd: str) -> tuple[tuple[str, object], ...]:
    """What lm-eval's own ``add_env_info`` adds to a result dict, run from ``cwd``."""
    from lm_eval.loggers.utils import add_env_info

    added: dict[str, object] = {}
    add_env_info(added)
    return tuple(added.items())


def _add_env_info_once(storage: dict) -> None:
    """lm-eval's ``add_env_info``, collected once per process and working folder."""
    storage.update(_env_info(os.getcwd()))


@contextlib.contextmanager
def lm_eval_output(*, quiet: bool) -> Iterator[None]:
    """What lm-eval writes while a suite runs. Its results' ``git_hash`` is this package's
    commit (:func:`longred_bench.results.git_commit`, silent outside a checkout) rather than a
    ``git describe`` of the working directory, which writes git's errors to the terminal; its
    environment description is collected once per process (see the module's docstring). When
    ``quiet``: lm-eval's loggers show errors only, and its progress bars and prints go nowhere
    (errors still surface as exceptions). Either way its logger's level is as before afterwards
    (``simple_evaluate`` sets it), so one evaluation's level never carries into the next."""
    import lm_eval.api.task
    import lm_eval.evaluator
    import lm_eval.models.huggingface

    from longred_bench.results import git_commit

    logger = logging.getLogger("lm_eval")
    level = logger.level
    with contextlib.ExitStack() as stack:
        stack.callback(logger.setLevel, level)
        stack.enter_context(mock.patch.object(lm_eval.evaluator, "get_git_commit_hash", git_commit))
        stack.enter_context(
            mock.patch.object(lm_eval.evaluator, "add_env_info", _add_env_info_once)
        )
        quiet_bar = functools.partial(lm_eval.api.task.tqdm, disable=True)
        stack.enter_context(mock.patch.object(lm_eval.api.task, "tqdm", quiet_bar))
        stack.enter_context(mock.patch.object(lm_eval.models.huggingface, "tqdm", _labelled_bar))
        stack.enter_context(dropped(NOT_FOR_THIS_SUITE))
        if quiet:
            sink = stack.enter_context(open(os.devnull, "w"))
            stack.enter_context(contextlib.redirect_stderr(sink))  # tqdm bars, warnings
            stack.enter_context(contextlib.redirect_stdout(sink))  # "bootstrapping for stddev"
            logger.setLevel(logging.ERROR)
        yield
