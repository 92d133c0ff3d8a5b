"""How the tiny tasks cut passages and share samples out (``tiny_sampling``), on sentences and
documents written for the purpose: which runs of sentences are windows, how ``n`` is split over
corpora and interleaved, and what a row records of where its passage comes from."""

from __future__ import annotations

import inspect

import pytest

from longred_bench.data.corpora import Document
from longred_bench.data.sentences import Sentence
from longred_bench.errors import UserError
from longred_bench.taskdata import tiny_sampling, tiny_tasks
from longred_bench.taskdata.tiny_sampling import (
    _interleave,
    _quotas,
    _windows,
    _windows_ending,
    provenance,
    sample_rows,
)


def _sentences(*words: int | None) -> list[Sentence]:
    """Sentences of the given word counts; ``None`` is an unusable sentence of 10 words."""
    return [
        Sentence(10 * k, 10 * k + 9, 0, 10 if w is None else w, w is not None)
        for k, w in enumerate(words)
    ]


def _all(i: int, j: int) -> bool:
    return True


def test_windows_take_the_longest_run_from_each_start_and_do_not_overlap():
    """From each start the longest run within the word range is taken; the next starts after it."""
    assert _windows(_sentences(10, 10, 10, 10), (15, 25), _all) == [(0, 2), (2, 4)]
    assert _windows(_sentences(10, 10, 10, 10, 10), (15, 30), _all) == [(0, 3), (3, 5)]


def test_a_window_holds_the_least_and_the_most_words_allowed():
    """Both ends of the word range are allowed."""
    assert _windows(_sentences(10, 5), (15, 15), _all) == [(0, 2)]
    assert _windows(_sentences(10, 5), (16, 30), _all) == []
    assert _windows(_sentences(8, 8), (1, 15), _all) == [(0, 1), (1, 2)]


def test_windows_never_cross_an_unusable_sentence():
    """An unusable sentence ends a run and starts none."""
    assert _windows(_sentences(10, None, 10, 10), (15, 25), _all) == [(2, 4)]
    assert _windows(_sentences(10, 10, None, 10, 10), (15, 100), _all) == [(0, 2), (3, 5)]


def test_a_start_with_no_accepted_run_moves_on_by_one_sentence():
    """Runs are tried from every start: a rejected start does not skip the sentences after."""
    three = lambda i, j: j - i == 3  # noqa: E731
    assert _windows(_sentences(5, 5, 5, 5, 5, 5, 5), (0, 100), three) == [(0, 3), (3, 6)]
    odd = lambda i, j: i % 2 == 1  # noqa: E731
    assert _windows(_sentences(10, 10, 10, 10), (10, 20), odd) == [(1, 3), (3, 4)]


def test_windows_ending_give_one_run_per_end_sentence_overlapping():
    """Each usable sentence ends at most one run: the longest run of usable sentences before
    it within the most words, kept when it has the least words and is accepted."""
    sentences = _sentences(10, 10, 10, 10)
    assert _windows_ending(sentences, (15, 25), _all) == [(0, 2), (1, 3), (2, 4)]
    assert _windows_ending(sentences, (10, 10), _all) == [(0, 1), (1, 2), (2, 3), (3, 4)]
    assert _windows_ending(sentences, (20, 40), lambda i, j: j != 4) == [(0, 2), (0, 3)]


def test_windows_ending_stop_at_an_unusable_sentence_and_skip_unusable_ends():
    """A run stops at an unusable sentence before its end; unusable sentences end none."""
    sentences = _sentences(10, None, 10, 10, None)
    assert _windows_ending(sentences, (10, 30), _all) == [(0, 1), (2, 3), (2, 4)]
    assert _windows_ending(_sentences(20, 20), (21, 30), _all) == []


def test_quotas_split_evenly_and_the_first_corpora_take_the_remainder():
    """``n`` is split evenly; the first corpora take one more each for the remainder."""
    assert _quotas(7, ["a", "b", "c"]) == {"a": 3, "b": 2, "c": 2}
    assert _quotas(8, ["a", "b", "c"]) == {"a": 3, "b": 3, "c": 2}
    assert _quotas(6, ["a", "b", "c"]) == {"a": 2, "b": 2, "c": 2}
    assert _quotas(1, ["a", "b"]) == {"a": 1, "b": 0}


