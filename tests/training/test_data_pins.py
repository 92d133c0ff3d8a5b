"""Pinned behaviour of ``training/data.py`` that needs no cached corpus: a missing or too short
text file refused in one line, the seeded rows of the ``random`` source, and a copy mix refused
for a tokenizer whose digits are unknown tokens."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from longred_bench.errors import TooShort, UserError
from longred_bench.models.zoo import byte_tokenizer
from longred_bench.training.data import (
    RANDOM_ROWS,
    copy_mix_rows,
    stream_data,
)


def test_a_missing_text_file_is_refused_as_no_file_and_no_source(tmp_path: Path) -> None:
    """A path that is no file (and no source spec) is one line naming it."""
    missing = str(tmp_path / "missing.txt")
    with pytest.raises(UserError, match="is no file and no source; accepted forms"):
        stream_data(byte_tokenizer(), missing, 16, seed=0)


def test_a_text_file_shorter_than_a_window_is_refused(tmp_path: Path) -> None:
    """A file of fewer tokens than one window: too short, with its token count."""
    text = tmp_path / "short.txt"
    text.write_text("abc", encoding="utf-8")
    with pytest.raises(TooShort, match="has 3 tokens, fewer than one window of 16"):
        stream_data(byte_tokenizer(), str(text), 16, seed=0)


def test_random_rows_are_drawn_from_the_seed_and_the_length() -> None:
    """The ``random`` source's rows come from seed ``seed * 7919 + length``: another length
    gives other rows, not the same draw cut otherwise."""
    tok = byte_tokenizer()
    got = stream_data(tok, "random", 8, seed=3)
    gen = torch.Generator().manual_seed(3 * 7919 + 8)
    assert torch.equal(got.ids, torch.randint(0, len(tok), (RANDOM_ROWS, 8), generator=gen))
    assert bool(got.mask.all())
    longer = stream_data(tok, "random", 16, seed=3).ids
    assert not torch.equal(longer[0, :8], got.ids[0])


class _UnknownDigits:
    """A tokenizer whose digit 7 is its unknown token (ten distinct ids, one of them unk)."""

    unk_token_id = 107

    def convert_tokens_to_ids(self, token: str) -> int:
        return 100 + int(token)


def test_a_copy_mix_needs_a_known_token_for_each_digit() -> None:
    """Copy rows of digit strings need a real token for each digit 0-9."""
    with pytest.raises(UserError, match="needs a tokenizer with a token for each digit 0-9"):
        copy_mix_rows(_UnknownDigits(), 4, 32, seed=0)
