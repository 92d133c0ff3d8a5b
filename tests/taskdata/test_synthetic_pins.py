"""What RULER's variable tracking (vt), common words (cwe) and frequent words (fwe) samples hold:
their prompts word for word, the chain's value and the depths its statements sit at, the cwe
list's numbering, shuffle and frequencies below the smallest length, the fwe vocabulary, word
shape, Zipf law and dots, which fwe counts are accepted as unambiguous, how the lazily drawn
cwe units index, and that the cwe and fwe units the sizing counts are what the prompt grows by.
No corpus is read: cwe runs on a stand-in vocabulary."""

from __future__ import annotations

import itertools
import random
import re
from collections import Counter

import pytest

from longred_bench.taskdata.ruler import haystack
from longred_bench.taskdata.ruler.sizing import Rendered
from longred_bench.taskdata.ruler.synthetic import (
    CweUnits,
    WordDraws,
    build_cwe,
    build_fwe,
    build_vt,
    cwe_frequencies,
)

WORDS = tuple(f"w{i:03d}" for i in range(600))


@pytest.fixture
def stand_in_vocabulary(monkeypatch: pytest.MonkeyPatch) -> tuple[str, ...]:
    """cwe's vocabulary replaced by :data:`WORDS` (no corpus read)."""
    monkeypatch.setattr(haystack, "vocabulary", lambda corpus: WORDS)
    return WORDS


def _vt(seed: int, n: int) -> Rendered:
    (draft,) = build_vt(random.Random(seed), 400)
    return draft.render(n)


def test_the_vt_prompt_is_rulers_with_the_chain_in_noise() -> None:
    """Instruction, a blank line, the noise and statements joined by single spaces, then the
    question and the answer prefix naming the five variables and the value."""
    rendered = _vt(0, 3)
    names = rendered.outputs
    value = re.search(r"VAR \w+ = (\d+)\.", rendered.prompt).group(1)
    body = rendered.prompt.split("\n\n", 1)[1].split("\nQuestion:")[0]
    statements = [f"VAR {names[0]} = {value}."]
    statements += [f"VAR {b} = VAR {a}." for a, b in itertools.pairwise(names)]
    sentences = re.findall(r"[^.]+\.", body)
    assert [s.strip() for s in sentences if s.strip().startswith("VAR")] == statements
    assert len(sentences) == 8 and body == " ".join(s.strip() for s in sentences)
    assert rendered.prompt == (
        "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n"
        f"{body}\nQuestion: Find all variables that are assigned the value {value} in the text "
        "above. Answer: According to the chain(s) of variable assignment in the text above, 5 "
        f"variables are assigned the value {value}, they are:"
    )


def test_the_vt_metadata_names_the_prompts_prefix_and_shape() -> None:
    """The recorded answer prefix is the prompt's ending; one chain of four hops, no example,
    and the haystack size asked for."""
    rendered = _vt(1, 7)
    meta = rendered.metadata
    assert rendered.prompt.endswith(meta["answer_prefix"])
    assert meta["answer_prefix"].startswith(" Answer: According to the chain(s)")
    assert (meta["hops"], meta["chains"], meta["icl"], meta["haystack_units"]) == (4, 1, False, 7)


def test_the_vt_value_has_five_digits_and_names_five_capitals() -> None:
    """The chain's value is a five-digit number and each variable five capital letters."""
    for seed in range(60):
        rendered = _vt(seed, 0)
        value = re.search(r"VAR \w+ = (\d+)\.", rendered.prompt).group(1)
        assert 10_000 <= int(value) <= 99_999 and len(value) == 5, (seed, value)
        assert all(re.fullmatch("[A-Z]{5}", name) for name in rendered.outputs)


