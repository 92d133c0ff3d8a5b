"""In-window retrieval examples for pretraining: every kind parsed back and checked.

Each example is parsed with regular expressions written from the task phrasings, and its answer
is compared with the fact planted in its text. A tokenizer trained here on seeded synthetic prose
(and the byte tokenizer, where tokens are bytes) keeps the tests to seconds without the cache.
"""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest

from longred_bench.errors import UserError
from longred_bench.models.zoo import byte_tokenizer
from longred_bench.training.pretrain.retrieval import KINDS, retrieval_examples
from longred_bench.training.pretrain.tokenizer import train_tokenizer

MAX_TOKENS = 384
NEEDLE = re.compile(r"One of the special magic (numbers|uuids) for (\S+) is: (\S+)\.")
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def _filler(seed: int, sentences: int = 600) -> list[str]:
    rng = random.Random(seed)
    nouns = ["garden", "river", "letter", "window", "captain", "village", "doctor", "market"]
    verbs = ["watched", "followed", "answered", "carried", "visited", "admired", "painted"]
    out = []
    for _ in range(sentences):
        words = [rng.choice(["The", "A", "Every"]), rng.choice(nouns), rng.choice(verbs)]
        words += ["the", rng.choice(nouns), "near", "the", rng.choice(nouns)]
        out.append(" ".join(words) + rng.choice([".", ".", "!", "?"]))
    return out


FILLER = _filler(0)


@pytest.fixture(scope="module")
def tok():
    return train_tokenizer(FILLER + ["VAR The special magic numbers Repeat"] * 20, vocab_size=400)


@pytest.fixture(scope="module")
def examples(tok) -> list[str]:
    return retrieval_examples(tok, FILLER, n=120, max_tokens=MAX_TOKENS, seed=7)


def _passkey(text: str) -> tuple[str, str]:
    body, question = text.rsplit("\n", 1)
    answer = re.fullmatch(r"What is the pass key\? The pass key is (\d{5})\.", question)
    planted = re.findall(r"The pass key is (\d{5})\. Remember it\.", body)
    assert answer and len(planted) == 1, text
    return planted[0], answer.group(1)


def _kv(text: str) -> tuple[list[str], list[str]]:
    kind = re.match(r"Some special magic (numbers|uuids) are hidden", text).group(1)
    needles = NEEDLE.findall(text)
    keys = [key for _, key, _ in needles]
    assert len(set(keys)) == len(keys), "keys of the needles must be distinct"
    assert {k for k, _, _ in needles} == {kind}
    planted = {key: value for _, key, value in needles}
    question = re.search(rf"What are all the special magic {kind} for (.+?) mentioned in", text)
    queried = re.split(r", and |, ", question.group(1))
    prefix = f"The special magic {kind} for {question.group(1)} mentioned in the provided text are "
    assert prefix in text
    answer = text.rsplit(prefix, 1)[1]
    assert answer.endswith(".")
    return [planted[key] for key in queried], answer[:-1].split(", ")


def _copy(text: str) -> tuple[str, str]:
    what = r"(?:list of \w+|passage)"
    match = re.fullmatch(rf"Here is a {what}: (.+)\nRepeat the {what} above: (.+)", text)
    assert match, text
    return match.group(1), match.group(2)


def _vt(text: str) -> tuple[list[str], list[str]]:
    value_of = {name: value for name, value in re.findall(r"VAR ([A-Z]{5}) = (\d{5})\.", text)}
    links = re.findall(r"VAR ([A-Z]{5}) = VAR ([A-Z]{5})\.", text)
    for _ in links:  # chains are written in order, but resolve to a fixed point anyway
        for name, source in links:
            if source in value_of:
                value_of[name] = value_of[source]
    asked = re.search(r"assigned the value (\d{5}) in the text above\.", text).group(1)
    count, named = re.search(
        r"(\d+) variables are assigned the value \d{5}, they are: (.+)\.$", text
    ).groups()
    answer = named.split(", ")
    assert int(count) == len(answer)
    return sorted(n for n, v in value_of.items() if v == asked), sorted(answer)


def _kind(text: str) -> str:
    if "What is the pass key?" in text:
        return "passkey"
    if text.startswith("Some special magic"):
        return "kv"
    if text.startswith("Here is"):
        return "copy"
    if text.startswith("Memorize and track"):
        return "vt"
    raise AssertionError(f"unrecognised example: {text[:80]!r}")


