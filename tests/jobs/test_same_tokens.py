"""Two models that must read the same token ids (drift's and compare's checkpoints against their
original, a training teacher, ``init`` or ``merge_with`` against the model, a profile's teacher)
are refused in one line naming both and what differs, before any weights load or any unit runs;
a checkpoint whose tokenizer has the same tokens at other ids is refused too, not trained on.
The models: tiny-random saved to a folder, its tokenizer or its embeddings changed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longred_bench.cli import main
from longred_bench.errors import UserError
from longred_bench.jobs.compare import check_tokenizers
from longred_bench.jobs.configs import CompareConfig


def _save_tiny(path: Path, *, rope: str | None = None, vocab_size: int | None = None) -> Path:
    from longred_bench.models.loading import extend, load

    loaded = load("tiny-random")
    model = extend(loaded.model, rope) if rope else loaded.model
    if vocab_size is not None:  # the same tokenizer, a padded embedding matrix
        model.resize_token_embeddings(vocab_size, mean_resizing=False)
    model.save_pretrained(path)
    loaded.tokenizer.save_pretrained(path)
    return path


def _permuted(path: Path, **kwargs) -> Path:
    """tiny-random with its byte tokens at other ids: the same strings, the same count."""
    _save_tiny(path, **kwargs)
    data = json.loads((path / "tokenizer.json").read_text())
    vocab = data["model"]["vocab"]
    plain = sorted((t for t in vocab if not t.startswith("<")), key=vocab.get)
    ids = [vocab[t] for t in plain]
    for token, new in zip(plain, ids[1:] + ids[:1], strict=True):
        vocab[token] = new
    (path / "tokenizer.json").write_text(json.dumps(data))
    return path


def _with_bos(path: Path) -> Path:
    """tiny-random's vocabulary, but a BOS added to every text."""
    _save_tiny(path)
    data = json.loads((path / "tokenizer.json").read_text())
    data["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                   {"Sequence": {"id": "A", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [256], "tokens": ["<s>"]}},
    }  # fmt: skip
    (path / "tokenizer.json").write_text(json.dumps(data))
    return path


def _never(*args, **kwargs):
    raise AssertionError("ran past the pre-check")


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err


def test_drift_refuses_another_tokenizer_before_the_weights_load(tmp_path, capsys, monkeypatch):
    import longred_bench.jobs.drift as drift

    monkeypatch.setattr(drift, "drift_command", _never)
    perm = _permuted(tmp_path / "perm")
    capsys.readouterr()  # the saves' progress bars
    argv = ["drift", "--original", "tiny-random", "--extended", str(perm), "--quiet"]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = _one_line_error(capsys)
    assert "tokenizer mismatch" in err and "'tiny-random' has 259 tokens" in err
    assert "at other ids, first '!'" in err  # what differs, where the counts agree


def test_drift_refuses_another_vocab_size_naming_both(tmp_path, capsys, monkeypatch):
    import longred_bench.jobs.drift as drift

    monkeypatch.setattr(drift, "drift_command", _never)
    padded = _save_tiny(tmp_path / "padded", vocab_size=320)
    capsys.readouterr()
    assert main(["drift", "--original", "tiny-random", "--extended", str(padded), "--out",
                 str(tmp_path / "out")]) == 2  # fmt: skip
    err = _one_line_error(capsys)
    assert "vocab_size 320" in err and "'tiny-random' 259" in err


def test_compare_refuses_before_its_evaluations_what_its_drift_would(tmp_path, capsys) -> None:
    padded = str(_save_tiny(tmp_path / "padded", vocab_size=320))
    check_tokenizers(CompareConfig(original="tiny-random", extended=(padded,), suites=("ruler",)))
    cfg = CompareConfig(original="tiny-random", extended=(padded,), suites=("ruler", "drift"))
    with pytest.raises(UserError, match=r"has vocab_size 320, the original 'tiny-random' 259"):
        check_tokenizers(cfg)


def test_compare_notes_a_checkpoint_that_encodes_texts_otherwise(tmp_path, capsys) -> None:
    same = str(_save_tiny(tmp_path / "same"))
    bos = str(_with_bos(tmp_path / "bos"))
    capsys.readouterr()
    check_tokenizers(CompareConfig(original="tiny-random", extended=(same,), suites=("ruler",)))
    assert capsys.readouterr().err == ""
    check_tokenizers(CompareConfig(original="tiny-random", extended=(bos,), suites=("ruler",)))
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"[compare] note: '{bos}' encodes a text")


def test_pairs_are_all_checked_before_the_first_runs(tmp_path, capsys, monkeypatch) -> None:
    import yaml

    import longred_bench.jobs.compare as compare

    ran = []
    monkeypatch.setattr(compare, "compare_command", lambda cfg, out, **kw: ran.append(cfg) or [])
    good = _save_tiny(tmp_path / "good", rope="pi:factor=4")
    perm = _permuted(tmp_path / "perm", rope="pi:factor=4")
    pairs = {"settings": {"suites": ["ruler"], "lengths": [1024]},
             "pairs": [{"original": "tiny-random", "window": 256,
                        "extended": [{"model": str(good), "window": 1024}]},
                       {"original": str(good), "window": 1024,  # as its config says
                        "extended": [{"model": str(perm), "window": 1024}]}]}  # fmt: skip
    (tmp_path / "pairs.yaml").write_text(yaml.safe_dump(pairs))
    capsys.readouterr()
    argv = ["compare", "--pairs", str(tmp_path / "pairs.yaml"), "--out", str(tmp_path / "out")]
    assert main(argv) == 2
    err = _one_line_error(capsys)
    assert err.startswith(f"error: pair {good}: compare: tokenizer mismatch: '{perm}'")
    assert ran == []  # the first pair did not run first


