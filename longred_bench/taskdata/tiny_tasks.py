"""Samples of the ``longred_short_tiny`` lm-eval tasks, built from held-out prose.

Six short-text tasks that a small model pretrained on prose (the suite's tiny Llama, SmolLM2-135M)
can score above chance. Every sample is a verbatim passage of a ``test``-split document of a cached
corpus (:func:`longred_bench.data.corpora.load_documents`); ``train`` documents are never read.

Text is cut into sentences by :func:`longred_bench.data.sentences.split_sentences` (rules there: a
sentence is *usable* when it ends with ``.``, ``!`` or ``?``, starts with a capital, and has 3 to
60 words); passages are runs of consecutive usable sentences (they may span paragraphs, never a
heading or an unfinished fragment), kept verbatim and cut without overlap, except for ``cloze``,
which has one passage per target sentence (passages of different targets may share sentences).

- ``cloze`` (LAMBADA-style last word): a passage of 40-110 words whose last sentence ends in a
  word of at least 3 letters, not a function word, that already occurs in the passage (so the word
  is predictable from the context, as in LAMBADA). ``context`` is the passage up to that word,
  ``target`` is the word with a leading space; the final punctuation is dropped.
- ``nextsent``: 3 consecutive sentences (15-100 words) as ``context`` and 4 ``choices``: the true
  next sentence (6-35 words) and 3 distractor sentences from *other* documents, from the same corpus
  where its test split has other documents (Brown, KJV) and from the other corpora of the mix where
  it has not (Austen's test split is one novel). Distractors are usable sentences of 6-35 words
  whose length in characters is within 20% of the true sentence's (the band widens only if too
  few qualify), so length is no cue; the choice order is shuffled, ``gold`` indexes the true one.
- ``swap`` and ``replace`` (minimal pairs, chance 0.5): two consecutive sentences (10-80 words)
  as ``context`` and two ``choices``: the true next sentence (6-30 words) and a corrupted copy of
  it. ``swap`` exchanges two adjacent lowercase words (one space apart, different words);
  ``replace`` puts another content word of a similar frequency in the same documents (count
  within a factor of 1.25, :func:`content_vocabulary`) in place of one lowercase content word (3+
  letters, not a function word, not the first word). The pair is scored by total log-likelihood
  (``acc``): a swap keeps the same words and a replacement keeps the word frequency, so a model
  that ignores word order and context gains nothing from either corruption.
- ``passkey``: a passage of 40-90 words with a key sentence (a 5-digit key) and three sentences
  that plant the other three choices, 5-digit numbers too, each inserted at a seeded sentence
  boundary, then a question about the key; ``choices`` are the key and those three numbers,
  shuffled; ``gold`` indexes the key. Every choice occurs in the passage, so only the question's
  noun tells the key apart. ``phrasing`` picks the strings: ``heldout`` (the default; a family no
  training row uses, :data:`longred_bench.taskdata.ruler.phrasings.PASSKEY_FAMILIES`, drawn per
  row), ``train`` (the family pretraining uses) or ``standard`` (``"The pass key is NNNNN.
  Remember it."`` and ``"What is the pass key? The pass key is"``, with the held-out family's
  distractor sentences).
- ``ppl``: passages of 80-150 words, scored by rolling log-likelihood.

Which windows are taken is decided by a ``random.Random`` seeded with a string naming the task,
corpus and seed, so a build is identical on every machine and run. The ``n`` samples of a task are
split evenly over the corpora of the mix (the first corpora take the remainder), sampled without
replacement from each corpus's candidate passages, and interleaved corpus by corpus, so the first
rows (what lm-eval's ``--limit`` keeps) cover every corpus. The default mix is Brown test (50
documents) + Austen test (*Pride and Prejudice*), seed 1234, ``n`` per task :data:`SIZES` (1,100
for the choice tasks, so an accuracy's 95% interval is at most +-3 points; 500 for cloze and
ppl). With the longest
passage at 150 words (about 1,000 characters) every prompt with its answer fits in 256 tokens of
SmolLM2's tokenizer (checked by the tests).
"""

