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
    from lm_eval.__main__ import cli_evaluate

    import longred_bench.pcd.lm  # noqa: F401  (registers longred-pcd)
    from longred_bench.results import git_commit

    try:
        with mock.patch.object(lm_eval.evaluator, "get_git_commit_hash", git_commit):
            cli_evaluate()
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
