"""Resumable streams of fixed-length token windows.

A :class:`WindowStream` holds a set of windows (``ids [N, L]``, ``mask [N, L]``) and hands out
rows in a seeded random order, reshuffled every epoch. Its whole state is ``(epoch, cursor)``,
saved in checkpoints, so a resumed run draws exactly the rows the uninterrupted one would have.

Data parallelism: every process draws the same global batch of ``rows * world`` rows and keeps
its own slice, so the global batch is the same for any number of processes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from longred_bench.errors import UserError


@dataclass
class Batch:
    """Rows of one stream: ``ids [B, L]`` (long) and ``mask [B, L]`` (bool, True = real token)."""

    ids: torch.Tensor
    mask: torch.Tensor

    @property
    def tokens(self) -> int:
        """Real tokens in the batch."""
        return int(self.mask.sum())

    def to(self, device: torch.device) -> Batch:
        """The batch on ``device``."""
        return Batch(self.ids.to(device), self.mask.to(device))


class WindowStream:
    """Seeded, epoch-shuffled, resumable iteration over the rows of a window set."""

    def __init__(self, name: str, ids: torch.Tensor, mask: torch.Tensor, *, seed: int) -> None:
        if ids.ndim != 2 or ids.shape != mask.shape or ids.shape[0] == 0:
            raise UserError(f"stream {name!r} has no windows (data shorter than the length?)")
        self.name = name
        self.ids = ids
        self.mask = mask.bool()
        self.seed = seed
        self.epoch = 0
        self.cursor = 0
        self._order = self._permutation(0)

    @property
    def length(self) -> int:
        """Tokens per window."""
        return int(self.ids.shape[1])

    def __len__(self) -> int:
        return int(self.ids.shape[0])

    def _permutation(self, epoch: int) -> torch.Tensor:
        gen = torch.Generator().manual_seed(self.seed * 1_000_003 + epoch)
        return torch.randperm(len(self), generator=gen)

    def next(self, rows: int, *, rank: int = 0, world: int = 1) -> Batch:
        """The next ``rows`` rows of this process (of a global batch of ``rows * world``)."""
        picked: list[torch.Tensor] = []
        need = rows * world
        while need > 0:
            take = min(need, len(self) - self.cursor)
            picked.append(self._order[self.cursor : self.cursor + take])
            self.cursor += take
            need -= take
            if self.cursor == len(self):
                self.epoch += 1
                self.cursor = 0
                self._order = self._permutation(self.epoch)
        index = torch.cat(picked)[rank * rows : (rank + 1) * rows]
        return Batch(self.ids[index], self.mask[index])

    def state_dict(self) -> dict[str, int]:
        """Position in the data: epoch and cursor."""
        return {"epoch": self.epoch, "cursor": self.cursor, "rows": len(self)}

    def load_state_dict(self, state: dict[str, int]) -> None:
        """Continue from a saved position."""
        if state["rows"] != len(self):
            raise UserError(
                f"stream {self.name!r} has {len(self)} windows but the checkpoint was made with "
                f"{state['rows']}: the data changed since; start a new output directory"
            )
        self.epoch = int(state["epoch"])
        self.cursor = int(state["cursor"])
        self._order = self._permutation(self.epoch)
