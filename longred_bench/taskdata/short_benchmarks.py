"""Short-context benchmarks read from the offline cache, as ``datasets.Dataset`` splits.

The data come from the ``benchmarks`` source (``longred-bench data fetch --sources
benchmarks``): Hugging Face ``save_to_disk`` Arrow splits under ``hf_datasets/`` and request
files (``requests.jsonl.gz``, one JSON object per request with the source ``doc``) under
``oe_eval_tasks/``. Each ``load_<name>`` returns ``{split: Dataset}`` with the fields the
lm-eval YAMLs in ``tasks/`` use; the field mapping (e.g. an ARC answer key to a choice index) is
done here, in plain Python, so it can be unit tested without lm-eval.

Only the splits the cache holds exist: ARC, PIQA, BoolQ, HellaSwag, WinoGrande and TriviaQA have
their validation split only (few-shot examples are drawn from it, the evaluated document
excluded); MMLU has ``test`` (14,042 rows over 57 subjects) and ``dev`` (5 per subject);
LAMBADA (OpenAI) has its full ``test`` split and SQuAD a 1,000-row ``validation`` subsample.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import datasets

from longred_bench.data.corpora import benchmarks_dir
from longred_bench.errors import UserError

Splits = dict[str, datasets.Dataset]

ARC_CONFIGS: dict[str, str] = {"easy": "ARC-Easy", "challenge": "ARC-Challenge"}
MMLU_DIR = ("hails", "mmlu_no_train")


def _root(cache: Path | None) -> Path:
    return benchmarks_dir(cache=cache)


def load_arrow(
    name: str, config: str, split: str, *, cache: Path | None = None
) -> datasets.Dataset:
    """Load ``hf_datasets/<name>/<config>/<split>`` from the cache; ``name`` may contain ``/``."""
    return _arrow_at(_root(cache), name, config, split)


def _arrow_at(root: Path, name: str, config: str, split: str) -> datasets.Dataset:
    """:func:`load_arrow` under the checked entry ``root``."""
    path = root / "hf_datasets" / name / config / split
    if not path.is_dir():
        raise UserError(
            f"benchmark split {name}/{config}/{split} is missing from {path.parent}; "
            "run `longred-bench data fetch --sources benchmarks`"
        )
    return datasets.load_from_disk(str(path))


def load_request_docs(task: str, variant: str, *, cache: Path | None = None) -> list[dict]:
    """Return the ``doc`` of every request in ``oe_eval_tasks/<task>/<variant>``, in order.

    A document with several requests (one per answer choice) is returned once.
    """
    path = _root(cache) / "oe_eval_tasks" / task / variant / "requests.jsonl.gz"
    if not path.is_file():
        raise UserError(
            f"benchmark request file {task}/{variant} is missing ({path}); "
            "run `longred-bench data fetch --sources benchmarks`"
        )
    docs: dict[Any, dict] = {}
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            docs.setdefault(record["doc_id"], record["doc"])
    return list(docs.values())


def load_arc(level: str, *, cache: Path | None = None) -> Splits:
    """ARC-Easy or ARC-Challenge validation; ``gold`` is the index of ``answerKey`` in the labels.

    Fields: ``question``, ``choices`` (the answer texts), ``gold``.
    """
    if level not in ARC_CONFIGS:
        raise UserError(f"unknown ARC level {level!r}; choose from {sorted(ARC_CONFIGS)}")
    data = load_arrow("ai2_arc", ARC_CONFIGS[level], "validation", cache=cache)

    def convert(row: dict) -> dict:
        return {
            "question": row["question"],
            "choices": list(row["choices"]["text"]),
            "gold": row["choices"]["label"].index(row["answerKey"]),
        }

    return {"validation": data.map(convert, remove_columns=data.column_names)}


def load_piqa(*, cache: Path | None = None) -> Splits:
    """PIQA validation: ``goal``, ``sol1``, ``sol2`` and ``label`` (0 or 1)."""
    return {"validation": load_arrow("piqa", "plain_text", "validation", cache=cache)}


def load_boolq(*, cache: Path | None = None) -> Splits:
    """BoolQ validation: ``passage``, ``question`` and ``label`` (1 when the answer is yes)."""
    data = load_arrow("boolq", "none", "validation", cache=cache)

    def convert(row: dict) -> dict:
        return {"passage": row["passage"], "question": row["question"], "label": int(row["answer"])}

    return {"validation": data.map(convert, remove_columns=data.column_names)}


def clean_hellaswag(text: str) -> str:
    """Drop WikiHow bracket artefacts: ``" [title]"`` becomes ``". "``, other ``[..]`` go."""
    text = text.strip().replace(" [title]", ". ")
    text = re.sub(r"\[.*?\]", "", text)
    return text.replace("  ", " ")


def load_hellaswag(*, cache: Path | None = None) -> Splits:
    """HellaSwag validation: ``query`` (activity label and context), ``choices``, ``gold``."""
    data = load_arrow("hellaswag", "none", "validation", cache=cache)

    def convert(row: dict) -> dict:
        context = row["ctx_a"] + " " + row["ctx_b"].capitalize()
        return {
            "query": clean_hellaswag(row["activity_label"] + ": " + context),
            "choices": [clean_hellaswag(ending) for ending in row["endings"]],
            "gold": int(row["label"]),
        }

    return {"validation": data.map(convert, remove_columns=data.column_names)}


def load_winogrande(*, cache: Path | None = None) -> Splits:
    """WinoGrande (xl) validation, in partial-scoring form.

    ``contexts`` holds the sentence up to the blank with each option filled in, ``target``
    the rest of the sentence after the blank (scored after each context), ``gold`` the index
    of the right option.
    """
    data = load_arrow("winogrande", "winogrande_xl", "validation", cache=cache)

    def convert(row: dict) -> dict:
        blank = row["sentence"].index("_")
        prefix = row["sentence"][:blank]
        return {
            "sentence": row["sentence"],
            "contexts": [prefix + row["option1"], prefix + row["option2"]],
            "target": row["sentence"][blank + 1 :].strip(),
            "gold": int(row["answer"]) - 1,
        }

    return {"validation": data.map(convert, remove_columns=data.column_names)}


def mmlu_subjects(*, cache: Path | None = None) -> list[str]:
    """The MMLU subjects present in the cache, sorted."""
    return _subjects_at(_root(cache))


def _subjects_at(root: Path) -> list[str]:
    folder = root / "hf_datasets" / MMLU_DIR[0] / MMLU_DIR[1]
    return sorted(path.name for path in folder.iterdir() if (path / "test").is_dir())


def load_mmlu(subject: str, *, cache: Path | None = None) -> Splits:
    """One MMLU subject: ``test`` and ``dev`` rows (question, subject, choices, answer)."""
    root = _root(cache)
    subjects = _subjects_at(root)
    if subject not in subjects:
        raise UserError(f"unknown MMLU subject {subject!r}; the cache has {len(subjects)}")
    return _mmlu_at(root, subject)


def _mmlu_at(root: Path, subject: str) -> Splits:
    name = "/".join(MMLU_DIR)
    return {
        split: _arrow_at(root, name, subject, split).select_columns(
            ["question", "subject", "choices", "answer"]
        )
        for split in ("test", "dev")
    }


def load_mmlu_all(*, cache: Path | None = None) -> Splits:
    """Every MMLU subject, concatenated in subject order: ``test`` (14,042) and ``dev`` (285).
    The cache entry is checked once, not once a subject and split (a check reads the size of
    each of its files, about 800)."""
    root = _root(cache)
    parts = [_mmlu_at(root, subject) for subject in _subjects_at(root)]
    return {
        split: datasets.concatenate_datasets([part[split] for part in parts])
        for split in ("test", "dev")
    }


def load_triviaqa(*, cache: Path | None = None) -> Splits:
    """TriviaQA (rc.wikipedia, no context) validation: ``question`` and ``aliases``."""
    data = load_arrow("trivia_qa", "rc.wikipedia.nocontext", "validation", cache=cache)

    def convert(row: dict) -> dict:
        return {"question": row["question"], "aliases": list(row["answer"]["aliases"])}

    return {"validation": data.map(convert, remove_columns=data.column_names)}


def load_lambada(*, cache: Path | None = None) -> Splits:
    """LAMBADA (OpenAI) test: ``text``, ``context`` (all but the last word) and ``target``.

    ``target`` is the last word with its leading space, as it is scored after ``context``.
    """
    rows = []
    for doc in load_request_docs("lambada", "bpb_0shot", cache=cache):
        text = doc["query"] + " " + doc["answers_text"][0]
        words = text.split(" ")
        rows.append({"text": text, "context": " ".join(words[:-1]), "target": " " + words[-1]})
    return {"test": datasets.Dataset.from_list(rows)}


_SQUAD_QUERY = re.compile(
    r"^Title: (?P<title>.*?)\nBackground: (?P<context>.*)\nQuestion: (?P<question>.*)\nAnswer:$",
    re.DOTALL,
)


def load_squad(*, cache: Path | None = None) -> Splits:
    """SQuAD v1.1 validation (a fixed 1,000-question subsample).

    Fields: ``title``, ``context``, ``question`` and ``answers`` (every reference answer).
    """
    rows = []
    for doc in load_request_docs("squad", "bpb_5shot", cache=cache):
        match = _SQUAD_QUERY.match(doc["query"])
        if match is None:
            raise UserError(f"SQuAD request {doc['id']} has an unexpected query layout")
        rows.append({**match.groupdict(), "answers": list(doc["answers_text"])})
    return {"validation": datasets.Dataset.from_list(rows)}
