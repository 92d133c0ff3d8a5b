"""Edges of the training data sources: which side of the fallback rule a unit's key names (for
every data key), which cached hub rows a spec reads, and which specs parse."""

from __future__ import annotations

import pytest

from longred_bench.data import hub_corpora
from longred_bench.data.corpus_spec import parse_member, parse_source
from longred_bench.data.source_documents import resolve_source, source_read
from longred_bench.errors import UserError
from longred_bench.jobs.local_files import sources_read

SPEC = "hf:org/books:field=body:docs=3|austen+kjv"


def test_the_key_names_the_fallback_offline_and_the_hub_spec_online(
    hub: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    from longred_bench.data import source_documents

    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    assert source_read(SPEC) == "austen+kjv"
    for key in ("long_data", "short_data", "s2l_data"):
        assert sources_read({key: SPEC}) == {"data_read": {key: "austen+kjv"}}
    monkeypatch.setattr(source_documents, "_CHOSEN", {})  # a new process, the hub answering
    monkeypatch.delenv("HF_DATASETS_OFFLINE")
    assert source_read(SPEC) == "hf:org/books:field=body:docs=3"
    assert sources_read({"long_data": "austin+kjv"}) == {}  # a bad spec: the unit refuses it


@pytest.mark.parametrize(
    "option", ["config=fr", "split=test", "field=title", "revision=v2", "docs=2"]
)
def test_cached_rows_serve_only_the_spec_they_were_read_for(
    hub: dict, monkeypatch: pytest.MonkeyPatch, option: str
) -> None:
    from longred_bench.data import source_documents

    resolve_source(SPEC)  # rows of org/books, field body, 3 docs cached
    monkeypatch.setattr(source_documents, "_CHOSEN", {})
    monkeypatch.setattr(hub_corpora, "_ENTRIES", {})
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    assert "hub" in resolve_source(SPEC).record  # the same spec: the cached rows
    other = f"hf:org/books:field=body:docs=3:{option}|austen+kjv"
    assert resolve_source(other).record["fallback"]["used"] == "austen+kjv"


def test_a_default_spelled_out_shares_the_cache_entry() -> None:
    short = parse_member("hf:org/books", "s")
    spelled = parse_member("hf:org/books:split=train:field=text:docs=1000", "s")
    assert hub_corpora.entry_dir(short) == hub_corpora.entry_dir(spelled)


def test_specs_at_the_edges_of_the_syntax(tmp_path) -> None:
    assert parse_member("txt:/data/run=1", "s").target == "/data/run=1"  # '=' in a path
    assert parse_source("austen+hf:org/x|kjv").fallback[0].spec == "kjv"  # hub not first
    assert parse_source("packed+austen").packed  # 'packed' anywhere
    assert parse_source("novel.txt").standalone  # a text file not written yet
    plus = tmp_path / "a+b.txt"
    plus.write_text("words")
    assert parse_source(str(plus)).standalone  # an existing file with '+' in its name
    for bad in ("hf:org/x:split=", "hf:org/x|txt:/d/a|kjv"):
        with pytest.raises(UserError, match="accepted forms"):
            parse_source(bad)
