"""Bad command-line input ends in one line (``error: ...``, exit status 2) naming the problem and
what to do, before any model loads or anything is written: devices, drift's counts and kernel,
``reproduce``'s unit flags and job-script folder, seeds, ``profiles new``'s output, a cache
folder that is a file or is not there, a dry run's local model or data path that does not exist,
an empty model spec, and dynamic RoPE through vLLM in a profile (``eval``'s, ``compare``'s and
``train``'s own in ``test_cli_eval_input.py``, ``test_cli_compare_input.py`` and
``test_cli_train_input.py``; a value given twice in ``test_cli_repeats.py``; what they share
in ``cli_helpers.py``)."""

from __future__ import annotations

import pytest
from cli_helpers import one_line_error as _one_line_error

from longred_bench.cli import main
from longred_bench.errors import UserError


def test_a_device_torch_does_not_know_or_this_machine_lacks_is_refused() -> None:
    import torch

    from longred_bench.cli.devices import check_device

    check_device("cpu")
    with pytest.raises(UserError, match="'gpu' is not a device torch knows"):
        check_device("gpu")
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="sees no CUDA device here; use --device cpu"):
            check_device("cuda:0")
    else:
        with pytest.raises(UserError, match="CUDA device"):
            check_device(f"cuda:{torch.cuda.device_count()}")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--device", "gpu"], "'gpu' is not a device torch knows"),
        (["--top-m", "-1"], "top_m (--top-m) must be at least 0, not -1"),
        (["--batch-size", "0"], "batch_size (--batch-size) must be at least 1, not 0"),
        (["--num-texts", "0"], "num_texts (--num-texts) must be at least 1, not 0"),
        (["--impl", "triton"], "--impl triton runs on CUDA devices only"),
        # refused once the models had loaded ("need ... seq_len >= 2"), 0 as "at least 1"
        (["--seq-len", "1"], "drift: --seq-len must be at least 2 (a window of one token"),
        (["--seq-len", "0"], "drift: --seq-len must be at least 2 (a window of one token"),
    ],
)
def test_drift_is_refused_before_measuring(tmp_path, capsys, argv, message) -> None:
    out = tmp_path / "o"
    base = ["drift", "--original", "tiny-random", "--rope", "pi:factor=2", "--out", str(out)]
    _one_line_error(capsys, base + argv, message)
    assert not (out / "drift.jsonl").exists()


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--emit-slurm", ""], "--emit-slurm needs a folder path"),
        (["--emit-slurm", "FILE"], "is an existing file, not a folder"),
        (["--emit-slurm", "FILE/jobs"], "is a file, so no folder can be made under it"),
        (["--dry-run", "--list-units"], "--list-units does something else: give one of them"),
        (["--dry-run", "--unit", "x"], "--unit does something else"),
        (["--dry-run", "--emit-slurm", "jobs"], "--emit-slurm does something else"),
        # the plan printed, and the run then refused its --out
        (["--dry-run", "--out", "FILE"], "--out FILE is an existing file, not a folder"),
        (["--dry-run", "--out", "FILE/report"], "is a file, so no folder can be made under it"),
    ],
)
def test_reproduce_unit_flags_are_checked_before_the_table_runs(
    tmp_path, monkeypatch, capsys, flags, message
) -> None:
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    (tmp_path / "afile").write_text("keep\n")
    flags = [f.replace("FILE", str(tmp_path / "afile")) for f in flags]
    message = message.replace("FILE", str(tmp_path / "afile"))
    _one_line_error(capsys, ["reproduce", "table3", "--profile", "smoke", *flags], message)
    assert not (tmp_path / "cache").exists()  # nothing computed or fetched
    assert (tmp_path / "afile").read_text() == "keep\n"


def test_profiles_new_refuses_a_built_in_name_and_a_path_under_a_file(tmp_path, capsys) -> None:
    base = ["profiles", "new", "--from", "smoke", "--out"]
    _one_line_error(capsys, [*base, str(tmp_path / "tiny.yaml")], "is a built-in profile's name")
    (tmp_path / "afile").write_text("")
    under = tmp_path / "afile" / "mine.yaml"
    _one_line_error(capsys, [*base, str(under)], "is a file, so no profile can be written under")
    assert not (tmp_path / "tiny.yaml").exists()
    assert main([*base, str(tmp_path / "mine.yaml")]) == 0


