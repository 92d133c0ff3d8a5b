"""``longred-lm-eval``: lm-eval's own command line with this suite's models registered
(:mod:`longred_bench.evaluation.lm_eval_cli`), where the mistakes a user makes on it end in one
line and exit status 2, not lm-eval's traceback: a task lm-eval does not find (named with the
nearest of this suite's tasks) and a ``pretrained=`` model it cannot open."""

from __future__ import annotations

import re
import sys

from longred_bench.errors import UserError


def main() -> None:
    """Run lm-eval's command line (see the module docstring)."""
    from longred_bench.evaluation import lm_eval_cli

    try:
        lm_eval_cli.main()
    except ValueError as exc:
        missing = re.fullmatch(r"Tasks not found: (.+)", str(exc).strip())
        if missing is None:
            raise
        _stop(_unknown_tasks(missing.group(1)))
    except OSError as exc:  # transformers' "not a folder, not a hub id", "no such file"
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        _stop(f"lm-eval could not open the model ({first}); give --model_args pretrained= a "
              "Hugging Face model folder or hub id (`longred-bench models --path NAME` prints "
              "a zoo model's folder)")  # fmt: skip


def _unknown_tasks(names: str) -> str:
    """lm-eval's "Tasks not found" as this suite names unknown tasks (with the nearest), or as
    lm-eval does where the names are known here (an ``--include_path`` left out)."""
    from longred_bench.evaluation.harness import check_task_names

    listed = [n for n in re.split(r"[,\s]+", names) if n]
    try:
        check_task_names(listed)
    except UserError as exc:
        return str(exc)
    return (f"lm-eval found no task {', '.join(listed)}: add --include_path "
            '"$(longred-bench tasks-path)" for this suite\'s tasks')  # fmt: skip


def _stop(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


if __name__ == "__main__":
    main()
