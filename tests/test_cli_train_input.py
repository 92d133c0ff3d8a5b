"""Bad input to ``train`` ends in one line before any training compute: a config file that is
not YAML or names another recipe or profile, ``--set`` items and values it cannot take, a
missing ``init`` or ``merge_with``, a device this machine lacks, a teacher for a recipe that
distils from none, another method's own setting; a dry run still plans for any device."""

from __future__ import annotations

import pytest
from cli_helpers import one_line_error as _one_line_error

from longred_bench.cli import main


def test_a_training_config_that_is_not_yaml_is_one_line(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("lr: [1, 2\nsteps: 3\n")
    argv = ["train", "--recipe", "cpt", "--profile", "smoke", "--dry-run", "--config", str(bad)]
    # the parser's reason too (it said only the line)
    _one_line_error(capsys, argv, f"config file {bad}: not valid YAML at line 2 (expected ',' or "
                    "']', but got ':'); fix the file")  # fmt: skip
    listed = tmp_path / "list.yaml"
    listed.write_text("- 1\n- 2\n")
    argv[-1] = str(listed)
    _one_line_error(capsys, argv, "must hold a mapping of keys to values")


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("steps=[1", "--set 'steps=[1': VALUE is not YAML (expected ',' or ']'"),
        ("steps=@x", "--set 'steps=@x': VALUE is not YAML (found character '@'"),
        ("recipe=cpt", "--set 'recipe=cpt': give the recipe with --recipe, not --set"),
        ("profile=tiny", "--set 'profile=tiny': give the profile with --profile, not --set"),
    ],
)
def test_a_set_item_train_cannot_take_is_one_line(capsys, item, message) -> None:
    """A value that is not YAML was a traceback; recipe and profile were overwritten by the
    flags without a word."""
    argv = ["train", "--recipe", "longred", "--profile", "smoke", "--dry-run", "--set", item]
    _one_line_error(capsys, argv, message)


def test_an_unknown_set_key_names_the_key_meant_and_lists_only_what_set_takes(capsys) -> None:
    """The list of known keys offered ``profile`` and ``recipe``, which ``--set`` refuses, and
    named no key where one was close (``warmup``)."""
    argv = ["train", "--recipe", "cpt", "--profile", "smoke", "--dry-run", "--set", "warmup=3"]
    err = _one_line_error(capsys, argv, "unknown training config key(s) warmup (warmup: did "
                          "you mean warmup_steps?); known: a1, a2, ")  # fmt: skip
    known = err.split("known: ")[1].split(", ")
    assert "steps" in known and "profile" not in known and "recipe" not in known


def test_a_set_key_given_twice_is_one_line_and_a_groups_settings_are_each_their_own(
    capsys,
) -> None:
    """The last value won without a word (``steps=2 steps=5`` trained 5 steps)."""
    argv = ["train", "--recipe", "longred", "--profile", "smoke", "--dry-run", "--set", "steps=2"]
    message = "--set 'steps=5': steps is already set by 'steps=2'; give each key once"
    _one_line_error(capsys, [*argv, "steps=5"], message)
    _one_line_error(capsys, [*argv, "--set", "steps=5"], message)  # in another --set too
    group = "longred.a1=5", "longred.a2=3"
    assert main([*argv[:-1], *group]) == 0  # two settings of one group: not a repeat
    again = "--set 'longred.a1=6': longred.a1 is already set by 'longred.a1=5'"
    _one_line_error(capsys, [*argv[:-1], *group, "longred.a1=6"], again)


def test_a_config_file_naming_another_recipe_or_profile_is_one_line(capsys, tmp_path) -> None:
    """A --config file's recipe and profile were overwritten by the flags without a word (a
    run's saved config.yaml given with another --recipe trained that recipe on its keys); the
    saved config.yaml of the same recipe and profile runs."""
    import yaml

    from longred_bench.training.config import resolve_config

    saved = tmp_path / "config.yaml"
    saved.write_text(yaml.safe_dump(resolve_config("longred", profile="smoke").to_dict()))
    argv = ["train", "--config", str(saved), "--dry-run"]
    assert main(["train", "--recipe", "longred", "--profile", "smoke", *argv[1:]]) == 0
    capsys.readouterr()
    _one_line_error(
        capsys,
        ["train", "--recipe", "cpt", "--profile", "smoke", *argv[1:]],
        f"train: --config {saved} says recipe: longred, the run is recipe cpt: give "
        "the recipe with --recipe, and drop it from the file or make them agree",
    )
    _one_line_error(capsys, ["train", "--recipe", "longred", "--profile", "tiny", *argv[1:]],
                    f"train: --config {saved} says profile: smoke, the run is profile tiny: "
                    "give the profile with --profile, and drop it from the file or make them "
                    "agree")  # fmt: skip


