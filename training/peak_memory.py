"""Peak memory of one training call, for ``run.json``: the CUDA allocator's peak on a GPU
(``torch.cuda.max_memory_allocated`` after a reset at the start), the process's peak resident
set on a Linux CPU (``VmHWM`` after a reset through ``/proc/self/clear_refs``). The CPU figure is
the whole process's: weights, optimizer state, activations and whatever else it already held (a
worker that trained an earlier run keeps its allocator's free lists). A resumed run reports the
call that finished it. Where neither can be read, nothing is reported."""

from __future__ import annotations

from pathlib import Path

import torch

_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _status_kib(field: str) -> int | None:
    """A ``/proc/self/status`` field in KiB, or None where there is none."""
    try:
        for line in _STATUS.read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


class PeakMemory:
    """Started at the beginning of a training call (resets the peak); :meth:`info` at its end."""

    def __init__(self, device: torch.device | str) -> None:
        self.device = torch.device(device)
        self.ok = True
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
            return
        try:
            _CLEAR_REFS.write_text("5")  # Linux: the peak resident set restarts from now
        except OSError:
            self.ok = False

    def info(self) -> dict[str, float | str]:
        """``peak_memory_mib`` and ``peak_memory_kind``, or nothing where it cannot be read."""
        if self.device.type == "cuda":
            mib = torch.cuda.max_memory_allocated(self.device) / 2**20
            return {"peak_memory_mib": round(mib, 1), "peak_memory_kind": "CUDA allocator"}
        peak = _status_kib("VmHWM") if self.ok else None
        if peak is None:
            return {}
        return {"peak_memory_mib": round(peak / 1024, 1), "peak_memory_kind": "process RSS"}
