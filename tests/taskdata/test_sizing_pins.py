"""How the RULER sizing counts and searches, on toy tokenizers and drafts (no corpora): the
special tokens of tokenizers counted one text at a time, unit counts partly remembered or read
before any budget, the tokens of an answer, the fill of a draft whose renderings may be
rejected as ambiguous, and the largest fill found from unit counts."""

from __future__ import annotations

import pytest

from longred_bench.models.zoo import byte_tokenizer
from longred_bench.taskdata.ruler.sizing import (
    Draft,
    Misfit,
    PrefixCounts,
    Rendered,
    answer_tokens,
    count_many,
    fit,
    unit_counts,
)


class _Encoded:
    """What a slow tokenizer's ``encode`` returns: a list of ids."""

    def __init__(self, text: str, special: bool) -> None:
        self.ids = [0] * special + [1] * len(text.split())

    def __len__(self) -> int:
        return len(self.ids)


class _BackendOnly:
    """A backend tokenizer without ``encode_batch_fast``: one id per word, and a BOS with
    special tokens."""

    pre_tokenizer = normalizer = None  # not GPT-2's pipeline: no piece counts

    def encode(self, text: str, add_special_tokens: bool = True) -> _Encoded:
        return _Encoded(text, add_special_tokens)


class _WithBackend:
    """A tokenizer whose counts come from its (older) backend, one text at a time."""

    backend_tokenizer = _BackendOnly()


class _Plain:
    """A tokenizer with ``encode`` only (no backend): one id per word, and a BOS with special
    tokens."""

    def encode(self, text: str, add_special_tokens: bool = True) -> list[int]:
        return _Encoded(text, add_special_tokens).ids


@pytest.mark.parametrize("tokenizer", [_WithBackend(), _Plain()], ids=["backend", "plain"])
def test_a_tokenizer_counted_text_by_text_adds_its_special_tokens_only_when_asked(
    tokenizer,
) -> None:
    """Without a fast batch encoder each text is encoded alone, with the BOS only for
    ``special``."""
    assert count_many(tokenizer, ["a b", "c"]) == [2, 1]
    assert count_many(tokenizer, ["a b", "c"], special=True) == [3, 2]


def test_unit_counts_mix_remembered_and_new_texts() -> None:
    """A batch of unit texts some of which were counted before gives every text its own count,
    the remembered ones included."""
    tok = byte_tokenizer()
    assert unit_counts(tok, [" one", " three"]) == [4, 6]
    assert unit_counts(tok, [" three", " fifteen", " one"]) == [6, 8, 4]


def test_a_units_count_is_read_before_any_budget_is_asked() -> None:
    """Prefix counts give any unit's tokens on a fresh start, counting as far as it."""
    counts = PrefixCounts(byte_tokenizer(), [" a", " bb", " ccc"], 3)
    assert [counts.unit(0), counts.unit(2), counts.unit(1)] == [2, 4, 3]


def test_the_answer_is_counted_without_special_tokens_and_may_be_empty() -> None:
    """An answer costs the tokens of its completion alone (no BOS): every reference joined
    with ``", "`` for "all", the longest one for "any"; no reference costs nothing."""
    tok = _Plain()
    assert answer_tokens(tok, ("a b", "c d e"), "all") == 5  # " a b, c d e": five words
    assert answer_tokens(tok, ("a b", "c d e"), "any") == 3
    assert answer_tokens(tok, (), "all") == answer_tokens(tok, (), "any") == 0
    assert answer_tokens(byte_tokenizer(), ("ab", "c"), "all") == len(" ab, c")


def _draft(accepted, units: bool = False) -> Draft:
    """A prompt of ``n`` one-byte units after ``Q:``, accepted where ``accepted(n)``."""

    def render(n: int) -> Rendered:
        return Rendered("Q:" + "x" * n, ("y",), {"n": n})

    return Draft(
        render=render,
        upper=50,
        accept=lambda rendered: accepted(rendered.metadata["n"]),
        units=["x"] * 50 if units else None,
    )


@pytest.mark.parametrize("units", [False, True], ids=["search", "units"])
def test_a_rejected_rendering_shrinks_to_the_largest_accepted_size(units: bool) -> None:
    """The fill is the largest size that fits and is accepted, however many sizes below the
    largest fitting one are rejected."""
    tok = byte_tokenizer()
    # "Q:" + n bytes + the answer " y": n + 4 tokens; 30 tokens hold n = 26 at most.
    n, rendered, tokens = fit(_draft(lambda n: n % 7 == 0, units), tok, 30, "all")
    assert (n, tokens) == (21, 25) and rendered.metadata["n"] == 21
    n, _, tokens = fit(_draft(lambda n: n != 26, units), tok, 30, "all")
    assert (n, tokens) == (25, 29)


def test_no_accepted_rendering_is_a_misfit_even_where_the_empty_one_fits() -> None:
    """Where every size is rejected, the empty haystack included, the sample is refused."""
    with pytest.raises(Misfit, match="no unambiguous sample fits in 30 tokens"):
        fit(_draft(lambda n: False), byte_tokenizer(), 30, "all", task="fwe")


def _unit_draft(rendered_units: list[str]) -> Draft:
    """A prompt of ``rendered_units[:n]`` after ``Q:``, sized by units that each claim three
    bytes."""

    def render(n: int) -> Rendered:
        return Rendered("Q:" + "".join(rendered_units[:n]) + " A:", ("x",))

    return Draft(render=render, upper=len(rendered_units), units=[" ab"] * len(rendered_units))


@pytest.mark.parametrize(
    ("every", "longer"),
    [(0, ""), (5, " abcdefghij"), (3, " abcd")],
    ids=["exact", "understated", "slightly-understated"],
)
def test_unit_sizing_takes_the_largest_size_that_fits(every: int, longer: str) -> None:
    """Where the units' counts add up (or understate every few units, as merges would), the
    fill is the largest size that fits: a fill of exactly the length is kept, a guess that
    overflows is corrected down to the largest fitting size, a size whose next unit by its
    count would fill the length exactly grows by it, and all units fit where there is room."""
    tok = byte_tokenizer()
    rendered = [longer if every and i % every == 0 else " ab" for i in range(400)]
    draft = _unit_draft(rendered)
    totals = [len("Q:" + "".join(rendered[:n]) + " A:") + 2 for n in range(401)]
    for length in [*range(9, 130), 1207, 1210, 1500, 4000]:
        n, _, tokens = fit(draft, tok, length, "all")
        best = max(k for k, t in enumerate(totals) if t <= length)
        assert (n, tokens) == (best, totals[best]), length
