"""How RULER samples are built, checked against what each builder's docstring promises: the
depth grid spans 0-100%, a multi-key haystack never repeats the queried key, the queried needle
is not always the shallowest, the fwe top three never tie with the fourth and its Zipf law keeps
its tail, variable tracking's chain reads in order; and the NIAH grid's sentence-end snap."""

from __future__ import annotations

import itertools
import math
import random
import re
from collections import Counter

import pytest

from longred_bench.models.zoo import byte_tokenizer
from longred_bench.taskdata.niah_grid import insertion_point
from longred_bench.taskdata.ruler import generate, niah
from longred_bench.taskdata.ruler import haystack as hs
from longred_bench.taskdata.ruler.haystack import random_depths
from longred_bench.taskdata.ruler.synthetic import build_vt


def test_the_depth_grid_spans_0_to_100_percent() -> None:
    assert random_depths(random.Random(0), 40) == [100.0 * i / 39 for i in range(40)]
    assert random_depths(random.Random(1), 3, grid=3) == [0.0, 50.0, 100.0]


def test_distractor_needles_never_use_the_queried_key(monkeypatch: pytest.MonkeyPatch) -> None:
    # Three words make 9 keys: the 8 distractor needles take exactly the 8 other keys, so a
    # haystack that drew from all 9 would hold the queried key again (8 in 9 odds a sample).
    monkeypatch.setattr(hs, "vocabulary", lambda corpus: ("ash", "elm", "oak"))
    for seed in range(10):
        (draft,) = niah.build("niah_multikey_2", random.Random(seed), 64, "brown")
        rendered = draft.render(8)
        (key,) = rendered.metadata["keys"]
        assert not any(f" for {key} is:" in unit for unit in draft.units[:8]), (seed, key)
        assert rendered.prompt.count(f" for {key} is:") == 1


def test_the_queried_needle_sits_at_any_of_the_drawn_depths(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Depths are drawn sorted: were the needles not shuffled, the queried key (drawn first)
    # would always be the shallowest of niah_multikey_1's four needles, and the values of
    # niah_multivalue would always appear in answer order. (A stand-in essay and vocabulary:
    # no corpus is read.)
    words = tuple(f"{a}{b}" for a in "bcdfg" for b in ("ash", "elm", "oak", "yew"))
    monkeypatch.setattr(hs, "vocabulary", lambda corpus: words)
    monkeypatch.setattr(hs, "essay_units", lambda corpus, rng, n: ["word."] * n)
    firsts, in_order = set(), []
    for seed in range(12):
        (draft,) = niah.build("niah_multikey_1", random.Random(seed), 2000, "brown")
        rendered = draft.render(len(draft.units))
        (key,) = rendered.metadata["keys"]
        needles = re.findall(r" for ([\w-]+) is: ", rendered.prompt.split("What are all")[0])
        assert len(needles) == 4 and key in needles, (seed, needles)
        firsts.add(needles.index(key))
        (draft,) = niah.build("niah_multivalue", random.Random(seed), 2000, "brown")
        rendered = draft.render(len(draft.units))
        where = [rendered.prompt.index(f"is: {v}.") for v in rendered.outputs]
        in_order.append(where == sorted(where))
    assert len(firsts) > 1 and not all(in_order), (firsts, in_order)


def test_the_fwe_top_three_never_tie_with_the_fourth() -> None:
    for length in (512, 1024):
        for sample in generate("fwe", byte_tokenizer(), length, 30, seed=0):
            text = sample.input.split("most frequently appeared coded words. ")[1]
            words = text.split("\nQuestion")[0].split()
            top = Counter(w for w in words if w != "....").most_common(4)
            assert {w for w, _ in top[:3]} == set(sample.outputs)
            assert len(top) == 3 or top[2][1] > top[3][1], (length, sample.index, top)


def test_the_zipf_law_keeps_its_tail() -> None:
    # sum over r > 10 of r^-2 is pi^2/6 minus the first ten terms; the sampler's normaliser
    # counts it, so about 5.8% of draws fall beyond the support (returned as 0).
    head = sum(r**-2.0 for r in range(1, 11))
    tail = math.pi**2 / 6 - head
    assert math.isclose(hs._zipf_tail(10, 2.0), tail, rel_tol=1e-3)
    draws = hs.zipf_sampler(random.Random(0), 10, 2.0)(20_000)
    beyond = draws.count(0) / len(draws)
    assert abs(beyond - tail / (head + tail)) < 0.01, beyond
    assert abs(draws.count(1) / len(draws) - 6 / math.pi**2) < 0.02


def test_variable_tracking_statements_appear_in_chain_order() -> None:
    for seed in range(20):
        (draft,) = build_vt(random.Random(seed), 2000)
        rendered = draft.render(1500)
        names = list(rendered.outputs)
        where = [rendered.prompt.index(f"VAR {names[0]} = ")]
        chain = itertools.pairwise(names)
        where += [rendered.prompt.index(f"VAR {b} = VAR {a}.") for a, b in chain]
        assert where == sorted(where), seed


def test_equidistant_sentence_ends_snap_to_the_earlier_one() -> None:
    # 200 words, depth 50%: the exact point is word 100; sentence ends after words 98 and 102
    # are equally near, and the earlier one is taken.
    units = ["word"] * 200
    units[97] = units[101] = "end."
    assert insertion_point(units, 200, 50.0) == 98


def test_a_needle_moves_to_a_sentence_end_exactly_the_window_away_but_never_to_an_end() -> None:
    # 200 words: the window is 4 words. A sentence end 4 words after the exact point is taken;
    # the haystack's last word ending a sentence neither pulls a needle to the end (k = n) nor,
    # read as word -1, to the start (k = 0).
    units = ["word"] * 200
    units[103] = "end."
    assert insertion_point(units, 200, 50.0) == 104
    units = ["word"] * 200
    units[199] = "end."
    assert insertion_point(units, 200, 99.0) == 198
    assert insertion_point(units, 200, 1.0) == 2
