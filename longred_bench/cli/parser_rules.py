"""Rules every subcommand's parser follows, applied once to the whole tree of parsers: options
state their defaults in ``--help`` (:func:`show_defaults`), and a repeated option does what a user
means (:func:`repeated_options`)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import NoReturn

from longred_bench.errors import close_name, meant_note


def show_defaults(parser: argparse.ArgumentParser) -> None:
    """Make ``parser`` and every subcommand parser under it state their options' defaults:
    ``(default: VALUE)`` after an option's help where it has a default worth stating (not None,
    not a flag's False) and its help does not already say one."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                show_defaults(child)
            continue
        value, text = action.default, action.help or ""
        if (text == argparse.SUPPRESS or not action.option_strings or value is None
                or isinstance(value, bool) or value == argparse.SUPPRESS
                or "default" in text.lower()):  # fmt: skip
            continue
        shown = " ".join(map(str, value)) if isinstance(value, list | tuple) else str(value)
        action.help = f"{text} (default: {shown.replace('%', '%%')})".lstrip()


GIVEN = "_options_given"
"""Where :class:`_Once` notes the options it has seen in a parsed namespace."""

REPEATED = "_value_repeated"
"""Where :class:`_Extend` notes the first list option given a value twice, as the line ``main``
refuses it with."""


class _Extend(argparse._StoreAction):
    """A list option given more than once lists every value: ``--rope A --rope B`` is
    ``[A, B]``, as ``--rope A B`` (argparse's own keeps the last); its default is replaced. A
    value listed twice (``--tasks X X``, ``--decoding greedy --decoding greedy``) is noted at
    :data:`REPEATED` for ``main`` to refuse in one line: a command ran it once without a word,
    or counted it twice."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        current = getattr(namespace, self.dest, None)
        kept = [] if current is None or current is self.default else list(current)
        listed = [*kept, *values]
        repeated = [v for i, v in enumerate(listed) if v in listed[:i]]
        if repeated and REPEATED not in namespace:  # refused by ``main`` after parsing
            command = parser.prog.split(" ", 1)[-1]
            values = ", ".join(map(str, dict.fromkeys(repeated)))
            setattr(namespace, REPEATED, f"{command} {option_string}: {values} given more "
                    "than once; give each once")  # fmt: skip
        setattr(namespace, self.dest, listed)


class _Once(argparse._StoreAction):
    """A one-value option given twice is refused in one line, as every bad input is (argparse's
    own keeps the last; its ``error`` prints the whole usage first)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        given = namespace.__dict__.setdefault(GIVEN, set())
        if self.dest in given:
            print(f"error: {option_string} is given twice: give it once", file=sys.stderr)
            raise SystemExit(2)
        given.add(self.dest)
        setattr(namespace, self.dest, values)


def repeated_options(parser: argparse.ArgumentParser) -> None:
    """Make every option of ``parser`` and its subcommands take a repeat as a user means it: a
    list option (``nargs`` + or *) collects the values of each occurrence, a one-value option
    refuses a second (argparse keeps the last occurrence of either without a word)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                repeated_options(child)
        elif type(action) is argparse._StoreAction and action.option_strings:
            action.__class__ = _Extend if action.nargs in ("+", "*") else _Once


def _command_parser(parser: argparse.ArgumentParser,
                    args: argparse.Namespace) -> argparse.ArgumentParser:  # fmt: skip
    """The parser of the (sub)command ``args`` ran: ``eval``'s, ``data fetch``'s."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = getattr(args, subs[0].dest, None) if subs else None
        if chosen not in (subs[0].choices if subs else {}):
            return parser
        parser = subs[0].choices[chosen]


def refuse_unknown(parser: argparse.ArgumentParser, args: argparse.Namespace,
                   unknown: list[str]) -> None:  # fmt: skip
    """Exit as argparse does (status 2) on ``unknown`` arguments, but with the usage of the
    command they were given to (the top-level usage listed every command instead) and, for a
    mistyped flag, the one meant: ``unrecognized arguments: --lenghts 512 (did you mean
    --lengths?)``."""
    own = _command_parser(parser, args)
    own.error(f"unrecognized arguments: {' '.join(unknown)}{_flags_meant(own, unknown)}")


def _flags_meant(parser: argparse.ArgumentParser, words: list[str]) -> str:
    """`` (--lenghts: did you mean --lengths?; ...)`` for each of ``words`` that is a flag
    ``parser`` does not have (``--flag=value``: the flag) close to one it has, else ``""``."""
    flags = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    hints = []
    for word in (w.split("=")[0] for w in words if w.startswith("--")):
        close = None if word in flags else close_name(word, flags, cutoff=0.75)
        hints += [f"{word}: did you mean {close}?"] if close else []
    return f" ({'; '.join(hints)})" if hints else ""


_INVALID_CHOICE = re.compile(r"^argument [^:]+: invalid choice: '([^']*)' \(choose from ")


def _choice_meant(parser: argparse.ArgumentParser, message: str) -> str:
    """`` (did you mean table3?)`` after argparse's refusal of a mistyped choice
    (``reproduce tabel3``) where one of ``parser``'s choices is close, else ``""``."""
    given = _INVALID_CHOICE.match(message)
    if given is None:
        return ""
    choices = [str(c) for a in parser._actions for c in (a.choices or ())]
    return meant_note(given.group(1), choices, cutoff=0.75)


def hint_required(parser: argparse.ArgumentParser, argv: list[str]) -> None:
    """Make ``parser`` and its subcommands name what was meant where argparse refuses a word
    before the unknown ones are seen: a mistyped required flag that leaves it missing
    (``train --recipie cpt`` read "the following arguments are required: --recipe" alone; now
    ``... (--recipie: did you mean --recipe?)``) and a mistyped choice (``reproduce tabel3``:
    ``... (did you mean table3?)`` after the choices). ``argv``: the words given."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                hint_required(child, argv)
    refuse = parser.error
    flags = list(dict.fromkeys(w.split("=")[0] for w in argv))  # each flag given, once

    def error(message: str) -> NoReturn:
        if message.startswith("the following arguments are required:"):
            message += _flags_meant(parser, flags)
        refuse(message + _choice_meant(parser, message))

    parser.error = error  # type: ignore[method-assign]
