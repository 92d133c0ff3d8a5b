"""The rules every parser follows, on a parser of their own: ``--help`` states an option's
default only where one is worth stating (not for a hidden option, a positional argument, or
an option whose default is suppressed), and a repeated list option collects its values."""

from __future__ import annotations

import argparse

from longred_bench.cli.parser_rules import repeated_options, show_defaults


def _helps(parser: argparse.ArgumentParser) -> dict[str, str | None]:
    return {a.dest: a.help for a in parser._actions}


def test_defaults_are_stated_for_options_only_where_shown() -> None:
    """A hidden option keeps its help suppressed, a positional argument and an option of a
    suppressed default get no ``(default: ...)``; an option with a plain default does."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--hidden", default=3, help=argparse.SUPPRESS)
    parser.add_argument("where", nargs="?", default="here", help="a place")
    parser.add_argument("--quiet-default", default=argparse.SUPPRESS, help="left out")
    parser.add_argument("--shown", default=7, help="a count")
    show_defaults(parser)
    helps = _helps(parser)
    assert helps["hidden"] == argparse.SUPPRESS
    assert helps["where"] == "a place"
    assert helps["quiet_default"] == "left out"
    assert helps["shown"] == "a count (default: 7)"
    assert "--hidden" not in parser.format_help()


def test_subcommand_options_state_their_defaults_too() -> None:
    """The rule reaches each subcommand's parser."""
    parser = argparse.ArgumentParser(prog="longred")
    sub = parser.add_subparsers(dest="command").add_parser("run")
    sub.add_argument("--steps", default=10, help="steps")
    show_defaults(parser)
    assert _helps(sub)["steps"] == "steps (default: 10)"


def _repeating() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="longred")
    sub = parser.add_subparsers(dest="command").add_parser("run", prog="longred run")
    sub.add_argument("--tasks", nargs="+", default=["base"])
    sub.add_argument("--lengths", nargs="+", type=int)
    sub.add_argument("--seed", type=int, default=0)
    repeated_options(parser)
    return parser


def test_a_list_option_given_twice_lists_every_value_in_place_of_its_default() -> None:
    """``--tasks a --tasks b`` is ``[a, b]``: the default is replaced, not added to; a list
    option not given keeps its default."""
    from longred_bench.cli.parser_rules import REPEATED

    parser = _repeating()
    args = parser.parse_args(["run", "--tasks", "a", "--tasks", "b", "--lengths", "1", "2"])
    assert args.tasks == ["a", "b"] and args.lengths == [1, 2]
    assert REPEATED not in args
    assert parser.parse_args(["run"]).tasks == ["base"]
    assert parser.parse_args(["run", "--tasks", "base"]).tasks == ["base"]


def test_the_first_list_option_given_a_value_twice_is_the_one_named() -> None:
    """Of two list options each given a value twice, the line ``main`` refuses names the
    first, with each repeated value once."""
    from longred_bench.cli.parser_rules import REPEATED

    parser = _repeating()
    args = parser.parse_args(["run", "--tasks", "a", "a", "a", "--lengths", "1", "--lengths", "1"])
    assert getattr(args, REPEATED) == "run --tasks: a given more than once; give each once"


def test_a_one_value_option_given_twice_is_one_line(capsys) -> None:
    """A second ``--seed`` is refused (status 2) in one line, not kept as the last."""
    import pytest

    parser = _repeating()
    assert parser.parse_args(["run", "--seed", "3"]).seed == 3
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(["run", "--seed", "3", "--seed", "4"])
    assert stop.value.code == 2
    assert capsys.readouterr().err == "error: --seed is given twice: give it once\n"
