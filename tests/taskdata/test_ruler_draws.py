"""What the RULER prompts draw and how the cwe list scales: the phrasing families' draws vary
every string and keep the context on lines of its own; cwe's word frequencies follow the length
below 4096 tokens, and a vocabulary too small for the length is used up, not overrun."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from longred_bench.taskdata.ruler import haystack
from longred_bench.taskdata.ruler.phrasings import FAMILIES, VT_FAMILIES, draw
from longred_bench.taskdata.ruler.synthetic import CWE_COMMON, cwe_frequencies


@pytest.mark.parametrize("family", ["train", "heldout"])
def test_family_draws_vary_every_string(family: str) -> None:
    """Across draws a family uses each of its strings of every kind (NIAH and vt)."""
    rng = random.Random(0)
    niah = [draw(family, rng) for _ in range(400)]
    strings = FAMILIES[family]
    assert {p.answer_prefix for p in niah} == set(strings.answer_prefixes)
    assert {p.needle for p in niah} == set(strings.needles)
    vt = VT_FAMILIES[family]
    prefixes = Counter(vt.draw(rng)[1] for _ in range(400))
    assert set(prefixes) == set(vt.answer_prefixes)
    templates = {vt.draw(rng)[0] for _ in range(400)}
    assert {t.split("\n{context}\n")[1] for t in templates} == set(vt.questions)


@pytest.mark.parametrize("family", ["train", "heldout"])
def test_the_context_sits_on_lines_of_its_own(family: str) -> None:
    """A drawn template is instruction, newline, context, newline, question."""
    rng = random.Random(1)
    for _ in range(20):
        template = draw(family, rng).template
        instruction, question = template.split("\n{context}\n")
        assert instruction in FAMILIES[family].instructions
        assert question in FAMILIES[family].questions
        vt_template, _ = VT_FAMILIES[family].draw(rng)
        assert vt_template.count("\n{context}\n") == 1


def test_cwe_frequencies_scale_with_the_length_below_4096() -> None:
    """Common words appear 30 times and the others 3 from 4096 tokens up; below, the common
    count scales with the length (at least 2) and the others' is a quarter of it (at least
    1, at most 3)."""
    got = {n: cwe_frequencies(n) for n in (256, 512, 1024, 2048, 3000, 4096, 131072)}
    assert got == {256: (2, 1), 512: (4, 1), 1024: (8, 2), 2048: (15, 3), 3000: (22, 3),
                   4096: (30, 3), 131072: (30, 3)}  # fmt: skip


def test_cwe_uses_up_a_small_vocabulary_without_overrunning_it(byte_tok, monkeypatch) -> None:
    """Where the length would hold more uncommon words than the vocabulary has, the list takes
    every word of it once (as common or uncommon), and no more."""
    from longred_bench.taskdata.ruler import generate

    words = tuple(f"w{chr(97 + i)}{chr(97 + j)}" for i in range(5) for j in range(6))
    monkeypatch.setattr(haystack, "vocabulary", lambda corpus: words)
    (sample,) = generate("cwe", byte_tok, 4096, 1, 0)
    assert sample.metadata["num_uncommon"] == len(words) - CWE_COMMON
    listed = Counter(line.split(". ", 1)[1] for line in sample.input.split("\n")
                     if line[:1].isdigit())  # fmt: skip
    assert set(listed) == set(words)
    assert {listed[w] for w in sample.outputs} == {30}
    assert {c for w, c in listed.items() if w not in sample.outputs} == {3}


def test_every_cwe_draft_keeps_the_common_words_more_frequent(monkeypatch) -> None:
    """Each fallback draft halves the common words' frequency and keeps the others' below it,
    down to 2 against 1."""
    from longred_bench.taskdata.ruler.synthetic import build_cwe

    words = tuple(f"w{i:03d}" for i in range(300))
    monkeypatch.setattr(haystack, "vocabulary", lambda corpus: words)
    for length in (2048, 4096):
        freqs = [tuple(d.render(0).metadata[k] for k in ("freq_cw", "freq_ucw"))
                 for d in build_cwe(random.Random(0), length, "brown")]  # fmt: skip
        assert all(ucw < cw for cw, ucw in freqs), freqs
        assert freqs[-1] == (2, 1)
    assert freqs == [(30, 3), (15, 3), (7, 3), (3, 2), (2, 1)]


def test_cwe_words_are_drawn_uniformly_from_the_vocabulary() -> None:
    """The first word drawn can be any word of the vocabulary, the last one included."""
    from longred_bench.taskdata.ruler.synthetic import WordDraws

    vocab = ["alpha", "beta", "gamma"]
    firsts = Counter()
    for seed in range(300):
        draws = WordDraws(random.Random(seed), vocab, 1)
        draws.draw(3)
        assert sorted(draws.words) == vocab
        firsts[draws.words[0]] += 1
    assert set(firsts) == set(vocab) and min(firsts.values()) > 60
