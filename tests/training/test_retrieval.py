"""In-window retrieval examples for pretraining: every kind parsed back and checked.

Each example is parsed with regular expressions built from its phrasing family's strings, and its
answer is compared with the fact planted in its text. A tokenizer trained here on seeded synthetic
prose (and the byte tokenizer, where tokens are bytes) keeps the tests to seconds without the
cache.
"""

from __future__ import annotations

import random
import re
from collections import Counter

import pytest
import torch

from longred_bench.errors import UserError
from longred_bench.models.zoo import byte_tokenizer
from longred_bench.taskdata.ruler import niah
from longred_bench.taskdata.ruler.phrasings import (
    FAMILIES,
    PASSKEY_FAMILIES,
    VT_FAMILIES,
    Family,
    PasskeyFamily,
    VtFamily,
)
from longred_bench.taskdata.ruler.synthetic import VT_PREFIX, VT_TEMPLATE
from longred_bench.taskdata.tiny_tasks import PASSKEY_QUESTION, PASSKEY_SENTENCE
from longred_bench.training.pretrain.retrieval import KINDS, retrieval_examples
from longred_bench.training.pretrain.tokenizer import train_tokenizer

MAX_TOKENS = 384
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")
FIELDS = {
    "kind": r"numbers|uuids",
    "one": r"number|uuid",
    "key": r"[\w-]+",
    "value": r"[0-9a-f-]+",
    "query": r".+?",
    "noun": r"[a-z ]+?",
    "number": r"\d{5}",
    "count": r"\d+",
}
STANDARD_NIAH = Family(
    instructions=(niah.TEMPLATE.split("\n{context}\n")[0],),
    questions=(niah.TEMPLATE.split("\n{context}\n")[1],),
    answer_prefixes=(niah.ANSWER_PREFIX,),
    needles=(niah.NEEDLE,),
)
STANDARD_VT = VtFamily(
    instructions=(VT_TEMPLATE.split("{context}")[0].strip(),),
    questions=(VT_TEMPLATE.split("{context}")[1].strip(),),
    answer_prefixes=(VT_PREFIX,),
)
STANDARD_PASSKEY = PasskeyFamily(
    nouns=("pass key",), needles=(PASSKEY_SENTENCE,), questions=(PASSKEY_QUESTION,), distractors=()
)


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


def _regex(template: str, **fixed: str) -> str:
    """``template`` as a regular expression: each field a named group (``fixed`` fields as the
    given text), a field's later occurrences back-references to its first."""
    out, seen = [], set()
    for literal, field in re.findall(r"([^{]*)(?:\{(\w+)\})?", template):
        out.append(re.escape(literal))
        if not field:
            continue
        if field in fixed:
            out.append(re.escape(fixed[field]))
        elif field in seen:
            out.append(f"(?P={field})")
        else:
            seen.add(field)
            out.append(f"(?P<{field}>{FIELDS[field]})")
    return "".join(out)


def _families(phrasing: str) -> tuple[Family, VtFamily, PasskeyFamily]:
    if phrasing == "standard":
        return STANDARD_NIAH, STANDARD_VT, STANDARD_PASSKEY
    return FAMILIES[phrasing], VT_FAMILIES[phrasing], PASSKEY_FAMILIES[phrasing]


def _first(patterns: list[str], text: str, *, full: bool = False) -> re.Match:
    for pattern in patterns:
        match = (re.fullmatch if full else re.search)(pattern, text)
        if match:
            return match
    raise AssertionError(f"no pattern of the family matches {text[-200:]!r}")


def _needles(text: str, family: Family) -> list[tuple[str, str, str]]:
    """``(one, key, value)`` of every needle sentence of the family in ``text`` (``one`` is
    ``None`` for a needle that names no kind)."""
    matches = [m for needle in family.needles for m in re.finditer(_regex(needle), text)]
    found = []
    for m in matches:  # a needle with a lead-in also matches the template without it: keep one
        if any(o is not m and o.start() <= m.start() and m.end() <= o.end() and
               o.end() - o.start() > m.end() - m.start() for o in matches):  # fmt: skip
            continue
        groups = m.groupdict()
        one = groups.get("one") or (groups.get("kind") or "").rstrip("s") or None
        found.append((one, groups["key"], groups["value"].rstrip(".")))
    return found