@pytest.mark.parametrize(
    ("recipe", "sets"),
    [("linearard", ["init={gone}", "rope=pi:factor=2"]), ("merge", ["merge_with={gone}"])],
)
def test_a_dry_run_refuses_a_missing_init_or_merge_with(capsys, tmp_path, recipe, sets) -> None:
    """A dry run checked the model and teacher only: a missing init checkpoint or merge_with
    model printed a plan the run then refused. The error names the key that gave the path."""
    gone = tmp_path / "no-such-run" / "final"
    argv = ["train", "--recipe", recipe, "--profile", "smoke", "--dry-run", "--set"]
    key = sets[0].split("=")[0]
    _one_line_error(capsys, [*argv, *(s.format(gone=gone) for s in sets)],
                    f"train: {key}: model '{gone}': no such folder")  # fmt: skip


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("layers=[a,b]", "train: layers takes whole numbers, got 'a' in ['a', 'b']"),
        ("layers=[1.5]", "train: layers takes whole numbers, got 1.5 in [1.5]"),
        ("layers=[true]", "train: layers takes whole numbers, got True in [True]"),
        ("betas=[0.9,x]", "train: betas takes numbers, got 'x' in [0.9, 'x']"),
        ("snapshot_steps=[x]", "train: snapshot_steps takes whole numbers, got 'x' in ['x']"),
        ("device=tpu", "train: device 'tpu' is not a device torch knows: use cpu, cuda or cuda:N"),
    ],
)
def test_a_training_value_that_failed_after_loading_is_one_line(capsys, tmp_path, item, message):
    """Each was a traceback: in the config's own checks (snapshot_steps), or once the model had
    loaded (a TypeError choosing layers, torch's device parser). A dry run refuses them too (a
    device name torch does not know was planned), and the same values from a --config file."""
    argv = ["train", "--recipe", "longred", "--profile", "smoke", "--set", item, "--out"]
    _one_line_error(capsys, [*argv, str(tmp_path / "run")], message)
    assert not (tmp_path / "run").exists()
    _one_line_error(capsys, [*argv[:-1], "--dry-run"], message)
    key, value = item.split("=", 1)
    (tmp_path / "c.yaml").write_text(f"{key}: {value}\n")
    argv = ["train", "--recipe", "longred", "--profile", "smoke", "--dry-run", "--config"]
    _one_line_error(capsys, [*argv, str(tmp_path / "c.yaml")], message)


def test_a_dry_run_plans_for_a_device_this_machine_lacks(capsys, tmp_path) -> None:
    """A dry run plans a GPU run on any machine; the run itself is refused where torch sees no
    CUDA device."""
    import torch

    argv = ["train", "--recipe", "cpt", "--profile", "smoke", "--set", "device=cuda"]
    assert main([*argv, "--dry-run"]) == 0
    assert "device: cuda" in capsys.readouterr().out
    if not torch.cuda.is_available():
        out = tmp_path / "run"
        message = f"train: device cuda: torch {torch.__version__} sees no CUDA device here"
        _one_line_error(capsys, [*argv, "--out", str(out)], f"{message}; use --set device=cpu")
        assert not out.exists()


