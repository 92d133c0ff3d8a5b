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
MOVING = "PCD needs a RoPE type whose frequencies are fixed: --rope dynamic:factor=2 is 'dynamic'"


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


def test_a_pcd_flag_at_its_default_is_the_same_run(tmp_path, capsys) -> None:
    """``--pcd-alpha 1.5`` (the default) read as another config: eval refused its own --out
    ("differs in pcd") and compare measured its PCD units again. The dry run prints the config
    a run is keyed by: the same with or without the default given; another value differs."""
    argv = ["eval", "--model", "tiny-random", "--suite", "short_tiny", "--decoding", "pcd",
            "--dry-run"]  # fmt: skip
    said = {}
    for flags in ([], ["--pcd-alpha", "1.5", "--pcd-local-fraction", "0.25"], ["--pcd-alpha", "2"]):
        assert main([*argv, *flags]) == 0
        said[len(flags)] = capsys.readouterr().out
    assert said[0] == said[4] and '"pcd": null' in said[0]
    assert said[2] != said[0] and '"alpha": 2.0' in said[2]
    # without --decoding pcd a PCD flag is refused, at its default too
    greedy = [*argv[: argv.index("--decoding")], "--pcd-alpha", "1.5", "--dry-run"]
    one_line_error(capsys, greedy, "PCD parameters given without --decoding pcd")


@pytest.mark.parametrize(
    "argv",
    [["eval", "--model", "tiny-random", "--suite", "short_tiny"],
     ["psa", "--model", "tiny-random", "--rope", "none", "dynamic:factor=2"],
     ["compare", "--original", "tiny-random", "--rope", "dynamic:factor=2"]],
)  # fmt: skip
def test_pcd_on_a_rope_whose_frequencies_move_is_refused(tmp_path, capsys, no_weights, argv):
    """Under dynamic NTK the local window that ran (1,280 tokens) was not the W' recorded
    (256): PCD is refused there, at its default settings too, before anything loads."""
    out = tmp_path / "o"
    rope = [] if "dynamic:factor=2" in argv else ["--rope", "dynamic:factor=2"]
    one_line_error(capsys, [*argv, *rope, "--decoding", "pcd", "--out", str(out)], MOVING)
    assert not out.exists() or not list(out.iterdir())


def test_a_local_model_of_dynamic_rope_is_refused_under_pcd(tmp_path, capsys) -> None:
    import json

    from longred_bench.models.zoo import tiny_random

    model, tokenizer = tiny_random()
    model.config.rope_parameters = {"rope_type": "dynamic", "rope_theta": 10000.0, "factor": 2.0}
    model.save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    saved = json.loads((tmp_path / "m" / "config.json").read_text())
    assert (saved.get("rope_parameters") or saved.get("rope_scaling"))["rope_type"] == "dynamic"
    capsys.readouterr()
    argv = ["eval", "--model", str(tmp_path / "m"), "--suite", "short_tiny", "--decoding", "pcd",
            "--dry-run"]  # fmt: skip
    one_line_error(capsys, argv, f"{tmp_path / 'm'}'s own RoPE is 'dynamic'")
    argv[argv.index("pcd")] = "greedy"
    assert main(argv) == 0  # greedy decoding has no local window: it runs
