"""lm-eval's HF model's two warnings about a model passed as an object, which never apply to
the suite's models (loaded and extended by the suite, on purpose, in one process), and a block
that drops given warnings (:func:`dropped`): the ``longred-pcd`` model made by name uses it, and
so does every evaluation the suite runs (:mod:`longred_bench.evaluation.quiet_output`)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

HFLM_GIVEN_A_MODEL = (
    ("lm_eval.models.huggingface", "`pretrained` model kwarg is not of type `str`"),
    ("lm_eval.models.huggingface", "Passed an already-initialized model through `pretrained`"),
)
"""(logger, text in the message) of HFLM's warnings about a model passed as an object."""


class Drop(logging.Filter):
    """Drops records whose message contains ``text``."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def filter(self, record: logging.LogRecord) -> bool:
        return self.text not in record.getMessage()


@contextlib.contextmanager
def dropped(notes: tuple[tuple[str, str], ...]) -> Iterator[None]:
    """Within the block, the warnings of ``notes`` ((logger, text in the message)) are dropped."""
    with contextlib.ExitStack() as stack:
        for name, text in notes:
            drop = Drop(text)
            logging.getLogger(name).addFilter(drop)
            stack.callback(logging.getLogger(name).removeFilter, drop)
        yield
