"""RULER rules at their edges, on toy inputs (unit tier, no corpora): the depth percents
accepted, how a tokenizer that is not GPT-2's byte-level one counts its special tokens, and
the sizing's answer and overflow arithmetic."""

from __future__ import annotations

import pytest

from longred_bench.errors import UserError


def _bos_tokenizer():
    """A fast word-level tokenizer that puts ``<s>`` before every text it encodes with its
    special tokens (its pipeline is not GPT-2's, so its counts come from the tokenizer)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {"<s>": 0, "[UNK]": 1, "a": 2, "b": 3, ",": 4}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    backend.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", 0)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", unk_token="[UNK]")


def test_depth_percents_take_both_ends_and_nothing_beyond() -> None:
    """0 and 100 are depths (the first and last position); just outside them is refused."""
    from longred_bench.taskdata.ruler.registry import check_depth_percents, check_depths

    check_depth_percents([0, 0.0, 50, 100, 100.0])
    check_depths("niah_single_1", [0, 100])
    for bad in (-0.5, 100.5):
        with pytest.raises(UserError, match=r"in \[0, 100\]"):
            check_depth_percents([50, bad])


def test_a_tokenizers_special_tokens_count_in_a_prompt_not_in_an_answer() -> None:
    """A BOS the tokenizer adds counts in a prompt (``special=True``) and not otherwise, for a
    fast tokenizer whose counts the pre-token counter cannot give."""
    from longred_bench.taskdata.ruler.counting import piece_counter
    from longred_bench.taskdata.ruler.sizing import count_many, count_tokens

    tok = _bos_tokenizer()
    assert piece_counter(tok) is None
    assert count_tokens(tok, "a b a") == 4
    assert count_tokens(tok, "a b a", special=False) == 3
    assert count_many(tok, ["a", "a b"]) == [1, 2]
    assert count_many(tok, ["a", "a b"], special=True) == [2, 3]


def test_a_length_that_is_a_ruler_length_holds_itself() -> None:
    """The smallest RULER length holding ``tokens`` is ``tokens`` itself where it is one; past
    131072 it is the next power of two."""
    from longred_bench.taskdata.ruler.registry import LENGTHS, length_holding

    assert [length_holding(n) for n in LENGTHS] == list(LENGTHS)
    assert length_holding(1) == 256
    assert length_holding(257) == 512
    assert length_holding(131073) == 262144


def test_lm_eval_names_give_each_ruler_task_once_in_order() -> None:
    """The group name stands for every task; a task named again (alone or by the group) is not
    repeated, and other names give none."""
    from longred_bench.taskdata.ruler.registry import TASKS, registry_tasks

    names = ["longred_ruler_vt", "longred_arc_easy", "longred_ruler", "longred_ruler_vt"]
    assert registry_tasks(names) == ["vt", *(t for t in TASKS if t != "vt")]
    assert registry_tasks(["longred_ruler_cwe", "longred_ruler_cwe"]) == ["cwe"]
    assert registry_tasks(["longred_niah"]) == []


def test_prefix_counts_keep_a_budget_met_exactly() -> None:
    """The largest number of units within a budget includes a unit that meets it exactly."""
    from longred_bench.taskdata.ruler.sizing import PrefixCounts

    counts = PrefixCounts(_bos_tokenizer(), ["a", "a b", "a"] * 4, 12)
    assert [counts.largest_within(b) for b in (0, 1, 2, 3, 4, 5)] == [0, 1, 1, 2, 3, 4]
    assert counts.largest_within(100) == 12


def test_an_empty_haystack_that_fills_the_length_exactly_fits() -> None:
    """A prompt with no haystack whose tokens plus the answer's are exactly the length is a
    sample of size 0, not a misfit; one token less is a misfit naming the tokens it needs."""
    from longred_bench.taskdata.ruler.sizing import Draft, Misfit, Rendered, fit

    def render(n: int) -> Rendered:
        return Rendered("a" + " b" * (n + 2), ("a",))

    draft = Draft(render=render, upper=5)
    # "<s> a b b" is 4 tokens and the answer " a" one.
    assert fit(draft, _bos_tokenizer(), 5, "all")[0::2] == (0, 5)
    assert fit(draft, _bos_tokenizer(), 6, "all")[0::2] == (1, 6)
    with pytest.raises(Misfit, match="needs at least 5 tokens") as caught:
        fit(draft, _bos_tokenizer(), 4, "all")
    assert caught.value.needed == 5


def test_a_misfit_names_a_power_of_two_it_needs_exactly() -> None:
    """A sample that needs exactly a power of two of tokens is held by that length."""
    from longred_bench.taskdata.ruler.sizing import Draft, Misfit, Rendered, fit

    draft = Draft(render=lambda n: Rendered("a" + " b" * (n + 5), ("a",)), upper=5)
    with pytest.raises(Misfit, match=r"that holds it is 8$") as caught:
        fit(draft, _bos_tokenizer(), 7, "all")
    assert caught.value.needed == 8


def test_a_maximal_fill_takes_the_next_size_that_fits_exactly() -> None:
    """With ``maximal`` the fill is the largest size, one whose prompt and answer are exactly
    the length included, even where the unit counts overstate what a unit adds."""
    from longred_bench.taskdata.ruler.sizing import Draft, Rendered, fit

    def render(n: int) -> Rendered:
        return Rendered("a" + " b" * n, ("a",))  # n + 3 tokens with the BOS and the answer

    draft = Draft(render=render, upper=20, units=["a b"] * 20, maximal=True)
    for length in (10, 11, 23):
        n, rendered, tokens = fit(draft, _bos_tokenizer(), length, "all")
        assert (n, tokens) == (length - 3, length)
        assert rendered.prompt == render(n).prompt


def _byte_level_bos_tokenizer(prefix_space: bool = False):
    """A GPT-2-style byte-level BPE tokenizer (one token per ASCII byte, and ``ab``) that puts
    ``<s>`` before every text it encodes with its special tokens (and, with ``prefix_space``, a
    space before the text)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    from longred_bench.taskdata.ruler.counting import BYTE_LEVEL_ASCII

    vocab = {"<s>": 0}
    for char in BYTE_LEVEL_ASCII.values():
        vocab.setdefault(char, len(vocab))
    vocab["ab"] = len(vocab)
    backend = Tokenizer(models.BPE(vocab, [("a", "b")]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=prefix_space)
    backend.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", 0)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>")


