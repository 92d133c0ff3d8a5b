"""Pinned behaviour of ``training/impactful_tokens.py``: the top tokens are ranked per position
(each position's own top row, aligned with that position's token), and a fraction of the batch
that rounds to no row still keeps the single top row; the lifts count every position from 1
on."""

from __future__ import annotations

import pytest
import torch

from longred_bench.models.zoo import byte_tokenizer
from longred_bench.training.impactful_tokens import type_lifts, type_shares


def _rows(tok, *texts: str) -> torch.Tensor:
    return torch.tensor([tok(text, add_special_tokens=False)["input_ids"] for text in texts])


def test_each_position_takes_the_token_of_its_own_top_row() -> None:
    """Position 1's top row holds a digit there, and so does position 2's (another row): the
    top half of the batch is all numerals, though each row also holds a letter."""
    tok = byte_tokenizer()
    ids = _rows(tok, "a7x", "ax7")
    change = torch.tensor([[0.0, 2.0, 0.0], [0.0, 0.0, 2.0]])
    shares = type_shares(change, ids, tok, top_fraction=0.5)
    assert shares["numeral"] == 1.0 and shares["other"] == 0.0
    # the other way round, the top rows hold the letters
    shares = type_shares(-change, ids, tok, top_fraction=0.5)
    assert shares["other"] == 1.0 and shares["numeral"] == 0.0


def test_a_fraction_rounding_to_no_row_keeps_the_top_row() -> None:
    """Two rows at ``top_fraction = 0.2`` (0.4 rows) keep one row a position, not none."""
    tok = byte_tokenizer()
    ids = _rows(tok, "a7x", "ax7")
    change = torch.tensor([[0.0, 2.0, 0.0], [0.0, 0.0, 2.0]])
    shares = type_shares(change, ids, tok, top_fraction=0.2)
    assert shares["numeral"] == pytest.approx(1.0)
    assert sum(shares.values()) == pytest.approx(1.0)


def test_lifts_count_every_position_from_one_on_by_hand() -> None:
    """Top row per position (half of two rows) holds ``7 x x`` at positions 1..3; all rows
    there hold one ``7`` and five ``x``: numeral lift (1/3) / (1/6) = 2, other (2/3) / (5/6)
    = 0.8. The only digit sits at position 1, so position 1 must count in both shares."""
    tok = byte_tokenizer()
    ids = _rows(tok, ".7xx", ".xxx")
    change = torch.tensor([[0.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0]])
    lifts = type_lifts(change, ids, tok, top_fraction=0.5)
    assert lifts["numeral"] == pytest.approx(2.0)
    assert lifts["other"] == pytest.approx(0.8)
    assert lifts["punctuation"] == 0.0  # the "." at position 0 is not counted
