"""Bad output paths and bad RoPE specs are refused in one line before anything heavy loads (no
torch imported), for every command that writes a folder (unit tier: no model runs)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from longred_bench.cli import main
from longred_bench.cli.outputs import WRITES, check_out_dir
from longred_bench.errors import UserError

COMMANDS = {
    "eval": ["eval", "--model", "tiny-random", "--suite", "short_tiny"],
    "drift": ["drift", "--original", "tiny-random", "--rope", "pi:factor=2"],
    "compare": ["compare", "--original", "tiny-random", "--rope", "pi:factor=2"],
    "psa": ["psa", "--model", "tiny-random"],
    "train": ["train", "--recipe", "cpt", "--profile", "smoke"],
    "reproduce": ["reproduce", "table1", "--profile", "smoke"],
}

_SCRIPT = """
import contextlib, io, json, sys
from longred_bench.cli import main
out = []
for argv in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        status = main(argv)
    out.append([status, err.getvalue()])
heavy = [m for m in ("torch", "transformers", "lm_eval") if m in sys.modules]
print(json.dumps({"runs": out, "heavy": heavy}))
"""


def _run_without_torch(argvs: list[list[str]]) -> list[tuple[int, str]]:
    """Run each command line in one fresh interpreter; assert nothing heavy was imported."""
    done = subprocess.run(
        [sys.executable, "-c", _SCRIPT, json.dumps(argvs)],
        capture_output=True, text=True, timeout=120, env={**os.environ},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["heavy"] == [], f"imported before the error: {result['heavy']}"
    return [(status, err) for status, err in result["runs"]]


def test_an_existing_file_as_out_is_refused_before_torch_loads(tmp_path: Path) -> None:
    afile = tmp_path / "results.txt"
    afile.write_text("keep me\n")
    runs = _run_without_torch([[*argv, "--out", str(afile)] for argv in COMMANDS.values()])
    for (status, err), command in zip(runs, COMMANDS, strict=True):
        assert status == 2, (command, err)
        assert err.count("\n") == 1 and err.startswith(f"error: --out {afile} is an existing file")
        assert f"({command} writes" in err
    assert afile.read_text() == "keep me\n"


def test_out_under_a_file_and_a_folder_in_a_files_place_are_refused(tmp_path: Path) -> None:
    afile = tmp_path / "f"
    afile.write_text("")
    with pytest.raises(
        UserError, match=re.escape(f"{afile} is a file, so no folder can be made under it")
    ):
        check_out_dir(afile / "sub" / "out", "drift")
    (tmp_path / "out" / "eval.md").mkdir(parents=True)
    with pytest.raises(UserError, match=re.escape("eval.md is a folder where eval writes a file")):
        check_out_dir(tmp_path / "out", "eval")
    (tmp_path / "cmp").mkdir()
    (tmp_path / "cmp" / "runs").write_text("")
    with pytest.raises(UserError, match="runs is a file where compare keeps a folder"):
        check_out_dir(tmp_path / "cmp", "compare")
    check_out_dir(tmp_path / "new" / "deeper", "compare")  # to be made: fine
    check_out_dir(tmp_path / "out2", "eval")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_an_unwritable_parent_is_refused(tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(UserError, match="is not writable"):
        check_out_dir(locked / "out", "eval")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_a_parent_whose_file_system_refuses_files_is_refused_whatever_its_permissions() -> None:
    """Permission bits said yes to root (a root-squashed NFS share behaves so for root too):
    drift and psa failed at their first write, after computing everything."""
    with pytest.raises(UserError, match=r"^--out /proc/longred-out: /proc is not writable"):
        check_out_dir(Path("/proc/longred-out"), "drift")
    assert not list(Path("/proc").glob(".longred-write-check-*"))


def test_a_full_or_refusing_file_system_is_one_line_and_other_os_errors_stay_whole(
    monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import errno

    from longred_bench.cli import commands

    def fails(args):
        raise OSError(errno.ENOSPC, "No space left on device", "/data/out/drift.jsonl")

    monkeypatch.setattr(commands, "cmd_profiles", fails)
    assert main(["profiles"]) == 2
    err = capsys.readouterr().err
    assert err == ("error: /data/out/drift.jsonl: No space left on device: free space, or give a "
                   "place this user can write, and run the command again\n")  # fmt: skip

    def bug(args):
        raise FileNotFoundError(errno.ENOENT, "No such file or directory", "missing.json")

    monkeypatch.setattr(commands, "cmd_profiles", bug)
    with pytest.raises(FileNotFoundError):  # a failure of the suite: its traceback, whole
        main(["profiles"])


def test_bad_rope_specs_are_refused_before_torch_loads(tmp_path: Path) -> None:
    out = str(tmp_path / "o")
    argvs = [
        ["eval", "--model", "tiny-random", "--rope", "abf:thta=1e6", "--out", out],
        ["drift", "--original", "tiny-random", "--rope", "yarn", "--out", out],
        ["compare", "--original", "tiny-random", "--rope", "pi:fctor=2", "--out", out],
    ]
    for status, err in _run_without_torch(argvs):
        assert status == 2 and err.count("\n") == 1 and "RoPE" in err, err


def test_every_command_that_writes_a_folder_checks_it() -> None:
    assert set(WRITES) == set(COMMANDS) | {"reproduce --emit-slurm"}  # test_cli_bad_input.py
    assert main(["train", "--recipe", "cpt", "--profile", "smoke", "--dry-run"]) == 0


def test_a_ruler_length_off_the_grid_names_the_nearest_one() -> None:
    from longred_bench.evaluation.config import EvalConfig

    with pytest.raises(UserError, match=re.escape("nearest: 1000 -> 1024, 300 -> 256")):
        EvalConfig(model="m", suite="ruler", lengths=(1000, 300))


@pytest.mark.parametrize(
    ("flags", "message"),
    [(["--suite", "short_tiny", "--lengths", "512"],
      "eval: --lengths is for the ruler, niah and ppl suites, not short_tiny"),
     (["--suite", "short", "--samples", "3"],
      "eval: --samples is for the ruler, niah and ppl suites, not short"),
     (["--suite", "ruler", "--depths", "50"], "eval: --depths is for the niah suite, not ruler")],
)  # fmt: skip
def test_a_long_context_flag_on_a_suite_that_ignores_it_is_refused(capsys, flags, message):
    from longred_bench.cli import main

    assert main(["eval", "--model", "tiny-random", *flags, "--dry-run"]) == 2
    assert capsys.readouterr().err.strip() == f"error: {message}"


def test_needle_depths_outside_0_100_are_refused_before_anything_loads(capsys):
    from longred_bench.cli import main

    assert main(["eval", "--model", "tiny-random", "--suite", "niah", "--depths", "150",
                 "--dry-run"]) == 2  # fmt: skip
    assert capsys.readouterr().err.strip() == "error: --depths are percents in [0, 100], got [150]"


def test_an_unknown_task_names_the_nearest_ones():
    from types import SimpleNamespace

    from longred_bench.errors import UserError
    from longred_bench.evaluation.harness import check_tasks

    manager = SimpleNamespace(all_tasks=["longred_tiny_swap", "longred_tiny_ppl", "hellaswag"])
    expected = (
        r"^unknown lm-eval task\(s\) longred_tiny_swapp; nearest: longred_tiny_swap"
        r"(, longred_tiny_ppl)?; tasks of this repo: "
    )
    with pytest.raises(UserError, match=expected):
        check_tasks(["longred_tiny_swapp"], manager)
    assert check_tasks(["hellaswag"], manager) == ["hellaswag"]


def test_drift_without_an_extension_is_refused(tmp_path, capsys):
    """No --rope and no --extended: the original against itself, refused before anything loads."""
    rc = main(["drift", "--original", "tiny-random", "--out", str(tmp_path / "d")])
    err = capsys.readouterr().err
    assert rc != 0 and "drift needs --rope SPEC and/or --extended M" in err
    assert not (tmp_path / "d").exists()


def test_eval_corpus_is_refused_on_a_suite_that_reads_none(tmp_path, capsys):
    rc = main(["eval", "--model", "tiny-random", "--suite", "short_tiny", "--corpus", "kjv",
               "--out", str(tmp_path / "e")])  # fmt: skip
    assert rc != 0 and "--corpus is for the ruler, niah and ppl suites, not short_tiny" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("kind", ["folder", "gguf", "pad", "tokenizer"])
def test_a_broken_local_model_is_one_line(tmp_path, capsys, kind):
    """A folder whose config.json names no model type or a padding id its embeddings cannot
    hold, whose tokenizer holds more tokens than its embeddings (an IndexError from
    torch.embedding once text reached them), or a file that is no GGUF: a one-line error naming
    the model before anything loads, not transformers' traceback."""
    if kind in ("folder", "pad", "tokenizer"):
        spec = tmp_path / "m"
        spec.mkdir()
        config = {"model_type": "llama", "vocab_size": 250, "pad_token_id": 258}
        if kind == "tokenizer":
            config["pad_token_id"] = 0
            vocab = {f"t{i}": i for i in range(300)}
            (spec / "tokenizer.json").write_text(json.dumps({"model": {"vocab": vocab}}))
        (spec / "config.json").write_text("{}" if kind == "folder" else json.dumps(config))
        expected = {
            "folder": "its config.json names no model_type",
            "pad": "its config.json's pad_token_id 258 is not below its vocab_size 250",
            "tokenizer": "its tokenizer.json holds 300 tokens, its config.json's vocab_size is 250",
        }[kind]
    else:
        spec = tmp_path / "m.gguf"
        spec.write_text("junk\n")
        expected = "is not a GGUF file"
    for argv in (["eval", "--model", str(spec), "--suite", "short_tiny"],
                 ["drift", "--original", str(spec), "--rope", "pi:factor=2"]):  # fmt: skip
        assert main([*argv, "--out", str(tmp_path / "o")]) == 2
        err = capsys.readouterr().err
        assert f"model '{spec}'" in err and expected in err and len(err.splitlines()) == 1