from __future__ import annotations

import random
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Sequence
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any

from longred_bench.data.corpora import Document, corpus_names, load_documents
from longred_bench.data.sentences import Sentence, split_sentences
from longred_bench.errors import UserError
from longred_bench.taskdata.ruler.phrasings import PASSKEY_FAMILIES, check_phrasing

TASKS: tuple[str, ...] = ("cloze", "nextsent", "swap", "replace", "passkey", "ppl")
DEFAULT_CORPORA: tuple[str, ...] = ("brown", "austen")
DEFAULT_N = 500
# Bumped when the rows of a task change (cached evaluations of older rows are then not reused):
# 2: the minimal pairs (swap, replace), 1,100 rows for the choice tasks.
TINY_TASKS_VERSION = 2
# Rows per task when ``n`` is not given: the choice tasks have 1,100, so a 95% interval of an
# accuracy is at most +-3 points (1.96 * sqrt(0.25 / 1100) = 0.0295); cloze (accuracy 5-10% on
# every model scored so far: +-2.6 points at 10%) and ppl keep 500 (Austen's one test novel has
# fewer than 300 cloze passages).
SIZES: dict[str, int] = {
    "cloze": 500, "nextsent": 1100, "swap": 1100, "replace": 1100, "passkey": 1100, "ppl": 500,
}  # fmt: skip
DEFAULT_SEED = 1234
NUM_CHOICES = 4
PASSKEY_QUESTION = "What is the pass key? The pass key is"
PASSKEY_SENTENCE = "The pass key is {key}. Remember it."
DEFAULT_PASSKEY_PHRASING = "heldout"

_CLOZE_WORDS = (40, 110)
_NEXTSENT_CONTEXT_SENTENCES = 3
_NEXTSENT_CONTEXT_WORDS = (15, 100)
_NEXTSENT_TARGET_WORDS = (6, 35)
_NEXTSENT_LENGTH_BAND = 0.2
_PASSKEY_WORDS = (40, 90)
_PPL_WORDS = (80, 150)
_PAIR_CONTEXT_SENTENCES = 2
_PAIR_CONTEXT_WORDS = (10, 80)
_PAIR_TARGET_WORDS = (6, 30)
# ``replace``: a content word seen at least this often in the documents is replaced by another
# whose count is within this factor of its own.
_MIN_COUNT = 3
_FREQUENCY_BAND = 1.25


def _word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_FUNCTION_WORDS = _word_set(
    "the and but for nor yet not all any are was were has had have his her him its our their "
    "them they she you your who whom whose which what when where why how this that these those "
    "than then there here with from into onto upon over under about after before again also "
    "been being very much more most some such only own same can could will would shall should "
    "may might must did does doing done one ones out off too now just each few both other"
)
_LAST_WORD = re.compile(r" ([A-Za-z]+)[.!?]+[\"'’”)\]]*$")
_WORD = re.compile(r"[A-Za-z]+")


def _windows(
    sentences: Sequence[Sentence],
    words: tuple[int, int],
    accept: Callable[[int, int], bool],
) -> list[tuple[int, int]]:
    """Non-overlapping runs ``[i, j)`` of usable sentences with a word total within ``words``.

    From each start the longest accepted run is taken; the scan resumes after it.
    """
    low, high = words
    found: list[tuple[int, int]] = []
    i = 0
    while i < len(sentences):
        best, total, j = None, 0, i
        while j < len(sentences) and sentences[j].usable and total + sentences[j].words <= high:
            total += sentences[j].words
            j += 1
            if total >= low and accept(i, j):
                best = j
        if best is None:
            i += 1
        else:
            found.append((i, best))
            i = best
    return found


