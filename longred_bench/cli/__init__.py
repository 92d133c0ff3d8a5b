"""The ``longred-bench`` command line: it parses arguments, builds a job's config and calls the
job (``longred_bench.jobs``, ``longred_bench.reproduce``); nothing else. :mod:`.parsers` holds the
argument parsers (no torch is imported to build them: ``--help`` and argument errors answer at
once), :mod:`.commands` the subcommand bodies.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import functools
import os
import signal
import sys
import threading
import warnings
from collections.abc import Iterator

from longred_bench.cli import commands, parser_rules, parsers
from longred_bench.cli.out_lock import out_lock
from longred_bench.errors import UserError
from longred_bench.heap import keep_freed_memory

_NO_ROOM = {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT}
"""The errors of a place that refuses a file (permissions, a read-only or full file system):
said in one line, as bad input is, not as a failure of the suite."""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``longred-bench`` (imports no torch)."""
    parser = argparse.ArgumentParser(
        prog="longred-bench",
        description="Measure and repair what context-window extension does to a RoPE model.",
    )
    parser.add_argument(
        "--version", action=_Version, nargs=0,
        help="print the version and the source that runs (commit, dirty, source hash)",
    )  # fmt: skip
    sub = parser.add_subparsers(dest="command", required=True)
    parsers.add_data(sub)
    parsers.add_drift(sub)
    parsers.add_eval(sub)
    parsers.add_compare(sub)
    parsers.add_psa(sub)
    parsers.add_train(sub)
    parsers.add_reproduce(sub)
    parsers.add_profiles(sub)
    parsers.add_models(sub)
    p = sub.add_parser(
        "tasks-path",
        help="print the folder of the installed lm-eval task registry",
        description="Print the installed lm-eval task registry's folder, for "
        '`lm_eval --include_path "$(longred-bench tasks-path)"`.',
    )
    p.set_defaults(func=commands.cmd_tasks_path)
    parser_rules.show_defaults(parser)
    parser_rules.repeated_options(parser)
    return parser


class _Version(argparse.Action):
    """``--version``: the package version and what runs (the commit and source hash that every
    record names), then exit 0, as ``python -m longred_bench.source_tree --state`` says it."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from longred_bench import __version__
        from longred_bench.source_tree import source_state

        state = source_state()
        print(f"longred-bench {__version__} (commit {state.label}; source {state.source_hash})")
        parser.exit()


def _warn_of_mixed_sources() -> None:
    """One line on stderr where the package's folders come from two trees (see
    :func:`~longred_bench.source_tree.mixed_sources`): that mixture is what would run, and its
    records could name no commit."""
    from longred_bench.source_tree import imported_dirs, mixed_sources

    where = mixed_sources(imported_dirs())
    if where and os.environ.get("RANK", "0") == "0":
        print(f"warning: the package runs from two trees ({where}): its records will name no "
              "commit; unset PYTHONPATH, or install the tree you mean to run (pip install -e "
              "DIR)", file=sys.stderr, flush=True)  # fmt: skip


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C's KeyboardInterrupt would be: everything that stops and
    saves on Ctrl-C does so on it; :func:`main` then exits 143 (128 + SIGTERM), as a shell
    and a scheduler expect of a terminated command, not Ctrl-C's 130."""


def _terminated(owner: int, signum: int, frame: object) -> None:
    """SIGTERM in the command's own process stops it as Ctrl-C does (:class:`Terminated`); a
    process forked from it (lm-eval's bootstrap pool, ended by its parent with SIGTERM) dies as
    SIGTERM's default."""
    if os.getpid() != owner:
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return
    raise Terminated


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM (``kill``, a scheduler's cancel) stops the command as Ctrl-C
    does: worker processes are ended and the same line says what was saved. Outside the main
    thread (where handlers cannot be set), or where SIGTERM is ignored or handled outside
    Python, the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGTERM)
    if before is signal.SIG_IGN or before is None:  # ignored on purpose, or set outside Python
        yield
        return
    signal.signal(signal.SIGTERM, functools.partial(_terminated, os.getpid()))
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, before)


QUIET_ENV = {"HF_HUB_DISABLE_PROGRESS_BARS": "1", "TRANSFORMERS_VERBOSITY": "error"}
"""What ``--quiet`` sets for the libraries: no hub or transformers progress bars (model loading,
shard writing), transformers' warnings off (generation past a model's window is this suite's
business), in this process and the workers it starts."""


