"""RoPE spec parsing and its translation to transformers rope_parameters."""

import pytest

from longred_bench.errors import UserError
from longred_bench.models.rope import OriginalRope, parse_rope_spec, rope_parameters

ORIG = OriginalRope(theta=5e5, max_position_embeddings=8192)


@pytest.mark.parametrize(
    ("spec", "expected", "target"),
    [
        ("abf:theta=2e7", {"rope_type": "default", "rope_theta": 2e7}, 32768),
        ("abf:theta=1e8,max_len=131072", {"rope_type": "default", "rope_theta": 1e8}, 131072),
        ("pi:factor=4", {"rope_type": "linear", "rope_theta": 5e5, "factor": 4.0}, 32768),
        ("dynamic:factor=2", {"rope_type": "dynamic", "rope_theta": 5e5, "factor": 2.0}, 16384),
        (
            "yarn:factor=4,beta_fast=16",
            {
                "rope_type": "yarn",
                "rope_theta": 5e5,
                "factor": 4.0,
                "original_max_position_embeddings": 8192,
                "beta_fast": 16.0,
            },
            32768,
        ),
        (
            "llama3:factor=8",
            {
                "rope_type": "llama3",
                "rope_theta": 5e5,
                "factor": 8.0,
                "original_max_position_embeddings": 8192,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
            },
            65536,
        ),
        # max_len in place of a factor: the factor is max_len / the original window
        ("pi:max_len=32768", {"rope_type": "linear", "rope_theta": 5e5, "factor": 4.0}, 32768),
        (
            "yarn:max_len=12288",
            {
                "rope_type": "yarn",
                "rope_theta": 5e5,
                "factor": 1.5,
                "original_max_position_embeddings": 8192,
            },
            12288,
        ),
        (
            '{"method": "pi", "factor": 2, "theta": 1e6}',
            {"rope_type": "linear", "rope_theta": 1e6, "factor": 2.0},
            16384,
        ),
    ],
)
def test_spec_to_rope_parameters(spec, expected, target):
    params, max_len = rope_parameters(parse_rope_spec(spec), ORIG)
    assert params == expected
    assert max_len == target


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("rope:factor=4", "unknown RoPE extension method 'rope'"),
        ("pi:factor=1", "factor must be > 1"),
        ("pi:factor=0.5", "factor must be > 1"),
        ("pi", "pi needs factor"),
        ("abf:factor=4", "abf needs theta"),
        ("yarn:factor=4,alpha=2", "unknown key 'alpha'"),
        ("pi:factor=four", "is not a number"),
        ("pi:factor=4,max_len=100", "not both"),
        ("pi:max_len=8192", "target window 8192 is not above the original 8192"),
        ("{bad json", "not valid JSON"),
    ],
)
def test_bad_specs_name_the_problem(spec, message):
    with pytest.raises(UserError, match=message):
        rope_parameters(parse_rope_spec(spec), ORIG)


def test_abf_must_raise_theta():
    with pytest.raises(UserError, match="ABF needs theta above the original 500000"):
        rope_parameters(parse_rope_spec("abf:theta=1e5"), ORIG)


def test_target_window_must_grow():
    with pytest.raises(UserError, match="not above the original 8192"):
        rope_parameters(parse_rope_spec("abf:theta=1e7,max_len=4096"), ORIG)


def test_label_round_trips():
    spec = parse_rope_spec("yarn:factor=4,beta_fast=32")
    assert parse_rope_spec(spec.label()) == spec
