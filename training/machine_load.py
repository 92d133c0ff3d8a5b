"""The machine's load during one training call, for ``run.json``: the 1-minute load average (the
runnable processes of the whole machine, this call's included) at its start and at its end, and
the number of CPUs. A run timed while other work shared the cores is slower for reasons that are
not its recipe's; Table 10 shows the figure beside each row's seconds per token. Where the system
has no load average, nothing is reported."""

from __future__ import annotations

import os


def load_1min() -> float | None:
    """The machine's 1-minute load average, or None where the system has none."""
    try:
        return float(os.getloadavg()[0])
    except (AttributeError, OSError):
        return None


class MachineLoad:
    """Read at the beginning of a training call; :meth:`info` at its end."""

    def __init__(self) -> None:
        self.start = load_1min()

    def info(self) -> dict[str, float | int]:
        """``load_1min_start``, ``load_1min_end`` and ``cpus``, or nothing where it cannot be
        read."""
        end = load_1min()
        if self.start is None or end is None:
            return {}
        return {"load_1min_start": round(self.start, 2), "load_1min_end": round(end, 2),
                "cpus": os.cpu_count() or 0}  # fmt: skip