@pytest.mark.parametrize("recipe", ["cpt", "pose", "control"])
def test_a_teacher_for_a_recipe_that_distils_from_none_is_refused(tmp_path, capsys, recipe):
    """It went into the run's config and cache key and was never loaded."""
    argv = ["train", "--recipe", recipe, "--profile", "smoke", "--set", "teacher=tiny-random"]
    message = (f"train: teacher is for the recipes that distil from one (longred, linearard); "
               f"{recipe} has none: drop it")  # fmt: skip
    _one_line_error(capsys, [*argv, "--dry-run"], message)
    _one_line_error(capsys, [*argv, "--out", str(tmp_path / "o")], "teacher is for the recipes")
    assert not (tmp_path / "o").exists()
    distil = ["train", "--recipe", "longred", "--profile", "smoke", "--dry-run"]
    assert main([*distil, "--set", "teacher=tiny-random"]) == 0


@pytest.mark.parametrize(
    ("recipe", "item", "owner"),
    [
        ("cpt", "a1=3", "longred"),
        ("pose", "lora_rank=4", "linearard"),
        ("longred", "impl=triton", "linearard"),
        ("linearard", "merge_weight=0.3", "longrecipe or merge"),
        ("control", "vocab_size=100", "pretrain"),
    ],
)
def test_a_method_setting_for_a_recipe_that_does_not_run_it_is_refused(
    tmp_path, capsys, recipe, item, owner
) -> None:
    """It went into the run's config and cache key and changed nothing."""
    key = item.split("=")[0]
    message = (f"train: {key} is a setting of {owner}, which recipe {recipe} does not run: drop "
               f"it, or train --recipe {owner}")  # fmt: skip
    argv = ["train", "--recipe", recipe, "--profile", "smoke", "--dry-run"]
    _one_line_error(capsys, [*argv, "--set", item], message)
    given = tmp_path / "given.yaml"
    given.write_text(item.replace("=", ": ") + "\n")
    _one_line_error(capsys, [*argv, "--config", str(given)], message)


def test_method_settings_a_recipe_runs_or_leaves_as_they_are_pass(tmp_path, capsys) -> None:
    """The recipe's own settings; another method's at the value the run has anyway (smoke's
    profile gives every recipe top_m 1); and a run's
    saved config.yaml (every key, written as the run resolved it) given back to its recipe."""
    import yaml

    from longred_bench.training.config import resolve_config

    argv = ["train", "--profile", "smoke", "--dry-run"]
    assert main([*argv, "--recipe", "longred", "--set", "a1=3", "impl=auto"]) == 0
    assert "a1: 3" in capsys.readouterr().out
    assert main([*argv, "--recipe", "longrecipe", "--set", "merge_weight=0.3"]) == 0
    assert main([*argv, "--recipe", "cpt", "--set", "a1=5", "top_m=1", "ard_kinds=[q,k,v]"]) == 0
    for recipe in ("cpt", "linearard", "longred"):
        saved = tmp_path / f"{recipe}.yaml"
        cfg = resolve_config(recipe, profile="smoke", overrides={"rope": "pi:factor=2"})
        saved.write_text(yaml.safe_dump(cfg.to_dict(), sort_keys=True))
        assert main([*argv, "--recipe", recipe, "--config", str(saved)]) == 0
    # copy_fraction is the pretrain data's share of copy episodes, for whichever recipe streams
    # it; a lone value for a list key is the list of it.
    data = ["long_data=pretrain", "copy_fraction=0.1"]
    assert main([*argv, "--recipe", "control", "--set", *data]) == 0
    assert main([*argv, "--recipe", "cpt", "--set", "copy_stages=8"]) == 0


def test_a_run_saved_with_another_methods_setting_still_resumes(tmp_path, capsys) -> None:
    """A run saved before the check with a1=3 for cpt: its own command (the same value) passes
    the check, so --resume is not caught between it and the run's own config check."""
    import yaml

    from longred_bench.training.config import resolve_config

    out = tmp_path / "run"
    out.mkdir()
    saved = resolve_config("cpt", profile="smoke").to_dict() | {"a1": 3.0}
    (out / "config.yaml").write_text(yaml.safe_dump(saved, sort_keys=True))
    argv = ["train", "--recipe", "cpt", "--profile", "smoke", "--dry-run", "--out", str(out)]
    assert main([*argv, "--set", "a1=3"]) == 0
    _one_line_error(capsys, [*argv, "--set", "a1=4"], "train: a1 is a setting of longred")