def test_an_out_folder_holding_another_commands_results_is_refused(tmp_path):
    (tmp_path / "eval.jsonl").write_text("{}\n")
    with pytest.raises(UserError, match=r"holds the results of `eval` \(eval\.jsonl\); give "
                       r"drift a folder of its own"):  # fmt: skip
        check_out_dir(tmp_path, "drift")
    check_out_dir(tmp_path, "eval")  # its own folder: resumed or run again there


def test_psa_depths_on_a_task_of_several_needles_are_refused_before_torch_loads() -> None:
    """``--depths`` on niah_multikey_1 (four keys' needles, one queried) passed the config
    check and stopped only at the first sample, after the model had loaded; multikey_3 (one
    needle in a haystack of other keys' needles) takes them."""
    from longred_bench.cli.flags import check_psa_depths

    argv = ["psa", "--model", "tiny-random", "--tasks", "niah_single_1", "niah_multikey_1",
            "--depths", "50", "--out", "unused"]  # fmt: skip
    [(status, err)] = _run_without_torch([argv])
    assert status == 2
    assert err.strip() == ("error: psa: --depths are for the single-needle NIAH tasks "
                           "(niah_single_1, niah_single_2, niah_single_3, niah_multikey_2, "
                           "niah_multikey_3), not niah_multikey_1")  # fmt: skip
    check_psa_depths(("niah_multikey_3", "niah_single_1"), (0.0, 50.0))
    check_psa_depths(("niah_multikey_1",), ())