@pytest.mark.parametrize("argv", [
    ["eval", "--model", "tiny-random", "--seed", "-1", "--dry-run"],
    ["compare", "--original", "tiny-random", "--rope", "pi:factor=2", "--seed", "4294967296"],
])  # fmt: skip
def test_a_seed_lm_eval_cannot_take_is_one_line_before_loading(tmp_path, capsys, argv) -> None:
    out = [] if "--dry-run" in argv else ["--out", str(tmp_path / "o")]
    _one_line_error(capsys, [*argv, *out], "--seed must be a whole number from 0 to 4294967295")


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ("evaluation: {backend: foo}", "evaluation.backend 'foo' is not one of hf, vllm"),
        ("evaluation: {short: {suite: nosuch}}", "evaluation.short.suite 'nosuch' is not one"),
        ("evaluation: {device: gpu}", "evaluation.device 'gpu' is no device"),
        ("hardware: {device: 'cuda:x'}", "hardware.device 'cuda:x' is no device"),
        ("evaluation: {ruler: {samples: 0}}", "evaluation.ruler.samples must be at least 1"),
        ("evaluation: {short: {limit: -1}}", "evaluation.short.limit must be at least 1, not -1"),
        ("drift: {num_texts: 0}", "drift.num_texts must be at least 1, not 0"),
        ("drift: {top_m: -2}", "drift.top_m must be at least 0, not -2"),
        ("hardware: {nproc_per_node: 0}", "hardware.nproc_per_node must be at least 1, not 0"),
        ("runs: {seeds: 0}", "runs.seeds must be at least 1, not 0"),
        ("training: {cpt: {tokens_per_stp: 8}}", "training.cpt.tokens_per_stp is not a training"),
        ("evaluation: {ppl: {corpus: austen, windows: 0}}",
         "evaluation.ppl.windows must be at least 1, not 0"),
        ("evaluation: {short: {max_length: -5}}",
         "evaluation.short.max_length must be at least 1, not -5"),
        ("evaluation: {ruler: {phrasing: foo}}",
         "evaluation.ruler.phrasing: unknown phrasing 'foo'"),
        ("evaluation: {ppl: {corpus: nope}}",
         "evaluation.ppl.corpus: text source 'nope' is neither a corpus"),
        ("drift: {dtype: float8}", "drift.dtype 'float8' is not one of float32, bfloat16"),
        ("hardware: {dtype: float8}", "hardware.dtype 'float8' is not one of auto, float32"),
        # a table's own evaluation section, merged over the profile's (it was not checked, or
        # ended in a traceback)
        ("tables: {table3: {evaluation: {ruler: {phrasing: foo}}}}",
         "tables.table3.evaluation.ruler.phrasing: unknown phrasing 'foo'"),
        ("tables: {table3: {evaluation: {ppl: {windows: 0}}}}",
         "tables.table3.evaluation.ppl.windows must be at least 1, not 0"),
        ("tables: {table3: {evaluation: {ruler: {lengths: [abc]}}}}",
         "tables.table3.evaluation.ruler.lengths[0] must be an integer, got 'abc'"),
        ("tables: {table3: {evaluation: {rulr: {lengths: [512]}}}}",
         "unknown key tables.table3.evaluation.rulr"),
        ("tables: {table3: {evaluation: 5}}", "tables.table3.evaluation must be a mapping"),
        # YAML's true is an int to Python: not a number of a profile
        ("evaluation: {batch_size: true}", "evaluation.batch_size must be an integer, got True"),
        ("evaluation: {batch_size: 1.5}", "evaluation.batch_size must be an integer, got 1.5"),
    ],
)  # fmt: skip
def test_profile_values_the_types_cannot_refuse_are_checked(tmp_path, capsys, keys, message):
    path = tmp_path / "mine.yaml"
    path.write_text(f"extends: smoke\n{keys}\n")
    _one_line_error(capsys, ["profiles", "show", str(path)], f"profile {path}: {message}")
    path.write_text("extends: smoke\nhardware: {device: 'cuda:1'}\n")  # a device name: fine here
    assert main(["profiles", "show", str(path)]) == 0


