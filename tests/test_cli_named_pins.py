"""What :mod:`longred_bench.cli.named` checks before anything loads, pinned: a mistyped zoo
name and a file that is no GGUF in a dry run; a local model folder whose ``config.json`` is no
JSON, holds a special token id (pad, BOS, EOS, one id or a list) at or above its ``vocab_size``,
or whose Unigram tokenizer outgrows it; an edited folder inside the cache left to the loader;
the text sources that name no file (``random``, ``corpus:split``) and a ``--corpus`` file; and
when drift warns that its windows run past the original's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_helpers import one_line_error

from longred_bench.cli.named import check_model_files
from longred_bench.errors import UserError


def _folder(tmp_path: Path, config: dict | str) -> Path:
    """A model folder holding ``config`` as its ``config.json`` (a string as it is)."""
    folder = tmp_path / "m"
    folder.mkdir()
    text = config if isinstance(config, str) else json.dumps(config)
    (folder / "config.json").write_text(text)
    return folder


def test_a_dry_run_refuses_a_mistyped_zoo_name(capsys) -> None:
    """A dry run asks no hub, so a name close to a zoo model is refused, naming the one meant."""
    argv = ["eval", "--model", "tiny-randm", "--suite", "short_tiny", "--dry-run"]
    one_line_error(capsys, argv, "model 'tiny-randm' is not a zoo name or a local path (did you "
                                 "mean tiny-random?)")  # fmt: skip


def test_a_config_that_is_no_json_is_one_line(tmp_path, capsys) -> None:
    """A ``config.json`` that does not parse is named so, before transformers reads it."""
    folder = _folder(tmp_path, "{not json")
    argv = ["eval", "--model", str(folder), "--suite", "short_tiny", "--out", str(tmp_path / "o")]
    one_line_error(capsys, argv, f"model '{folder}': its config.json does not read as JSON (")


@pytest.mark.parametrize(
    ("key", "ids", "bad"),
    [("pad_token_id", 250, 250), ("bos_token_id", 251, 251), ("eos_token_id", [1, 260], 260)],
)
def test_a_special_token_id_at_or_past_the_vocabulary_is_refused(tmp_path, key, ids, bad) -> None:
    """Each special id (pad, BOS, EOS; one id or a list) must lie below ``vocab_size``: the
    first that does not is named, an id equal to it too."""
    folder = _folder(tmp_path, {"model_type": "llama", "vocab_size": 250, key: ids})
    message = f"its config.json's {key} {bad} is not below its vocab_size 250"
    with pytest.raises(UserError, match=message):
        check_model_files(str(folder))


def test_special_token_ids_below_the_vocabulary_pass(tmp_path) -> None:
    """Ids under ``vocab_size`` (a list of EOS ids too) and a missing id are taken."""
    config = {"model_type": "llama", "vocab_size": 250, "pad_token_id": None,
              "bos_token_id": 249, "eos_token_id": [0, 249]}  # fmt: skip
    check_model_files(str(_folder(tmp_path, config)))


def test_a_dry_run_refuses_a_file_that_is_no_gguf(tmp_path, capsys) -> None:
    """A dry run reads no weights, yet a ``.gguf`` without the GGUF magic bytes is refused."""
    spec = tmp_path / "m.gguf"
    spec.write_text("junk\n")
    argv = ["eval", "--model", str(spec), "--suite", "short_tiny", "--dry-run"]
    one_line_error(capsys, argv, f"model '{spec}' is not a GGUF file (no GGUF magic bytes")


def test_a_unigram_tokenizer_larger_than_the_vocabulary_is_refused(tmp_path) -> None:
    """A Unigram ``tokenizer.json`` (its vocabulary a list of ``[token, score]`` pairs) counts
    its entries against ``vocab_size`` as a BPE one counts its ids."""
    folder = _folder(tmp_path, {"model_type": "llama", "vocab_size": 250})
    vocab = [[f"t{i}", -1.0] for i in range(300)]
    (folder / "tokenizer.json").write_text(
        json.dumps({"model": {"type": "Unigram", "vocab": vocab}})
    )
    with pytest.raises(UserError, match=r"its tokenizer\.json holds 300 tokens, its config\.json's "
                                        "vocab_size is 250"):  # fmt: skip
        check_model_files(str(folder))


def test_an_edited_folder_inside_the_cache_is_left_to_the_loader(tmp_path, monkeypatch) -> None:
    """A cache entry whose files differ from its manifest is not called a copied folder: the
    loader's own check (and its advice) stands for it."""
    from longred_bench.cache import write_manifest

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "models" / "m"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "window": 8192}))
    write_manifest(folder)
    (folder / "config.json").write_text(json.dumps({"model_type": "llama", "window": 512}))
    check_model_files(str(folder))


