"""transformers' LOAD REPORT (its table of the tensors a load missed, found unused or found of
another shape), held while a model loads: said after a load the suite takes, dropped where the
suite refuses the model in its own one line (tensors missing from its files), and a load that
transformers stops on tensors of other shapes than the config gives them turned into such a
line (it was the report, then a traceback)."""

from __future__ import annotations

import contextlib
import logging
import re
from collections.abc import Iterator

from longred_bench.errors import UserError

_LOGGER = "transformers.modeling_utils"
_MARK = "LOAD REPORT"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_MISMATCH = re.compile(
    r"^(?P<key>[^|\n]*?)\s*\|\s*MISMATCH\s*\|(?:.*?ckpt: torch\.Size\(\[(?P<ckpt>[^\]]*)\]\) vs "
    r"model: ?torch\.Size\(\[(?P<model>[^\]]*)\]\))?",
    re.M,
)
_SIZES = "ignore_mismatched_sizes"
"""In transformers' error after a report of tensors of other shapes."""


class _Held(logging.Filter):
    """Keeps the LOAD REPORT records back, in ``records``; lets every other record through."""

    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def filter(self, record: logging.LogRecord) -> bool:
        if _MARK in record.getMessage():
            self.records.append(record)
            return False
        return True


def mismatch_error(spec: str, report: str) -> UserError:
    """The one line for model ``spec`` whose weight files hold tensors of other shapes than its
    config gives them, from transformers' ``report`` (the first such tensor and both shapes,
    where the report gives them)."""
    rows = list(_MISMATCH.finditer(_ANSI.sub("", report)))
    first = ""
    if rows:
        row = rows[0]
        shapes = (f": [{row['ckpt']}] in the files, [{row['model']}] by the config"
                  if row["ckpt"] is not None else "")  # fmt: skip
        more = f"; and {len(rows) - 1} more" if len(rows) > 1 else ""
        first = f" ({row['key']}{shapes}{more})"
    return UserError(
        f"model {spec!r}: its weight files hold tensors of other shapes than its config.json "
        f"gives them{first}: give the folder whose config.json its weights were saved with"
    )


@contextlib.contextmanager
def load_report_held(spec: str) -> Iterator[None]:
    """Within the block, transformers' LOAD REPORT of model ``spec`` is held back: said once the
    block ends, dropped where it raises (the suite's own line says what is wrong); its stop on
    tensors of other shapes is raised as :func:`mismatch_error`."""
    logger = logging.getLogger(_LOGGER)
    held = _Held()
    logger.addFilter(held)
    try:
        yield
    except RuntimeError as exc:
        if _SIZES not in str(exc):
            raise
        report = "\n".join(r.getMessage() for r in held.records)
        raise mismatch_error(spec, report) from None
    finally:
        logger.removeFilter(held)
    for record in held.records:  # the model is taken: what transformers had to say of it
        logger.handle(record)
