"""The short-benchmark loaders of :mod:`longred_bench.taskdata.short_benchmarks` on small
stand-in splits written in the test: which field becomes which, how a gold index is found, how
a LAMBADA or SQuAD request is taken apart, and that the cache root given is the one read."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import datasets
import pytest

from longred_bench.errors import UserError
from longred_bench.taskdata import short_benchmarks as benchmarks


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cache root whose benchmark entry is ``<root>/bench``; reading the default cache (no
    root passed down) fails the test."""

    def entry(*, cache: Path | None = None) -> Path:
        assert cache is not None, "the default cache was read instead of the one given"
        return Path(cache) / "bench"

    monkeypatch.setattr(benchmarks, "benchmarks_dir", entry)
    return tmp_path


def _split(cache: Path, name: str, config: str, split: str, rows: list[dict]) -> None:
    path = cache / "bench" / "hf_datasets" / name / config / split
    datasets.Dataset.from_list(rows).save_to_disk(str(path))


def _requests(cache: Path, task: str, variant: str, records: list[dict]) -> None:
    path = cache / "bench" / "oe_eval_tasks" / task / variant / "requests.jsonl.gz"
    path.parent.mkdir(parents=True)
    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record) + "\n")


def test_arc_gold_is_the_position_of_the_answer_key_among_the_labels(cache: Path) -> None:
    """ARC's ``gold`` indexes ``answerKey`` in the choice labels (not a letter offset)."""
    rows = [
        {"id": "q1", "question": "Which is hot?", "answerKey": "C",
         "choices": {"text": ["ice", "snow", "fire", "fog"], "label": ["A", "B", "C", "D"]}},
        {"id": "q2", "question": "Which is wet?", "answerKey": "1",
         "choices": {"text": ["rain", "sand", "dust"], "label": ["1", "2", "3"]}},
    ]  # fmt: skip
    _split(cache, "ai2_arc", "ARC-Challenge", "validation", rows)
    (split,) = benchmarks.load_arc("challenge", cache=cache).values()
    assert split.column_names == ["question", "choices", "gold"]
    assert list(split) == [
        {"question": "Which is hot?", "choices": ["ice", "snow", "fire", "fog"], "gold": 2},
        {"question": "Which is wet?", "choices": ["rain", "sand", "dust"], "gold": 0},
    ]
    with pytest.raises(UserError, match="unknown ARC level"):
        benchmarks.load_arc("medium", cache=cache)


def test_a_missing_split_names_the_fetch(cache: Path) -> None:
    """A split absent from the cache is a :class:`UserError` naming the split and the fetch."""
    with pytest.raises(UserError, match=r"piqa/plain_text/validation is missing.*--sources"):
        benchmarks.load_piqa(cache=cache)
    with pytest.raises(UserError, match=r"lambada/bpb_0shot is missing"):
        benchmarks.load_lambada(cache=cache)


def test_piqa_is_read_as_stored(cache: Path) -> None:
    """PIQA's validation rows come through with their own fields."""
    rows = [{"goal": "Open a jar", "sol1": "twist", "sol2": "kick", "label": 0}]
    _split(cache, "piqa", "plain_text", "validation", rows)
    assert list(benchmarks.load_piqa(cache=cache)["validation"]) == rows


def test_boolq_label_is_one_for_a_yes_answer(cache: Path) -> None:
    """BoolQ's ``label`` is 1 for a true answer and 0 for a false one."""
    rows = [
        {"question": "is ice cold", "answer": True, "passage": "Ice is cold."},
        {"question": "is fire cold", "answer": False, "passage": "Fire is hot."},
    ]
    _split(cache, "boolq", "none", "validation", rows)
    split = benchmarks.load_boolq(cache=cache)["validation"]
    assert sorted(split.column_names) == ["label", "passage", "question"]
    assert [(r["question"], r["passage"], r["label"]) for r in split] == [
        ("is ice cold", "Ice is cold.", 1),
        ("is fire cold", "Fire is hot.", 0),
    ]


def test_hellaswag_text_is_cleaned_of_wikihow_brackets() -> None:
    """``" [title]"`` becomes a sentence break, any other ``[..]`` goes, doubled spaces close."""
    assert benchmarks.clean_hellaswag("  Fix a tap [title] Turn the water off.  ") == (
        "Fix a tap. Turn the water off."
    )
    assert benchmarks.clean_hellaswag("Use a [header] wrench [step] now") == "Use a wrench now"


def test_hellaswag_query_joins_label_and_both_contexts(cache: Path) -> None:
    """The query: activity label, colon, both contexts (the second capitalised), cleaned."""
    row = {"activity_label": "Roofing", "ctx_a": "A man is on a roof.", "ctx_b": "he",
           "endings": ["rips [step] tiles off.", "sings."], "label": "1"}  # fmt: skip
    _split(cache, "hellaswag", "none", "validation", [row])
    (doc,) = benchmarks.load_hellaswag(cache=cache)["validation"]
    assert doc == {
        "query": "Roofing: A man is on a roof. He",
        "choices": ["rips tiles off.", "sings."],
        "gold": 1,
    }


