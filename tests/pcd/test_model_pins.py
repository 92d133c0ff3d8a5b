"""PCD's local-aware variant and decoding at their edges: the smallest local window the base
search takes (and the smallest bases it finds), the plausibility cut on half-precision logits,
a windows file that is not text, a stopped row that stays stopped, and the KV cache read from a
forward's output under either of its names.

Everything runs on the built-in ``tiny-random`` model (head size 16, RoPE base 1e4, window 256;
fixtures in ``conftest.py``).
"""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch

from longred_bench.errors import UserError
from longred_bench.pcd.model import (
    PcdConfig,
    PcdModel,
    base_for_window,
    longest_wavelength,
    plausible,
    returned_cache,
)

HEAD_DIM = 16


def test_the_smallest_window_gets_the_smallest_base_and_one_below_it_is_refused(tiny) -> None:
    """A 7-token window (the least a base above 1 can have) gets ``B' = (7 / 2 pi)^(16/14)``,
    about 1.13, whose longest wavelength is 7 tokens; a 6-token window is a user error."""
    rotary_cls = type(tiny.model.model.rotary_emb)
    base = base_for_window(rotary_cls, tiny.model.config, 7)
    assert base == pytest.approx((7 / (2 * math.pi)) ** (HEAD_DIM / (HEAD_DIM - 2)), rel=1e-6)
    assert longest_wavelength(rotary_cls, tiny.model.config, base) == pytest.approx(7, rel=1e-5)
    with pytest.raises(UserError, match="local window must be at least 7 tokens, got 6"):
        base_for_window(rotary_cls, tiny.model.config, 6)


def test_half_precision_logits_are_cut_at_their_full_precision_values() -> None:
    """bfloat16 logits 10 and 7.6875: the second token's probability is 0.099 of the top one's,
    below beta 0.1, so it is cut, though ``10 + log 0.1`` rounds to 7.6875 in bfloat16."""
    logits = torch.tensor([[10.0, 7.6875, 0.0]], dtype=torch.bfloat16)
    assert plausible(logits, PcdConfig(beta=0.1)).tolist() == [[True, False, False]]


def test_a_windows_file_that_is_not_text_is_a_user_error(tiny, tmp_path) -> None:
    path = tmp_path / "pcd-windows.json"
    path.write_bytes(b"\xff\xfe\x00{")
    with pytest.raises(UserError, match=r"is unreadable .*: delete it"):
        PcdModel(tiny.model, PcdConfig()).keep_windows(path, run="a")


def test_a_stopped_row_stays_stopped_and_is_asked_about_its_own_tokens_only(tiny) -> None:
    """A row whose stop rule held once is padded to the end and never asked again, even where
    the rule would not hold for its ids with the padding; the rule sees each row's generated
    tokens only."""
    texts = ["The pass key is 71234. Remember", "x"]
    enc = tiny.tokenizer(texts, return_tensors="pt", padding=True, padding_side="left")
    pad, width = tiny.tokenizer.pad_token_id, enc.input_ids.shape[1]
    pcd = PcdModel(tiny.model, PcdConfig(alpha=1.5))
    free = pcd.generate(enc.input_ids, enc.attention_mask, max_new_tokens=4, pad_token_id=pad)
    first, other = free[0, width].item(), free[1, width:].tolist()
    assert other[0] != first
    asked: list[list[int]] = []

    def is_done(ids: list[int]) -> bool:
        asked.append(list(ids))
        return ids == [first] or len(ids) >= 4

    out = pcd.generate(
        enc.input_ids, enc.attention_mask, max_new_tokens=4, pad_token_id=pad, is_done=is_done
    )
    assert out[0, width:].tolist() == [first, pad, pad, pad]
    assert out[1, width:].tolist() == other
    assert asked == [[first], *[other[:k] for k in range(1, 5)]]


def test_the_cache_is_read_under_its_new_name_or_else_its_old_one() -> None:
    """transformers 5.24 on returns the KV cache as ``cache``, earlier versions as
    ``past_key_values``: the one that is set is the one handed to the next step."""
    new, old = object(), object()
    assert returned_cache(SimpleNamespace(cache=new, past_key_values=old)) is new
    assert returned_cache(SimpleNamespace(cache=None, past_key_values=old)) is old
    assert returned_cache(SimpleNamespace(past_key_values=old)) is old