@pytest.mark.parametrize("plan", ["--dry-run", "--list-units"])
def test_a_training_value_that_cannot_train_names_the_profile_and_run(tmp_path, capsys, plan):
    """It read "config steps must be >= 1 (got -1)", naming neither the file nor where to set
    it."""
    path = tmp_path / "mine.yaml"
    path.write_text("extends: tiny\ntraining: {cpt: {steps: -1}}\n")
    _one_line_error(capsys, ["reproduce", "table3", "--profile", str(path), plan],
                    f"profile {path}: the cpt run at ")  # fmt: skip
    assert main(["reproduce", "table3", "--profile", str(path), plan]) == 2
    err = capsys.readouterr().err
    assert ", seed 0: config steps must be >= 1 (got -1) (set under training.cpt, " in err


@pytest.mark.parametrize("action", ["fetch", "list", "verify"])
def test_a_cache_folder_that_is_a_file_or_missing_is_refused(tmp_path, capsys, action) -> None:
    afile = tmp_path / "afile"
    afile.write_text("kept")
    _one_line_error(capsys, ["data", action, "--cache", str(afile)], "is a file: give the cache")
    assert afile.read_text() == "kept"
    missing = tmp_path / "missing"
    if action == "fetch":  # fetch makes the folder; the others would report an empty cache
        return
    _one_line_error(capsys, ["data", action, "--cache", str(missing)], "does not exist: give the")
    assert not missing.exists()


def test_a_cache_variable_naming_a_file_is_refused(tmp_path, monkeypatch, capsys) -> None:
    from longred_bench.cache import cache_dir

    afile = tmp_path / "afile"
    afile.write_text("")
    monkeypatch.setenv("LONGRED_CACHE", str(afile))
    with pytest.raises(UserError, match=f"LONGRED_CACHE={afile} is a file: set it to a folder"):
        cache_dir()
    _one_line_error(capsys, ["data", "list"], "is a file: set it to a folder")
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "new"))
    assert cache_dir() == tmp_path / "new"


def test_a_cache_under_a_file_is_refused_before_a_fetch(tmp_path, monkeypatch, capsys) -> None:
    """``data fetch`` ended in a NotADirectoryError traceback (``data list`` said it in a line)."""
    afile = tmp_path / "keep.txt"
    afile.write_text("kept")
    under = afile / "sub"
    monkeypatch.setenv("LONGRED_CACHE", str(under))
    message = f"LONGRED_CACHE={under}: {afile} is a file, so no folder can be made under it"
    _one_line_error(capsys, ["data", "fetch", "--sources", "brown"], message)
    monkeypatch.delenv("LONGRED_CACHE")
    message = f"--cache {under}: {afile} is a file, so no folder can be made under it"
    _one_line_error(capsys, ["data", "fetch", "--sources", "brown", "--cache", str(under)], message)
    assert afile.read_text() == "kept"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["eval", "--model", "./nope", "--suite", "ruler"], "model './nope': no such folder"),
        (["eval", "--model", "out/no/model", "--suite", "ruler"],  # owner/name has one slash
         "model 'out/no/model': no such folder"),
        (["train", "--recipe", "cpt", "--profile", "smoke", "--set", "model=./nope"],
         "model './nope': no such folder"),
        (["train", "--recipe", "cpt", "--profile", "smoke", "--set", "long_data=txt:/nope.txt"],
         "data 'txt:/nope.txt': /nope.txt does not exist"),
    ],
)  # fmt: skip
def test_a_dry_run_refuses_a_local_model_or_data_path_that_is_not_there(capsys, argv, message):
    _one_line_error(capsys, [*argv, "--dry-run"], message)


def test_a_dry_run_leaves_a_hub_id_to_the_run(monkeypatch, capsys) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # a hub id is not asked for: no error, no wait
    assert main(["eval", "--model", "someorg/some-model", "--suite", "ruler", "--dry-run"]) == 0
    assert '"model": "someorg/some-model"' in capsys.readouterr().out


