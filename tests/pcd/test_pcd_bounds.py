"""PCD's parameter bounds and flags, the trained window, and how the local variant follows each
prompt: the bases a batch's local passes run under, the positions decoding feeds the model, the
windows file, the prompts left without a local variant, and the tokens decoding picks.

Everything runs on the built-in ``tiny-random`` model (head size 16, RoPE base 1e4, window 256;
fixtures in ``conftest.py``), the tokens decoding picks on a copy whose attention is sharper.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
from types import SimpleNamespace

import pytest
import torch

from longred_bench.errors import UserError
from longred_bench.pcd.config import (
    PcdConfig,
    add_pcd_arguments,
    pcd_from_args,
    trained_window,
)
from longred_bench.pcd.model import PcdModel

# --- parameters -----------------------------------------------------------------------------------


def test_the_bounds_themselves_are_allowed() -> None:
    """``local_window`` may be 7 tokens, ``local_fraction`` the whole prompt; an infinite
    ``local_base`` is no base."""
    assert PcdConfig(local_window=7).window_for(5000) == 7
    whole = PcdConfig(local_fraction=1.0)
    assert [whole.window_for(n) for n in (1, 100, 128)] == [64, 128, 128]
    assert PcdConfig(beta=1.0).beta == 1.0 and PcdConfig(top_k=1).top_k == 1
    with pytest.raises(UserError, match="local_base must be a finite RoPE base > 1"):
        PcdConfig(local_base=math.inf)


def test_an_empty_prompt_gets_the_window_of_a_one_token_prompt() -> None:
    quarter = PcdConfig()
    assert quarter.window_for(0) == quarter.window_for(1) == 16  # a quarter of 64


def _parsed(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_pcd_arguments(parser)
    return parser.parse_args(argv)


def test_flags_given_as_zero_are_given() -> None:
    """``--pcd-alpha 0`` asks for strength 0 (the base model's greedy output), not for PCD's
    default strength 1.5."""
    assert pcd_from_args(_parsed([])) is None
    assert pcd_from_args(_parsed(["--pcd-alpha", "0"])) == PcdConfig(alpha=0.0)
    got = pcd_from_args(_parsed(["--pcd-first-pair", "0", "--pcd-local-window", "64"]))
    assert got == PcdConfig(first_pair=0, local_window=64)


def test_trained_window_is_the_original_window_where_one_is_recorded() -> None:
    yarn = SimpleNamespace(
        max_position_embeddings=4096,
        rope_parameters={"rope_type": "yarn", "original_max_position_embeddings": 1024},
    )
    assert trained_window(yarn) == 1024
    plain = SimpleNamespace(max_position_embeddings=256, rope_parameters={"rope_type": "default"})
    assert trained_window(plain) == 256
    assert trained_window(SimpleNamespace(max_position_embeddings=512)) == 512


def test_a_local_base_equal_to_the_models_is_refused(tiny) -> None:
    with pytest.raises(UserError, match="local base 10000 is not below the model's RoPE base"):
        PcdModel(tiny.model, PcdConfig(local_base=1e4))
    PcdModel(tiny.model, PcdConfig(local_base=9999.0))


# --- the local variant per prompt -----------------------------------------------------------------


def test_prompts_without_a_local_variant_are_in_no_group(tiny) -> None:
    far = PcdModel(tiny.model, PcdConfig(local_window=100_000))
    assert far.rows_by_base([5, 300]) == {}
    near = PcdModel(tiny.model, PcdConfig())
    groups = near.rows_by_base([10, 300, 20, 1000])  # W' 16, 80, 16, 256
    assert sorted(groups.values()) == [[0, 2], [1], [3]]
    assert groups[near.base_for(1)] == [0, 2]


def test_windows_are_written_in_order_of_size(tiny, tmp_path) -> None:
    path = tmp_path / "pcd-windows.json"
    pcd = PcdModel(tiny.model, PcdConfig())
    pcd.keep_windows(path, run="a")
    pcd.base_for(1000)  # W' 256 first
    pcd.base_for(200)  # then W' 64
    assert json.loads(path.read_text()) == {"a": [64, 256]}
    assert [x["window"] for x in pcd.resolved()["local"]] == [64, 256]


def test_logits_pair_takes_the_local_base_of_the_prompt_length_it_is_given(tiny) -> None:
    """A 10-token input scored as part of a 1,000-token prompt runs its local pass under that
    prompt's base (W' 256), not under the base of its own 10 tokens (W' 16)."""
    pcd = PcdModel(tiny.model, PcdConfig())
    ids = torch.arange(10, 20)[None]
    _, local = pcd.logits_pair(ids, 1000)
    with torch.no_grad(), pcd.local(pcd.base_for(1000)):
        expected = tiny.model(ids).logits
    with torch.no_grad(), pcd.local(pcd.base_for(10)):
        own = tiny.model(ids).logits
    assert torch.equal(local, expected) and not torch.equal(local, own)


def _recorded(pcd: PcdModel, monkeypatch) -> list[tuple[float | None, torch.Tensor]]:
    """Each forward pass of ``pcd`` as (its local base, the position ids it was given)."""
    calls: list[tuple[float | None, torch.Tensor]] = []
    forward = pcd._forward

    def recording(local_base, **inputs):
        calls.append((local_base, inputs["position_ids"].clone()))
        return forward(local_base, **inputs)

    monkeypatch.setattr(pcd, "_forward", recording)
    return calls


def test_decoding_runs_each_row_under_its_own_base_at_its_own_positions(tiny, monkeypatch) -> None:
    """Two left-padded prompts of 3 and 70 tokens (W' 16 and 32): the standard pass sees both
    rows, each local pass only the rows of its base; every pass numbers a row's real tokens
    from 0 and each new token one past the last."""
    pcd = PcdModel(tiny.model, PcdConfig(alpha=1.5))
    ids = torch.full((2, 70), 5)
    mask = torch.ones(2, 70, dtype=torch.long)
    mask[0, :67] = 0  # row 0: 67 pads, then 3 tokens
    calls = _recorded(pcd, monkeypatch)
    out = pcd.generate(ids, mask, max_new_tokens=3, pad_token_id=0)
    assert out.shape == (2, 73)
    short, long = pcd.base_for(3), pcd.base_for(70)
    assert short != long
    assert [base for base, _ in calls] == [None, short, long] * 3
    first = {base: pos for base, pos in calls[:3]}
    assert first[None][0, 67:].tolist() == [0, 1, 2]
    assert torch.equal(first[None][1], torch.arange(70))
    assert torch.equal(first[short], first[None][:1]) and torch.equal(first[long], first[None][1:])
    for step in (1, 2):
        got = {base: pos.flatten().tolist() for base, pos in calls[3 * step : 3 * step + 3]}
        assert got == {None: [2 + step, 69 + step], short: [2 + step], long: [69 + step]}


def test_strength_zero_runs_no_local_pass(tiny, monkeypatch) -> None:
    pcd = PcdModel(tiny.model, PcdConfig(alpha=0.0))
    calls = _recorded(pcd, monkeypatch)
    pcd.generate(torch.full((1, 5), 5), max_new_tokens=2, pad_token_id=0)
    assert [base for base, _ in calls] == [None, None]
    assert [pos.flatten().tolist() for _, pos in calls] == [[0, 1, 2, 3, 4], [5]]


def test_an_unreadable_windows_file_of_another_shape_is_a_user_error(tiny, tmp_path) -> None:
    path = tmp_path / "pcd-windows.json"
    for text in ("[64, 128]", '{"a": 64}', '{"a": ["x"]}'):
        path.write_text(text)
        with pytest.raises(UserError, match=r"is unreadable .*: delete it"):
            PcdModel(tiny.model, PcdConfig()).keep_windows(path, run="a")


@pytest.fixture(scope="module")
def sharp(tiny):
    """``tiny-random`` with its queries and keys scaled up 6 times: attention that depends on
    positions enough for PCD's tokens to differ from greedy decoding's."""
    model = copy.deepcopy(tiny.model)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(6.0)
            layer.self_attn.k_proj.weight.mul_(6.0)
    return model


def test_decoded_tokens_follow_the_contrast_of_full_passes(tiny, sharp) -> None:
    """Each row of a left-padded batch decodes, step by step, the plausible token (probability at
    least beta times the top one's) with the largest ``2.5 L - 1.5 L_local``, where both passes
    read the row's whole text so far (no cache) and the local base is that of its prompt."""
    alpha, beta, steps = 1.5, 0.1, 8
    pcd = PcdModel(sharp, PcdConfig(alpha=alpha, beta=beta))
    texts = ("The pass key is 71234. Remember it", "short one.")
    enc = tiny.tokenizer(list(texts), return_tensors="pt", padding=True, padding_side="left",
                         add_special_tokens=False)  # fmt: skip
    out = pcd.generate(enc.input_ids, enc.attention_mask, max_new_tokens=steps, pad_token_id=0)
    for row, text in enumerate(texts):
        ids = torch.tensor([tiny.tokenizer(text, add_special_tokens=False)["input_ids"]])
        prompt = ids.shape[1]
        for _ in range(steps):
            with torch.no_grad():
                logits = sharp(ids).logits[0, -1]
                with pcd.local(pcd.base_for(prompt)):
                    local = sharp(ids).logits[0, -1]
            scores = (1 + alpha) * logits - alpha * local
            p = logits.softmax(-1)
            scores[p < beta * p.max()] = -math.inf
            ids = torch.cat([ids, scores.argmax().view(1, 1)], dim=1)
        with torch.no_grad():
            greedy = sharp.generate(input_ids=ids[:, :prompt], max_new_tokens=steps,
                                    do_sample=False, pad_token_id=0)  # fmt: skip
        assert out[row, -steps:].tolist() == ids[0, prompt:].tolist()
        assert greedy[0, prompt:].tolist() != ids[0, prompt:].tolist()  # PCD changed tokens