@contextlib.contextmanager
def quiet_libraries(quiet: bool) -> Iterator[None]:
    """Within the block, with ``quiet``: :data:`QUIET_ENV` set (transformers, if already
    imported, told so too); as before afterwards, transformers too where it was first imported
    inside the block (it reads the variables when imported). ``huggingface_hub`` first imported
    inside the block keeps its bars off for the rest of the process (it fixes the variable as a
    constant at import)."""
    if not quiet:
        yield
        return
    saved = {k: os.environ.get(k) for k in QUIET_ENV}
    os.environ.update(QUIET_ENV)
    tf_logging = sys.modules.get("transformers.utils.logging")
    before = None
    if tf_logging is not None:
        before = (tf_logging.is_progress_bar_enabled(), tf_logging.get_verbosity())
        tf_logging.disable_progress_bar()
        tf_logging.set_verbosity_error()
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        tf_logging = sys.modules.get("transformers.utils.logging")
        if tf_logging is not None:
            if before is None:  # imported inside the block: its defaults under the old variables
                named = os.environ.get("TRANSFORMERS_VERBOSITY", "warning").upper()
                level = getattr(tf_logging, named, tf_logging.WARNING)
                before = (saved["HF_HUB_DISABLE_PROGRESS_BARS"] is None, level)
            if before[0]:
                with warnings.catch_warnings():  # the hub, imported inside, keeps its bars off
                    warnings.simplefilter("ignore", UserWarning)
                    tf_logging.enable_progress_bar()
            tf_logging.set_verbosity(before[1])


def _stdout_gone() -> bool:
    """Whether standard output's reader has gone (poll says so of its file: a pipe's reader
    closed, a socket's peer); False where it is no file (replaced in-process) or cannot be
    polled."""
    import select

    try:
        fd = sys.stdout.fileno()
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        gone = select.POLLERR | select.POLLHUP  # a pipe's reader closed; a socket's peer
        return any(event & gone for _, event in poller.poll(0))
    except (AttributeError, OSError, ValueError):
        return False


@contextlib.contextmanager
def _stops_held() -> Iterator[None]:
    """Within the block, a further SIGINT or SIGTERM is ignored, so the interrupted line is
    written whole: a terminal's Ctrl-C reaches every process of the job (``nox`` too, which then
    sends its own SIGINT or SIGTERM), and a second one landed in the line's code as a traceback.
    The handlers before are back after it. Outside the main thread the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for number, handler in before.items():
            signal.signal(number, signal.SIG_DFL if handler is None else handler)


def _close_progress_bars() -> None:
    """Close every progress bar still open (lm-eval's among them): one closed only when it is
    collected, at exit, redrew itself below the interrupted line."""
    tqdm = sys.modules.get("tqdm")
    for bar in list(getattr(getattr(tqdm, "tqdm", None), "_instances", ())):
        with contextlib.suppress(Exception):  # a bar half torn down by the interrupt
            bar.close()


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the exit status (2 with a one-line message on bad input; with one
    line saying what was saved and how to resume, 130 when Ctrl-C stops the command and 143
    when SIGTERM does; 141 without a word when the reader of its output stops reading, as a
    command killed by SIGPIPE)."""
    parser = build_parser()
    parser_rules.hint_required(parser, sys.argv[1:] if argv is None else list(argv))
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # refused by the command's own parser: its usage, and the flag meant
        parser_rules.refuse_unknown(parser, args, unknown)
    vars(args).pop(parser_rules.GIVEN, None)
    if (repeated := vars(args).pop(parser_rules.REPEATED, None)) is not None:
        print(f"error: {repeated}", file=sys.stderr)  # `--tasks X X`: before any check
        return 2
    args.argv = argv
    import longred_bench.jobs  # noqa: F401  (registers the models the suite builds: tiny-base)

    _warn_of_mixed_sources()

    try:
        if isinstance(getattr(args, "device", None), str):
            from longred_bench.cli.devices import check_device

            check_device(args.device)  # before any model is loaded or any work is done
        with (
            sigterm_as_interrupt(),
            quiet_libraries(getattr(args, "quiet", False)),
            out_lock(args),
        ):
            keep_freed_memory()
            return int(args.func(args))
    except UserError as exc:
        from longred_bench.data.texts import TooFewWindows

        said = exc.for_command(args.command) if isinstance(exc, TooFewWindows) else exc
        print(f"error: {said}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `longred-bench profiles | head`: the reader stopped, as SIGPIPE
        if not _stdout_gone():  # another pipe's (a worker's, a subprocess's): a real failure
            raise
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # exit flushes nothing
        return 128 + signal.SIGPIPE
    except OSError as exc:
        if exc.errno not in _NO_ROOM:  # not the place's refusal: a failure to report whole
            raise
        where = f" {exc.filename}" if exc.filename else ""
        print(f"error:{where}: {exc.strerror}: free space, or give a place this user can "
              "write, and run the command again", file=sys.stderr)  # fmt: skip
        return 2
    except KeyboardInterrupt as stop:
        from longred_bench.cli.interrupt import interrupted_line

        # on a line of its own: after the ^C a terminal echoes, or a progress bar's last redraw
        # (a bar ends its line only when it closes, in a terminal and in a log alike); under
        # torchrun by process 0 alone (every process is stopped, and each said it)
        if os.environ.get("RANK", "0") == "0":
            with _stops_held():
                _close_progress_bars()
                print(f"\n{interrupted_line(args)}", file=sys.stderr, flush=True)
        return 128 + signal.SIGTERM if isinstance(stop, Terminated) else 130
