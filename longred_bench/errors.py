"""The user-facing error type (a one-line message), the name meant by a mistyped one, the
unknown-config-key check and the repeated-value check."""

from __future__ import annotations

from collections.abc import Iterable

EMPTY_MODEL_SPEC = (
    "a model spec is empty (a `$(longred-bench models --path NAME)` that failed?): give a zoo "
    "name, a model folder, a .gguf file or a hub id"
)
"""The refusal of an empty model spec, which the loaders read as ``.`` (a model folder in the
working directory, taken without a word): by every command, ``longred-lm-eval`` and PCD's model."""


class UserError(Exception):
    """Bad input or environment: the message names the problem and what to do.

    The CLI prints ``error: <message>`` and exits with status 2; nothing already computed
    (caches, checkpoints, results) is removed when one is raised.
    """


class TooShort(UserError):
    """Data with no window of the length asked for (a training stream's rows): the run cannot
    start on it, so a dry run refuses it as the run does."""


def close_name(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str | None:
    """The one of ``choices`` closest to ``word`` (a mistyped name): one that differs from it by
    two neighbouring letters swapped (``pdc``: ``pcd``), the only one it begins (three letters
    or more: ``smollm2``: ``smollm2-135m``), else one within ``cutoff`` (difflib's ratio);
    else None."""
    import difflib

    choices = list(choices)
    swaps = {word[:i] + word[i + 1] + word[i] + word[i + 2 :] for i in range(len(word) - 1)}
    swapped = [c for c in choices if c in swaps and c != word]
    if swapped:
        return swapped[0]
    begun = [c for c in choices if len(word) >= 3 and c != word and c.startswith(word)]
    if len(begun) == 1:
        return begun[0]
    close = difflib.get_close_matches(word, choices, n=1, cutoff=cutoff)
    return close[0] if close else None


def meant_note(word: str, choices: Iterable[str], cutoff: float = 0.6) -> str:
    """`` (did you mean NAME?)`` after a refusal of ``word``, where :func:`close_name` finds
    one of ``choices``; else ``""``."""
    close = close_name(word, choices, cutoff)
    return f" (did you mean {close}?)" if close else ""


def reject_unknown_keys(
    cls: type, data: dict, what: str, *, hidden: frozenset = frozenset()
) -> None:
    """Raise :class:`UserError` if ``data`` has keys that are not fields of dataclass ``cls``
    (or are among ``hidden``, fields the caller sets otherwise: not listed as known), naming the
    key meant where one is close."""
    from dataclasses import fields

    known = sorted({f.name for f in fields(cls)} - hidden)
    unknown = sorted(set(data) - set(known))
    if unknown:
        close = [(k, close_name(k, known)) for k in unknown]
        meant = "; ".join(f"{k}: did you mean {c}?" for k, c in close if c)
        raise UserError(f"unknown {what} config key(s) {', '.join(unknown)}"
                        f"{f' ({meant})' if meant else ''}; known: {', '.join(known)}")  # fmt: skip


def reject_repeats(values: object, what: str) -> None:
    """Raise :class:`UserError` naming the values of ``values`` (an iterable) given more than
    once: a repeated length or model would count its samples twice in every mean and interval."""
    seen: set[object] = set()
    repeated = [v for v in values if v in seen or seen.add(v)]  # type: ignore[attr-defined]
    if repeated:
        names = ", ".join(str(v) for v in dict.fromkeys(repeated))
        raise UserError(f"{what}: {names} given more than once; give each once")
