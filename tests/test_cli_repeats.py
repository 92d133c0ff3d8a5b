"""A value given more than once is refused in one line (``error: ...``, exit status 2) before
anything runs: a length, model or decoding listed twice, one extension of a model spelled two
ways, and every list option of every command (a repeated value counted its samples twice in
every mean and interval)."""

from __future__ import annotations

import pytest
from cli_helpers import one_line_error as _one_line_error


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["psa", "--model", "tiny-random", "--rope", "none", "none"],
         "psa --rope: none given more than once"),
        (["psa", "--model", "tiny-random", "--rope", "pi:factor=2", "pi:factor=2"],
         "psa --rope: pi:factor=2 given more than once"),
        # two spellings of one extension, each named as typed (the line named one of them)
        (["psa", "--model", "tiny-random", "--rope", "pi:factor=2.0", "pi:factor=2"],
         "psa --rope: pi:factor=2.0 and pi:factor=2 are one extension (pi:factor=2); give it "
         "once"),
        (["psa", "--model", "tiny-random", "--lengths", "512", "512"],
         "psa --lengths: 512 given more than once"),
        (["eval", "--model", "tiny-random", "--suite", "ppl", "--lengths", "256", "256"],
         "--lengths: 256 given more than once"),
        (["eval", "--model", "tiny-random", "--suite", "niah", "--depths", "50", "50"],
         "--depths: 50 given more than once"),
        # a value given three times is named once
        (["psa", "--model", "tiny-random", "--lengths", "512", "512", "512"],
         "psa --lengths: 512 given more than once; give each once"),
        # two options with a repeat each: the line names the first given
        (["psa", "--model", "tiny-random", "--lengths", "512", "512", "--decoding", "greedy",
          "greedy"], "psa --lengths: 512 given more than once"),
    ],
)  # fmt: skip
def test_a_repeated_length_or_model_is_refused(tmp_path, capsys, argv, message) -> None:
    """A repeated length or model counted its samples twice in every mean and interval."""
    _one_line_error(capsys, [*argv, "--out", str(tmp_path / "o")], message)
    assert not (tmp_path / "o").exists()


ONE_EXTENSION = ("are one extension of tiny-random ({'rope_type': 'linear', 'rope_theta': "
                 "10000.0, 'factor': 4.0}, window 1024): give it once")  # fmt: skip


@pytest.mark.parametrize(
    "argv",
    [
        ["drift", "--original", "tiny-random", "--texts", "random", "--seq-len", "32"],
        ["compare", "--original", "tiny-random"],
        ["psa", "--model", "tiny-random"],
    ],
)
def test_one_extension_spelled_two_ways_is_refused(tmp_path, capsys, argv) -> None:
    """``pi:factor=4`` and ``pi:max_len=1024`` of a 256-token model are one model: it was
    measured twice, its rows side by side, its samples counted twice; two extensions that
    differ run (their window, or their RoPE)."""
    ropes = ["--rope", "pi:factor=4", "pi:max_len=1024"]
    _one_line_error(capsys, [*argv, *ropes, "--out", str(tmp_path / "o")],
                    f"--rope pi:factor=4 and --rope pi:max_len=1024 {ONE_EXTENSION}")  # fmt: skip
    assert not (tmp_path / "o").exists()
    from longred_bench.cli.named import check_extensions

    check_extensions("tiny-random", ["pi:factor=4", "pi:max_len=2048", "yarn:factor=4"])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["psa", "--model", "tiny-random", "--decoding", "greedy", "greedy"],
         "psa --decoding: greedy given more than once"),  # ran once without a word
        (["psa", "--model", "tiny-random", "--tasks", "vt", "--tasks", "vt"],
         "psa --tasks: vt given more than once"),
        (["eval", "--model", "tiny-random", "--suite", "short_tiny", "--tasks",
          "longred_tiny_swap", "longred_tiny_swap"],
         "eval --tasks: longred_tiny_swap given more than once"),
        (["data", "verify", "--sources", "brown", "brown"],
         "data verify --sources: brown given more than once"),
        (["models", "--model", "tiny-random", "tiny-random"],
         "models --model: tiny-random given more than once"),
    ],
)  # fmt: skip
def test_a_value_listed_twice_is_refused_before_anything_runs(tmp_path, capsys, argv,
                                                              message) -> None:  # fmt: skip
    """A list option's value given twice was run once without a word (psa's decodings, eval's
    tasks, the models table's models) or counted twice."""
    out = ["--out", str(tmp_path / "o")] if argv[0] == "psa" else []
    _one_line_error(capsys, [*argv, *out], message)
    assert not (tmp_path / "o").exists()


def test_every_list_option_refuses_a_value_listed_twice() -> None:
    """Every list option of every command notes a value given twice, across occurrences too."""
    import argparse

    from longred_bench.cli import build_parser
    from longred_bench.cli.parser_rules import REPEATED

    def lists(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    yield from lists(child, [*path, name])
            elif action.option_strings and action.nargs in ("+", "*"):
                yield parser, path, action

    found = list(lists(build_parser(), []))
    assert len(found) >= 20

    def valid(action, other: bool = False) -> str:  # a value the option's type and choices take
        if action.choices:
            return list(action.choices)[other]
        return {int: "7", float: "0.5"}.get(action.type, "v") + ("1" if other else "")

    for parser, path, action in found:
        required = [x for a in parser._actions if a.required and a.option_strings
                    and a is not action for x in (a.option_strings[0], valid(a))]  # fmt: skip
        value, flag = valid(action), action.option_strings[0]
        twice = [flag, value, valid(action, other=True), flag, value]
        args, _ = parser.parse_known_args([*required, *twice])
        assert getattr(args, REPEATED) == (f"{' '.join(path)} {flag}: {value} given more than "
                                           "once; give each once"), (path, flag)  # fmt: skip
        args, _ = parser.parse_known_args([*required, flag, value])
        assert not hasattr(args, REPEATED)
