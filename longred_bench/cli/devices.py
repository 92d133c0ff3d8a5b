"""The ``--device`` a command is given, checked before any work: a name torch knows, on a machine
that has it (:func:`check_device`)."""

from __future__ import annotations

from longred_bench.errors import UserError


def check_device(
    device: str, flag: str = "--device", fix: str = "--device cpu", *, here: bool = True
) -> None:
    """A one-line :class:`UserError` for a ``device`` torch does not know (``gpu``), a CUDA device
    where torch sees none, or a CUDA index past the devices it sees; nothing otherwise. ``cpu``
    (every command's default) is taken without importing torch. ``flag`` names where the device
    was given and ``fix`` the way to run on the CPU instead, in the messages. ``here=False`` (a
    plan for another machine) checks the name alone."""
    if device == "cpu":
        return
    if not isinstance(device, str):
        raise UserError(f"{flag} {device!r} is not a device name: use cpu, cuda or cuda:N")
    import torch

    try:
        parsed = torch.device(device)
    except (RuntimeError, ValueError):
        raise UserError(
            f"{flag} {device!r} is not a device torch knows: use cpu, cuda or cuda:N"
        ) from None
    if parsed.type != "cuda" or not here:
        return
    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        raise UserError(
            f"{flag} {device}: torch {torch.__version__} sees no CUDA device here; "
            f"use {fix}, or run on a machine with a GPU"
        )
    if parsed.index is not None and parsed.index >= count:
        raise UserError(
            f"{flag} {device}: torch sees {count} CUDA device(s) (cuda:0 to cuda:{count - 1})"
        )
