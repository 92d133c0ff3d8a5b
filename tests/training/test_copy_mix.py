"""Copy episodes in the pretraining mix (``training/data.py::copy_mix_rows``, ``copy_fraction``)."""

from __future__ import annotations

import pytest
import torch

from longred_bench.errors import UserError
from longred_bench.models.zoo import byte_tokenizer
from longred_bench.training.config import resolve_config
from longred_bench.training.data import copy_mix_rows


def _digit_ids(tok) -> set[int]:
    return {tok.convert_tokens_to_ids(str(d)) for d in range(10)}


def _is_episodes(row: list[int], lengths: tuple[int, int]) -> bool:
    """True if ``row`` is a prefix of ``s1 s1 s2 s2 ...`` with each ``len(s)`` in ``lengths``."""
    lo, hi = lengths

    def ok(start: int) -> bool:
        if start >= len(row):
            return True
        for size in range(lo, hi + 1):
            first, second = row[start : start + size], row[start + size : start + 2 * size]
            if len(second) < size:  # cut by the row's end: what is there must match
                if first[: len(second)] == second:
                    return True
                continue
            if first == second and ok(start + 2 * size):
                return True
        return False

    return ok(0)


def test_copy_rows_are_digit_then_token_episodes() -> None:
    tok = byte_tokenizer()
    rows = copy_mix_rows(tok, 6, 48, seed=0)
    assert rows.shape == (6, 48) and rows.dtype == torch.long
    digits = _digit_ids(tok)
    assert all(set(r.tolist()) <= digits for r in rows[:3])  # first half: digit strings
    special = set(tok.all_special_ids)
    assert all(not set(r.tolist()) <= digits and not set(r.tolist()) & special for r in rows[3:])
    assert all(_is_episodes(r.tolist(), (2, 12)) for r in rows[:3])
    assert all(_is_episodes(r.tolist(), (2, 64)) for r in rows[3:])
    # most digit strings repeat a digit: what makes exact copying need more than the last token
    assert torch.equal(rows, copy_mix_rows(tok, 6, 48, seed=0))
    assert not torch.equal(rows, copy_mix_rows(tok, 6, 48, seed=1))


def test_copy_fraction_is_checked() -> None:
    with pytest.raises(UserError, match="copy_fraction is for the pretraining mix"):
        resolve_config("cpt", profile="tiny", overrides={"copy_fraction": 0.1})
    with pytest.raises(UserError, match=r"copy_fraction must be in \[0, 1 - retrieval_fraction\)"):
        resolve_config("pretrain", profile="tiny", overrides={"copy_fraction": 0.7})
    assert resolve_config("pretrain", profile="tiny").copy_fraction > 0


@pytest.mark.network
def test_pretrain_mix_has_each_share(request: pytest.FixtureRequest) -> None:
    from data_helpers import ensure_cached

    from longred_bench.training.data import window_set

    ensure_cached(request, "brown", "austen", "kjv")
    tok = byte_tokenizer()
    prose, _ = window_set(tok, "pretrain", 512, seed=3, retrieval_fraction=0.0)
    ids, mask = window_set(tok, "pretrain", 512, seed=3, retrieval_fraction=0.3, copy_fraction=0.1)
    n = len(prose)  # 60% prose, 30% retrieval, 10% copy rows: n/2 and n/6 of them
    assert len(ids) == pytest.approx(n + n / 2 + n / 6, abs=1)
    assert torch.equal(ids[:n], prose) and bool(mask[:n].all())
    copies = ids[-round(n / 6) :]
    assert bool(mask[-round(n / 6) :].all())
    assert not _is_episodes(ids[-round(n / 6) - 1].tolist(), (2, 64))  # a retrieval row
    assert all(_is_episodes(r.tolist(), (2, 64)) for r in copies)
    digits = sum(set(r.tolist()) <= _digit_ids(tok) for r in copies)
    assert digits == len(copies) // 2
