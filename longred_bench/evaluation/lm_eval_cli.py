"""lm-eval's own command line with this package's lm-eval models registered (``longred-pcd``).

Installed as the console script ``longred-lm-eval`` (the same as ``python -m
longred_bench.evaluation.lm_eval_cli``). lm-eval 0.4.13 has no plugin discovery for models, so
its ``lm_eval --model longred-pcd`` cannot find a model defined outside lm-eval; this runs the same
command line after registering it::

    longred-lm-eval run --model longred-pcd \\
        --model_args pretrained=DIR,alpha=1.5 --tasks T --include_path "$(longred-bench tasks-path)"

Errors of this suite's tasks and models (a source not fetched, say) end in one line rather than lm-
eval's traceback. Every argument is lm-eval's (``run``, ``ls``, ``validate`` and their options). The
model is also declared under the ``lm_eval.models`` entry-point group (``pyproject.toml``) for lm-
eval versions that read model plugins from there.
"""

from __future__ import annotations

import argparse
import sys

from longred_bench.errors import UserError


def main() -> None:
    """Register the models, then hand ``sys.argv`` to lm-eval's command line; a problem this
    suite reports (missing cache, bad task metadata) ends in one line and exit status 2, not a
    traceback. The results' ``git_hash`` is this package's commit, as in ``eval``, rather than a
    ``git describe`` of the working folder (whose errors git writes to the terminal outside a
    checkout)."""
    from unittest import mock

    import lm_eval.evaluator
    from lm_eval._cli import HarnessCLI
    from lm_eval.utils import setup_logging

    import longred_bench.pcd.lm  # noqa: F401  (registers longred-pcd)
    from longred_bench.results import git_commit

    try:
        with mock.patch.object(lm_eval.evaluator, "get_git_commit_hash", git_commit):
            setup_logging()  # what lm-eval's own entry point does, with its parser renamed
            cli = HarnessCLI()
            renamed(cli._parser)
            cli.execute(cli.parse_args())
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


def renamed(parser: argparse.ArgumentParser) -> None:
    """Make ``parser`` and its subcommands' help say ``longred-lm-eval`` where lm-eval's says
    ``lm-eval`` (its usage lines, options and examples): a command copied from ``longred-lm-eval run
    --help`` ran lm-eval's own command line, where ``--model longred-pcd`` is unknown."""
    import re

    own = re.compile(r"(?<![\w-])lm-eval(?= |$)", re.M)
    for each in _parsers(parser):
        for field in ("prog", "usage", "description", "epilog"):
            text = getattr(each, field)
            if isinstance(text, str):
                setattr(each, field, own.sub("longred-lm-eval", text))
        for action in each._actions:
            if isinstance(action.help, str):
                action.help = own.sub("longred-lm-eval", action.help)


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    """``parser`` and every subcommand parser under it."""
    found = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                found += _parsers(child)
    return found


if __name__ == "__main__":
    main()