def _windows_ending(
    sentences: Sequence[Sentence],
    words: tuple[int, int],
    accept: Callable[[int, int], bool],
) -> list[tuple[int, int]]:
    """One run ``[i, j)`` per end sentence ``j - 1``: the longest run of usable sentences ending
    there with at most ``words[1]`` words, kept when it has ``words[0]`` or more and is accepted.
    Runs of different ends may overlap."""
    low, high = words
    found: list[tuple[int, int]] = []
    for j in range(1, len(sentences) + 1):
        if not sentences[j - 1].usable:
            continue
        i, total = j - 1, sentences[j - 1].words
        while i > 0 and sentences[i - 1].usable and total + sentences[i - 1].words <= high:
            i -= 1
            total += sentences[i].words
        if low <= total <= high and accept(i, j):
            found.append((i, j))
    return found


def _quotas(n: int, corpora: Sequence[str]) -> dict[str, int]:
    base, extra = divmod(n, len(corpora))
    return {c: base + (1 if k < extra else 0) for k, c in enumerate(corpora)}


def _interleave(groups: Sequence[Sequence[dict[str, Any]]]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for rank in range(max((len(g) for g in groups), default=0)):
        rows.extend(g[rank] for g in groups if rank < len(g))
    return rows


Candidate = tuple[Document, list[Sentence], int, int]


def _doc_candidates(
    doc: Document,
    words: tuple[int, int],
    accept: Callable[[Document, list[Sentence], int, int], bool],
    overlap: bool,
) -> list[Candidate]:
    sentences = split_sentences(doc.text)
    scan = _windows_ending if overlap else _windows
    windows = scan(sentences, words, lambda i, j: accept(doc, sentences, i, j))
    return [(doc, sentences, i, j) for i, j in windows]


def _sample(
    task: str,
    documents: Sequence[Document],
    n: int,
    seed: int,
    words: tuple[int, int],
    accept: Callable[[Document, list[Sentence], int, int], bool],
    build: Callable[[Candidate, random.Random], dict[str, Any]],
    *,
    overlap: bool = False,
) -> list[dict[str, Any]]:
    """Pick ``n`` candidate windows, split evenly over corpora, and build a row from each."""
    if n < 1:
        raise UserError(f"a tiny task needs n >= 1 samples (got {n})")
    corpora = list(dict.fromkeys(d.corpus for d in documents))
    if not corpora:
        raise UserError(f"no documents to build the tiny {task} task from")
    groups = []
    for corpus, quota in _quotas(n, corpora).items():
        candidates = [
            candidate
            for doc in documents
            if doc.corpus == corpus
            for candidate in _doc_candidates(doc, words, accept, overlap)
        ]
        if len(candidates) < quota:
            raise UserError(
                f"corpus {corpus!r} yields {len(candidates)} passages for the tiny {task} task, "
                f"{quota} are needed: lower n or add corpora"
            )
        rng = random.Random(f"longred-tiny/{task}/{corpus}/{seed}")
        chosen = rng.sample(candidates, quota)
        groups.append([build(candidate, rng) for candidate in chosen])
    return _interleave(groups)


def _provenance(doc: Document, sentences: list[Sentence], i: int, j: int) -> dict[str, Any]:
    return {
        "corpus": doc.corpus,
        "doc_id": doc.doc_id,
        "start": sentences[i].start,
        "end": sentences[j - 1].end,
    }


def _cloze_word(doc: Document, sentences: list[Sentence], i: int, j: int) -> str | None:
    """The passage's last word when it qualifies as a cloze target, else ``None``."""
    passage = doc.text[sentences[i].start : sentences[j - 1].end]
    match = _LAST_WORD.search(passage)
    if match is None:
        return None
    word = match.group(1)
    if len(word) < 3 or word.lower() in _FUNCTION_WORDS:
        return None
    earlier = {w.lower() for w in _WORD.findall(passage[: match.start(1)])}
    return word if word.lower() in earlier else None


def build_cloze(
    documents: Sequence[Document], n: int = DEFAULT_N, seed: int = DEFAULT_SEED
) -> list[dict[str, Any]]:
    """Last-word cloze rows: ``text``, ``context``, ``target`` (``context + target == text``)."""

    def build(candidate: Candidate, rng: random.Random) -> dict[str, Any]:
        doc, sentences, i, j = candidate
        passage = doc.text[sentences[i].start : sentences[j - 1].end]
        match = _LAST_WORD.search(passage)
        return {
            **_provenance(doc, sentences, i, j),
            "text": passage[: match.end(1)],
            "context": passage[: match.start(1) - 1],
            "target": passage[match.start(1) - 1 : match.end(1)],
        }

    def accept(doc: Document, sentences: list[Sentence], i: int, j: int) -> bool:
        return j - i >= 2 and _cloze_word(doc, sentences, i, j) is not None

    return _sample("cloze", documents, n, seed, _CLOZE_WORDS, accept, build, overlap=True)


Entry = tuple[str, str, str]  # a distractor candidate: (text, corpus, doc_id)
Pool = tuple[list[int], list[Entry]]  # entries sorted by length in characters, and the lengths


def _distractor_pools(documents: Sequence[Document]) -> dict[tuple[str, str], Pool]:
    low, high = _NEXTSENT_TARGET_WORDS
    per_doc: dict[tuple[str, str], list[Entry]] = {}
    for doc in documents:
        per_doc[(doc.corpus, doc.doc_id)] = [
            (doc.text[s.start : s.end], doc.corpus, doc.doc_id)
            for s in split_sentences(doc.text)
            if s.usable and low <= s.words <= high
        ]
    pools = {}
    for key in per_doc:
        corpus = key[0]
        same = [k for k in per_doc if k[0] == corpus and k != key]
        sources = same or [k for k in per_doc if k != key]
        entries = sorted((e for k in sources for e in per_doc[k]), key=lambda e: (len(e[0]), e))
        pools[key] = ([len(e[0]) for e in entries], entries)
    return pools


def _pick_distractors(pool: Pool, true_text: str, k: int, rng: random.Random) -> list[Entry]:
    lengths, entries = pool
    band = _NEXTSENT_LENGTH_BAND
    normal = " ".join(true_text.split())
    while True:
        lo = bisect_left(lengths, len(true_text) * (1 - band))
        hi = bisect_right(lengths, len(true_text) * (1 + band))
        seen, options = {normal}, []
        for entry in entries[lo:hi]:
            key = " ".join(entry[0].split())
            if key not in seen:
                seen.add(key)
                options.append(entry)
        if len(options) >= k:
            return rng.sample(options, k)
        if lo == 0 and hi == len(entries):
            raise UserError(
                f"only {len(options)} distractor sentences for the nextsent task: it needs "
                "documents other than the one a sample comes from"
            )
        band *= 2


def build_nextsent(
    documents: Sequence[Document], n: int = DEFAULT_N, seed: int = DEFAULT_SEED
) -> list[dict[str, Any]]:
    """Next-sentence rows: ``context``, ``choices`` (4 sentences), ``gold`` and ``choice_docs``
    (each choice's source document as ``"corpus/doc_id"``)."""
    pools = _distractor_pools(documents)
    count = _NEXTSENT_CONTEXT_SENTENCES
    target_low, target_high = _NEXTSENT_TARGET_WORDS
    context_low, context_high = _NEXTSENT_CONTEXT_WORDS

    def accept(doc: Document, sentences: list[Sentence], i: int, j: int) -> bool:
        if j - i != count + 1:
            return False
        context_words = sum(s.words for s in sentences[i : j - 1])
        return (
            context_low <= context_words <= context_high
            and target_low <= sentences[j - 1].words <= target_high
        )

    def build(candidate: Candidate, rng: random.Random) -> dict[str, Any]:
        doc, sentences, i, j = candidate
        true_text = doc.text[sentences[j - 1].start : sentences[j - 1].end]
        picked = _pick_distractors(pools[(doc.corpus, doc.doc_id)], true_text, NUM_CHOICES - 1, rng)
        options = [(true_text, doc.corpus, doc.doc_id), *picked]
        order = list(range(NUM_CHOICES))
        rng.shuffle(order)
        return {
            **_provenance(doc, sentences, i, j),
            "context": doc.text[sentences[i].start : sentences[j - 2].end],
            "choices": [options[k][0] for k in order],
            "gold": order.index(0),
            "choice_docs": [f"{options[k][1]}/{options[k][2]}" for k in order],
        }

    words = (0, context_high + target_high)  # the window is 4 sentences, checked by accept
    return _sample("nextsent", documents, n, seed, words, accept, build)


Vocabulary = dict[str, list[str]]  # content word -> content words of a similar frequency


def _swap(sentence: str, rng: random.Random, vocab: Vocabulary) -> str | None:
    """``sentence`` with two adjacent lowercase words (one space apart, different) swapped, the
    pair drawn with ``rng``; ``None`` when it has no such pair."""
    words = list(_WORD.finditer(sentence))
    pairs = [
        (a, b)
        for a, b in pairwise(words)
        if sentence[a.end() : b.start()] == " "
        and a.group().islower() and b.group().islower() and a.group() != b.group()
    ]  # fmt: skip
    if not pairs:
        return None
    a, b = rng.choice(pairs)
    return sentence[: a.start()] + b.group() + " " + a.group() + sentence[b.end() :]


def _content(word: str) -> bool:
    return word.islower() and len(word) >= 3 and word not in _FUNCTION_WORDS


def content_vocabulary(documents: Sequence[Document]) -> Vocabulary:
    """For each content word of ``documents`` (lowercase, 3+ letters, not a function word) seen
    at least :data:`_MIN_COUNT` times, the other such words whose count is within a factor of
    :data:`_FREQUENCY_BAND` of its own (sorted): the replacements the ``replace`` task draws."""
    counts: dict[str, int] = {}
    for doc in documents:
        for match in _WORD.finditer(doc.text):
            word = match.group()
            if _content(word):
                counts[word] = counts.get(word, 0) + 1
    ranked = sorted((c, w) for w, c in counts.items() if c >= _MIN_COUNT)
    keys = [c for c, _ in ranked]
    out: Vocabulary = {}
    for count, word in ranked:
        lo = bisect_left(keys, count / _FREQUENCY_BAND)
        hi = bisect_right(keys, count * _FREQUENCY_BAND)
        out[word] = [w for _, w in ranked[lo:hi] if w != word]
    return out


def _replace(sentence: str, rng: random.Random, vocab: Vocabulary) -> str | None:
    """``sentence`` with one content word (not the first word, in ``vocab``) replaced by another
    content word of a similar frequency in the same documents that is not in the sentence, both
    drawn with ``rng``; ``None`` when it has no such word. Frequency is matched so that a model
    that ignores context gains nothing from the replacement, in either direction."""
    words = list(_WORD.finditer(sentence))
    present = {w.group().lower() for w in words}
    slots = [
        k for k, w in enumerate(words)
        if k > 0 and _content(w.group()) and any(o not in present for o in vocab.get(w.group(), ()))
    ]  # fmt: skip
    if not slots:
        return None
    k = rng.choice(slots)
    word = rng.choice([o for o in vocab[words[k].group()] if o not in present])
    return sentence[: words[k].start()] + word + sentence[words[k].end() :]


CORRUPTIONS: dict[str, Callable[[str, random.Random, Vocabulary], str | None]] = {
    "swap": _swap,
    "replace": _replace,
}


def build_pairs(
    task: str, documents: Sequence[Document], n: int = DEFAULT_N, seed: int = DEFAULT_SEED
) -> list[dict[str, Any]]:
    """Minimal-pair rows of ``task`` (``swap`` or ``replace``): ``context`` (two sentences),
    ``choices`` (the true next sentence and its corrupted copy, shuffled), ``gold``,
    ``original`` and ``corrupted``."""
    corrupt = CORRUPTIONS[task]
    vocab = content_vocabulary(documents) if task == "replace" else {}
    count = _PAIR_CONTEXT_SENTENCES
    context_low, context_high = _PAIR_CONTEXT_WORDS
    target_low, target_high = _PAIR_TARGET_WORDS

    def target(doc: Document, sentences: list[Sentence], j: int) -> str:
        return doc.text[sentences[j - 1].start : sentences[j - 1].end]

    def accept(doc: Document, sentences: list[Sentence], i: int, j: int) -> bool:
        if j - i != count + 1 or not target_low <= sentences[j - 1].words <= target_high:
            return False
        context_words = sum(s.words for s in sentences[i : j - 1])
        probe = random.Random(0)  # corruptible at all (the row draws its own corruption)
        return context_low <= context_words <= context_high and bool(
            corrupt(target(doc, sentences, j), probe, vocab)
        )

    def build(candidate: Candidate, rng: random.Random) -> dict[str, Any]:
        doc, sentences, i, j = candidate
        original = target(doc, sentences, j)
        corrupted = corrupt(original, rng, vocab)
        choices = [original, corrupted]
        rng.shuffle(choices)
        return {
            **_provenance(doc, sentences, i, j),
            "context": doc.text[sentences[i].start : sentences[j - 2].end],
            "choices": choices,
            "gold": choices.index(original),
            "original": original,
            "corrupted": corrupted,
        }

    words = (0, context_high + target_high)  # the window is 3 sentences, checked by accept
    return _sample(task, documents, n, seed, words, accept, build)


def passkey_prompt(rng: random.Random, phrasing: str) -> tuple[str, str]:
    """``(key sentence with {key}, question)``: the task's first strings (``standard``) or a pair
    drawn from the family ``phrasing`` with ``rng``."""
    if phrasing == "standard":
        return PASSKEY_SENTENCE, PASSKEY_QUESTION
    return PASSKEY_FAMILIES[phrasing].draw(rng)


def build_passkey(
    documents: Sequence[Document],
    n: int = DEFAULT_N,
    seed: int = DEFAULT_SEED,
    *,
    phrasing: str = DEFAULT_PASSKEY_PHRASING,
) -> list[dict[str, Any]]:
    """Passkey rows: ``passage`` (key and distractor sentences inserted), ``prompt`` (passage +
    question), ``key``, ``position`` (sentences before the key), ``choices`` (all in the
    passage), ``gold``, ``phrasing``."""
    check_phrasing(phrasing)
    family = PASSKEY_FAMILIES["heldout" if phrasing == "standard" else phrasing]

    def build(candidate: Candidate, rng: random.Random) -> dict[str, Any]:
        doc, sentences, i, j = candidate
        start, end = sentences[i].start, sentences[j - 1].end
        original = doc.text[start:end]
        numbers: list[str] = []
        while len(numbers) < NUM_CHOICES:
            number = str(rng.randint(10000, 99999))
            if number not in original and number not in numbers:
                numbers.append(number)
        key = numbers[0]
        needle, question = passkey_prompt(rng, phrasing)
        planted = [needle.format(key=key)]
        planted += [rng.choice(family.distractors).format(number=x) for x in numbers[1:]]
        # Each planted sentence goes after sentence i + slot - 1 (slot 0: before the passage);
        # ties keep the drawn order, so the key is not always first.
        slots = [rng.randint(0, j - i) for _ in planted]
        order = sorted(range(len(planted)), key=lambda k: (slots[k], rng.random()))
        pieces, cursor = [], start
        for k in order:
            cut = start if slots[k] == 0 else sentences[i + slots[k] - 1].end
            pieces.append(doc.text[cursor:cut])
            pieces.append((" " if cut > start else "") + planted[k] + (" " if cut == start else ""))
            cursor = cut
        pieces.append(doc.text[cursor:end])
        passage = "".join(pieces)
        choices = list(numbers)
        rng.shuffle(choices)
        return {
            **_provenance(doc, sentences, i, j),
            "passage": passage,
            "prompt": passage + "\n" + question,
            "key": key,
            "position": slots[0],
            "choices": choices,
            "gold": choices.index(key),
            "phrasing": phrasing,
        }

    def at_least_3(doc: Document, sentences: list[Sentence], i: int, j: int) -> bool:
        return j - i >= 3

    return _sample("passkey", documents, n, seed, _PASSKEY_WORDS, at_least_3, build)


def build_ppl(
    documents: Sequence[Document], n: int = DEFAULT_N, seed: int = DEFAULT_SEED
) -> list[dict[str, Any]]:
    """Perplexity rows: ``text``, a verbatim passage of 80-150 words."""

    def build(candidate: Candidate, rng: random.Random) -> dict[str, Any]:
        doc, sentences, i, j = candidate
        return {
            **_provenance(doc, sentences, i, j),
            "text": doc.text[sentences[i].start : sentences[j - 1].end],
        }

    return _sample("ppl", documents, n, seed, _PPL_WORDS, lambda *window: True, build)


BUILDERS: dict[str, Callable[..., list[dict[str, Any]]]] = {
    "cloze": build_cloze,
    "nextsent": build_nextsent,
    "swap": partial(build_pairs, "swap"),
    "replace": partial(build_pairs, "replace"),
    "passkey": build_passkey,
    "ppl": build_ppl,
}


def held_out_documents(
    corpora: Sequence[str] = DEFAULT_CORPORA, *, cache: Path | None = None
) -> list[Document]:
    """The ``test``-split documents of ``corpora``, corpus by corpus.

    A corpus missing from the cache raises a :class:`UserError` naming the fetch of the whole mix.
    """
    unknown = [c for c in corpora if c not in corpus_names()]
    if unknown or not corpora:
        raise UserError(f"unknown corpora {unknown or list(corpora)}; corpora: {corpus_names()}")
    documents: list[Document] = []
    for corpus in corpora:
        try:
            documents.extend(load_documents(corpus, "test", cache=cache))
        except UserError:
            raise UserError(
                f"the tiny tasks read the test split of {', '.join(corpora)}, and {corpus!r} is "
                f"not cached; run `longred-bench data fetch --sources {' '.join(corpora)}`"
            ) from None
    return documents


def build(
    task: str,
    corpora: Sequence[str] = DEFAULT_CORPORA,
    n: int | None = None,
    seed: int = DEFAULT_SEED,
    *,
    cache: Path | None = None,
    phrasing: str | None = None,
) -> list[dict[str, Any]]:
    """The rows of tiny task ``task`` built from the test splits of ``corpora``; ``phrasing``
    (passkey only; default ``heldout``) names the passkey's strings; ``n`` rows (default: the
    task's :data:`SIZES`)."""
    if task not in BUILDERS:
        raise UserError(f"unknown tiny task {task!r}; tasks: {', '.join(TASKS)}")
    documents = held_out_documents(corpora, cache=cache)
    n = SIZES[task] if n is None else n
    if task == "passkey":
        return build_passkey(documents, n, seed, phrasing=phrasing or DEFAULT_PASSKEY_PHRASING)
    if phrasing is not None:
        raise UserError(f"a phrasing is for the tiny passkey task only, not {task}")
    return BUILDERS[task](documents, n, seed)


def chance_accuracy(task: str, rows: Sequence[dict[str, Any]]) -> float:
    """Expected ``acc`` of guessing: one of the choices (``nextsent``, ``passkey``) uniformly,
    or (``cloze``) one of the distinct words of the context of 3+ letters uniformly."""
    if task in ("nextsent", "swap", "replace", "passkey"):
        return sum(1 / len(row["choices"]) for row in rows) / len(rows)
    if task == "cloze":
        return sum(
            1 / len({w.lower() for w in _WORD.findall(row["context"]) if len(w) >= 3})
            for row in rows
        ) / len(rows)
    raise UserError(
        f"tiny task {task!r} has no accuracy; tasks with one: cloze, nextsent, swap, replace, "
        "passkey"
    )
