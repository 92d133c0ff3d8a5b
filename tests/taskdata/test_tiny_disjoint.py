"""No sample of a ``short_tiny`` task is text that a recipe of the ``tiny`` profile trains on.

The training corpora are read off the profile's plan (every ``train`` unit of every table, through
:func:`longred_bench.reproduce.sources.unit_sources`: the corpora of its data specs and those
tiny-base is pretrained on), not listed here, so a recipe that starts reading the tiny tasks'
source fails this test. A training recipe reads a registry corpus's ``train`` split
(:mod:`longred_bench.data.corpus_spec`). Every string of every row (passages, contexts, choices,
answers) and the verbatim passage the row was cut from are split into sentences; a sentence of 5
or more words, whitespace normalised, must not be a sentence of that training text (shorter ones,
such as "1." or "Thank you.", recur in any prose and carry no passage).

The check can fail: Brown's ``cg35`` (a ``train`` document) quotes 38 sentences of the 1960 State
of the Union, which is in the ``sotu`` ``train`` split, and a planted overlap is caught below.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import pytest
from data_helpers import ensure_cached

from longred_bench.data.corpora import Document, corpus_names, load_documents
from longred_bench.data.sentences import split_sentences
from longred_bench.taskdata import tiny_tasks

MIN_WORDS = 5


def training_corpora(profile: str = "tiny") -> set[str]:
    """The registry corpora that any training unit of ``profile`` reads (its plan, every table),
    with the corpora its zoo model is pretrained on."""
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.registry import get_spec, table_names
    from longred_bench.reproduce.sources import unit_sources

    prof = load_profile(profile)
    corpora: set[str] = set()
    for table in table_names():
        spec = get_spec(table)
        ctx = spec.resolve(prof, progress=False, force=False, options={})
        for step in spec.steps(ctx):
            if step.unit.kind == "train":
                corpora |= unit_sources("train", step.unit.config)
    return corpora & set(corpus_names())


def _normal(text: str) -> str:
    return " ".join(text.split())


def sentences_of(texts: Iterable[str]) -> Iterator[str]:
    """The whitespace-normalised sentences of ``texts`` with :data:`MIN_WORDS` or more words."""
    for text in texts:
        for s in split_sentences(text):
            sentence = _normal(text[s.start : s.end])
            if len(sentence.split()) >= MIN_WORDS:
                yield sentence


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def row_texts(row: dict[str, Any], documents: dict[tuple[str, str], Document]) -> list[str]:
    """Every string of ``row`` and the verbatim passage it was cut from."""
    doc = documents[(row["corpus"], row["doc_id"])]
    texts = [doc.text[row["start"] : row["end"]]]
    for value in row.values():
        texts += _strings(value)
    return texts


def overlaps(
    rows: dict[str, list[dict[str, Any]]], documents: Iterable[Document], training: set[str]
) -> list[tuple[str, int, str]]:
    """``(task, row index, sentence)`` for every sentence of a row found in ``training``."""
    by_id = {(d.corpus, d.doc_id): d for d in documents}
    found = []
    for task, task_rows in rows.items():
        for k, row in enumerate(task_rows):
            for sentence in dict.fromkeys(sentences_of(row_texts(row, by_id))):
                if sentence in training:
                    found.append((task, k, sentence))
    return found


# --- the check itself, offline --------------------------------------------------------------

HELD_OUT = Document(
    "heldout",
    "h1",
    "h1",
    " ".join(
        f"The committee number {k} reported its findings to the assembly on a {day} morning. "
        f"Every member of group {k} agreed that the bridge over the river needed repair."
        for k, day in zip(range(60), ["cold", "bright", "quiet", "late", "wet"] * 12, strict=True)
    ),
)


def test_a_planted_overlap_is_found() -> None:
    rows = {"ppl": tiny_tasks.BUILDERS["ppl"]([HELD_OUT], n=3, seed=0)}
    assert overlaps(rows, [HELD_OUT], set()) == []
    passage = rows["ppl"][1]["text"]
    planted = next(sentences_of([passage]))
    # A training document holding the sentence, wrapped over two lines, is caught ...
    training = set(sentences_of(["Unrelated words here. " + planted.replace(" ", "\n", 2)]))
    assert overlaps(rows, [HELD_OUT], training) == [("ppl", 1, planted)]
    # ... and a sentence shorter than MIN_WORDS is not counted.
    assert list(sentences_of(["Thank you very much."])) == []


def test_row_texts_cover_every_choice_and_the_source_passage() -> None:
    row = {"corpus": "heldout", "doc_id": "h1", "start": 0, "end": 10, "gold": 1,
           "context": "a", "choices": ["b", "c"], "contexts": [["d"]]}  # fmt: skip
    texts = row_texts(row, {("heldout", "h1"): HELD_OUT})
    assert texts[0] == HELD_OUT.text[:10] and {"a", "b", "c", "d"} <= set(texts)


# --- the tiny profile and the cached corpora ------------------------------------------------


def test_training_corpora_come_from_the_profile() -> None:
    corpora = training_corpora("tiny")
    assert {"brown", "austen", "kjv"} <= corpora  # tiny-base's pretraining mix at least
    assert not corpora & set(tiny_tasks.DEFAULT_CORPORA)  # no recipe reads the tasks' source


def test_no_short_tiny_sample_is_training_text(request: pytest.FixtureRequest) -> None:
    corpora = sorted(training_corpora("tiny"))
    ensure_cached(request, *tiny_tasks.DEFAULT_CORPORA, *corpora)
    training = {
        s for c in corpora for s in sentences_of(d.text for d in load_documents(c, "train"))
    }
    assert len(training) > 50_000
    documents = tiny_tasks.held_out_documents()
    rows = {task: tiny_tasks.build(task) for task in tiny_tasks.TASKS}
    rows["passkey_train"] = tiny_tasks.build("passkey", phrasing="train")
    assert overlaps(rows, documents, training) == []