def test_a_profile_refuses_dynamic_rope_where_its_table_evaluates_through_vllm(tmp_path, capsys):
    path = tmp_path / "mine.yaml"
    path.write_text("extends: smoke\nevaluation: {backend: vllm}\n"
                    "runs: {extensions: ['dynamic:factor=2']}\n")  # fmt: skip
    _one_line_error(capsys, ["profiles", "show", str(path)], f"profile {path}: runs.extensions[0]: "
                    "dynamic:factor=2 is dynamic RoPE, which the vllm backend")  # fmt: skip
    _one_line_error(capsys, ["reproduce", "table3", "--profile", str(path), "--dry-run"],
                    "runs.extensions[0]: dynamic:factor=2 is dynamic RoPE")  # fmt: skip
    # x4: RULER at smoke's 1,024 tokens fits its window (x2's 512 fits none: a table3 refusal)
    table3 = "tables:\n  table3:\n    extensions: ['dynamic:factor=4']\n"
    path.write_text(f"extends: smoke\nevaluation: {{backend: vllm}}\n{table3}"
                    "    evaluation: {backend: hf}\n")  # fmt: skip
    assert main(["profiles", "show", str(path)]) == 0  # that table evaluates through transformers
    path.write_text(f"extends: smoke\n{table3}    evaluation: {{backend: vllm}}\n")
    _one_line_error(capsys, ["profiles", "show", str(path)],
                    "tables.table3.extensions[0]: dynamic:factor=4 is dynamic RoPE")  # fmt: skip


def test_a_text_or_yaml_file_that_is_not_utf8_is_refused(tmp_path, capsys) -> None:
    """Binary text or YAML ended in a UnicodeDecodeError traceback."""
    binary = tmp_path / "bin.txt"
    binary.write_bytes(b"\xff\xfe\x00 not text")
    out = str(tmp_path / "o")
    _one_line_error(capsys, ["drift", "--original", "tiny-random", "--rope", "pi:factor=2",
                             "--seq-len", "64", "--texts", str(binary), "--out", out],
                    "not UTF-8 text")  # fmt: skip
    profile = tmp_path / "bin.yaml"
    profile.write_bytes(b"\xff\xfe\x00 not yaml")
    _one_line_error(capsys, ["profiles", "show", str(profile)], "not UTF-8 text")


def test_a_yaml_key_given_twice_is_refused(tmp_path, capsys) -> None:
    """Plain YAML keeps the last of two equal keys: a profile's or config file's first value
    was dropped without a word. A key a merge (<<) brings in may still be overridden."""
    profile = tmp_path / "dup.yaml"
    profile.write_text("extends: smoke\nruns:\n  seeds: [0]\n  seeds: [1]\n")
    _one_line_error(capsys, ["profiles", "show", str(profile)],
                    "not valid YAML at line 4 (key 'seeds' is given twice)")  # fmt: skip
    config = tmp_path / "train.yaml"
    config.write_text("steps: 5\nsteps: 7\n")
    _one_line_error(capsys, ["train", "--recipe", "cpt", "--profile", "smoke", "--config",
                             str(config), "--out", str(tmp_path / "t"), "--dry-run"],
                    "key 'steps' is given twice")  # fmt: skip
    merged = tmp_path / "merged.yaml"
    merged.write_text("extends: smoke\nbase: &b {seeds: [0]}\nruns:\n  <<: *b\n  seeds: [1]\n")
    from longred_bench.profiles.loader import read_mapping

    assert read_mapping(merged)["runs"] == {"seeds": [1]}
    # a mapping merged with its own override, merged again higher up; a duplicate in an inline
    # merge source
    import yaml

    nested = tmp_path / "nested.yaml"
    nested.write_text("base: &b {x: 1}\ndefs: {m: &m {<<: *b, x: 2}}\ntop: {<<: *m}\n")
    assert read_mapping(nested) == yaml.safe_load(nested.read_text())  # what YAML itself gives
    inline = tmp_path / "inline.yaml"
    inline.write_text("top: {<<: {x: 1, x: 2}}\n")
    with pytest.raises(UserError, match="key 'x' is given twice"):
        read_mapping(inline)


