"""What lm-eval writes to the terminal while the suite runs it (:func:`lm_eval_output`)."""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator
from unittest import mock


@contextlib.contextmanager
def lm_eval_output(*, quiet: bool) -> Iterator[None]:
    """What lm-eval writes while a suite runs. Its results' ``git_hash`` is this package's
    commit (:func:`longred_bench.results.git_commit`, silent outside a checkout) rather than a
    ``git describe`` of the working directory, which writes git's errors to the terminal. When
    ``quiet``: lm-eval's loggers show errors only, and its progress bars and prints go nowhere
    (errors still surface as exceptions)."""
    import lm_eval.evaluator

    from longred_bench.results import git_commit

    logger = logging.getLogger("lm_eval")
    level = logger.level
    with contextlib.ExitStack() as stack:
        stack.enter_context(mock.patch.object(lm_eval.evaluator, "get_git_commit_hash", git_commit))
        if quiet:
            sink = stack.enter_context(open(os.devnull, "w"))
            stack.enter_context(contextlib.redirect_stderr(sink))  # tqdm bars, warnings
            stack.enter_context(contextlib.redirect_stdout(sink))  # "bootstrapping for stddev"
            logger.setLevel(logging.ERROR)
            stack.callback(logger.setLevel, level)
        yield
