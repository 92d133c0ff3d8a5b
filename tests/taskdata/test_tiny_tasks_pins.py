"""The entry point of the tiny tasks (``tiny_tasks``) with stand-in documents and builders:
which documents a build reads, which arguments reach a builder, where its rows are stored and
how guessing is scored."""

from __future__ import annotations

from pathlib import Path

import pytest

from longred_bench.data.corpora import Document
from longred_bench.errors import UserError
from longred_bench.taskdata import tiny_tasks

DOCS = {
    ("sotu", "test"): [Document("sotu", "s1", "s1", "One."), Document("sotu", "s2", "s2", "Two.")],
    ("kjv", "test"): [Document("kjv", "k1", "k1", "Three.")],
}


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, Path | None]]:
    """Stand-in corpora: every ``load_documents`` call is recorded."""
    calls: list[tuple[str, str, Path | None]] = []

    def load(corpus: str, split: str = "all", *, cache: Path | None = None) -> list[Document]:
        calls.append((corpus, split, cache))
        return list(DOCS[corpus, split])

    monkeypatch.setattr(tiny_tasks, "load_documents", load)
    return calls


def test_held_out_documents_are_the_test_splits_corpus_by_corpus(reads, tmp_path):
    """Each corpus's test split is read, in the order given, from the cache given."""
    documents = tiny_tasks.held_out_documents(("kjv", "sotu"), cache=tmp_path)
    assert [d.doc_id for d in documents] == ["k1", "s1", "s2"]
    assert reads == [("kjv", "test", tmp_path), ("sotu", "test", tmp_path)]


@pytest.mark.parametrize("corpora", [("sotu", "essays"), ("essays",), ()])
def test_unknown_or_no_corpora_are_refused_before_anything_is_read(reads, corpora):
    """An unknown corpus, or none at all, is a clear error before any corpus is read."""
    with pytest.raises(UserError, match=r"unknown corpora \["):
        tiny_tasks.held_out_documents(corpora)
    assert reads == []


def _recording(monkeypatch: pytest.MonkeyPatch) -> list[tuple]:
    calls: list[tuple] = []

    def builder(name: str):
        def build(documents, n, seed, **kwargs):
            calls.append((name, [d.doc_id for d in documents], n, seed, kwargs))
            return [{"task": name, "k": k} for k in range(n)]

        return build

    for task in tiny_tasks.TASKS:
        monkeypatch.setitem(tiny_tasks.BUILDERS, task, builder(task))
    monkeypatch.setattr(tiny_tasks, "build_passkey", builder("passkey"))
    return calls


def test_a_build_passes_its_size_seed_and_phrasing_to_the_builder(reads, monkeypatch, tmp_path):
    """``n`` defaults to the task's size; passkey gets its phrasing (``heldout`` by default),
    other tasks none; rows are stored under the cache root given."""
    calls = _recording(monkeypatch)
    rows = tiny_tasks.build("ppl", n=3, seed=9, cache=tmp_path)
    assert rows == [{"task": "ppl", "k": k} for k in range(3)]
    assert calls[-1] == ("ppl", ["s1", "s2"], 3, 9, {})
    tiny_tasks.build("swap", corpora=("kjv",), cache=tmp_path)
    assert calls[-1] == ("swap", ["k1"], 1000, 1234, {})
    tiny_tasks.build("passkey", n=2, cache=tmp_path)
    assert calls[-1] == ("passkey", ["s1", "s2"], 2, 1234, {"phrasing": "heldout"})
    tiny_tasks.build("passkey", n=2, cache=tmp_path, phrasing="train")
    assert calls[-1] == ("passkey", ["s1", "s2"], 2, 1234, {"phrasing": "train"})
    stored = sorted(p.name.rsplit("-", 1)[0] for p in (tmp_path / "tiny_tasks").glob("*.jsonl"))
    assert stored == [
        "passkey-heldout-sotu-n2-seed1234",
        "passkey-train-sotu-n2-seed1234",
        "ppl-sotu-n3-seed9",
        "swap-kjv-n1000-seed1234",
    ]
    assert all(cache == tmp_path for _, _, cache in reads)


def test_a_build_without_a_cache_root_stores_under_the_default_one(reads, monkeypatch, tmp_path):
    """Without ``cache`` the rows are stored under the default cache root."""
    _recording(monkeypatch)
    monkeypatch.setattr(tiny_tasks, "cache_dir", lambda: tmp_path / "default")
    tiny_tasks.build("lastword", n=2)
    assert len(list((tmp_path / "default" / "tiny_tasks").glob("lastword-sotu-n2-*.jsonl"))) == 1


def test_each_task_has_its_documented_size():
    """1,000 rows for each choice task and 500 for ppl; every task has a builder."""
    assert tiny_tasks.SIZES == {"lastword": 1000, "nextsent": 1000, "swap": 1000,
                                "replace": 1000, "passkey": 1000, "ppl": 500}  # fmt: skip
    assert set(tiny_tasks.BUILDERS) == set(tiny_tasks.TASKS)


def test_chance_is_the_mean_of_one_over_each_rows_choices():
    """Chance accuracy is the mean of 1 / choices (contexts for nextsent); ppl has none."""
    rows = [{"choices": ["a", "b"]}, {"choices": ["a", "b", "c", "d"]}]
    for task in ("lastword", "swap", "replace", "passkey"):
        assert tiny_tasks.chance_accuracy(task, rows) == pytest.approx(0.375), task
    contexts = [{"contexts": ["a", "b", "c", "d"], "choices": ["x"]}, {"contexts": ["a", "b"]}]
    assert tiny_tasks.chance_accuracy("nextsent", contexts) == pytest.approx(0.375)
    with pytest.raises(UserError, match="no accuracy"):
        tiny_tasks.chance_accuracy("summaries", rows)