def test_interleave_takes_rows_rank_by_rank_across_groups():
    """Rows are taken first of each group, then second of each, and so on; short groups drop out."""
    groups = [[{"r": "a1"}, {"r": "a2"}, {"r": "a3"}], [{"r": "b1"}], [{"r": "c1"}, {"r": "c2"}]]
    assert [row["r"] for row in _interleave(groups)] == ["a1", "b1", "c1", "a2", "c2", "a3"]
    assert _interleave([]) == []


def test_provenance_spans_the_first_to_the_last_sentence_of_the_window():
    """A row's offsets run from its first sentence's start to its last sentence's end."""
    doc = Document("sotu", "1999", "t", "x" * 100)
    sentences = _sentences(5, 5, 5, 5)
    assert provenance(doc, sentences, 1, 3) == {
        "corpus": "sotu", "doc_id": "1999", "start": 10, "end": 29,
    }  # fmt: skip


def _doc(corpus: str, doc_id: str, sentences: int) -> Document:
    text = " ".join(f"Sentence {doc_id} number {k} is here." for k in range(sentences))
    return Document(corpus, doc_id, doc_id, text)


def _row(candidate, rng):
    doc, sentences, i, j = candidate
    text = doc.text[sentences[i].start : sentences[j - 1].end]
    return {**provenance(doc, sentences, i, j), "text": text}


def test_samples_come_from_each_corpus_in_its_quota_without_repeats():
    """Each corpus gives its quota from its own documents, distinct windows, interleaved."""
    docs = [_doc("brown", "b1", 6), _doc("kjv", "k1", 6), _doc("brown", "b2", 6)]
    rows = sample_rows("t", docs, 5, 3, (6, 6), lambda d, s, i, j: True, _row)
    assert [row["corpus"] for row in rows] == ["brown", "kjv", "brown", "kjv", "brown"]
    assert {row["doc_id"] for row in rows if row["corpus"] == "kjv"} == {"k1"}
    assert len({(row["doc_id"], row["start"]) for row in rows}) == 5
    for row in rows:  # one 6-word sentence each, verbatim
        doc = next(d for d in docs if d.doc_id == row["doc_id"])
        assert doc.text[row["start"] : row["end"]] == row["text"]
        assert len(row["text"].split()) == 6


def test_sampling_is_refused_when_a_corpus_has_too_few_windows_or_none_are_asked():
    """Too few windows in a corpus, ``n`` below 1 or no documents are clear errors."""
    docs = [_doc("brown", "b1", 3), _doc("kjv", "k1", 1)]
    accept = lambda d, s, i, j: True  # noqa: E731
    assert len(sample_rows("t", docs, 2, 0, (6, 6), accept, _row)) == 2
    with pytest.raises(UserError, match=r"corpus 'kjv' yields 1 passages .* 2 are needed"):
        sample_rows("t", docs, 4, 0, (6, 6), accept, _row)
    with pytest.raises(UserError, match="n >= 1"):
        sample_rows("t", docs, 0, 0, (6, 6), accept, _row)
    with pytest.raises(UserError, match="no documents"):
        sample_rows("t", [], 1, 0, (6, 6), accept, _row)


def test_overlapping_windows_are_taken_only_when_asked():
    """Without ``overlap`` windows are disjoint; with it each end sentence gives one."""
    docs = [_doc("brown", "b1", 4)]
    accept = lambda d, s, i, j: True  # noqa: E731
    plain = sample_rows("t", docs, 2, 0, (12, 12), accept, _row)
    assert sorted(r["start"] for r in plain) == [0, docs[0].text.index("Sentence b1 number 2")]
    with pytest.raises(UserError, match="yields 2 passages"):
        sample_rows("t", docs, 3, 0, (12, 12), accept, _row)
    assert len(sample_rows("t", docs, 3, 0, (12, 12), accept, _row, overlap=True)) == 3


def test_builders_default_to_500_rows_and_seed_1234():
    """Every builder builds 500 rows with seed 1234 unless told otherwise."""
    assert tiny_sampling.DEFAULT_N == 500 and tiny_sampling.DEFAULT_SEED == 1234
    for task, build in tiny_tasks.BUILDERS.items():
        parameters = inspect.signature(build).parameters
        assert parameters["n"].default == 500, task
        assert parameters["seed"].default == 1234, task
