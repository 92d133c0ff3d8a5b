"""The ``longred_short_tiny`` tasks' sample builders (their lm-eval YAMLs and an lm-eval run:
``test_tasks_tiny_lmeval.py``).

Sentence splitting and the builders' structure are checked offline on a seeded synthetic corpus;
the checks on real prose need the cached State of the Union addresses (``sotu``) and skip without
them unless ``--run-network`` is given (then they are fetched).
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import random
import re
from pathlib import Path

import pytest
from data_helpers import ensure_cached

from longred_bench.data.corpora import Document, load_documents
from longred_bench.data.sentences import split_sentences
from longred_bench.errors import UserError
from longred_bench.taskdata import tiny_tasks
from longred_bench.taskdata.tiny_lastword import build_lastword
from longred_bench.taskdata.tiny_nextsent import build_nextsent
from longred_bench.taskdata.tiny_pairs import content_vocabulary
from longred_bench.taskdata.tiny_ppl import build_ppl

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"
CORPORA = tiny_tasks.DEFAULT_CORPORA


@pytest.fixture(scope="module")
def documents(request: pytest.FixtureRequest) -> list[Document]:
    ensure_cached(request, *CORPORA)
    return tiny_tasks.held_out_documents(CORPORA)


@pytest.fixture(scope="module")
def rows(documents: list[Document]) -> dict[str, list[dict]]:
    sizes = tiny_tasks.SIZES
    return {task: tiny_tasks.BUILDERS[task](documents, sizes[task]) for task in tiny_tasks.TASKS}


def _synthetic(corpus: str, doc_id: str, seed: int, sentences: int = 400) -> Document:
    """Seeded prose-like text: short paragraphs of simple sentences over a small vocabulary."""
    rng = random.Random(seed)
    nouns = [
        "garden",
        "river",
        "letter",
        "window",
        "captain",
        "village",
        "doctor",
        "carriage",
        "sister",
        "market",
        "harbor",
        "teacher",
        "bridge",
        "engine",
        "farmer",
        "orchard",
        "soldier",
        "kitchen",
        "lantern",
        "meadow",
        "valley",
        "tailor",
        "painter",
        "sailor",
        "chapel",
        "castle",
        "forest",
        "island",
        "mirror",
        "parlour",
    ]
    verbs = ["watched", "followed", "answered", "carried", "visited", "admired"]
    paragraphs, current = [], []
    for _ in range(sentences):
        words = [rng.choice(["The", "A", "Every"]), rng.choice(nouns), rng.choice(verbs)]
        words += ["the", rng.choice(nouns), "near", "the", rng.choice(nouns)]
        current.append(" ".join(words) + rng.choice([".", ".", "!", "?"]))
        if rng.random() < 0.2:
            paragraphs.append(" ".join(current))
            current = []
    paragraphs.append(" ".join(current))
    return Document(corpus, doc_id, doc_id, "Chapter 1\n\n" + "\n\n".join(paragraphs))


SYNTHETIC = [
    _synthetic("brown", "b1", 1),
    _synthetic("brown", "b2", 2),
    _synthetic("brown", "b3", 3),
    _synthetic("austen", "a1", 4),
]


def _slice(documents: list[Document], row: dict) -> str:
    doc = next(d for d in documents if (d.corpus, d.doc_id) == (row["corpus"], row["doc_id"]))
    return doc.text[row["start"] : row["end"]]


# --- sentence splitting and builders, offline ---------------------------------------------


def test_split_sentences_rules() -> None:
    text = (
        "PRIDE AND PREJUDICE\n\nChapter 1\n\n"
        '"My dear Mr. Bennet," said his lady. "Have you heard?" It is let! J. F. Kennedy spoke '
        "in the U.S. Senate today. the next one starts lower and ends. Then a fragment without end"
    )
    sentences = split_sentences(text)
    got = [(text[s.start : s.end], s.usable) for s in sentences]
    assert got == [
        ("PRIDE AND PREJUDICE", False),
        ("Chapter 1", False),
        ('"My dear Mr. Bennet," said his lady.', True),
        ('"Have you heard?"', True),
        ("It is let!", True),
        ("J. F. Kennedy spoke in the U.S. Senate today. the next one starts lower and ends.", True),
        ("Then a fragment without end", False),
    ]
    assert [s.paragraph for s in sentences] == [0, 1, 2, 2, 2, 2, 2]
    assert sentences[2].words == 7


@pytest.mark.parametrize("task", tiny_tasks.TASKS)
def test_builders_are_seeded(task: str) -> None:
    build = tiny_tasks.BUILDERS[task]
    first = build(SYNTHETIC, n=20, seed=7)
    assert first == build(SYNTHETIC, n=20, seed=7)
    assert first != build(SYNTHETIC, n=20, seed=8)
    assert [row["corpus"] for row in first[:4]] == ["brown", "austen", "brown", "austen"]
    assert sum(row["corpus"] == "brown" for row in first) == 10


def _check_lastword(documents: list[Document], row: dict, vocab: dict | None = None) -> None:
    """A lastword row: the context and the true word are the verbatim passage (final punctuation
    dropped); the other choices are absent from it and of a similar frequency. ``vocab``: the
    documents' :func:`content_vocabulary`, passed by a caller checking many rows (it takes about
    half a second on the real documents)."""
    word = row["target"]
    assert row["choices"][row["gold"]] == word and len(set(row["choices"])) == 4
    assert _slice(documents, row).startswith(row["context"] + " " + word)
    assert word.islower() and word.isalpha() and len(word) >= 3
    vocab = content_vocabulary(documents) if vocab is None else vocab
    present = {w.lower() for w in _words(row["context"])} | {word}
    for other in (c for c in row["choices"] if c != word):
        assert other in vocab[word] and other not in present


def test_synthetic_rows_are_verbatim_and_well_formed() -> None:
    for row in build_lastword(SYNTHETIC, n=20, seed=0):
        _check_lastword(SYNTHETIC, row)
    for row in build_ppl(SYNTHETIC, n=20, seed=0):
        assert row["text"] == _slice(SYNTHETIC, row)
        assert 80 <= len(row["text"].split()) <= 120 and len(row["text"]) <= 640


def _check_nextsent(documents: list[Document], row: dict) -> None:
    """A nextsent row: the true context and the sentence are the verbatim window; every other
    context is 3 sentences of the same document, far from it."""
    doc = next(d for d in documents if (d.corpus, d.doc_id) == (row["corpus"], row["doc_id"]))
    contexts, starts = row["contexts"], row["context_starts"]
    assert len(contexts) == 4 and len({" ".join(c.split()) for c in contexts}) == 4
    true = contexts[row["gold"]]
    assert _slice(documents, row) == true + _gap(documents, row) + row["sentence"]
    assert starts[row["gold"]] == row["start"]
    sentences = split_sentences(doc.text)
    index = {s.start: k for k, s in enumerate(sentences)}
    for context, start in zip(contexts, starts, strict=True):
        assert doc.text[start : start + len(context)] == context  # from the same document
        first = index[start]
        assert doc.text[sentences[first].start : sentences[first + 2].end] == context
        assert len(context) + 1 + len(row["sentence"]) <= 640
        if start != row["start"]:  # its end is 10+ sentences from the true context's end
            assert abs(first - index[row["start"]]) >= 10


def test_nextsent_contexts_come_from_the_same_document() -> None:
    rows = build_nextsent(SYNTHETIC, n=30, seed=0)
    golds = []
    for row in rows:
        _check_nextsent(SYNTHETIC, row)
        golds.append(row["gold"])
    assert len(set(golds)) == 4  # the true context is not always in one place


def _gap(documents: list[Document], row: dict) -> str:
    """The whitespace between a nextsent row's context and its sentence, in the document."""
    whole = _slice(documents, row)
    rest = whole[len(row["contexts"][row["gold"]]) :]
    return rest[: len(rest) - len(rest.lstrip())]