def test_every_answer_is_the_planted_value(examples: list[str]) -> None:
    parse = {"passkey": _passkey, "kv": _kv, "copy": _copy, "vt": _vt}
    for text in examples:
        planted, answer = parse[_kind(text)](text)
        assert planted == answer and answer, text


def test_kinds_take_turns_and_all_are_produced(examples: list[str], tok) -> None:
    assert [_kind(t) for t in examples[:8]] == list(KINDS) * 2
    assert Counter(_kind(t) for t in examples) == {k: 30 for k in KINDS}
    only = retrieval_examples(tok, FILLER, n=5, max_tokens=MAX_TOKENS, seed=7, kinds=["vt", "kv"])
    assert [_kind(t) for t in only] == ["vt", "kv", "vt", "kv", "vt"]


def test_lengths_fit_and_fill_the_window(examples: list[str], tok) -> None:
    lengths = [len(tok(t, add_special_tokens=False)["input_ids"]) for t in examples]
    assert max(lengths) <= MAX_TOKENS
    assert min(lengths) >= 0.3 * MAX_TOKENS  # targets start at 40%, minus one haystack unit
    assert sum(n < 0.6 * MAX_TOKENS for n in lengths) >= 10
    assert sum(n > 0.9 * MAX_TOKENS for n in lengths) >= 10


def test_byte_tokenizer_counts_bytes() -> None:
    texts = retrieval_examples(byte_tokenizer(), FILLER, n=12, max_tokens=1024, seed=3)
    assert all(len(t.encode()) <= 1024 for t in texts)
    assert {_kind(t) for t in texts} == set(KINDS)


def test_deterministic_and_seeded(tok) -> None:
    first = retrieval_examples(tok, FILLER, n=12, max_tokens=MAX_TOKENS, seed=1)
    assert first == retrieval_examples(tok, FILLER, n=12, max_tokens=MAX_TOKENS, seed=1)
    other = retrieval_examples(tok, FILLER, n=12, max_tokens=MAX_TOKENS, seed=2)
    assert all(a != b for a, b in zip(first, other, strict=True))
    # example i does not depend on n
    assert retrieval_examples(tok, FILLER, n=5, max_tokens=MAX_TOKENS, seed=1) == first[:5]


def test_kv_varies_needles_haystacks_values_and_queries(tok) -> None:
    texts = retrieval_examples(tok, FILLER, n=200, max_tokens=768, seed=5, kinds=["kv"])
    counts, uuids, queried_all, noise, prose, stacks = Counter(), 0, 0, 0, 0, 0
    for text in texts:
        planted, answer = _kv(text)
        assert planted == answer
        needles = len(NEEDLE.findall(text))
        counts[min(needles, 5)] += 1  # 5: a haystack of distractor needles
        stacks += needles > 4
        uuids += text.startswith("Some special magic uuids")
        queried_all += len(answer) > 1
        noise += "The grass is green." in text
        prose += " the river " in text or " the garden " in text
        if text.startswith("Some special magic uuids"):
            assert all(UUID.fullmatch(v) for v in answer)
        else:
            assert all(re.fullmatch(r"\d{7}", v) for v in answer)
    assert {1, 2, 3, 4} <= set(counts)
    assert 0.05 * len(texts) < uuids < 0.5 * len(texts)  # numbers are the majority
    assert queried_all > 20 and noise > 20 and prose > 20 and stacks > 10


def test_needles_sit_at_every_depth(tok) -> None:
    texts = retrieval_examples(tok, FILLER, n=60, max_tokens=MAX_TOKENS, seed=9, kinds=["passkey"])
    depths = []
    for text in texts:
        body = text.rsplit("\n", 1)[0]
        depths.append(body.index("The pass key is") / len(body))
    assert min(depths) < 0.15 and max(depths) > 0.8
    assert any(0.35 < d < 0.65 for d in depths)


def test_bad_input_is_a_user_error(tok) -> None:
    with pytest.raises(UserError, match="unknown retrieval kind"):
        retrieval_examples(tok, FILLER, n=2, max_tokens=MAX_TOKENS, seed=0, kinds=["qa"])
    with pytest.raises(UserError, match="no prose words"):
        retrieval_examples(tok, ["1234 5678", ""], n=2, max_tokens=MAX_TOKENS, seed=0)
    with pytest.raises(UserError, match="'kv' does not fit in 40 tokens"):
        retrieval_examples(tok, FILLER, n=2, max_tokens=40, seed=0, kinds=["kv"])
    assert retrieval_examples(tok, FILLER, n=0, max_tokens=MAX_TOKENS, seed=0) == []
