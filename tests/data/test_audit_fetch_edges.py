"""Seeded random windows, Brown paragraphs at a line of spaces and a headline after running
text, and the fetch decisions: a forced fetch of a good entry replaces it, a source named twice
is verified once, a client's failure is cut to one line."""

from __future__ import annotations

from pathlib import Path

import torch

from longred_bench.cache import write_manifest
from longred_bench.data import decode_prose
from longred_bench.data import fetch as fetch_module
from longred_bench.data.texts import token_windows
from longred_bench.data.verify import verify
from longred_bench.models.zoo import byte_tokenizer


def test_random_windows_are_seeded() -> None:
    tok = byte_tokenizer()
    first = token_windows(tok, "random", 2, 16, seed=3)
    assert torch.equal(first, token_windows(tok, "random", 2, 16, seed=3))
    assert not torch.equal(first, token_windows(tok, "random", 2, 16, seed=4))


def test_a_line_of_spaces_ends_a_brown_paragraph() -> None:
    raw = "\tIt/pps rained/vbd ./.\n  \n\tWe/ppss left/vbd ./.\n"
    assert decode_prose.brown_text(raw) == "It rained.\n\nWe left."


def test_a_headline_after_running_text_follows_it() -> None:
    raw = "\tIt/pps failed/vbd ./.\nMerger/nn-hl proposed/vbn-hl\nIt/pps ended/vbd ./.\n"
    assert decode_prose.brown_text(raw) == "It failed.\n\nMerger proposed\n\nIt ended."


def test_a_forced_fetch_replaces_a_good_entry(tmp_path: Path) -> None:
    entry = tmp_path / "entry"
    assert fetch_module.needs_fetch(entry, force=True) == (True, False)  # nothing to replace
    entry.mkdir()
    (entry / "documents.jsonl").write_text("{}\n")
    write_manifest(entry)
    assert fetch_module.needs_fetch(entry, force=False) == (False, False)
    assert fetch_module.needs_fetch(entry, force=True) == (True, True)


def test_a_source_named_twice_is_verified_once(tmp_path: Path) -> None:
    assert [v.name for v in verify(["brown", "brown"], cache=tmp_path)] == ["brown"]


def test_a_clients_failure_is_one_line_of_at_most_300_characters() -> None:
    line = fetch_module._one_line("error:\n" + "x" * 400)
    assert "\n" not in line and len(line) == 300 and line.endswith("...")
    assert fetch_module._one_line("a\n  b") == "a b"


def test_verify_checks_a_fetched_model_once_and_skips_what_is_being_built(tmp_path: Path) -> None:
    """The fetched SmolLM2 entry is a source, not also a model built into the cache; a sample
    file inside a temporary folder (a build running or killed) is not an entry."""
    for folder in ("models/smollm2-135m", "models/built"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "config.json").write_text("{}")
        write_manifest(tmp_path / folder)
    (tmp_path / "ruler/.x.tmp-1").mkdir(parents=True)
    (tmp_path / "ruler/.x.tmp-1/rows.jsonl").write_text("{}\n")
    names = [v.name for v in verify(cache=tmp_path)]
    assert names.count("models/built") == 1 and "models/smollm2-135m" not in names
    assert not any(".tmp-" in name for name in names)