def test_vt_statements_sit_at_their_recorded_depths_across_the_whole_haystack() -> None:
    """Statement ``k`` follows the share ``depth_percent[k]`` of the noise sentences, and the
    drawn depths range over the whole haystack, not one part of it."""
    n, drawn = 200, []
    for seed in range(30):
        rendered = _vt(seed, n)
        depths = rendered.metadata["depth_percent"]
        assert len(depths) == 5 and depths == sorted(depths)
        body = rendered.prompt.split("\n\n", 1)[1].split("\nQuestion:")[0]
        sentences = [s.strip() for s in re.findall(r"[^.]+\.", body)]
        where = [i for i, s in enumerate(sentences) if s.startswith("VAR")]
        for k, (at, depth) in enumerate(zip(where, depths, strict=True)):
            assert abs((at - k) - depth * n / 100) <= 0.5 + 1e-9, (seed, k, at, depth)
        drawn += depths
    assert min(drawn) < 10 and max(drawn) > 90


def test_cwe_frequencies_at_lengths_below_rulers_smallest() -> None:
    """Below 137 tokens the common words still appear twice and the others once."""
    assert cwe_frequencies(1) == cwe_frequencies(100) == (2, 1)
    assert cwe_frequencies(205) == (2, 1) and cwe_frequencies(206) == (2, 1)


def test_the_cwe_prompt_is_rulers_numbered_from_one(stand_in_vocabulary) -> None:
    """Instruction, the list numbered ``1.`` up, one entry a line, then the question and the
    answer prefix for ten words."""
    draft = next(build_cwe(random.Random(0), 512, "brown"))
    rendered = draft.render(3)
    entries = rendered.prompt.split("\n")[1:-1]
    assert [e.split(". ")[0] for e in entries] == [str(i) for i in range(1, len(entries) + 1)]
    context = "\n".join(entries)
    assert rendered.prompt == (
        "Below is a numbered list of words. In these words, some appear more often than others. "
        f"Memorize the ones that appear most often.\n{context}\n"
        "Question: What are the 10 most common words in the above list? Answer: The top 10 "
        "words that appear most often in the list are:"
    )
    assert rendered.metadata["answer_prefix"] == (
        " Answer: The top 10 words that appear most often in the list are:"
    )
    assert len(entries) == 10 * 4 + 3 and rendered.metadata["icl"] is False


def _cwe_list(rendered: Rendered) -> list[str]:
    return re.findall(r"^\d+\. (\w+)$", rendered.prompt, flags=re.M)


def test_cwe_entries_are_shuffled_together(stand_in_vocabulary) -> None:
    """Common and uncommon entries are interleaved, and an uncommon word's repeats are spread
    through the list rather than on consecutive lines."""
    draft = next(build_cwe(random.Random(1), 4096, "brown"))
    rendered = draft.render(200)
    listed = _cwe_list(rendered)
    common = set(rendered.outputs)
    head = listed[: 10 * 30]
    assert 0 < sum(w in common for w in head) < len(head)
    lines: dict[str, list[int]] = {}
    for i, word in enumerate(listed):
        lines.setdefault(word, []).append(i)
    uncommon = [where for word, where in lines.items() if word not in common]
    assert len(uncommon) == 200 and all(len(where) == 3 for where in uncommon)
    adjacent = sum(where[-1] - where[0] == 2 for where in uncommon)
    assert adjacent < 10, adjacent


def test_cwe_units_add_up_to_what_the_list_grows_by(monkeypatch) -> None:
    """With one line per uncommon word, the units the sizing counts are the text the list
    grows by, line numbers included (from the number after the common entries on, past 99),
    so one byte per token sizes it exactly."""
    words = tuple("abcdefg"[: 1 + i % 7] + str(i) for i in range(2000))
    monkeypatch.setattr(haystack, "vocabulary", lambda corpus: words)
    draft = next(build_cwe(random.Random(2), 512, "brown"))
    assert draft.render(0).metadata["freq_ucw"] == 1
    empty = len(draft.render(0).prompt)
    for n in (1, 59, 60, 61, draft.upper):
        grown = len(draft.render(n).prompt) - empty
        assert sum(map(len, draft.units[:n])) == grown, n


