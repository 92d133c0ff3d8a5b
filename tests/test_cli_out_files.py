"""Files in an ``--out`` that the command writes but did not write there are refused, not
replaced: a project's own ``config.yaml`` (drift and train wrote theirs over it), a ``final/``
folder no training run wrote (train replaced it whole, deleting the user's files), another
command's ``config.yaml`` (a failed train's, which drift called "a drift of another config")."""

from __future__ import annotations

import pytest

from longred_bench.cli import main

DRIFT = ["drift", "--original", "tiny-random", "--rope", "pi:factor=2", "--num-texts", "1",
         "--seq-len", "32", "--texts", "random", "--quiet", "--out"]  # fmt: skip
TRAIN = ["train", "--recipe", "cpt", "--profile", "smoke", "--set", "steps=1", "--quiet", "--out"]


@pytest.mark.parametrize("argv", [DRIFT, TRAIN], ids=["drift", "train"])
@pytest.mark.parametrize("text", ["experiment: my-sweep\nlr: 0.1\n", "{not yaml: [\n", "- a\n"])
def test_a_config_yaml_no_run_wrote_is_kept(tmp_path, capsys, argv, text):
    out = tmp_path / "proj"
    out.mkdir()
    (out / "config.yaml").write_text(text)
    assert main([*argv, str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert f"--out {out} holds config.yaml, not one {argv[0]} wrote" in err
    assert (out / "config.yaml").read_text() == text
    assert sorted(p.name for p in out.iterdir()) == ["config.yaml"]


def test_drift_names_a_training_runs_config(tmp_path, capsys):
    """A train that failed on a bad value left its config.yaml; drift said the folder held
    "the results of a drift of another config (differs in device, dtype, rope, top_m)"."""
    out = tmp_path / "t"
    out.mkdir()
    (out / "config.yaml").write_text("recipe: cpt\nprofile: smoke\nsteps: 1\n")
    assert main([*DRIFT, str(out)]) == 2
    assert "holds config.yaml, a training run's (train's), which drift would replace" in (
        capsys.readouterr().err
    )


def test_train_keeps_a_final_folder_it_did_not_write(tmp_path, capsys):
    out = tmp_path / "proj"
    (out / "final").mkdir(parents=True)
    (out / "final" / "mine.txt").write_text("mine")
    assert main([*TRAIN, str(out)]) == 2
    assert "holds final/, which no training run wrote there" in capsys.readouterr().err
    assert (out / "final" / "mine.txt").read_text() == "mine"


@pytest.mark.integration
def test_a_finished_run_resumed_says_it_wrote_nothing(tmp_path, capsys):
    """It printed "nothing to resume", then "wrote OUT/final"."""
    out = tmp_path / "run"
    assert main([*TRAIN, str(out)]) == 0
    assert capsys.readouterr().out == f"wrote {out / 'final'}\n"
    assert main([*TRAIN, str(out), "--resume"]) == 0
    assert (
        capsys.readouterr().out == f"{out} holds this run finished ({out / 'final'}): "
        "nothing to resume\n"
    )
    assert main([*DRIFT, str(tmp_path / "run")]) == 2  # train's folder: drift refuses it
    assert "holds the results of `train`" in capsys.readouterr().err


def _saved_eval(out, **config) -> None:
    import json

    from longred_bench.evaluation.config import EvalConfig

    out.mkdir()
    ran = {"command": "eval", **EvalConfig(**config).ran_dict()}
    record = {"kind": "x", "provenance": {"config": ran}}
    (out / "eval.jsonl").write_text(json.dumps(record) + "\n")


@pytest.mark.parametrize(
    ("saved", "typo", "said"),
    [
        ({"suite": "ppl", "lengths": (256,)}, ["--suite", "ppl", "--lengths", "256",
         "--corpus", "austn"], "error: --corpus 'austn' is neither a corpus (brown"),
        ({"suite": "short_tiny", "tasks": ("longred_tiny_lastword",)},
         ["--suite", "short_tiny", "--tasks", "longred_tiny_lastwrd"],
         "error: unknown lm-eval task(s) longred_tiny_lastwrd; nearest: longred_tiny_lastword"),
    ],
)  # fmt: skip
def test_a_typo_beside_another_runs_results_is_named_as_the_typo(tmp_path, capsys, saved,
                                                                 typo, said):  # fmt: skip
    """It was "another config (differs in corpus): ... delete eval.jsonl there to give them
    up": advice that threw the results away, after which the run still failed."""
    out = tmp_path / "out"
    _saved_eval(out, model="tiny-random", **saved)
    assert main(["eval", "--model", "tiny-random", *typo, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(said) and "another config" not in err


@pytest.mark.parametrize("value", ["dtype=float33", "layers=[9]"])
def test_train_refuses_a_bad_value_before_it_writes_or_compares(tmp_path, capsys, value):
    """A dtype torch lacks, a layer beyond the model: refused once the model had loaded, with
    OUT/config.yaml left behind (beside a saved run: "a run of another config")."""
    argv = ["train", "--recipe", "longred", "--profile", "smoke", "--set", value, "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "new")]) == 2
    err = capsys.readouterr().err
    assert (
        "is not a torch floating dtype" in err or "out of range; the model has layers 1..4" in err
    )
    assert not (tmp_path / "new").exists()


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--model", "tiny-random", "--suite", "short_tiny"],
        ["drift", "--original", "tiny-random", "--rope", "pi:factor=2"],
        ["train", "--recipe", "cpt", "--profile", "smoke"],
        ["reproduce", "table3", "--profile", "smoke"],
    ],
    ids=["eval", "drift", "train", "reproduce"],
)  # fmt: skip
@pytest.mark.parametrize("inside", ["", "models/mine", "runs", "hf-models/x"])
def test_an_out_in_the_suites_cache_is_refused(tmp_path, monkeypatch, capsys, argv, inside):
    """``train --out ~/.cache/longred-bench/models/x`` trained into the suite's models, beside
    them, without a word; a folder of one's own beside the cache's folders is still taken."""
    cache = tmp_path / "cache"
    (cache / "models").mkdir(parents=True)
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    out = cache / inside if inside else cache
    assert main([*argv, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"--out {out} is " in err and "give a folder outside" in err and err.count("\n") == 1
    if argv[0] == "eval":  # the dry run takes a folder of one's own in the cache's root
        assert main([*argv, "--out", str(cache / "mine"), "--dry-run"]) == 0


@pytest.mark.parametrize(
    "argv",
    [
        ["eval", "--model", "{m}", "--suite", "ppl", "--lengths", "256", "--samples", "1"],
        ["drift", "--original", "{m}", "--rope", "pi:factor=2"],
        ["psa", "--model", "{m}", "--rope", "none", "--tasks", "niah_single_1", "--lengths",
         "512", "--samples", "1"],
        ["compare", "--original", "{m}", "--rope", "pi:factor=2", "--suites", "drift"],
        ["train", "--recipe", "cpt", "--profile", "smoke", "--set", "model={m}"],
    ],
    ids=["eval", "drift", "psa", "compare", "train"],
)  # fmt: skip
@pytest.mark.parametrize("inside", ["", "results"])
def test_an_out_inside_the_model_folder_is_refused(tmp_path, capsys, argv, inside):
    """Results written into the model's own folder changed the files it is keyed by: every
    call computed everything again (a new response cache each time) and mixed with it."""
    import json

    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({"model_type": "llama"}))
    out = model / inside if inside else model
    given = [a.replace("{m}", str(model)) for a in argv]
    assert main([*given, "--out", str(out), "--quiet"]) == 2
    assert f"--out {out} is inside the model folder {model}" in capsys.readouterr().err
    assert sorted(p.name for p in model.iterdir()) == ["config.json"]


@pytest.mark.parametrize("flag", ["--out", "--emit-slurm"])
def test_a_reproduce_folder_inside_the_profiles_model_folder_is_refused(tmp_path, capsys, flag):
    """``reproduce`` wrote its report (or job scripts) into the profile's own model folder: the
    files it is keyed by changed, so every cached unit was new and each call computed them all
    again."""
    from longred_bench.models.loading import load

    model, tiny = tmp_path / "base", load("tiny-random")
    tiny.model.save_pretrained(model)
    tiny.tokenizer.save_pretrained(model)
    kept = sorted(p.name for p in model.iterdir())
    profile = tmp_path / "mine.yaml"
    profile.write_text(f"extends: smoke\nmodel: {{name: '{model}', window: 256, layers: 4}}\n")
    argv = ["reproduce", "table1", "--profile", str(profile), "--quiet"]
    assert main([*argv, flag, str(model / "jobs")]) == 2
    assert f"{flag} {model / 'jobs'} is inside the model folder {model}" in capsys.readouterr().err
    assert sorted(p.name for p in model.iterdir()) == kept
    if flag == "--out":  # a dry run says what the run would (it planned, and the run refused)
        assert main([*argv, flag, str(model / "jobs"), "--dry-run"]) == 2
        assert "is inside the model folder" in capsys.readouterr().err


def test_an_out_inside_a_folder_that_is_no_model_names_the_model_as_the_problem(tmp_path, capsys):
    """``--model .`` (a folder with no config.json) and ``--out`` inside it was refused as "inside
    the model folder": the folder is no model, which is what the error says now."""
    folder = tmp_path / "work"
    folder.mkdir()
    argv = ["eval", "--model", str(folder), "--suite", "niah", "--lengths", "512"]
    assert main([*argv, "--out", str(folder / "e2"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "is not a Hugging Face model folder (no config.json)" in err
    assert "inside the model folder" not in err


def test_commands_keep_out_of_a_reproduce_report_folder(tmp_path, capsys):
    out = tmp_path / "reports" / "pa"
    out.mkdir(parents=True)
    (out / "table1.md").write_text("# report\n")
    (out / "table1.jsonl.gz").write_bytes(b"")
    argv = ["eval", "--model", "tiny-random", "--suite", "ppl", "--out", str(out), "--quiet"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"error: --out {out} holds the reports of `reproduce` (table1.jsonl.gz); give eval a "
        "folder of its own\n"
    )


def test_an_eval_dry_run_checks_its_out_as_the_run_does(tmp_path, capsys):
    out = tmp_path / "out"
    _saved_eval(out, model="tiny-random", suite="ppl", lengths=(256,))
    argv = ["eval", "--model", "tiny-random", "--suite", "ppl", "--lengths", "256", "--dry-run"]
    assert main([*argv, "--out", str(out)]) == 0
    assert main([*argv, "--samples", "3", "--out", str(out)]) == 2
    assert "holds the results of an eval of another config" in capsys.readouterr().err
    (tmp_path / "afile").write_text("")
    assert main([*argv, "--out", str(tmp_path / "afile")]) == 2
    assert "is an existing file, not a folder" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("runs: {extensions: ['abf:thta=1e5']}", "runs.extensions[0]: RoPE spec 'abf:thta=1e5'"),
        ("tables: {tabel3: {seeds: 1}}", "tables.tabel3 is no table"),
        ("model: {layers: 5}", "model.layers is 5, but tiny-random has 4"),
        ("model: {window: 512}", "model.window is 512, but tiny-random's config says 256"),
    ],
)  # fmt: skip
def test_train_checks_a_profile_file_whole(tmp_path, capsys, body, said):
    """train read a profile file's training section alone: profiles that ``reproduce`` and
    ``profiles show`` refuse trained (a window it lacks was blamed on long_len)."""
    mine = tmp_path / "mine.yaml"
    mine.write_text(f"extends: smoke\n{body}\n")
    argv = ["train", "--recipe", "cpt", "--profile", str(mine), "--set", "steps=1", "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err, err
    assert not (tmp_path / "run").exists()


@pytest.mark.integration
def test_a_finished_drift_run_again_measures_nothing(tmp_path, capsys):
    """The same drift command again measured every window again, without a word."""
    out = tmp_path / "d"
    assert main([*DRIFT, str(out)]) == 0
    records = out / "drift.jsonl"
    before = records.stat().st_mtime_ns
    capsys.readouterr()
    assert main([*DRIFT, str(out)]) == 0
    assert capsys.readouterr().out == (
        f"{out} holds this drift, measured ({records}): nothing to measure (delete drift.jsonl "
        "there to measure it again)\n"
    )
    assert records.stat().st_mtime_ns == before


def test_a_pairs_compare_and_a_plain_compare_keep_their_folders_apart(tmp_path, capsys):
    """``compare --pairs`` wrote pairs.md and a folder per original beside a plain compare's
    compare.md (and a plain compare into a pairs folder mixed the same way)."""
    import json

    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "compare.md").write_text("# compare\n")
    pairs = tmp_path / "p.json"  # YAML reads JSON
    one = {"original": "tiny-random", "window": 256,
           "extended": [{"model": "tiny-random", "window": 1024}]}  # fmt: skip
    pairs.write_text(json.dumps({"settings": {"suites": ["drift"]}, "pairs": [one]}))
    assert main(["compare", "--pairs", str(pairs), "--out", str(plain), "--quiet"]) == 2
    assert "holds a compare of one original (compare.md)" in capsys.readouterr().err
    index = tmp_path / "index"
    index.mkdir()
    (index / "pairs.md").write_text("# pairs\n")
    argv = ["compare", "--original", "tiny-random", "--rope", "pi:factor=2", "--quiet"]
    assert main([*argv, "--out", str(index)]) == 2
    assert "holds the compares of a pairs file (pairs.md)" in capsys.readouterr().err
    assert sorted(p.name for p in plain.iterdir()) == ["compare.md"]


@pytest.mark.integration
def test_a_drift_given_its_extensions_in_another_order_is_the_same_drift(tmp_path, capsys):
    """``--rope A B`` after a run of ``--rope B A`` was refused as another config's (finished)
    or would have started its saved windows over (interrupted): it takes the saved order."""
    import json

    from longred_bench.cli.outputs import saved_drift_order
    from longred_bench.jobs.configs import DriftConfig
    from longred_bench.jobs.drift import PARTIAL

    out = tmp_path / "d"
    argv = [*DRIFT, str(out)]
    argv[argv.index("pi:factor=2")] = "abf:theta=1e5 pi:factor=2"
    argv = " ".join(argv).split()  # two specs
    assert main(argv) == 0
    capsys.readouterr()
    swapped = list(argv)
    i = swapped.index("abf:theta=1e5")
    swapped[i : i + 2] = ["pi:factor=2", "abf:theta=1e5"]
    assert main(swapped) == 0
    assert capsys.readouterr().out.startswith(f"{out} holds this drift, measured")
    swapped[swapped.index("pi:factor=2")] = "pi:factor=4"  # another extension: still refused
    assert main(swapped) == 2
    assert "another config (differs in rope)" in capsys.readouterr().err

    saved = DriftConfig(original="tiny-random", rope=("abf:theta=1e5", "pi:factor=2"))
    mine = DriftConfig(original="tiny-random", rope=("pi:factor=2", "abf:theta=1e5"))
    partial = tmp_path / "p"
    partial.mkdir()
    (partial / PARTIAL).write_text(json.dumps({"config": saved.to_dict(), "texts": {}}))
    assert saved_drift_order(partial, mine.to_dict()) == {
        "rope": ("abf:theta=1e5", "pi:factor=2"), "extended": ()
    }  # fmt: skip
    other = DriftConfig(original="tiny-random", rope=mine.rope, seq_len=64)
    assert saved_drift_order(partial, other.to_dict()) == {}  # another seq_len: not the same


@pytest.mark.integration
def test_continuing_a_run_from_its_config_takes_its_profile(tmp_path, capsys):
    """training.md's ``train --config out/config.yaml --out out --resume`` was refused for any run
    not at ``tiny`` ("says profile: smoke, the run is profile tiny"), a profile never named."""
    out = tmp_path / "run"
    assert main([*TRAIN, str(out)]) == 0
    argv = ["train", "--recipe", "cpt", "--config", str(out / "config.yaml"), "--out", str(out)]
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 0
    assert f"{out} holds this run finished" in capsys.readouterr().out
    mine = tmp_path / "mine.yaml"
    mine.write_text((out / "config.yaml").read_text().replace("profile: smoke", "profile: my"))
    argv[argv.index(str(out / "config.yaml"))] = str(mine)
    assert main([*argv, "--resume"]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: train: --config {mine} is of profile 'my', not a built-in one: give "
                   "its file with --profile FILE\n")  # fmt: skip


@pytest.mark.integration
def test_an_eval_of_a_model_whose_files_changed_says_it_replaces_its_results(tmp_path, capsys):
    """Weights replaced at the same path were evaluated again and eval.jsonl replaced without a
    word (a changed setting is refused; compare says so)."""
    import os

    from longred_bench.models.loading import load

    model = tmp_path / "m"
    loaded = load("tiny-random")
    loaded.model.save_pretrained(model)
    loaded.tokenizer.save_pretrained(model)
    out = tmp_path / "o"
    argv = ["eval", "--model", str(model), "--suite", "ppl", "--lengths", "256", "--samples", "1",
            "--out", str(out), "--quiet"]  # fmt: skip
    said = f"[eval] the files of {model} changed since {out / 'eval.jsonl'} was written"
    for _ in range(2):  # the first run, then the same files again
        assert main(argv) == 0
        assert said not in capsys.readouterr().out
    weights = next(model.glob("*.safetensors"))
    os.utime(weights, ns=(weights.stat().st_atime_ns, weights.stat().st_mtime_ns + 10**9))
    assert main(argv) == 0
    assert f"{said}: evaluated again, its results are replaced" in capsys.readouterr().out


@pytest.mark.integration
def test_a_run_does_not_resume_from_model_files_changed_since_it_started(tmp_path, capsys):
    """Weights saved again at the model's path while a run was stopped: the resume continued
    its checkpoints from the other weights without a word."""
    import os
    import shutil

    from longred_bench.models.loading import load

    model = tmp_path / "m"
    loaded = load("tiny-random")
    loaded.model.save_pretrained(model)
    loaded.tokenizer.save_pretrained(model)
    out = tmp_path / "run"
    argv = [*TRAIN[:-1], "model=" + str(model), "checkpoint_every=1", "--quiet", "--out", str(out)]
    argv.remove("--quiet")  # TRAIN's own, given once above
    assert main(argv) == 0
    shutil.rmtree(out / "final")  # stopped after its checkpoints, as a killed run is
    (out / "run.json").unlink()
    weights = next(model.glob("*.safetensors"))
    stat = weights.stat()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: train: {model} changed since the run in {out} started")
    assert not (out / "final").exists()
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # put back: it resumes
    assert main([*argv, "--resume"]) == 0
    assert (out / "final" / "config.json").is_file()


def test_an_out_inside_a_folder_another_run_keeps_is_refused(tmp_path, capsys, monkeypatch):
    """``drift --out CMP/runs`` wrote its files among compare's cached units; an eval into a
    training run's ``checkpoints/`` among its checkpoints."""
    cmp = tmp_path / "cmp"
    (cmp / "runs").mkdir(parents=True)
    (cmp / "compare.md").write_text("# compare\n")
    argv = ["drift", "--original", "tiny-random", "--rope", "pi:factor=2", "--quiet", "--out"]
    assert main([*argv, str(cmp / "runs")]) == 2
    err = capsys.readouterr().err
    runs = cmp / "runs"
    assert f"--out {runs} lies in {runs}, which `compare` keeps in its --out {cmp}" in err
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    (run / "metrics.jsonl").write_text("")
    eval_argv = ["eval", "--model", "tiny-random", "--suite", "ppl", "--dry-run", "--out"]
    assert main([*eval_argv, str(run / "checkpoints" / "e")]) == 2
    assert "which `train` keeps in its --out" in capsys.readouterr().err
    assert sorted(p.name for p in cmp.iterdir()) == ["compare.md", "runs"]  # nothing written
    assert main([*eval_argv, str(tmp_path / "elsewhere")]) == 0  # beside them, as before
    monkeypatch.chdir(cmp / "runs")  # a relative path out of them (its ".." taken): not in them
    assert main([*eval_argv, "../../elsewhere"]) == 0
    assert main([*eval_argv, "../mine"]) == 0  # beside runs/ in compare's folder: as before


def test_every_folder_the_suite_keeps_in_its_cache_is_refused_as_an_out() -> None:
    """The refused folders are a list: each ``cache_dir() / "name"`` of the source is on it."""
    import re
    from pathlib import Path

    from longred_bench.cli.outputs import CACHE_FOLDERS
    from longred_bench.evaluation.vllm import HF_MODELS_DIR

    root = Path(__file__).resolve().parents[1]
    named = {HF_MODELS_DIR}
    for path in [*root.glob("longred_bench/**/*.py"), *root.glob("training/**/*.py")]:
        named |= set(re.findall(r'cache_dir\(\) / "([^"]+)"', path.read_text()))
    assert len(named) > 5 and named <= set(CACHE_FOLDERS), named - set(CACHE_FOLDERS)
