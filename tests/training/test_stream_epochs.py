"""``training.streams.WindowStream`` across epochs: every epoch is a new order of all rows, and
a stream resumed after an epoch boundary draws exactly the rows the uninterrupted one does."""

from __future__ import annotations

import torch

from longred_bench.training.streams import WindowStream


def _stream(rows: int, width: int) -> WindowStream:
    ids = torch.arange(rows * width).view(rows, width)
    return WindowStream("s", ids, torch.ones_like(ids, dtype=torch.bool), seed=3)


def test_each_epoch_is_a_new_order_of_every_row() -> None:
    stream = _stream(20, 2)
    epochs = [stream.next(20).ids[:, 0].tolist() for _ in range(3)]
    assert all(sorted(e) == list(range(0, 40, 2)) for e in epochs)
    assert epochs[0] != epochs[1] and epochs[1] != epochs[2]


def test_a_stream_resumed_after_an_epoch_boundary_draws_the_same_rows() -> None:
    a = _stream(10, 4)
    for _ in range(4):
        a.next(3)
    state = a.state_dict()
    assert state["epoch"] == 1
    rest = [a.next(3).ids for _ in range(5)]
    b = _stream(10, 4)
    b.load_state_dict(state)
    assert all(torch.equal(x, b.next(3).ids) for x in rest)
