"""The haystacks drawn only as far as they are read (``niah``'s distractor needles, ``cwe``'s
uncommon-word units) read as sequences of their length: a slice of any step, reversed
included, gives the items that indexing one by one gives, on a fresh draw as on a later one."""

from __future__ import annotations

import random

import pytest

from longred_bench.taskdata.ruler.haystack import maker
from longred_bench.taskdata.ruler.niah import NeedleHaystack
from longred_bench.taskdata.ruler.synthetic import CweUnits, WordDraws

SLICES = [slice(None, None, -1), slice(5, 1, -2), slice(None, None, 3), slice(-3, None)]


def _needles() -> NeedleHaystack:
    words = ("red", "green", "blue", "grey")
    return NeedleHaystack(random.Random(3), maker("words", words), maker("numbers", ()),
                          "numbers", set(), 8)  # fmt: skip


def _cwe_units() -> CweUnits:
    vocab = [f"word{i}" for i in range(40)]
    return CweUnits(WordDraws(random.Random(0), vocab, 3), 10, 20, 3, 0)


@pytest.mark.parametrize("make", [_needles, _cwe_units])
@pytest.mark.parametrize("part", SLICES)
def test_a_slice_is_the_items_it_names(make, part: slice) -> None:
    whole = make()[:]
    assert len(whole) == len(make())
    assert make()[part] == whole[part]  # read first on a fresh draw
    seq = make()
    _ = seq[:]
    assert seq[part] == whole[part]  # read after everything was drawn
    assert list(reversed(make())) == whole[::-1]