def test_random_and_corpus_splits_name_no_file(tmp_path, monkeypatch) -> None:
    """``random`` and ``corpus:split`` are text sources by name: kept as given even where a file
    of that name lies in the working folder, and taken by the ``--corpus`` check."""
    from longred_bench.cli.named import check_corpus_name, local_text

    monkeypatch.chdir(tmp_path)
    for name in ("random", "kjv:test", "austen"):
        (tmp_path / name).write_text("a file of that name\n")
        assert local_text(name) == name
        (tmp_path / name).unlink()
        check_corpus_name(name)


def test_the_corpus_check_takes_a_file_and_refuses_a_name_that_is_neither(tmp_path) -> None:
    """An existing text file is a ``--corpus`` (named absolute by ``local_text``); a name that
    is no corpus and no file is refused, listing the corpora."""
    from longred_bench.cli.named import check_corpus_name, local_text

    text = tmp_path / "notes.txt"
    text.write_text("some text\n")
    check_corpus_name(str(text))
    assert local_text(str(text)) == str(text.resolve())
    with pytest.raises(
        UserError,
        match=r"^--corpus 'austn' is neither a corpus \(.*austen.*\) nor a file \(did "
        r"you mean austen\?\)$",
    ):
        check_corpus_name("austn")


def test_drift_warns_only_past_the_originals_window_and_within_a_compared_one(
    tmp_path, capsys
) -> None:
    """The warning needs windows longer than the original's (256 tokens for ``tiny-random``)
    that some compared model holds: an extension's window, or an ``--extended`` model's own
    (read from its ``config.json``); a window of exactly the original's length is within it."""
    from longred_bench.cli.named import config_if_at_hand, warn_past_window

    said = "warning: drift: --seq-len 1024 is beyond the original's 256-token window"
    warn_past_window("tiny-random", 256, ("pi:factor=4",))
    assert capsys.readouterr().err == ""
    warn_past_window("tiny-random", 1024, ("pi:factor=4",))  # 1,024 tokens: the extension's
    assert capsys.readouterr().err.startswith(said)
    extended = tmp_path / "ext"
    extended.mkdir()
    config = {**config_if_at_hand("tiny-random").to_dict(), "max_position_embeddings": 1024}
    (extended / "config.json").write_text(json.dumps(config))
    warn_past_window("tiny-random", 1024, (), (str(extended),))
    assert capsys.readouterr().err.startswith(said)


@pytest.mark.parametrize(
    "rope", [{"rope_scaling": {"type": "dynamic", "factor": 2.0}},
             {"rope_scaling": {"rope_type": "longrope"}}, {"rope_parameters": {"type": "dynamic"}}],
)  # fmt: skip
def test_pcd_reads_a_moving_rope_type_under_either_key_of_a_config(tmp_path, rope) -> None:
    """A local config's RoPE type is read from ``rope_parameters`` or the older ``rope_scaling``,
    under ``rope_type`` or the older ``type``: a moving one is refused for PCD."""
    from longred_bench.cli.named import check_pcd_rope_type

    folder = _folder(tmp_path, {"model_type": "llama", **rope})
    with pytest.raises(UserError, match=f"{folder}'s own RoPE is '(dynamic|longrope)'"):
        check_pcd_rope_type(str(folder), None)
    check_pcd_rope_type(str(folder), "yarn:factor=2")  # a --rope given replaces the model's own


def test_a_pairs_files_extended_models_are_checked_as_its_originals(tmp_path, capsys) -> None:
    """An extended model of a pairs file that is a missing local path is refused at the dry
    run, as its original would be."""
    pairs = tmp_path / "p.yaml"
    pairs.write_text("settings: {}\npairs:\n  - {original: tiny-random, window: 256, extended: "
                     "[{model: ./no-such-ext, window: 256}]}\n")  # fmt: skip
    argv = ["compare", "--pairs", str(pairs), "--dry-run"]
    one_line_error(capsys, argv, "model './no-such-ext': no such folder")
