"""A PCD setting the model cannot take (``--pcd-first-pair`` past its RoPE pairs or on a RoPE
type whose frequencies move, ``--pcd-local-base`` not below its RoPE base) is refused in one
line before any weights load, by ``eval`` (its dry run too), ``psa`` and ``compare``: the run
met it only once the model had loaded, and ``--dry-run`` passed it."""

from __future__ import annotations

import pytest
from cli_helpers import one_line_error

from longred_bench.cli import main
from longred_bench.errors import UserError

PAST = "PCD first_pair 1000 is past the model's last RoPE pair (7)"
ABOVE = "PCD local base 1e+09 is not below the model's RoPE base 10000"
MOVING = "PCD first_pair > 0 needs a RoPE type with fixed frequencies"


@pytest.fixture
def no_weights(monkeypatch):
    """Loading any weights fails the test: the refusals come before."""
    import longred_bench.models.loading as loading

    def refuse(*args, **kwargs):
        raise AssertionError("weights loaded before the PCD setting was checked")

    monkeypatch.setattr(loading, "load", refuse)
    monkeypatch.setattr(loading, "_load_pretrained", refuse)


@pytest.mark.parametrize(
    ("flags", "message"),
    [(["--pcd-first-pair", "1000"], PAST), (["--pcd-local-base", "1e9"], ABOVE),
     (["--pcd-first-pair", "2", "--rope", "dynamic:factor=2"], MOVING)],
)  # fmt: skip
@pytest.mark.parametrize("dry", [True, False])
def test_eval_refuses_a_pcd_setting_the_model_cannot_take(
    tmp_path, capsys, no_weights, flags, message, dry
) -> None:
    out = tmp_path / "o"
    argv = ["eval", "--model", "tiny-random", "--suite", "short_tiny", "--decoding", "pcd",
            *flags, "--out", str(out), *(["--dry-run"] if dry else [])]  # fmt: skip
    one_line_error(capsys, argv, message)
    assert not out.exists() or not list(out.iterdir())


def test_the_extension_decides_the_base_a_local_base_must_be_under(capsys) -> None:
    """The model evaluated is the extended one: a local base above the original's base and
    under the extension's passes (and the same model without the extension is refused)."""
    base = ["eval", "--model", "tiny-random", "--suite", "short_tiny", "--decoding", "pcd",
            "--pcd-local-base", "1e6", "--dry-run"]  # fmt: skip
    assert main([*base, "--rope", "abf:theta=1e8"]) == 0
    one_line_error(capsys, base, "PCD local base 1e+06 is not below the model's RoPE base")


def test_settings_the_model_takes_pass_the_dry_run(capsys) -> None:
    for flags in (["--pcd-first-pair", "7"], ["--pcd-local-base", "500"],
                  ["--pcd-first-pair", "2", "--rope", "yarn:factor=2"], []):  # fmt: skip
        argv = ["eval", "--model", "tiny-random", "--suite", "short_tiny", "--decoding", "pcd"]
        assert main([*argv, *flags, "--dry-run"]) == 0, flags
    capsys.readouterr()


def test_greedy_decoding_leaves_the_model_unchecked(capsys) -> None:
    """No PCD runs, so nothing is checked against the model (the flags' own refusal of a
    PCD setting without ``--decoding pcd`` is the config's)."""
    from longred_bench.cli.named import check_pcd_model
    from longred_bench.pcd.config import PcdConfig

    check_pcd_model("tiny-random", (None,), None)
    with pytest.raises(UserError, match="past the model's last RoPE pair"):
        check_pcd_model("tiny-random", (None,), PcdConfig(first_pair=8))
    check_pcd_model("no-such-org/no-such-model", (None,), PcdConfig(first_pair=8))  # its run's


@pytest.mark.parametrize(
    ("command", "models"),
    [("psa", ["--model", "tiny-random", "--rope", "none", "pi:factor=2"]),
     ("compare", ["--original", "tiny-random", "--rope", "pi:factor=2", "--suites", "short"]),
     ("compare", ["--original", "tiny-random", "--extended", "tiny-random"])],
)  # fmt: skip
def test_psa_and_compare_refuse_it_before_a_model_loads(
    tmp_path, capsys, no_weights, command, models
) -> None:
    out = tmp_path / "o"
    argv = [command, *models, "--decoding", "pcd", "--pcd-local-base", "1e9", "--out", str(out)]
    one_line_error(capsys, argv, ABOVE)
    assert not out.exists() or not list(out.iterdir())


def test_a_model_that_does_not_build_is_left_to_its_run_and_the_next_checked(monkeypatch):
    """A build on the meta device that fails (any error) is the run's to meet; it ended the
    check there (a traceback for errors not listed), skipping the other extensions."""
    from transformers import AutoModelForCausalLM

    from longred_bench.cli.named import check_pcd_model
    from longred_bench.pcd.config import PcdConfig

    real, calls = AutoModelForCausalLM.from_config, []

    def first_fails(config, **kwargs):
        calls.append(config)
        if len(calls) == 1:
            raise AssertionError("pad_token_id out of range")
        return real(config, **kwargs)

    monkeypatch.setattr(AutoModelForCausalLM, "from_config", first_fails)
    with pytest.raises(UserError, match="not below the model's RoPE base"):
        check_pcd_model("tiny-random", (None, "pi:factor=2"), PcdConfig(local_base=1e9))
    assert len(calls) == 2
