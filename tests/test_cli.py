"""The command line end to end on the smoke profile and the tiny random model."""

import json

import pytest

from longred_bench.cli import main
from longred_bench.results import read_records

pytestmark = pytest.mark.integration


def test_reproduce_table1_smoke(tmp_path, monkeypatch):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "report"
    assert main(["reproduce", "table1", "--profile", "smoke", "--out", str(out), "--quiet"]) == 0
    md = (out / "table1.md").read_text()
    assert "profile `smoke`" in md
    assert "Llama-3-8B-32K" in md  # paper rows beside ours
    assert md.count("| this suite | tiny-random |") == 6  # 5 extensions and the control
    assert "| this suite | tiny-random | control: CPT data at the original RoPE and window |" in md
    assert "bootstrap over the 2 texts" in md
    assert (out / "table1.png").read_bytes()[:4] == b"\x89PNG"
    records = read_records(out / "table1.jsonl.gz")
    summaries = [r for r in records if r["kind"] == "drift_summary" and "stage" not in r]
    after = [r for r in records if r["kind"] == "drift_summary" and r.get("stage") == "after"]
    assert len(summaries) == 5
    # After CPT: one trained checkpoint per extension, measured against the same original.
    assert sorted(r["extension"] for r in after) == sorted(r["extension"] for r in summaries)
    assert all(r["train"]["steps"] == 2 and r["trained_row"] == "cpt" for r in after)
    control = [r for r in records if r["kind"] == "drift_summary" and r.get("stage") == "control"]
    assert [(r["trained_row"], r["extension"]) for r in control] == [("control", None)]
    assert all(len(r["text_hidden_cosine"]) == 2 for r in [*summaries, *after, *control])
    assert {"git_commit", "versions", "device", "seed", "config"} <= set(records[0]["provenance"])
    # ABF drift grows with the base on the same texts.
    kl = {r["extension"]: r["mean_attention_kl"] for r in summaries}
    assert kl["abf:theta=1e5"] < kl["abf:theta=1e6"] < kl["abf:theta=1e7"]
    # A second run reuses the cached run: same numbers, same timestamp.
    assert main(["reproduce", "table1", "--profile", "smoke", "--out", str(out), "--quiet"]) == 0
    again = read_records(out / "table1.jsonl.gz")
    assert again == records


def test_drift_identity_is_zero(tmp_path, capsys):
    """A copy of the original as the checkpoint (the original itself is refused: listed twice)."""
    from longred_bench.models.zoo import tiny_random

    copy = tmp_path / "copy"
    model, tokenizer = tiny_random()
    model.save_pretrained(copy)
    tokenizer.save_pretrained(copy)
    out = tmp_path / "drift"
    argv = [
        "drift",
        "--original",
        "tiny-random",
        "--extended",
        str(copy),
        "--texts",
        "random",
        "--num-texts",
        "2",
        "--seq-len",
        "32",
        "--top-m",
        "2",
        "--out",
        str(out),
        "--quiet",
    ]
    assert main(argv) == 0
    records = [json.loads(line) for line in (out / "drift.jsonl").read_text().splitlines()]
    layers = [r for r in records if r["kind"] == "drift_layer"]
    assert len(layers) == 4
    assert all(r["attention_kl"] == 0.0 and r["hidden_cosine"] == 1.0 for r in layers)
    md = (out / "drift.md").read_text()
    assert f"| {copy} |" in md
    assert md.splitlines()[2] == f"Command: `longred-bench {' '.join(argv)}`"  # as eval.md says
    assert (out / "drift.png").exists() and (out / "config.yaml").exists()
    assert f"{out / 'config.yaml'}" in capsys.readouterr().out.splitlines()[-1]  # named too


