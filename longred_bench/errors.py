"""The one exception type that carries a user-facing, one-line error message."""


class UserError(Exception):
    """Bad input or environment: the message names the problem and what to do.

    The CLI prints ``error: <message>`` and exits with status 2; nothing already computed
    (caches, checkpoints, results) is removed when one is raised.
    """
