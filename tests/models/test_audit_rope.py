"""Each RoPE extension, built into a rotary module as a model gets it, has the frequencies its
method defines: ABF's raised base, PI's divided frequencies, llama3's and YaRN's split of the
dimensions by wavelength, dynamic NTK's base raised only past the original window."""

import math

import pytest
import torch
from transformers import LlamaConfig
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

from longred_bench.errors import UserError
from longred_bench.models.loading import extended_config, rotary_config
from longred_bench.models.rope import OriginalRope, parse_rope_spec, rope_parameters

THETA, WINDOW, HEAD_DIM = 10000.0, 512, 32


def _config() -> LlamaConfig:
    return LlamaConfig(
        hidden_size=2 * HEAD_DIM, num_attention_heads=2, num_key_value_heads=2,
        num_hidden_layers=1, intermediate_size=32, vocab_size=32,
        max_position_embeddings=WINDOW,
        rope_parameters={"rope_type": "default", "rope_theta": THETA},
    )  # fmt: skip


def _base_freq(theta: float = THETA) -> torch.Tensor:
    i = torch.arange(0, HEAD_DIM, 2, dtype=torch.float64)
    return theta ** (-i / HEAD_DIM)


def _rotary(spec: str) -> LlamaRotaryEmbedding:
    return LlamaRotaryEmbedding(config=rotary_config(extended_config(_config(), spec)))


def _close(got: torch.Tensor, want: torch.Tensor) -> None:
    torch.testing.assert_close(got.double(), want, rtol=1e-5, atol=0)


def test_abf_raises_the_base() -> None:
    _close(_rotary("abf:theta=40000").inv_freq, _base_freq(40000.0))


def test_pi_divides_every_frequency_by_the_factor() -> None:
    _close(_rotary("pi:factor=4").inv_freq, _base_freq() / 4)


def test_llama3_keeps_high_frequencies_divides_low_ones_and_blends_between() -> None:
    factor, low, high = 4.0, 1.0, 4.0  # llama3's default low and high frequency factors
    want = []
    for f in _base_freq().tolist():
        wavelen = 2 * math.pi / f
        if wavelen < WINDOW / high:
            want.append(f)
        elif wavelen > WINDOW / low:
            want.append(f / factor)
        else:
            smooth = (WINDOW / wavelen - low) / (high - low)
            want.append((1 - smooth) * f / factor + smooth * f)
    _close(_rotary("llama3:factor=4").inv_freq, torch.tensor(want, dtype=torch.float64))


def test_yarn_splits_the_dimensions_by_their_turns_over_the_original_window() -> None:
    """A dimension turning more than beta_fast (32) times over the original window keeps its
    frequency, one turning under beta_slow (1) times is divided by the factor, the others lie
    between; attention is scaled by 0.1 ln(factor) + 1."""
    rotary = _rotary("yarn:factor=4")
    base = _base_freq()
    turns = WINDOW * base / (2 * math.pi)
    got = rotary.inv_freq.double()
    fast, slow = turns > 32, turns < 1
    assert fast.any() and slow.any()
    _close(got[fast], base[fast])
    _close(got[slow], base[slow] / 4)
    assert bool((got <= base * (1 + 1e-6)).all() and (got >= base / 4 * (1 - 1e-6)).all())
    assert rotary.attention_scaling == pytest.approx(0.1 * math.log(4) + 1)


def test_yarn_attention_factor_given_replaces_the_default_scaling() -> None:
    assert _rotary("yarn:factor=4,attention_factor=1.5").attention_scaling == pytest.approx(1.5)


def test_dynamic_ntk_is_the_original_inside_the_window_and_scales_the_base_past_it() -> None:
    rotary = _rotary("dynamic:factor=4")
    _close(rotary.inv_freq, _base_freq())
    x = torch.zeros(1, 1, HEAD_DIM)
    rotary(x, torch.arange(WINDOW)[None])
    _close(rotary.inv_freq, _base_freq())
    seq = 2 * WINDOW  # inside the target window (4x), past the original one
    rotary(x, torch.arange(seq)[None])
    scaled = THETA * (4 * seq / WINDOW - 3) ** (HEAD_DIM / (HEAD_DIM - 2))
    _close(rotary.inv_freq, _base_freq(scaled))


@pytest.mark.parametrize(
    ("spec", "target"),
    [("abf:theta=2e7", 4 * WINDOW), ("pi:max_len=1536", 1536), ("yarn:max_len=700", 700)],
)
def test_max_len_sets_the_window_and_the_factor(spec: str, target: int) -> None:
    params, window = rope_parameters(parse_rope_spec(spec), OriginalRope(THETA, WINDOW))
    assert window == target
    if "factor" in params:
        assert params["factor"] == pytest.approx(target / WINDOW)


def test_the_target_window_rounds_to_the_nearest_token() -> None:
    _, window = rope_parameters(parse_rope_spec("pi:factor=1.999"), OriginalRope(THETA, 1000))
    assert window == 1999
    _, window = rope_parameters(parse_rope_spec("pi:factor=1.0007"), OriginalRope(THETA, 1000))
    assert window == 1001


@pytest.mark.parametrize(
    "spec",
    [
        "yarn:factor=4,beta_fast=2,beta_slow=2",
        "yarn:factor=4,beta_fast=1",
    ],
)
def test_yarn_refuses_a_beta_fast_not_above_beta_slow(spec: str) -> None:
    with pytest.raises(UserError, match=r"beta_fast \(\w+\) must exceed beta_slow"):
        parse_rope_spec(spec)


def test_yarn_beta_fast_alone_is_checked_against_beta_slows_default_of_1() -> None:
    spec = parse_rope_spec("yarn:factor=4,beta_fast=1.5")
    params, _ = rope_parameters(spec, OriginalRope(THETA, WINDOW))
    assert params["beta_fast"] == 1.5 and "beta_slow" not in params


def test_a_json_spec_with_two_methods_is_refused() -> None:
    with pytest.raises(UserError, match="one 'method' key"):
        parse_rope_spec('{"method": "pi", "method": "yarn", "factor": 4}')