def test_drift_text_file_and_rope_list(tmp_path):
    text = tmp_path / "t.txt"
    text.write_text("It was the best of times. " * 40)
    out = tmp_path / "d"
    argv = [
        "drift",
        "--original",
        "tiny-random",
        "--rope",
        "abf:theta=1e6",
        "yarn:factor=4",
        "--texts",
        str(text),
        "--num-texts",
        "3",
        "--seq-len",
        "64",
        "--out",
        str(out),
        "--quiet",
    ]
    assert main(argv) == 0
    md = (out / "drift.md").read_text()
    assert "abf:theta=1e6" in md and "yarn:factor=4" in md


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--rope", "abf:theta=10"], "ABF needs theta above the original"),
        (["--rope", "pi:factor=1"], "factor must be > 1"),
        (["--texts", "nosuchfile.txt"], "neither a corpus"),
        (["--num-texts", "400", "--texts", "TEXTFILE"], "yields only"),
        (
            ["--seq-len", "4096"],
            "use a sequence length of at most 512 (--seq-len 512; in a "
            "profile, drift.seq_len: 512)",  # the window of pi:factor=2, the longest
        ),
    ],
)
def test_drift_bad_input_is_one_line_error(tmp_path, capsys, argv, message):
    text = tmp_path / "t.txt"
    text.write_text("short text " * 50)
    argv = [str(text) if a == "TEXTFILE" else a for a in argv]
    base = ["drift", "--original", "tiny-random", "--out", str(tmp_path / "o"), "--quiet"]
    if "--seq-len" not in argv:  # an option given twice is refused
        base += ["--seq-len", "32"]
    if "--texts" not in argv:
        base += ["--texts", "random"]
    if "--rope" not in argv:
        base += ["--rope", "pi:factor=2"]
    assert main(base + argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err
    assert len(err.splitlines()) == 1


def test_unknown_profile_lists_available(tmp_path, capsys):
    assert main(["reproduce", "table1", "--profile", "huge", "--out", str(tmp_path)]) == 2
    assert "built-in profile (smoke, tiny, smol, paper, paper-128k, " in capsys.readouterr().err


def test_drift_config_rejects_unknown_keys():
    from longred_bench.errors import UserError
    from longred_bench.jobs.configs import DriftConfig

    cfg = DriftConfig.from_dict({"original": "tiny-random", "rope": ["pi:factor=4"]})
    assert cfg.rope == ("pi:factor=4",)
    assert DriftConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(UserError, match="unknown drift config key"):
        DriftConfig.from_dict({"original": "tiny-random", "seqlen": 128})


def test_tokenizer_mismatch_names_both(tmp_path, capsys):
    from longred_bench.models.loading import load

    other = load("tiny-random")
    other.tokenizer.add_tokens(["<extra>"])
    other.model.save_pretrained(tmp_path / "other")
    other.tokenizer.save_pretrained(tmp_path / "other")
    argv = [
        "drift",
        "--original",
        "tiny-random",
        "--extended",
        str(tmp_path / "other"),
        "--texts",
        "random",
        "--seq-len",
        "16",
        "--num-texts",
        "1",
        "--out",
        str(tmp_path / "o"),
        "--quiet",
    ]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "drift: tokenizer mismatch" in err and "original 'tiny-random' has 259 tokens" in err
    assert "first '<extra>' (id 259)" in err


def test_reproduce_kernel_from_committed_csv(tmp_path, monkeypatch):
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).resolve().parent.parent)
    assert main(["reproduce", "kernel", "--out", str(tmp_path)]) == 0
    md = (tmp_path / "kernel.md").read_text()
    assert "naive vs chunked" in md and "LinearARD" in md


def test_reproduce_kernel_reads_the_committed_csvs_from_any_folder(tmp_path, monkeypatch):
    """Outside the checkout's root the committed CSVs are found in the checkout (it failed
    with 'missing: run nox -s bench_kernels first')."""
    monkeypatch.chdir(tmp_path)
    assert main(["reproduce", "kernel", "--out", str(tmp_path / "o"), "--quiet"]) == 0
    assert "naive vs chunked" in (tmp_path / "o" / "kernel.md").read_text()


def test_reproduce_kernel_without_csv_is_a_clear_error(tmp_path, monkeypatch, capsys):
    import yaml

    monkeypatch.chdir(tmp_path)
    profile = tmp_path / "mine.yaml"
    empty = tmp_path / "empty"
    profile.write_text(yaml.safe_dump({"extends": "smoke", "name": "mine",
                                       "tables": {"kernel": {"csv_dir": str(empty)}}}))  # fmt: skip
    assert main(["reproduce", "kernel", "--profile", str(profile), "--out",
                 str(tmp_path / "o")]) == 2  # fmt: skip
    err = capsys.readouterr().err
    assert f"{empty / 'relation_kl_cpu.csv'} is missing" in err
    assert "run `nox -s bench_kernels` first" in err


