"""An unknown model fails in one line, before torch loads and without hub retries
(:mod:`longred_bench.models.names`), for ``eval``, ``compare`` and ``drift``. No test here
times anything: the network is replaced by functions that record or refuse each call."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from longred_bench import cli
from longred_bench.errors import UserError
from longred_bench.models import names

COMMANDS = {
    "eval": ["eval", "--model", "no-such/model"],
    "compare": ["compare", "--original", "no-such/model", "--extended", "tiny-random"],
    "drift": ["drift", "--original", "tiny-random", "--extended", "no-such/model"],
}


def _refuse(*args: object, **kwargs: object) -> None:
    raise AssertionError(f"a network call was attempted: {args} {kwargs}")


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any connection or hub request fails the test."""
    import huggingface_hub

    monkeypatch.setattr("socket.create_connection", _refuse)
    monkeypatch.setattr(huggingface_hub.HfApi, "repo_info", _refuse)
    monkeypatch.setattr(huggingface_hub.HfApi, "repo_exists", _refuse)


def _one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: model 'no-such/model' ") and "\n" not in err, err
    return err


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_offline_unknown_model_fails_in_one_line_without_a_network_call(
    command: str, tmp_path: Path, monkeypatch, capsys, no_network
) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    assert cli.main([*COMMANDS[command], "--out", str(tmp_path / "out")]) == 2
    err = _one_line_error(capsys)
    assert "tiny-random, smollm2-135m, tiny-base" in err and "HF_HUB_OFFLINE is set" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_unreachable_hub_is_asked_once_and_never_retried(
    command: str, tmp_path: Path, monkeypatch, capsys, no_network
) -> None:
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    calls = []

    def unreachable(address: tuple[str, int], timeout: float) -> None:
        calls.append((address, timeout))
        raise OSError(101, "Network is unreachable")

    monkeypatch.setattr("socket.create_connection", unreachable)
    assert cli.main([*COMMANDS[command], "--out", str(tmp_path / "out")]) == 2
    err = _one_line_error(capsys)
    assert "huggingface.co is unreachable (Network is unreachable)" in err
    assert calls == [(("huggingface.co", 443), names.HUB_TIMEOUT_S)]  # one try, bounded


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_reachable_hub_without_the_model_fails_in_one_line(
    command: str, tmp_path: Path, monkeypatch, capsys, no_network
) -> None:
    import huggingface_hub

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)

    class _Connection:
        def close(self) -> None:
            pass

    asked = []

    def repo_exists(self, repo_id: str, **kwargs: object) -> bool:
        asked.append(repo_id)
        return False

    monkeypatch.setattr("socket.create_connection", lambda *a, **k: _Connection())
    monkeypatch.setattr(huggingface_hub.HfApi, "repo_exists", repo_exists)
    names.hub_has_model.cache_clear()
    assert cli.main([*COMMANDS[command], "--out", str(tmp_path / "out")]) == 2
    err = _one_line_error(capsys)
    assert "was not found" in err and "a zoo name (tiny-random, smollm2-135m, tiny-base)" in err
    assert asked == ["no-such/model"]  # one request
    names.hub_has_model.cache_clear()


def test_local_specs_are_decided_without_the_network(tmp_path: Path, no_network) -> None:
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    for spec in ("tiny-random", "smollm2-135m", "tiny-base", str(folder)):
        names.check_model_spec(spec)
    with pytest.raises(names.UserError, match=r"no config\.json"):
        names.check_model_spec(str(tmp_path))
    with pytest.raises(names.UserError, match=r"GGUF file .* does not exist"):
        names.check_model_spec(str(tmp_path / "m.gguf"))


def test_zoo_names_are_the_zoo() -> None:
    import longred_bench.jobs  # noqa: F401  (registers tiny-base)
    from longred_bench.models.zoo import ZOO

    assert names.zoo_names() == list(ZOO)