def _passkey(text: str, phrasing: str = "train") -> tuple[str, str]:
    family = _families(phrasing)[2]
    body, question = text.rsplit("\n", 1)
    asked = _first(
        [_regex(q) + r" (?P<key>\d{5})\." for q in family.questions], question, full=True
    )
    noun = asked.groupdict().get("noun", "pass key")
    planted = [
        m.group("key") for n in family.needles for m in re.finditer(_regex(n, noun=noun), body)
    ]
    assert len(planted) == 1, text
    others = [m.group(0) for m in re.finditer(r"\d{5}", body)]
    assert others.count(planted[0]) == 1 and len(others) <= 4, text
    return planted[0], asked.group("key")


def _kv(text: str, phrasing: str = "train") -> tuple[list[str], list[str]]:
    family = _families(phrasing)[0]
    first = text.split("\n", 1)[0]
    kind = _first([_regex(i) for i in family.instructions], first, full=True).group("kind")
    needles = _needles(text, family)
    keys = [key for _, key, _ in needles]
    assert len(set(keys)) == len(keys), "keys of the needles must be distinct"
    assert {one for one, _, _ in needles} <= {kind.rstrip("s"), None}
    planted = {key: value for _, key, value in needles}
    last = text.rsplit("\n", 1)[1]
    ends = [_regex(q + a, kind=kind) for q in family.questions for a in family.answer_prefixes]
    match = _first([e + r" (?P<answer>.+)\." for e in ends], last, full=True)
    queried = re.split(r", and |, ", match.group("query"))
    return [planted[key] for key in queried], match.group("answer").split(", ")


def _copy(text: str, phrasing: str = "train") -> tuple[str, str]:
    what = r"(?:list of \w+|passage)"
    match = re.fullmatch(rf"Here is a {what}: (.+)\nRepeat the {what} above: (.+)", text)
    assert match, text
    return match.group(1), match.group(2)


def _vt(text: str, phrasing: str = "train") -> tuple[list[str], list[str]]:
    family = _families(phrasing)[1]
    value_of = {name: value for name, value in re.findall(r"VAR ([A-Z]{5}) = (\d{5})\.", text)}
    links = re.findall(r"VAR ([A-Z]{5}) = VAR ([A-Z]{5})\.", text)
    for _ in links:  # chains are written in order, but resolve to a fixed point anyway
        for name, source in links:
            if source in value_of:
                value_of[name] = value_of[source]
    last = text.rsplit("\n", 1)[1]
    ends = [_regex(q + a) for q in family.questions for a in family.answer_prefixes]
    match = _first(ends, last)
    asked = match.group("value")
    answer = last[match.end() :].strip().rstrip(".").split(", ")
    if match.groupdict().get("count"):
        assert int(match.group("count")) == len(answer)
    return sorted(n for n, v in value_of.items() if v == asked), sorted(answer)


def _kind(text: str, phrasing: str = "train") -> str:
    niah_family, vt_family, passkey_family = _families(phrasing)
    first = text.split("\n", 1)[0]
    last = text.rsplit("\n", 1)[-1]
    if re.fullmatch(r"Here is a (?:list of \w+|passage): .+\nRepeat the .+", text):
        return "copy"
    if any(re.match(_regex(q), last) for q in passkey_family.questions):
        return "passkey"
    if any(re.fullmatch(_regex(i), first) for i in niah_family.instructions):
        return "kv"
    if any(re.fullmatch(_regex(i), first.strip()) for i in vt_family.instructions):
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
        needles = len(_needles(text, FAMILIES["train"]))
        counts[min(needles, 5)] += 1  # 5: a haystack of distractor needles
        stacks += needles > 4
        is_uuid = "uuids" in text.split("\n", 1)[0]
        uuids += is_uuid
        queried_all += len(answer) > 1
        noise += "The grass is green." in text
        prose += " the river " in text or " the garden " in text
        if is_uuid:
            assert all(UUID.fullmatch(v) for v in answer)
        else:
            assert all(re.fullmatch(r"\d{7}", v) for v in answer)
    assert {1, 2, 3, 4} <= set(counts)
    assert 0.05 * len(texts) < uuids < 0.5 * len(texts)  # numbers are the majority
    assert queried_all > 20 and noise > 20 and prose > 20 and stacks > 10