def test_quiet_silences_the_libraries_bars_and_warnings_and_restores_them():
    import os

    from transformers.utils import logging as tf_logging

    from longred_bench.cli import QUIET_ENV, quiet_libraries

    before = (tf_logging.is_progress_bar_enabled(), tf_logging.get_verbosity())
    env = {k: os.environ.get(k) for k in QUIET_ENV}
    with quiet_libraries(True):
        assert not tf_logging.is_progress_bar_enabled()
        assert tf_logging.get_verbosity() == tf_logging.ERROR
        assert all(os.environ[k] == v for k, v in QUIET_ENV.items())
    assert (tf_logging.is_progress_bar_enabled(), tf_logging.get_verbosity()) == before
    assert {k: os.environ.get(k) for k in QUIET_ENV} == env
    with quiet_libraries(False):
        assert (tf_logging.is_progress_bar_enabled(), tf_logging.get_verbosity()) == before


def test_quiet_reaches_transformers_imported_later_in_the_command():
    import subprocess
    import sys

    code = (
        "from longred_bench.cli import quiet_libraries\n"
        "with quiet_libraries(True):\n"
        "    from transformers.utils import logging as l\n"
        "    print(l.is_progress_bar_enabled(), l.get_verbosity() == l.ERROR)\n"
        "print(l.is_progress_bar_enabled(), l.get_verbosity() == l.WARNING)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["False", "True", "True", "True"], out.stderr  # then restored


@pytest.mark.parametrize("flag", [True, False])
def test_main_runs_a_command_quiet_exactly_when_it_is_given_quiet(monkeypatch, capsys, flag):
    import contextlib

    import longred_bench.cli as cli

    seen = []

    @contextlib.contextmanager
    def record(quiet):
        seen.append(quiet)
        yield

    monkeypatch.setattr(cli, "quiet_libraries", record)
    argv = ["reproduce", "table1", "--profile", "smoke", "--dry-run"] + (
        ["--quiet"] if flag else []
    )
    assert cli.main(argv) == 0
    assert seen == [flag]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["drift", "--original", "tiny-random", "--rope", "abf:theta=1e6", "--texts", "nope"],
         "neither a corpus"),
        (["drift", "--original", "tiny-random", "--rope", "abf:theta=1e6", "--texts",
          "brown:heldout"], "unknown split"),
        (["compare", "--original", "tiny-random", "--rope", "abf:theta=1e6", "--drift-texts",
          "nope"], "neither a corpus"),
    ],
)  # fmt: skip
def test_a_bad_text_source_is_refused_before_any_model_loads(
    tmp_path, monkeypatch, capsys, argv, message
):
    import longred_bench.models.loading as loading

    def no_load(*args, **kwargs):
        raise AssertionError("a model was loaded")

    monkeypatch.setattr(loading, "load", no_load)
    monkeypatch.setattr("longred_bench.jobs.drift.load", no_load)
    assert main([*argv, "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and message in err and len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--model", "tiny-random", "--suite", "ruler", "--rope", "abf:theta=10"],
        ["drift", "--original", "tiny-random", "--rope", "abf:theta=10", "--texts", "random"],
        ["compare", "--original", "tiny-random", "--rope", "abf:theta=10"],
        ["psa", "--model", "tiny-random", "--rope", "none", "abf:theta=10"],
    ],
)
def test_an_extension_the_model_cannot_take_is_refused_before_its_weights_load(
    tmp_path, monkeypatch, capsys, argv
):
    import longred_bench.models.loading as loading

    def no_load(*args, **kwargs):
        raise AssertionError("the weights were loaded")

    for where in ("longred_bench.models.loading", "longred_bench.jobs.drift"):
        monkeypatch.setattr(f"{where}.load", no_load)
    monkeypatch.setattr(loading, "_load_pretrained", no_load)
    assert main([*argv, "--out", str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    # the spec and the model named: with several --rope given, the line said not which one
    assert err.startswith("error: --rope abf:theta=10 does not apply to tiny-random: ABF needs "
                          "theta above the original")  # fmt: skip
    assert len(err.splitlines()) == 1


# An unknown model fails in one line before torch is imported and without a hub request, for
# `psa` and `train` as for `eval`, `compare` and `drift` (tests/models/test_model_names.py).
UNKNOWN_MODEL = {
    "psa": ["psa", "--model", "tiny-random", "no-such/model"],
    "train": ["train", "--recipe", "cpt", "--set", "model=no-such/model"],
    "train-teacher": ["train", "--recipe", "longred", "--set", "teacher=no-such/model"],
}


@pytest.mark.parametrize("command", sorted(UNKNOWN_MODEL))
def test_an_unknown_model_fails_in_one_line_without_a_network_call(
    tmp_path, monkeypatch, capsys, command
):
    import huggingface_hub

    def refuse(*args, **kwargs):
        raise AssertionError(f"a network call was attempted: {args} {kwargs}")

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr("socket.create_connection", refuse)
    monkeypatch.setattr(huggingface_hub.HfApi, "repo_info", refuse)
    monkeypatch.setattr(huggingface_hub.HfApi, "repo_exists", refuse)
    assert main([*UNKNOWN_MODEL[command], "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    where = "train: teacher: " if command == "train-teacher" else ""  # named by its key
    assert err.startswith(f"error: {where}model 'no-such/model' ") and "\n" not in err, err
    assert "tiny-random, smollm2-135m, tiny-base" in err and "HF_HUB_OFFLINE is set" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.integration
def test_a_stock_task_without_the_hub_fails_in_one_line(tmp_path, monkeypatch, capsys) -> None:
    """``eval --tasks lambada_openai`` offline ended in a ConnectionError's traceback (indexing
    lm-eval's stock tasks takes half a minute: integration tier)."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_CACHE", str(tmp_path / "datasets"))
    args = ["eval", "--model", "tiny-random", "--tasks", "lambada_openai", "--limit", "1"]
    assert main([*args, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: the data of task(s) lambada_openai could not be loaded (")
    assert err.endswith("--suite short is the offline suite") and "\n" not in err, err


@pytest.mark.parametrize("command", ["psa", "train"])
def test_an_unknown_model_is_refused_before_torch_is_imported(tmp_path, command):
    import os
    import subprocess
    import sys

    argv = [*UNKNOWN_MODEL[command], "--out", str(tmp_path / "out")]
    code = (
        "import sys, json\n"
        "from longred_bench import cli\n"
        f"rc = cli.main({argv!r})\n"
        "heavy = [m for m in ('torch', 'transformers', 'lm_eval') if m in sys.modules]\n"
        "print(json.dumps([rc, heavy]))\n"
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          check=True, timeout=120)  # fmt: skip
    assert json.loads(done.stdout) == [2, []]
    assert done.stderr.count("\n") == 1 and "no-such/model" in done.stderr


def test_train_refuses_missing_local_data_before_anything_loads(tmp_path, capsys):
    missing = tmp_path / "none.jsonl"
    argv = ["train", "--recipe", "cpt", "--set", f"long_data=jsonl:{missing}"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{missing} does not exist" in err and "\n" not in err, err
    assert not (tmp_path / "out").exists()


def test_a_repeated_list_option_lists_every_value() -> None:
    """``--rope A --rope B`` measures both (argparse kept the last alone, and compare's report
    showed both flags over one row); a list default is replaced by the given values."""
    from longred_bench.cli import build_parser

    parse = build_parser().parse_args
    drift = parse(["drift", "--original", "m", "--rope", "a", "--rope", "b", "c", "--out", "o"])
    assert drift.rope == ["a", "b", "c"]
    compare = parse(["compare", "--original", "m", "--lengths", "1024", "--lengths", "2048"])
    assert compare.lengths == [1024, 2048]
    from dataclasses import fields

    from longred_bench.jobs.configs import CompareConfig

    stated = {f.name: f.default for f in fields(CompareConfig)}["lengths"]
    assert parse(["compare", "--original", "m"]).lengths == list(stated)  # untouched by the above
    psa = parse(["psa", "--model", "a", "--model", "b", "--out", "o"])
    assert psa.model == ["a", "b"]


def test_a_repeated_one_value_option_is_refused_in_one_line(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["reproduce", "table3", "--profile", "smoke", "--profile", "tiny", "--dry-run"])
    assert info.value.code == 2
    err = capsys.readouterr().err  # the line alone, not argparse's usage before it
    assert err == "error: --profile is given twice: give it once\n"
    assert main(["reproduce", "table3", "--profile", "smoke", "--dry-run"]) == 0
