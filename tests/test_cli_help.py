"""``--help`` of every subcommand states the default of each option that has one, as the parser
will use it, and an unknown argument is refused with its command's usage and the flag meant
(unit tier: builds the parser only)."""

from __future__ import annotations

import argparse

import pytest

from longred_bench.cli import build_parser, main


def _parsers(parser: argparse.ArgumentParser, name: str = "longred-bench"):
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, child in action.choices.items():
                yield from _parsers(child, f"{name} {sub}")


def _shown(value) -> str:
    return " ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)


def test_every_option_with_a_default_states_it_in_its_help():
    stated = 0
    for name, parser in _parsers(build_parser()):
        for action in parser._actions:
            value = action.default
            if (not action.option_strings or value is None or isinstance(value, bool)
                    or value == argparse.SUPPRESS):  # fmt: skip
                continue
            text = action.help or ""
            assert "default" in text.lower(), f"{name} {action.option_strings[-1]}: {text!r}"
            if "(default: " in text and "%(default)" not in text:
                assert text.endswith(f"(default: {_shown(value).replace('%', '%%')})"), text
                stated += 1
    assert stated > 20  # the rule ran on the options that had none before


def test_help_shows_defaults_but_not_flags_or_none():
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    text = sub.choices["drift"].format_help()
    flat = " ".join(text.split())
    assert "--num-texts NUM_TEXTS (default: 8)" in flat
    assert "--seq-len SEQ_LEN (default: 1024)" in flat
    assert "(default: False)" not in flat and "(default: None)" not in flat
    compare = " ".join(sub.choices["compare"].format_help().split())
    assert "(default: drift short ruler niah)" in compare


def test_an_option_whose_help_states_its_default_is_not_given_a_second():
    # drift --texts and psa --corpus say "(default brown)" in their own words
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    texts = next(a for a in sub.choices["drift"]._actions if a.dest == "texts")
    assert texts.help.endswith("(default brown)"), texts.help
    for name, child in _parsers(parser):
        for action in child._actions:
            text = action.help or ""
            if "(default: " in text:
                assert text.lower().count("default") == 1, f"{name}: {text!r}"


def test_defaults_rule_shows_a_tuple_as_its_values_and_keeps_a_percent_sign():
    from longred_bench.cli.parser_rules import show_defaults

    parser = argparse.ArgumentParser(prog="p")
    parser.add_argument("--pair", nargs=2, default=("a", "b"), help="two names")
    parser.add_argument("--fmt", default="%d items", help="a format")
    show_defaults(parser)
    flat = " ".join(parser.format_help().split())
    assert "two names (default: a b)" in flat
    assert "a format (default: %d items)" in flat


def test_version_names_the_package_and_the_source_that_runs(capsys):
    """``--version`` prints the version with the commit and source hash every record names."""
    from longred_bench import __version__
    from longred_bench.cli import main
    from longred_bench.source_tree import source_state

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    state = source_state()
    assert stop.value.code == 0
    assert capsys.readouterr().out == (
        f"longred-bench {__version__} (commit {state.label}; source {state.source_hash})\n"
    )


def test_eval_and_psa_help_state_the_defaults_the_run_takes():
    """``eval --samples`` / ``--depths`` and ``psa --top-k`` take defaults set elsewhere than the
    parser: their help said none, or named a constant of a module."""
    from longred_bench.reports.psa_report import TOP_K
    from longred_bench.taskdata.niah_grid import DEFAULT_DEPTHS, DEFAULT_SAMPLES
    from longred_bench.tasks.ruler_utils import DEFAULT_SAMPLES as RULER_SAMPLES

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    helps = {name: {a.dest: a.help for a in sub.choices[name]._actions} for name in ("eval", "psa")}
    assert f"ruler, default {RULER_SAMPLES}" in helps["eval"]["samples"]
    assert f"niah, default {DEFAULT_SAMPLES}" in helps["eval"]["samples"]
    depths = [int(d) for d in DEFAULT_DEPTHS]
    assert depths[:3] == [0, 10, 20] and depths[-1] == 100 and depths == list(range(0, 101, 10))
    assert "default 0 10 20 ... 100" in helps["eval"]["depths"]
    assert helps["psa"]["top_k"].endswith(f"(default {TOP_K})")


@pytest.mark.parametrize(
    ("argv", "usage", "said"),
    [
        (["eval", "--model", "tiny-random", "--lenghts", "512"], "usage: longred-bench eval",
         "unrecognized arguments: --lenghts 512 (--lenghts: did you mean --lengths?)"),
        (["data", "list", "--cahce", "x"], "usage: longred-bench data list",
         "unrecognized arguments: --cahce x (--cahce: did you mean --cache?)"),
        # a mistyped flag given with its value after `=`: the hint names the flag alone
        (["data", "list", "--cahce=x"], "usage: longred-bench data list",
         "unrecognized arguments: --cahce=x (--cahce: did you mean --cache?)"),
        (["eval", "--model", "tiny-random", "extra"], "usage: longred-bench eval",
         "unrecognized arguments: extra"),
        # a mistyped required flag: argparse says it is missing before refusing the unknown
        (["train", "--recipie", "cpt", "--profile", "smoke"], "usage: longred-bench train",
         "required: --recipe (--recipie: did you mean --recipe?)"),
        (["eval", "--modle=x", "--suite", "ruler"], "usage: longred-bench eval",
         "required: --model (--modle: did you mean --model?)"),
        # a mistyped choice: argparse lists the choices, and now names the one meant
        (["reproduce", "tabel3"], "usage: longred-bench reproduce",
         "'pcd', 'kernel') (did you mean table3?)"),
        (["eval", "--model", "x", "--suite", "rulr"], "usage: longred-bench eval",
         "'niah', 'ppl') (did you mean ruler?)"),
        (["reproduce", "tablexyz"], "usage: longred-bench reproduce", "'pcd', 'kernel')"),
    ],
)  # fmt: skip
def test_an_unknown_argument_is_refused_by_its_commands_parser(argv, usage, said, capsys):
    """``eval ... --lenghts 512`` printed the top-level usage (every command) and no hint: the
    command's own usage now, and the flag meant where one is close."""
    with pytest.raises(SystemExit) as stop:
        main(argv)
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith(usage), err
    assert err.rstrip().endswith(said), err


def test_the_command_list_names_every_recipe_train_takes(capsys):
    """``longred-bench --help`` named 6 of the 11 recipes (no pose, rpes, attention-only, merge
    or longrecipe)."""
    from longred_bench.training.methods import METHODS

    with pytest.raises(SystemExit):
        build_parser().parse_args(["--help"])
    listing = " ".join(capsys.readouterr().out.split())
    assert all(recipe in listing for recipe in METHODS)
    assert "merge" in listing and "longrecipe" in listing