@pytest.mark.parametrize("phrasing", ["train", "standard"])
def test_prompts_come_from_the_family_and_never_from_the_heldout_one(tok, phrasing: str) -> None:
    texts = retrieval_examples(tok, FILLER, n=160, max_tokens=MAX_TOKENS, seed=4, phrasing=phrasing)
    parse = {"passkey": _passkey, "kv": _kv, "copy": _copy, "vt": _vt}
    for text in texts:
        planted, answer = parse[_kind(text, phrasing)](text, phrasing)
        assert planted == answer and answer, text
        assert ("special magic" in text) == (
            phrasing == "standard" and _kind(text, phrasing) == "kv"
        )
    heldout = [*FAMILIES["heldout"].strings(), *VT_FAMILIES["heldout"].strings()]
    heldout += PASSKEY_FAMILIES["heldout"].strings()
    for template in heldout:
        pattern = _regex(template)
        assert not any(re.search(pattern, text) for text in texts), template
    if phrasing == "train":  # many wordings, and pass keys with planted distractor numbers
        firsts = {text.split("\n", 1)[0] for text in texts if _kind(text) in ("kv", "vt")}
        assert len(firsts) >= 8
        keys = [t for t in texts if _kind(t) == "passkey"]
        assert sum(len(re.findall(r"\d{5}", t.rsplit("\n", 1)[0])) > 1 for t in keys) >= 10


def test_heldout_phrasing_is_refused(tok) -> None:
    with pytest.raises(UserError, match="held-out family is never trained on"):
        retrieval_examples(tok, FILLER, n=2, max_tokens=MAX_TOKENS, seed=0, phrasing="heldout")


def test_needles_sit_at_every_depth(tok) -> None:
    texts = retrieval_examples(tok, FILLER, n=60, max_tokens=MAX_TOKENS, seed=9, kinds=["passkey"])
    depths = []
    for text in texts:
        body = text.rsplit("\n", 1)[0]
        key = text.rsplit(" ", 1)[1].rstrip(".")
        depths.append(body.index(key) / len(body))
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


@pytest.mark.network
def test_a_corpus_source_with_retrieval_adds_examples_at_the_stream_length(
    request: pytest.FixtureRequest,
) -> None:
    from data_helpers import ensure_cached

    from longred_bench.training.data import corpus_windows, window_set

    ensure_cached(request, "brown", "austen")
    tok = byte_tokenizer()
    prose = corpus_windows(tok, "austen", 512)
    ids, mask = window_set(tok, "austen+retrieval", 512, seed=3, retrieval_fraction=0.1)
    n = round(len(prose) * 0.1 / 0.9)
    assert ids.shape == (len(prose) + n, 512) and torch.equal(ids[: len(prose)], prose)
    assert bool(mask[: len(prose)].all())
    filled = mask[len(prose) :].sum(dim=1)
    assert int(filled.min()) >= 0.4 * 512 * 0.9 and int(filled.max()) <= 512  # long examples
    extra_ids, extra_mask = ids[len(prose) :], mask[len(prose) :]
    texts = [tok.decode(row[m].tolist()) for row, m in zip(extra_ids, extra_mask, strict=True)]
    assert all(any(_kind(t, "train") == k for k in KINDS) for t in texts[:20])
    plain, _ = window_set(tok, "austen", 512, seed=3, retrieval_fraction=0.1)
    assert torch.equal(plain, prose)  # without the member, the fraction does nothing
