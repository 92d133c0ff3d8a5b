"""A dry run counting many runs keeps what it counted in one memo: each count under everything
it depends on (the row length, LongRecipe's selection and the seed it draws with)."""

from __future__ import annotations

from types import SimpleNamespace

import longred_bench.training.data as data_module
import longred_bench.training.data_plan as data_plan

CFG = SimpleNamespace(retrieval_fraction=0.0, retrieval_phrasing="train", copy_fraction=0.0)


def test_a_shared_memo_keeps_the_counts_of_each_length_selection_and_drawn_seed(
    monkeypatch,
) -> None:
    def stream_data(tokenizer, source, length, *, seed, retrieval_fraction, retrieval_phrasing,
                    copy_fraction, selection):  # fmt: skip
        rows = 10_000 // length
        if selection is not None:
            rows = int(rows * selection[1]) + seed
        return SimpleNamespace(ids=[0] * rows, record={"rows": rows})

    monkeypatch.setattr(data_module, "stream_data", stream_data)
    memo: dict = {}
    tok = object()
    asked = [
        (64, 0, None, 156),
        (128, 0, None, 78),
        (64, 5, None, 156),  # without a selection the seed draws nothing
        (64, 0, (("digit",), 0.5), 78),
        (64, 0, (("digit",), 0.25), 39),
        (64, 3, (("digit",), 0.5), 81),
    ]
    for length, seed, selection, rows in asked * 2:  # the second round reads the memo
        got = data_plan.counted_rows(CFG, tok, "src", length, seed, selection, memo)
        assert got[0] == rows, (length, seed, selection)