def test_winogrande_splits_the_sentence_at_its_blank(cache: Path) -> None:
    """Each context is the sentence up to the blank with an option in it; the target is the
    rest after the blank; ``gold`` counts options from 0."""
    row = {"sentence": "Sarah beat Maria so _ got the prize.", "option1": "Sarah",
           "option2": "Maria", "answer": "2"}  # fmt: skip
    _split(cache, "winogrande", "winogrande_xl", "validation", [row])
    (doc,) = benchmarks.load_winogrande(cache=cache)["validation"]
    assert doc == {
        "sentence": row["sentence"],
        "contexts": ["Sarah beat Maria so Sarah", "Sarah beat Maria so Maria"],
        "target": "got the prize.",
        "gold": 1,
    }


def _mmlu(cache: Path, subject: str, test: int, dev: int) -> None:
    for split, count in (("test", test), ("dev", dev)):
        rows = [{"question": f"{subject} {split} {k}", "subject": subject,
                 "choices": ["a", "b", "c", "d"], "answer": k % 4, "extra": "x"}
                for k in range(count)]  # fmt: skip
        _split(cache, "hails", f"mmlu_no_train/{subject}", split, rows)


def test_mmlu_subjects_splits_and_concatenation(cache: Path) -> None:
    """Subjects are the folders holding a ``test`` split, sorted; a subject's rows keep four
    columns; the concatenation follows subject order."""
    _mmlu(cache, "virology", 2, 1)
    _mmlu(cache, "anatomy", 3, 2)
    (cache / "bench" / "hf_datasets" / "hails" / "mmlu_no_train" / "notes").mkdir()
    assert benchmarks.mmlu_subjects(cache=cache) == ["anatomy", "virology"]
    one = benchmarks.load_mmlu("anatomy", cache=cache)
    assert sorted(one) == ["dev", "test"]
    assert one["test"].column_names == ["question", "subject", "choices", "answer"]
    assert one["test"]["question"] == ["anatomy test 0", "anatomy test 1", "anatomy test 2"]
    every = benchmarks.load_mmlu_all(cache=cache)
    assert every["test"]["subject"] == ["anatomy"] * 3 + ["virology"] * 2
    assert every["dev"]["question"] == ["anatomy dev 0", "anatomy dev 1", "virology dev 0"]
    with pytest.raises(UserError, match="unknown MMLU subject 'notes'; the cache has 2"):
        benchmarks.load_mmlu("notes", cache=cache)


def test_triviaqa_keeps_question_and_every_alias(cache: Path) -> None:
    """A TriviaQA row keeps its question and every answer alias."""
    rows = [{"question": "Capital of France?", "question_id": "t1",
             "answer": {"aliases": ["Paris", "Paris, France"], "value": "Paris"}}]  # fmt: skip
    _split(cache, "trivia_qa", "rc.wikipedia.nocontext", "validation", rows)
    (doc,) = benchmarks.load_triviaqa(cache=cache)["validation"]
    assert doc == {"question": "Capital of France?", "aliases": ["Paris", "Paris, France"]}


def test_a_document_with_several_requests_is_read_once_in_order(cache: Path) -> None:
    """Requests sharing a ``doc_id`` give one document, at the place of its first request."""
    records = [
        {"doc_id": 7, "doc": {"query": "first"}},
        {"doc_id": 3, "doc": {"query": "second"}},
        {"doc_id": 7, "doc": {"query": "first, another request"}},
    ]
    _requests(cache, "piqa", "mc", records)
    assert benchmarks.load_request_docs("piqa", "mc", cache=cache) == [
        {"query": "first"},
        {"query": "second"},
    ]


def test_lambada_target_is_the_last_word_with_its_space(cache: Path) -> None:
    """``text`` is query and (first) answer; ``context`` is all but the last space-separated
    word and ``target`` that word with the space it is scored with."""
    records = [
        {"doc_id": 0, "doc": {"query": "He opened the old", "answers_text": ["door", "gate"]}},
        {"doc_id": 1, "doc": {"query": "She said", "answers_text": ["good-bye."]}},
    ]
    _requests(cache, "lambada", "bpb_0shot", records)
    assert list(benchmarks.load_lambada(cache=cache)["test"]) == [
        {"text": "He opened the old door", "context": "He opened the old", "target": " door"},
        {"text": "She said good-bye.", "context": "She said", "target": " good-bye."},
    ]


def test_squad_query_is_taken_apart_and_every_answer_kept(cache: Path) -> None:
    """A SQuAD query gives title, context (several lines) and question; all answers kept."""
    query = "Title: Oxford\nBackground: A city.\nIt has colleges.\nQuestion: What is it?\nAnswer:"
    records = [{"doc_id": 0, "doc": {"id": "s1", "query": query,
                                     "answers_text": ["a city", "city", "city"]}}]  # fmt: skip
    _requests(cache, "squad", "bpb_5shot", records)
    (doc,) = benchmarks.load_squad(cache=cache)["validation"]
    assert doc == {
        "title": "Oxford",
        "context": "A city.\nIt has colleges.",
        "question": "What is it?",
        "answers": ["a city", "city", "city"],
    }


def test_a_squad_query_of_another_layout_is_refused(cache: Path) -> None:
    """A SQuAD query not in the Title/Background/Question layout is a clear error."""
    records = [{"doc_id": 0, "doc": {"id": "s9", "query": "Question: Why?", "answers_text": []}}]
    _requests(cache, "squad", "bpb_5shot", records)
    with pytest.raises(UserError, match="SQuAD request s9 has an unexpected query layout"):
        benchmarks.load_squad(cache=cache)