def test_the_error_comes_before_torch_is_imported(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from longred_bench import cli\n"
        f"rc = cli.main(['eval', '--model', 'no-such/model', '--out', {str(tmp_path)!r}])\n"
        "heavy = [m for m in ('torch', 'transformers', 'lm_eval') if m in sys.modules]\n"
        "print(__import__('json').dumps([rc, heavy]))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert json.loads(done.stdout) == [2, []]
    assert done.stderr.count("\n") == 1 and "no-such/model" in done.stderr


def test_a_name_close_to_a_zoo_name_is_named(monkeypatch) -> None:
    """``--original tiny-randon`` was answered with the hub's unreachability alone."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match=r"\(did you mean tiny-random\?\)$"):
        names.check_model_spec("tiny-randon")
    with pytest.raises(UserError) as far:
        names.check_model_spec("org/other-model")
    assert "did you mean" not in str(far.value)


def test_a_mistyped_zoo_name_is_refused_where_the_hub_is_not_asked(tmp_path, no_network,
                                                                    capsys) -> None:  # fmt: skip
    """A dry run, a profile and a pairs file planned ``tiny-bse`` as a hub model: its run
    then failed (a profile's reproduce listed every unit to run, with no estimate)."""
    import longred_bench.jobs  # noqa: F401  (registers tiny-base)

    meant = "model 'tiny-bse' is not a zoo name or a local path (did you mean tiny-base?)"
    with pytest.raises(UserError, match=re.escape(meant)):
        names.check_not_mistyped("tiny-bse")
    for spec in ("tiny-base", "org/tiny-bse", "gpt2", "my-model", str(tmp_path)):
        names.check_not_mistyped(spec)  # a zoo name, an owner's id, far from every zoo name
    (tmp_path / "tiny-bse").mkdir()
    names.check_not_mistyped(str(tmp_path / "tiny-bse"))  # a folder of that name is local
    profile = tmp_path / "p.yaml"
    profile.write_text("extends: smoke\nmodel: {name: tiny-bse}\n")
    pairs = tmp_path / "pairs.yaml"
    pairs.write_text("pairs:\n  - original: tiny-bse\n    window: 256\n    extended:\n"
                     "      - {model: 'pi:factor=2', window: 512}\n")  # fmt: skip
    for argv in (["train", "--recipe", "cpt", "--profile", "tiny", "--set", "model=tiny-bse",
                  "--dry-run"], ["reproduce", "table1", "--profile", str(profile), "--dry-run"],
                 ["compare", "--pairs", str(pairs), "--dry-run"]):  # fmt: skip
        assert cli.main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert meant in err and "\n" not in err, (argv, err)


@pytest.mark.parametrize("value", ["yes", "on", "TRUE"])
def test_offline_mode_is_set_by_any_word_the_hub_library_takes(
    value: str, monkeypatch, no_network
) -> None:
    monkeypatch.delenv("TRANSFORMERS_OFFLINE", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", value)
    assert names.hub_unreachable() == "HF_HUB_OFFLINE is set"  # no connection tried


def test_the_hubs_answer_decides_only_when_it_is_yes_or_no(monkeypatch) -> None:
    import huggingface_hub
    from huggingface_hub.errors import HFValidationError

    def answer(error: Exception):
        def repo_exists(self, repo_id: str, **kwargs: object) -> bool:
            raise error

        return repo_exists

    # not a repository id at all: no such model
    monkeypatch.setattr(huggingface_hub.HfApi, "repo_exists", answer(HFValidationError("bad")))
    names.hub_has_model.cache_clear()
    assert names.hub_has_model("a b") is False
    # an error page or a timeout: undecided, the loader tries and says why
    monkeypatch.setattr(huggingface_hub.HfApi, "repo_exists", answer(RuntimeError("502")))
    names.hub_has_model.cache_clear()
    assert names.hub_has_model("owner/name") is True
    names.hub_has_model.cache_clear()


def test_a_step_folder_outside_a_runs_checkpoints_is_no_checkpoint(tmp_path: Path) -> None:
    # a folder named like a checkpoint but not in RUN/checkpoints gets the plain choices
    step = tmp_path / "step-000002"
    step.mkdir()
    with pytest.raises(UserError, match=r"no config.json\); give a zoo name") as got:
        names.check_local(str(step))
    assert "checkpoint" not in str(got.value)


def test_a_local_folder_close_to_a_zoo_name_is_not_a_typo(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match="did you mean tiny-base"):
        names.check_not_mistyped("tiny-bse")
    (tmp_path / "tiny-bse").mkdir()  # the user's own folder of that name
    names.check_not_mistyped("tiny-bse")
    with pytest.raises(UserError, match="did you mean tiny-random"):
        names.check_not_mistyped("tiny-ran")  # cut short: still close


def test_a_missing_folder_above_the_current_one_is_a_path_not_a_hub_id(
    tmp_path: Path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match=r"^model '\.\./gone': no such folder; give a zoo name"):
        names.check_local("../gone")


def test_a_folder_of_sharded_pytorch_weights_holds_weights(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{}")
    (tmp_path / "pytorch_model-00001-of-00002.bin").write_bytes(b"")
    (tmp_path / "pytorch_model-00002-of-00002.bin").write_bytes(b"")
    names.check_weights(str(tmp_path))