@pytest.mark.parametrize("recipe, key, kwargs", [
    ("longred", "teacher", {}),
    ("linearard", "init", {"rope": "abf:theta=4e5"}),
    ("merge", "merge_with", {"rope": "abf:theta=4e5"}),
])  # fmt: skip
def test_train_refuses_a_model_of_another_tokenizer_before_loading(
    tmp_path, capsys, monkeypatch, recipe, key, kwargs
) -> None:
    import longred_bench.jobs.train as train

    monkeypatch.setattr(train, "train_command", _never)
    perm = _permuted(tmp_path / "perm", **kwargs)
    capsys.readouterr()
    sets = [f"{key}={perm}", *(["rope=abf:theta=4e5"] if key == "init" else [])]
    argv = ["train", "--recipe", recipe, "--profile", "smoke", "--set", *sets]
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    err = _one_line_error(capsys)
    assert err.startswith(f"error: train: {key}: tokenizer mismatch: '{perm}' has 259 tokens")
    assert "at other ids" in err


def test_train_checks_a_teacher_only_where_the_recipe_has_one(tmp_path, monkeypatch, capsys):
    """A teacher given to a recipe that distils from none is refused as such (it would never
    load), not by its tokenizer."""
    import longred_bench.jobs.train as train

    monkeypatch.setattr(train, "train_command", lambda *a, **k: None)
    perm = _permuted(tmp_path / "perm")
    argv = ["train", "--recipe", "cpt", "--profile", "smoke", "--set", f"teacher={perm}"]
    capsys.readouterr()
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    assert "teacher is for the recipes that distil from one" in _one_line_error(capsys)


def test_a_longred_teacher_of_another_vocab_size_is_refused_where_drift_picks_layers(
    tmp_path, capsys, monkeypatch
) -> None:
    import longred_bench.jobs.train as train

    monkeypatch.setattr(train, "train_command", lambda *a, **k: None)
    padded = _save_tiny(tmp_path / "padded", vocab_size=320)
    argv = ["train", "--recipe", "longred", "--profile", "smoke", "--out", str(tmp_path / "o"),
            "--set", f"teacher={padded}"]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 2
    err = _one_line_error(capsys)
    assert "vocab_size 320, model 'tiny-random' 259" in err and "layers=[...]" in err
    assert main([*argv, "layers=[1,2]"]) == 0  # layers given: no drift between the two


def test_reproduce_refuses_a_profiles_teacher_before_the_unit_runs(
    tmp_path, capsys, monkeypatch
) -> None:
    from longred_bench.reproduce import cluster

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(cluster, "run_unit", _never)
    perm = _permuted(tmp_path / "perm")
    mine = tmp_path / "mine.yaml"
    capsys.readouterr()
    mine.write_text(f"extends: smoke\ntraining:\n  longred:\n    teacher: {perm}\n")
    unit = "train_longred-c_abf:theta=1e5_seed_0"
    assert main(["reproduce", "table10", "--profile", str(mine), "--unit", unit]) == 2
    err = _one_line_error(capsys)
    assert err.startswith(f"error: profile {mine}: train longred-c abf:theta=1e5 seed 0: train: "
                          f"teacher: tokenizer mismatch: '{perm}'")  # fmt: skip


@pytest.mark.parametrize("recipe, key, sets", [
    ("longred", "teacher", []),
    ("linearard", "init", ["rope=abf:theta=4e5"]),
    ("merge", "merge_with", []),
])  # fmt: skip
@pytest.mark.parametrize("dry_run", [False, True])
def test_train_refuses_tiny_base_of_another_shape_without_building_it(
    tmp_path, capsys, monkeypatch, recipe, key, sets, dry_run
) -> None:
    """tiny-base (not built) as the teacher, init or merge partner of tiny-random: refused from
    its recipe's architecture, by the dry run too, and its 15-minute build never starts."""
    import longred_bench.jobs.train as train
    from longred_bench.models import builders

    monkeypatch.setattr(train, "train_command", _never)
    monkeypatch.setitem(builders.BUILDERS, "tiny-base", _never)
    argv = ["train", "--recipe", recipe, "--profile", "smoke", "--out", str(tmp_path / "o"),
            "--set", f"{key}=tiny-base", *sets, *(["--dry-run"] if dry_run else [])]  # fmt: skip
    capsys.readouterr()
    assert main(argv) == 2
    err = _one_line_error(capsys)
    assert err.startswith(f"error: train: {key} 'tiny-base' has another architecture than model "
                          "'tiny-random' (hidden_size 128 against 64)")  # fmt: skip


def test_a_dry_run_on_tiny_base_reads_its_window_without_building_it(capsys, monkeypatch) -> None:
    """``train --dry-run`` of an extension of tiny-base (its window read for the plan and the
    length checks) builds nothing."""
    from longred_bench.models import builders

    monkeypatch.setitem(builders.BUILDERS, "tiny-base", _never)
    capsys.readouterr()
    assert main(["train", "--recipe", "cpt", "--profile", "tiny", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "stream long: 8 rows x 1024 tokens per step" in out