@pytest.mark.parametrize(
    ("command", "extra"),
    [("psa", ["--model", "tiny-random", "--rope", "none"]),
     ("compare", ["--original", "tiny-random", "--rope", "pi:factor=2"])],
)  # fmt: skip
def test_psa_and_compare_refuse_a_pcd_cut_of_the_other_rule(tmp_path, capsys, command, extra):
    argv = [command, *extra, "--decoding", "pcd", "--pcd-top-k", "3", "--out", str(tmp_path / "o")]
    _one_line_error(capsys, argv, "--pcd-top-k is for --pcd-plausibility topk")
    assert not (tmp_path / "o").exists() or not list((tmp_path / "o").iterdir())


def test_the_command_the_tiny_base_messages_name_builds_the_cached_tiny_base(
    tmp_path, monkeypatch, capsys
) -> None:
    """Both "not built yet" messages name a command; it ran only with an --out DIR, and then
    built a copy there instead of the zoo's cached tiny-base. Without --out it builds the cached
    one; a changed config is not tiny-base and still needs --out."""
    import re

    from longred_bench.jobs import limits, tiny_base

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    with pytest.raises(UserError) as refused:
        tiny_base.tiny_base_dir(build=False)
    messages = [str(refused.value), limits._available("tiny-base")]
    commands = {re.search(r"`longred-bench ([^`]+)`", m).group(1) for m in messages}
    assert commands == {"train --recipe pretrain --profile tiny"}, messages
    built = []
    monkeypatch.setattr(tiny_base, "tiny_base_dir", lambda progress: built.append(progress) or "x")
    assert main(commands.pop().split()) == 0
    assert built == [True] and capsys.readouterr().out == "tiny-base: x\n"
    for more in (["--set", "steps=2"], ["--profile", "smoke"]):
        _one_line_error(capsys, ["train", "--recipe", "pretrain", *more], "--out DIR is required")
    assert built == [True]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["eval", "--model", "tiny-random", "--suite", "short_tiny", "--allow-code-eval",
          "--dry-run"], "eval: --allow-code-eval is for tasks that run model-written code"),
        (["reproduce", "table3", "--profile", "smoke", "--unit", "x", "--jobs", "2"],
         "--jobs runs a table's units side by side; --unit runs or lists them otherwise"),
        (["reproduce", "table3", "--profile", "smoke", "--list-units", "--jobs", "2"],
         "--jobs runs a table's units side by side; --list-units"),
        (["reproduce", "table3", "--profile", "smoke", "--unit", "x", "--out", "o"],
         "--out names the folder of the table's report; --unit writes no report"),
        (["reproduce", "table3", "--profile", "smoke", "--list-units", "--out", "o"],
         "--list-units writes no report (a unit's results go to the run cache): drop --out"),
        (["reproduce", "table3", "--profile", "smoke", "--rebuild", "--jobs", "2"],
         "--rebuild writes a report from its records and computes nothing; --jobs does "),
        (["eval", "--model", "tiny-random", "--suite", "short", "--allow-code-eval",
          "--dry-run"], "the short suite has none"),
    ],
)  # fmt: skip
def test_a_flag_that_would_do_nothing_is_refused(capsys, argv, message) -> None:
    """--allow-code-eval on a suite without code tasks went into the config (and its cache key);
    --jobs or --out beside --unit or --list-units was dropped without a word."""
    _one_line_error(capsys, argv, message)


def test_train_dry_run_asks_no_hub_for_a_hub_teachers_shape(monkeypatch, capsys) -> None:
    """A hub-id teacher is asked for when training starts, not by the dry run's shape check."""
    from longred_bench.training import model_plan

    real = model_plan.planning_config

    def local_only(spec: str):
        assert spec != "someone/some-model", "the dry run asked the hub"
        return real(spec)

    monkeypatch.setattr(model_plan, "planning_config", local_only)
    argv = ["train", "--recipe", "longred", "--profile", "smoke", "--dry-run", "--set",
            "teacher=someone/some-model"]  # fmt: skip
    assert main(argv) == 0
    assert "teacher: someone/some-model" in capsys.readouterr().out