def test_errors_name_the_key_or_file_at_fault(tmp_path, capsys) -> None:
    """keep_checkpoints=0 was reported as "grad_clip must be > 0 and keep_checkpoints >= 1";
    a --config folder as a file that "does not exist"."""
    argv = ["train", "--recipe", "cpt", "--profile", "smoke", "--dry-run"]
    _one_line_error(capsys, [*argv, "--set", "keep_checkpoints=0"],
                    "config keep_checkpoints must be >= 1 (got 0)")  # fmt: skip
    _one_line_error(capsys, [*argv, "--set", "grad_clip=0"], "config grad_clip must be > 0 (got")
    _one_line_error(capsys, [*argv, "--config", str(tmp_path)],
                    f"config file {tmp_path} is a folder: give a YAML file")  # fmt: skip


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("dtype=bf17", "config dtype='bf17' is not a torch floating dtype (or auto)"),
        ("long_len=2048", "long_len=2048 exceeds the extended window (1024) of rope=abf:theta=1e5"),
        ("long_len=128", "long_len=128 is not above the original window (256)"),
    ],
)
def test_a_dry_run_refuses_what_the_run_would(capsys, item, message) -> None:
    """The plan printed in full for values the run then refused at its start."""
    argv = ["train", "--recipe", "cpt", "--profile", "smoke", "--dry-run", "--set", item]
    _one_line_error(capsys, argv, message)


def test_a_profile_given_as_config_is_named_as_one(tmp_path, capsys) -> None:
    """``profiles new`` writes a profile; given to ``train --config`` (where a run's saved
    config goes) it listed 70 known keys; it says which flag takes it."""
    mine = tmp_path / "my.yaml"
    assert main(["profiles", "new", "--from", "smoke", "--out", str(mine)]) == 0
    capsys.readouterr()
    argv = ["train", "--recipe", "longred", "--config", str(mine), "--dry-run"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: train: --config {mine} is a profile (it has ")
    assert err.endswith(f"not a training config: give it as --profile {mine}")


@pytest.mark.parametrize(
    ("recipe", "item", "key"),
    [("cpt", 'model=""', "model"), ("longred", 'teacher=" "', "teacher")],
)
def test_an_empty_model_spec_is_refused_not_made_this_folder(
    tmp_path, monkeypatch, capsys, recipe, item, key
) -> None:
    """``model: ""`` (or a teacher) was made absolute, the working folder: a model there was
    trained from, or distilled from, without a word."""
    monkeypatch.chdir(tmp_path)
    argv = ["train", "--recipe", recipe, "--profile", "smoke", "--set", item, "--dry-run"]
    _one_line_error(capsys, argv, f"train: {key}: a model spec is empty")


@pytest.mark.parametrize("recipe, sets", [("linearard", ["init=tiny-random"]),
                                          ("merge", ["merge_with=tiny-random"])])  # fmt: skip
def test_a_folder_of_another_run_is_refused_before_the_models_are_compared(
    tmp_path, monkeypatch, capsys, recipe, sets
) -> None:
    """``train --out`` a folder holding a finished run of another config is refused from its
    files, before init's or merge_with's tokenizer and config are compared with the model's:
    that comparison builds tiny-base (15 minutes) where it is not built yet."""
    import yaml

    import longred_bench.jobs.same_tokens as same_tokens
    from longred_bench.training.config import resolve_config

    def compared(*_args, **_kwargs):
        raise AssertionError("the models were compared before the folder was checked")

    monkeypatch.setattr(same_tokens, "check_training_models", compared)
    out = tmp_path / "run"
    (out / "final").mkdir(parents=True)
    (out / "final" / "config.json").write_text("{}")
    (out / "run.json").write_text("{}")
    other = resolve_config("cpt", profile="tiny").to_dict() | {"lr": 1.0e-3}
    (out / "config.yaml").write_text(yaml.safe_dump(other, sort_keys=True))
    argv = ["train", "--recipe", recipe, "--profile", "tiny", "--out", str(out), "--set", *sets]
    _one_line_error(capsys, argv, "of another config")
    assert sorted(p.name for p in out.iterdir()) == ["config.yaml", "final", "run.json"]