def test_nextsent_needs_passages_far_from_the_window() -> None:
    short = _synthetic("brown", "short", 9, sentences=6)
    with pytest.raises(UserError, match="far enough"):
        build_nextsent([short], n=1, seed=0)


def test_too_many_samples_is_a_clear_error() -> None:
    with pytest.raises(UserError, match="lower n"):
        build_ppl(SYNTHETIC[:1], n=10_000, seed=0)
    with pytest.raises(UserError, match="unknown tiny task"):
        tiny_tasks.build("summaries")


def test_missing_cache_names_the_fetch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(UserError, match=r"data fetch --sources sotu`"):
        tiny_tasks.build("ppl", cache=tmp_path)
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    spec = importlib.util.spec_from_file_location("tiny_utils", TASKS_DIR / "tiny_utils.py")
    tiny_utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tiny_utils)
    with pytest.raises(UserError, match=r"data fetch --sources sotu`"):
        tiny_utils.load_lastword(version=1.0)


# --- real prose: the State of the Union test split ----------------------------------------------


def test_only_test_documents_are_read(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A build reads the test split only, once per cache: a second build of the same rows
    reads them from the store (``tiny_tasks/`` under the cache root), not the corpus."""
    from longred_bench.cache import cache_dir

    ensure_cached(request, *CORPORA)
    (tmp_path / "corpora").symlink_to(cache_dir() / "corpora")  # a cache with no rows stored
    asked = []

    def spy(corpus, split="all", **kwargs):
        asked.append((corpus, split))
        return load_documents(corpus, split, **kwargs)

    monkeypatch.setattr(tiny_tasks, "load_documents", spy)
    first = {task: tiny_tasks.build(task, n=10, cache=tmp_path) for task in tiny_tasks.TASKS}
    assert set(asked) == {("sotu", "test")} and len(asked) == len(tiny_tasks.TASKS)
    again = {task: tiny_tasks.build(task, n=10, cache=tmp_path) for task in tiny_tasks.TASKS}
    assert again == first and len(asked) == len(tiny_tasks.TASKS)  # nothing read again
    assert len(list((tmp_path / "tiny_tasks").glob("*-n10-seed1234-*.jsonl"))) == 6


def test_rows_never_touch_train_documents(rows: dict[str, list[dict]]) -> None:
    tests = {(c, d.doc_id): d for c in CORPORA for d in load_documents(c, "test")}
    train_ids = {(c, d.doc_id) for c in CORPORA for d in load_documents(c, "train")}
    for task, task_rows in rows.items():
        assert len(task_rows) == tiny_tasks.SIZES[task], task
        ids = {(row["corpus"], row["doc_id"]) for row in task_rows}
        assert ids <= tests.keys() and not ids & train_ids, task
    for row in rows["nextsent"]:  # every context is of the sentence's own document
        doc = tests[row["corpus"], row["doc_id"]]
        assert all(
            doc.text[k : k + len(c)] == c
            for k, c in zip(row["context_starts"], row["contexts"], strict=True)
        )


# sha256 of each task's rows (JSON, sorted keys), first 16 hex digits, from the sha256-pinned
# cache: the scored samples are the same on every machine (measured here when the suite was built;
# version 3 of the rows: the State of the Union test split, 1,000 rows per choice task).
FINGERPRINTS = {
    "lastword": "b53c2a5f5c8fefad",
    "nextsent": "eb97c1e4be09c587",
    "swap": "4f5337d536024169",
    "replace": "a375a21760025b2c",
    "passkey": "a074045ed777a07f",  # held-out phrasing, distractors in the passage
    "ppl": "de80f1edd7864f2d",  # 500 rows
}


def test_rows_match_their_fingerprints(rows: dict[str, list[dict]]) -> None:
    for task, task_rows in rows.items():
        blob = json.dumps(task_rows, sort_keys=True).encode()
        assert hashlib.sha256(blob).hexdigest()[:16] == FINGERPRINTS[task], task


def test_real_rows_are_verbatim(documents: list[Document], rows: dict[str, list[dict]]) -> None:
    for row in rows["ppl"]:
        assert row["text"] == _slice(documents, row)
    vocab = content_vocabulary(documents)
    for row in rows["lastword"]:
        _check_lastword(documents, row, vocab)
    for row in rows["nextsent"]:
        _check_nextsent(documents, row)
    for task in ("lastword", "nextsent"):  # the true choice is in every place about as often
        golds = [row["gold"] for row in rows[task]]
        assert all(0.2 < golds.count(k) / len(golds) < 0.3 for k in range(4)), task


def _planted(row: dict, family) -> tuple[str, list[str]]:
    """The key sentence and the distractor sentences a passkey row inserted, each found as the
    one string of its family (formatted with its number) that occurs in the passage."""
    if row["phrasing"] == "standard":
        key_options = [tiny_tasks.PASSKEY_SENTENCE]
    else:
        key_options = [n.replace("{noun}", o) for n in family.needles for o in family.nouns]
    (key_sentence,) = {k.format(key=row["key"]) for k in key_options} & _sentences_in(row)
    others = []
    for number in (c for c in row["choices"] if c != row["key"]):
        (sentence,) = {d.format(number=number) for d in family.distractors} & _sentences_in(row)
        others.append(sentence)
    return key_sentence, others


def _sentences_in(row: dict) -> set[str]:
    """Every substring of the passage that some template could have produced: the passage's
    pieces between the planted numbers, tried against the templates by the caller."""
    passage = row["passage"]
    found = set()
    for start in range(len(passage)):
        if start == 0 or passage[start - 1] == " ":
            for end in range(start + 1, min(len(passage), start + 90) + 1):
                if passage[end - 1] == ".":
                    found.add(passage[start:end])
    return found


@pytest.mark.parametrize("phrasing", ["heldout", "train", "standard"])
def test_passkey_plants_every_choice_and_asks_for_the_key(
    documents: list[Document], rows: dict[str, list[dict]], phrasing: str
) -> None:
    from longred_bench.taskdata.ruler.phrasings import PASSKEY_FAMILIES

    built = tiny_tasks.build("passkey", phrasing=phrasing)
    assert phrasing != "heldout" or built == rows["passkey"]  # held-out is the default
    family = PASSKEY_FAMILIES["heldout" if phrasing == "standard" else phrasing]
    positions, questions = set(), set()
    for row in built[:120]:
        assert row["phrasing"] == phrasing and row["choices"][row["gold"]] == row["key"]
        assert all(re.fullmatch(r"\d{5}", c) for c in row["choices"])
        assert len(set(row["choices"])) == 4
        assert all(row["prompt"].count(c) == 1 for c in row["choices"])  # distractors too
        key_sentence, others = _planted(row, family)
        passage = row["passage"]
        for sentence in (key_sentence, *others):
            spaced = " " + sentence if " " + sentence in passage else sentence + " "
            passage = passage.replace(spaced, "", 1)
        assert passage == _slice(documents, row)  # the rest is the verbatim passage
        assert row["prompt"].startswith(row["passage"] + "\n")
        question = row["prompt"][len(row["passage"]) + 1 :]
        if phrasing == "standard":
            assert question == tiny_tasks.PASSKEY_QUESTION
        else:
            noun = next(n for n in family.nouns if n in question)
            assert noun in key_sentence  # the question names the key's noun ...
            assert not any(n in s for s in others for n in family.nouns)  # ... and only its
        positions.add(row["position"])
        questions.add(question)
    assert 0 in positions and len(positions) > 5  # the key moves through the passage
    if phrasing == "standard":
        assert len(questions) == 1
    else:  # every question is a (noun, question) of the family, and the draws cover many
        possible = {q.format(noun=n) for q in family.questions for n in family.nouns}
        assert questions <= possible and len(questions) >= min(len(possible), 40)


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z]+", text)


def test_swap_pairs_differ_by_two_adjacent_words(
    documents: list[Document], rows: dict[str, list[dict]]
) -> None:
    golds = []
    for row in rows["swap"]:
        original, corrupted = row["original"], row["corrupted"]
        assert row["choices"][row["gold"]] == original and corrupted in row["choices"]
        assert original in _slice(documents, row) and row["context"] in _slice(documents, row)
        a, b = _words(original), _words(corrupted)
        diff = [k for k in range(len(a)) if a[k] != b[k]]
        assert len(a) == len(b) and len(diff) == 2 and diff[1] == diff[0] + 1
        assert (b[diff[0]], b[diff[1]]) == (a[diff[1]], a[diff[0]]) and a[diff[0]].islower()
        assert sorted(original) == sorted(corrupted)  # the same characters, reordered
        golds.append(row["gold"])
    assert 0.4 < sum(golds) / len(golds) < 0.6  # the true sentence is first about half the time


def test_replace_pairs_put_a_word_of_similar_frequency_for_one_content_word(
    documents: list[Document], rows: dict[str, list[dict]]
) -> None:
    counts: dict[str, int] = {}
    for doc in documents:
        for word in _words(doc.text):
            counts[word] = counts.get(word, 0) + 1
    for row in rows["replace"]:
        original, corrupted = row["original"], row["corrupted"]
        assert row["choices"][row["gold"]] == original and original in _slice(documents, row)
        a, b = _words(original), _words(corrupted)
        diff = [k for k in range(len(a)) if a[k] != b[k]]
        assert len(a) == len(b) and len(diff) == 1 and diff[0] > 0
        old, new = a[diff[0]], b[diff[0]]
        assert old.islower() and new.islower() and len(old) >= 3 and len(new) >= 3
        assert new not in {w.lower() for w in a}  # a word the sentence does not have
        assert 1 / 1.25 <= counts[new] / counts[old] <= 1.25  # frequency-matched


def test_content_vocabulary_matches_frequencies() -> None:
    docs = [Document("c", "d", "d", "alpha alpha alpha alpha beta beta beta beta beta gamma " * 3)]
    vocab = content_vocabulary(docs)
    assert vocab["alpha"] == ["beta"] and vocab["beta"] == ["alpha"]  # 12 vs 15: within 1.25
    assert vocab["gamma"] == []  # 3 against 12: too rare to stand in for either


def test_choice_tasks_are_sized_for_a_three_point_interval() -> None:
    for task in ("lastword", "nextsent", "swap", "replace", "passkey"):  # worst case p = 0.5
        assert 1.96 * (0.25 / tiny_tasks.SIZES[task]) ** 0.5 <= 0.031, task


def test_chance_levels(rows: dict[str, list[dict]]) -> None:
    for task in ("lastword", "nextsent", "passkey"):
        assert tiny_tasks.chance_accuracy(task, rows[task]) == pytest.approx(0.25), task
    assert tiny_tasks.chance_accuracy("swap", rows["swap"]) == pytest.approx(0.5)
    assert tiny_tasks.chance_accuracy("replace", rows["replace"]) == pytest.approx(0.5)
    with pytest.raises(UserError, match="no accuracy"):
        tiny_tasks.chance_accuracy("ppl", rows["ppl"])


def _requests(rows: dict[str, list[dict]]) -> list[str]:
    """The text of every scored request of the choice tasks (context and continuation)."""
    texts = [row["context"] + " " + c for t in ("lastword", "swap", "replace")
             for row in rows[t] for c in row["choices"]]  # fmt: skip
    texts += [c + " " + row["sentence"] for row in rows["nextsent"] for c in row["contexts"]]
    texts += [row["prompt"] + " " + c for row in rows["passkey"] for c in row["choices"]]
    return texts


def test_prompts_fit_smollm2_window(request: pytest.FixtureRequest, rows) -> None:
    ensure_cached(request, "smollm2")
    from longred_bench.models.loading import load_tokenizer

    tok = load_tokenizer("smollm2-135m")
    texts = _requests(rows) + [row["text"] for row in rows["ppl"]]
    longest = max(len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts)
    assert longest <= 255  # room for a BOS token


def test_prompts_fit_tiny_base_window(rows) -> None:
    """Every request of a choice task fits tiny-base's 256-token window, so a run scores every
    row (ppl, scored in windows by lm-eval, has one passage of 259 tokens)."""
    from longred_bench.jobs.tiny_base import tiny_base_dir

    try:
        path = tiny_base_dir(build=False)
    except UserError:
        pytest.skip("tiny-base is not built")
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    lengths = [len(tok(t, add_special_tokens=False)["input_ids"]) for t in _requests(rows)]
    assert max(lengths) <= 255
    ppl = [len(tok(row["text"], add_special_tokens=False)["input_ids"]) for row in rows["ppl"]]
    assert sum(n > 256 for n in ppl) <= 1


def test_a_passage_may_hold_exactly_the_most_words_its_task_allows() -> None:
    """Passages run over consecutive usable sentences up to the task's word total, inclusive."""
    from longred_bench.data.sentences import Sentence
    from longred_bench.taskdata.tiny_sampling import _windows

    two = [Sentence(0, 1, 0, 45, True), Sentence(1, 2, 0, 45, True)]
    assert _windows(two, (40, 90), lambda i, j: True) == [(0, 2)]  # 90 words: the upper bound
    assert _windows(two, (40, 89), lambda i, j: True) == [(0, 1), (1, 2)]