@pytest.fixture(scope="module")
def saved_tiny(tmp_path_factory):
    """``tiny-random`` saved as a Hugging Face folder."""
    from longred_bench.models.loading import load

    folder = tmp_path_factory.mktemp("saved") / "tiny"
    loaded = load("tiny-random")
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    return folder


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("architecture", "transformers cannot read its config or weights: The checkpoint you are "
         "trying to load has model type `llamaa` but Transformers does not recognize this "
         "architecture."),
        ("type", "transformers cannot read its config or weights: Validation error for field "
         "'hidden_size': TypeError: Field 'hidden_size' expected int, got str (value: '64')"),
        ("custom", "transformers cannot read its config or weights: The repository"),
    ],
)  # fmt: skip
def test_a_model_folder_transformers_refuses_is_one_line(
    tmp_path, capsys, saved_tiny, kind, expected
) -> None:
    """An architecture transformers does not know, a config value of the wrong type, custom
    code: transformers' traceback (18 frames for the type) after the command had started; now
    one line naming the model, what of it could not be read and transformers' own words (a
    folder without tokenizer files is named so: tests/models/test_models.py)."""
    import shutil

    spec = tmp_path / "m"
    shutil.copytree(saved_tiny, spec)
    config = json.loads((spec / "config.json").read_text())
    config.update({"architecture": {"model_type": "llamaa"}, "type": {"hidden_size": "64"},
                   "custom": {"model_type": "mine", "auto_map": {
                       "AutoConfig": "configuration_mine.MineConfig"}}}[kind])  # fmt: skip
    (spec / "config.json").write_text(json.dumps(config))
    argv = ["eval", "--model", str(spec), "--suite", "short_tiny", "--limit", "2"]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err  # after the weights' progress bar where they loaded
    assert "Traceback" not in err
    last = err.strip().splitlines()[-1]
    assert last.startswith(f"error: model '{spec}': {expected}")
    # advice on the folder only where the folder is the problem; custom code is told its fix
    folder = "give a Hugging Face model folder (config.json, weights and tokenizer files)"
    assert (folder in last) == (kind != "custom")
    assert ("trust_remote_code=True" in last) == (kind == "custom")


