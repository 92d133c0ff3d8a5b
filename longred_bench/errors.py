"""The user-facing error type (a one-line message) and the unknown-config-key check."""


class UserError(Exception):
    """Bad input or environment: the message names the problem and what to do.

    The CLI prints ``error: <message>`` and exits with status 2; nothing already computed
    (caches, checkpoints, results) is removed when one is raised.
    """


def reject_unknown_keys(cls: type, data: dict, what: str) -> None:
    """Raise :class:`UserError` if ``data`` has keys that are not fields of dataclass ``cls``."""
    from dataclasses import fields

    known = {f.name for f in fields(cls)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise UserError(
            f"unknown {what} config key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}"
        )