def test_piece_counts_include_the_bos_of_a_byte_level_tokenizer() -> None:
    """Counted by pre-token pieces, a prompt still counts the BOS the tokenizer adds, whether
    counted whole or from its parts; an answer does not."""
    from longred_bench.taskdata.ruler.counting import piece_counter
    from longred_bench.taskdata.ruler.sizing import Rendered, count_many, count_prompt

    tok = _byte_level_bos_tokenizer()
    assert piece_counter(tok) is not None
    texts = ["ab cd", "x ab ab"]
    assert count_many(tok, texts, special=True) == [len(tok(t).input_ids) for t in texts] == [5, 6]
    assert count_many(tok, texts) == [4, 5]
    rendered = Rendered("ab cd ab", ("x",), {}, ("ab", " cd", " ab"))
    assert count_prompt(tok, rendered) == len(tok(rendered.prompt).input_ids) == 7


def test_pieces_longer_than_the_remembered_ones_are_counted() -> None:
    """A pre-token too long to be remembered (a run of 100 letters) is still counted."""
    from longred_bench.taskdata.ruler.sizing import count_many

    tok = _byte_level_bos_tokenizer()
    texts = ["x" * 100, "ab " + "y" * 70 + " ab"]
    assert count_many(tok, texts) == [100, 74]
    assert count_many(tok, texts) == [100, 74]  # and again, from what was remembered


def test_a_tokenizer_that_adds_a_prefix_space_is_counted_whole() -> None:
    """A byte-level tokenizer that puts a space before the text splits it otherwise than
    GPT-2's pattern: it gets no piece counter, and its counts are the tokenizer's."""
    from longred_bench.taskdata.ruler.counting import piece_counter
    from longred_bench.taskdata.ruler.sizing import count_tokens

    tok = _byte_level_bos_tokenizer(prefix_space=True)
    assert piece_counter(tok) is None
    assert count_tokens(tok, "ab ab") == len(tok("ab ab").input_ids) == 5  # <s> Ġ ab Ġ ab


def _small_needle_haystack(upper: int):
    """Distractor needles whose keys come from 9 word pairs, one of them the sample's own."""
    import random

    from longred_bench.taskdata.ruler.haystack import maker
    from longred_bench.taskdata.ruler.niah import NeedleHaystack

    make_key = maker("words", ("red", "green", "blue"))
    make_value = maker("numbers", ())
    return NeedleHaystack(random.Random(3), make_key, make_value, "numbers", {"red-blue"}, upper)


def test_distractor_needles_never_repeat_a_key() -> None:
    """Every key of the sample and of the needles before is taken, so where only 8 keys are
    left the 8 needles use each once."""
    hay = _small_needle_haystack(8)
    keys = [needle.split(" for ")[1].split(" is:")[0] for needle in hay[:8]]
    colours = ("red", "green", "blue")
    left = {f"{a}-{b}" for a in colours for b in colours} - {"red-blue"}
    assert sorted(keys) == sorted(left)


def test_a_needle_haystack_indexes_like_a_sequence_of_its_length() -> None:
    """Indices run from ``-len`` to ``len - 1``; one past either end is an ``IndexError``, and
    nothing past the end is drawn."""
    hay = _small_needle_haystack(5)
    assert hay[-1] == hay[4] and hay[-5] == hay[0] and len(hay[:]) == 5
    for index in (5, -6):
        with pytest.raises(IndexError):
            hay[index]
    assert len(hay.needles) == 5