@pytest.mark.parametrize("command", ["eval", "drift"])
def test_a_model_folder_without_weights_is_named_so(tmp_path, capsys, saved_tiny, command):
    """A folder saved without its weights was answered with the loader's "(offline? zoo names:
    ...)", advice for a hub id; a dry run, which reads the config alone, still plans it."""
    import shutil

    spec = tmp_path / "m"
    shutil.copytree(saved_tiny, spec)
    for path in spec.glob("*.safetensors"):
        path.unlink()
    argv = {
        "eval": ["eval", "--model", str(spec), "--suite", "ppl"],
        "drift": ["drift", "--original", str(spec), "--rope", "pi:factor=2"],
    }[command]
    assert main([*argv, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: model '{spec}': the folder holds a config.json but no weights "
                   "(model.safetensors, pytorch_model.bin or a sharded index); give the folder "
                   "save_pretrained wrote, weights included\n")  # fmt: skip
    assert not (tmp_path / "o").exists()
    if command == "eval":
        assert main([*argv, "--dry-run"]) == 0


def test_the_loader_names_a_folder_without_weights_too(tmp_path, saved_tiny) -> None:
    """What loads a model without the commands' checks (``longred-lm-eval``, PCD's lm-eval
    model, a script calling ``load``) ended "(offline? zoo names: ...)" for a local folder."""
    import shutil

    from longred_bench.models.loading import load

    spec = tmp_path / "m"
    shutil.copytree(saved_tiny, spec)
    for path in spec.glob("*.safetensors"):
        path.unlink()
    with pytest.raises(UserError, match=r"the folder holds a config.json but no weights") as got:
        load(str(spec))
    assert "offline?" not in str(got.value)


def test_the_ppl_dry_run_says_what_it_measures(capsys) -> None:
    """``eval --suite ppl --dry-run`` printed ``tasks: (none)``: it names the windows, corpus,
    lengths (the evaluated window's by default) and buckets the run measures."""
    argv = ["eval", "--model", "tiny-random", "--suite", "ppl", "--dry-run"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "tasks: (none)" not in out
    assert out.splitlines()[-1] == (
        "ppl: 8 window(s) of austen at length(s) 256 (the evaluated window rounded down to a "
        "power of two), NLL by position in buckets of 32 tokens"
    )
    assert main([*argv, "--rope", "pi:factor=2"]) == 0
    assert "at length(s) 512 (the evaluated window" in capsys.readouterr().out
    assert main([*argv, "--lengths", "64", "128", "--samples", "3", "--corpus", "kjv"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "ppl: 3 window(s) of kjv at length(s) 64, 128, NLL by position in buckets of 8, 16 tokens"
    )