def test_cwe_units_index_from_the_end_and_slice_empty() -> None:
    """A negative index reads from the end and an empty slice is empty (nothing drawn)."""
    vocab = [f"word{i}" for i in range(40)]
    units = CweUnits(WordDraws(random.Random(0), vocab, 3), 10, 20, 3, 0)
    assert units[5:5] == [] and units.draws.words == []
    assert units[-1] == units[19] and units[-20] == units[0]
    with pytest.raises(IndexError):
        units[-21]


def _fwe(seed: int, length: int) -> tuple[list[str], dict]:
    (draft,) = build_fwe(random.Random(seed), length)
    rendered = draft.render(length)
    text = rendered.prompt.split("coded words. ")[1].split("\nQuestion:")[0]
    return text.split(" "), rendered.metadata


def test_the_fwe_prompt_is_rulers() -> None:
    """The coded text follows the instruction on its line; the question asks to ignore the
    dots, and the answer prefix closes the prompt."""
    (draft,) = build_fwe(random.Random(0), 256)
    rendered = draft.render(5)
    words = " ".join(_fwe(0, 256)[0][:5])
    assert rendered.prompt == (
        "Read the following coded text and track the frequency of each coded word. Find the "
        f"three most frequently appeared coded words. {words}\nQuestion: Do not provide any "
        "explanation. Please ignore the dots '....'. What are the three most frequently "
        "appeared words in the above coded text? Answer: According to the coded text above, "
        "the three most frequently appeared words are:"
    )
    assert rendered.prompt.endswith(rendered.metadata["answer_prefix"])


@pytest.mark.parametrize(("length", "support"), [(256, 10), (704, 11), (1024, 16), (8192, 128)])
def test_the_fwe_vocabulary_grows_with_the_length(length: int, support: int) -> None:
    """The coded words are ``max(10, length // 64)`` distinct six-letter lowercase words, and
    draws beyond them print as four dots."""
    words, meta = _fwe(3, length)
    assert meta["vocab_size"] == support and meta["alpha"] == 2.0
    coded = set(words) - {"...."}
    assert len(coded) <= support and all(re.fullmatch("[a-z]{6}", w) for w in coded)
    assert "...." in words and not any(w.startswith(".") and w != "...." for w in words)


def test_the_fwe_words_follow_zipfs_law_with_exponent_two() -> None:
    """The most frequent word takes about ``6 / pi**2`` (0.61) of the draws, the second a
    quarter of that, and the dots (draws beyond the vocabulary) about 0.3%."""
    words, _ = _fwe(0, 20_000)
    counts = Counter(words)
    (_, n1), (_, n2) = Counter(w for w in words if w != "....").most_common(2)
    assert 0.58 < n1 / len(words) < 0.64 and 0.13 < n2 / len(words) < 0.17
    assert 0 < counts["...."] / len(words) < 0.01


def test_fwe_units_are_the_coded_words_each_after_a_space() -> None:
    """The units the sizing counts are what the coded text grows by: each word with a space
    before it (the first word's space is already in the prompt)."""
    (draft,) = build_fwe(random.Random(4), 512)
    empty = len(draft.render(0).prompt)
    for n in (1, 50, 512):
        grown = len(draft.render(n).prompt) - empty
        assert sum(map(len, draft.units[:n])) == grown + 1, n


@pytest.mark.parametrize(
    ("counts", "accepted"),
    [
        ([9, 5], False),
        ([9], False),
        ([], False),
        ([9, 5, 1], True),
        ([9, 5, 2, 1], True),
        ([9, 5, 2, 2], False),
        ([9, 9, 9, 8], True),
    ],
)
def test_fwe_accepts_a_sample_whose_top_three_are_unambiguous(counts, accepted) -> None:
    """Fewer than three coded words are refused; exactly three are accepted; with more, the
    third must be strictly more frequent than the fourth."""
    (draft,) = build_fwe(random.Random(0), 256)
    assert draft.accept(Rendered("", (), {"counts": counts})) is accepted
