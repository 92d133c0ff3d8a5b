"""``longred-lm-eval``: lm-eval's own command line with this suite's models registered
(:mod:`longred_bench.evaluation.lm_eval_cli`), where the mistakes a user makes on it end in one
line and exit status 2, not lm-eval's traceback: a task lm-eval does not find (named with the
nearest of this suite's tasks) or no task at all, a ``pretrained=`` model it cannot open, left
empty or not given, and a ``--model_args`` key lm-eval also passes from its own flag
(``batch_size``, ``device``), and an ``--output_path`` under a file. Ctrl-C (or SIGTERM) ends it
with one line saying what lm-eval keeps (its ``--use_cache`` responses, where given) and the
command that runs it again, exit status 130 (143)."""

from __future__ import annotations

import re
import sys

from longred_bench.errors import EMPTY_MODEL_SPEC, UserError


def main() -> None:
    """Run lm-eval's command line (see the module docstring)."""
    from longred_bench.evaluation import lm_eval_cli

    check_pretrained(sys.argv[1:])
    check_output_path(sys.argv[1:])
    from longred_bench.cli import Terminated, sigterm_as_interrupt

    try:
        with sigterm_as_interrupt():
            lm_eval_cli.main()
    except KeyboardInterrupt as stop:
        print(f"\ninterrupted: {interrupted_line(sys.argv[1:])}", file=sys.stderr, flush=True)
        sys.exit(143 if isinstance(stop, Terminated) else 130)
    except TypeError as exc:  # a model_args key lm-eval passes itself too (its own flag's value)
        lacks = re.search(r"(\w+)\.__init__\(\) missing \d+ required positional arguments?: "
                          r"(.+)", str(exc))  # fmt: skip
        if lacks is not None:  # the model's own required arguments: pretrained= above all
            names = ", ".join(re.findall(r"'(\w+)'", lacks.group(2)))
            _stop(f"the model ({lacks.group(1)}) needs {names}: give --model_args "
                  f"{names.split(', ')[0]}=... (a model folder, hub id or zoo name)")  # fmt: skip
        twice = re.search(r"got multiple values for keyword argument '(\w+)'", str(exc))
        if twice is None:
            raise
        key = twice.group(1)
        _stop(
            f"--model_args {key}=... is given twice: lm-eval passes its own --{key} (its "
            f"default too); give --{key} on the command line instead of in --model_args"
        )
    except ValueError as exc:
        if str(exc).strip().startswith("No tasks specified"):
            _stop("no task to run: give --tasks NAME (this suite's with --include_path "
                  '"$(longred-bench tasks-path)")')  # fmt: skip
        missing = re.fullmatch(r"Tasks not found: (.+)", str(exc).strip())
        if missing is None:
            raise
        _stop(_unknown_tasks(missing.group(1)))
    except OSError as exc:  # transformers' "not a folder, not a hub id", "no such file"
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        _stop(f"lm-eval could not open the model ({first}); give --model_args pretrained= a "
              "Hugging Face model folder or hub id (`longred-bench models --path NAME` prints "
              "a zoo model's folder)")  # fmt: skip


def interrupted_line(argv: list[str]) -> str:
    """What an interrupted ``longred-lm-eval`` kept: the responses its ``--use_cache`` files
    saved (lm-eval reuses them when the same command runs again), else nothing."""
    import shlex

    again = shlex.join(["longred-lm-eval", *argv])
    if any(a.partition("=")[0] in ("--use_cache", "-c") for a in argv):
        return (f"the responses lm-eval finished are in its --use_cache files; run it again "
                f"with: {again}")  # fmt: skip
    return (f"lm-eval keeps nothing without --use_cache PATH (which saves its responses for a "
            f"run again); run it again with: {again}")  # fmt: skip


def check_output_path(argv: list[str]) -> None:
    """Refuse an ``--output_path`` (``-o``) under a file, where no folder can be made: lm-eval
    ran every task, logged that it could not save the results and exited 0."""
    from pathlib import Path

    from longred_bench.cache import nearest_existing

    for i, arg in enumerate(argv):
        flag, _, inline = arg.partition("=")
        if flag not in ("--output_path", "-o"):
            continue
        value = inline or (argv[i + 1] if i + 1 < len(argv) else "")
        path = Path(value).expanduser()
        above = nearest_existing(path)
        if value and above != path and not above.is_dir():
            _stop(f"--output_path {value}: {above} is a file, so no folder can be made under "
                  "it; give another path")  # fmt: skip


def check_pretrained(argv: list[str]) -> None:
    """Refuse an empty ``pretrained=`` in ``--model_args`` (or ``-a``; ``k=v,k=v`` items, one
    argument or several, or a JSON object): a ``$(longred-bench models --path NAME)`` that
    failed. The model loader read it as ``.``, and a model folder there was evaluated without a
    word. (The ``longred-pcd`` model refuses it itself, from Python too.)"""
    import json

    values: list[str] = []
    for i, arg in enumerate(argv):
        flag, _, inline = arg.partition("=")
        if flag not in ("--model_args", "-a"):
            continue
        if inline:
            values.append(inline)
            continue
        for nxt in argv[i + 1 :]:  # lm-eval takes one or more arguments after the flag
            if nxt.startswith("-"):
                break
            values.append(nxt)
    pairs: dict[str, object] = {}
    for value in values:
        if value.lstrip().startswith("{"):
            try:
                loaded = json.loads(value)
            except ValueError:
                continue  # lm-eval says what is wrong with it
            pairs |= loaded if isinstance(loaded, dict) else {}
        else:
            pairs |= dict(p.split("=", 1) for p in value.split(",") if "=" in p)
    if isinstance(pairs.get("pretrained"), str) and not pairs["pretrained"].strip():
        _stop(f"--model_args pretrained=: {EMPTY_MODEL_SPEC}")


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