def test_a_training_runs_folder_given_as_a_model_names_its_final(tmp_path, capsys) -> None:
    """``merge_with=runs/r`` or ``eval --model r``: "not a Hugging Face model directory"."""
    (tmp_path / "r" / "final").mkdir(parents=True)
    (tmp_path / "r" / "final" / "config.json").write_text("{}")
    run, final = tmp_path / "r", tmp_path / "r" / "final"
    for argv in (["eval", "--model", str(run), "--suite", "short_tiny", "--dry-run"],
                 ["train", "--recipe", "merge", "--profile", "smoke", "--set",
                  f"merge_with={run}", "--out", str(tmp_path / "m")]):  # fmt: skip
        _one_line_error(capsys, argv, f"is a training run's folder; give its model, {final}")


def test_a_models_file_or_a_runs_checkpoint_given_as_a_model_names_what_to_give(
    tmp_path, capsys
) -> None:
    """``--model run/final/config.json`` read "config.json is not a Hugging Face model directory
    (no config.json)"; ``--model run/checkpoints/step-N`` named no fix."""
    final = tmp_path / "r" / "final"
    final.mkdir(parents=True)
    (final / "config.json").write_text("{}")
    step = tmp_path / "r" / "checkpoints" / "step-000004"
    step.mkdir(parents=True)
    argv = ["eval", "--suite", "short_tiny", "--dry-run", "--model"]
    holder = f"is a file, not a model folder; give the folder that holds it, {final}"
    _one_line_error(capsys, [*argv, str(final / "config.json")], holder)
    _one_line_error(capsys, [*argv, str(step)], "it is a training checkpoint, kept to resume the "
                    f"run: give its model, {final}")  # fmt: skip
    from longred_bench.evaluation.vllm import hf_model_dir

    with pytest.raises(UserError, match="give its model, "):  # where vLLM reads it: the same
        hf_model_dir(str(step))
    (final / "config.json").unlink()
    _one_line_error(capsys, [*argv, str(step)], "which has no model yet: run its train command "
                    "again to finish it")  # fmt: skip


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--model", "", "--suite", "short_tiny", "--dry-run"],
        ["drift", "--original", "tiny-random", "--extended", " ", "--out", "{out}"],
        ["psa", "--model", "", "--rope", "none", "--out", "{out}"],
    ],
)
def test_an_empty_model_spec_is_refused_not_read_as_this_folder(
    tmp_path, monkeypatch, capsys, argv
) -> None:
    """``--model "$(longred-bench models --path tiny-base)"`` with tiny-base not built passes
    an empty spec, which was read as ``.``: a model folder there was evaluated without a word."""
    from longred_bench.models.zoo import tiny_random

    model, tokenizer = tiny_random()
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()  # the save's progress bar
    argv = [a.replace("{out}", str(tmp_path / "o")) for a in argv]
    _one_line_error(capsys, argv, "a model spec is empty (a `$(longred-bench models --path")


@pytest.mark.parametrize(
    ("argv", "job"),
    [
        (["eval", "--model", "tiny-random", "--suite", "niah", "--corpus", "brwn"], "eval"),
        (["eval", "--model", "tiny-random", "--suite", "ppl", "--corpus", "brwn:test"], "eval"),
        (["psa", "--model", "tiny-random", "--corpus", "brwn"], "psa"),
    ],
)
def test_a_mistyped_corpus_is_refused_before_a_model_loads(
    tmp_path, capsys, monkeypatch, argv, job
) -> None:
    """It was refused once the model had loaded (minutes, for a large one), with no corpus
    named as the one meant."""
    import importlib

    module = importlib.import_module(f"longred_bench.jobs.{job}")

    def measured(*args, **kwargs):
        raise AssertionError("the job started")

    monkeypatch.setattr(module, f"{job}_command", measured)
    _one_line_error(capsys, [*argv, "--out", str(tmp_path / "o")],
                    "is neither a corpus (brown, austen, kjv, sotu) nor a file "
                    "(did you mean brown?)")  # fmt: skip
    assert not (tmp_path / "o").exists()
