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
        # dynamic records the original window: its rotary module is built at it (loading.py)
        (
            "dynamic:factor=2",
            {
                "rope_type": "dynamic",
                "rope_theta": 5e5,
                "factor": 2.0,
                "original_max_position_embeddings": 8192,
            },
            16384,
        ),
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
        # values a number parse lets through: refused by name, not at load or as NaN logits
        ("pi:factor=nan", "factor='nan' must be a finite number"),
        ("yarn:factor=inf", "factor='inf' must be a finite number"),
        ("pi:factor=1e400", "must be a finite number"),
        ("abf:theta=nan", "theta='nan' must be a finite number"),
        ("abf:theta=-1", "theta must be above 0"),
        ("pi:factor=4,theta=0", "theta must be above 0"),
        ("llama3:factor=8,low_freq_factor=0", "low_freq_factor must be above 0"),
        ("yarn:factor=4,beta_fast=-1", "beta_fast must be above 0"),
        # swapped, YaRN's ramp runs backwards (accepted and measured before)
        ("yarn:factor=4,beta_fast=1,beta_slow=32", r"beta_fast \(1\) must exceed beta_slow \(32\)"),
        ("yarn:factor=4,beta_slow=40", r"beta_fast \(32\) must exceed beta_slow \(40\)"),
        ("pi:max_len=9000.5", "max_len must be a whole number"),
        ("pi:factor=4,factor=8", "factor is given twice"),
        ('{"method": "pi", "factor": 2, "factor": 3}', "factor is given twice"),
        ('{"method": "pi", "factor": true}', "factor=True is not a number"),
        ('{"factor": 2}', "needs one 'method' key"),
    ],
)
def test_bad_specs_name_the_problem(spec, message):
    with pytest.raises(UserError, match=message):
        rope_parameters(parse_rope_spec(spec), ORIG)


def test_abf_must_raise_theta():
    with pytest.raises(UserError, match="ABF needs theta above the original 500000"):
        rope_parameters(parse_rope_spec("abf:theta=1e5"), ORIG)
    with pytest.raises(UserError, match="ABF needs theta above the original 500000"):
        rope_parameters(parse_rope_spec("abf:theta=5e5"), ORIG)  # the same base extends nothing


def test_target_window_must_grow():
    with pytest.raises(UserError, match="not above the original 8192"):
        rope_parameters(parse_rope_spec("abf:theta=1e7,max_len=4096"), ORIG)


def test_label_round_trips():
    spec = parse_rope_spec("yarn:factor=4,beta_fast=32")
    assert parse_rope_spec(spec.label()) == spec


@pytest.mark.parametrize(
    ("spec", "label"),
    [
        # labels name cached units: the ones in use keep their form
        ("abf:theta=2e7", "abf:theta=2e+07"),
        ("abf:theta=1.6e5", "abf:theta=160000"),
        ("pi:factor=2.5", "pi:factor=2.5"),
        # two specs never share a label (6 significant digits made this one factor=1)
        ("pi:factor=1.0000001", "pi:factor=1.0000001"),
        ("abf:theta=12345678.9", "abf:theta=12345678.9"),
    ],
)
def test_label_keeps_every_digit_it_needs(spec, label):
    assert parse_rope_spec(spec).label() == label
    assert parse_rope_spec(label) == parse_rope_spec(spec)


def test_yarn_attention_factor_reaches_the_rope_parameters():
    params, target = rope_parameters(
        parse_rope_spec("yarn:factor=4,attention_factor=0.8"), OriginalRope(5e5, 8192)
    )
    assert params["attention_factor"] == 0.8 and target == 32768


def test_yarn_beta_slow_reaches_the_rope_parameters():
    """Every YaRN option given is passed on to transformers, beta_slow included."""
    params, _ = rope_parameters(parse_rope_spec("yarn:factor=4,beta_fast=16,beta_slow=2"), ORIG)
    assert params["beta_fast"] == 16.0 and params["beta_slow"] == 2.0


@pytest.mark.parametrize(
    "spec",
    ["llama3:factor=8,low_freq_factor=2,high_freq_factor=2", "llama3:factor=8,high_freq_factor=1"],
)
def test_llama3_high_freq_factor_must_exceed_low_freq_factor(spec):
    """Equal factors (or a high one below the default low one) leave no band to interpolate."""
    with pytest.raises(UserError, match="high_freq_factor must exceed low_freq_factor"):
        rope_parameters(parse_rope_spec(spec), ORIG)


@pytest.mark.parametrize(
    ("spec", "key"),
    [
        ("yarn:factor=4,beta_slow=0", "beta_slow"),
        ("yarn:factor=4,attention_factor=-0.5", "attention_factor"),
        ("llama3:factor=8,high_freq_factor=0", "high_freq_factor"),
        ("pi:max_len=0", "max_len"),
    ],
)
def test_every_positive_option_refuses_zero_and_below(spec, key):
    """Each option that must be above 0 is refused by name at 0 or below, not only theta."""
    with pytest.raises(UserError, match=f"{key} must be above 0"):
        parse_rope_spec(spec)


def test_method_names_are_case_insensitive_and_spaces_ignored():
    """Method names are matched case-insensitively (``PI:factor=4`` is ``pi:factor=4``, in
    JSON too), and spaces around the spec and its items are ignored."""
    assert parse_rope_spec("PI:factor=4") == parse_rope_spec("pi:factor=4")
    assert parse_rope_spec(" Yarn:factor=4 , beta_fast=16 ") == parse_rope_spec(
        "yarn:factor=4,beta_fast=16"
    )
    assert parse_rope_spec('{"method": "ABF", "theta": 1e6}') == parse_rope_spec("abf:theta=1e6")


@pytest.mark.parametrize(
    ("spec", "window", "target"),
    [
        ("abf:theta=1e8,max_len=131072", 8192, 131072),
        ("abf:theta=1e8", 8192, 32768),
        ("abf:theta=1e8,factor=2", 8192, 16384),
        ("yarn:max_len=12288", 8192, 12288),
        ("pi:factor=2.5", 4096, 10240),
    ],
)
def test_target_window_is_the_one_rope_parameters_sets(spec, window, target):
    """target_window (used to plan runs without the model's config) agrees with
    rope_parameters, max_len and the ABF default factor included."""
    from longred_bench.models.rope import target_window

    assert target_window(spec, window) == target
    assert rope_parameters(parse_rope_spec(spec), OriginalRope(1e4, window))[1] == target
