"""RULER token counting and sizing: how many haystack units fit a length, counted exactly or
declined, with one full tokenization per sample (fixtures in ``conftest.py``)."""

from __future__ import annotations

import pytest
from data_helpers import ensure_cached

from longred_bench.taskdata.ruler import (
    generate,
)


def _counting_draft(draft, calls: list[int]):
    """``draft`` whose renders are recorded in ``calls``."""
    import dataclasses

    def render(n):
        calls.append(n)
        return draft.render(n)

    return dataclasses.replace(draft, render=render)


def _toy_draft(unit_texts, rendered_units, *, maximal=False):
    """A prompt of ``rendered_units[:n]`` joined, sized by the (possibly wrong) ``unit_texts``."""
    from longred_bench.taskdata.ruler.sizing import Draft, Rendered

    def render(n):
        return Rendered("Q:" + "".join(rendered_units[:n]) + " A:", ("x",))

    return Draft(render=render, upper=len(rendered_units), units=unit_texts, maximal=maximal)


@pytest.mark.parametrize("maximal", [False, True])
def test_unit_sizing_corrects_for_drift(byte_tok, maximal):
    from longred_bench.taskdata.ruler.sizing import count_tokens, fit

    # The units claim 3 bytes each but every fifth renders as 11: the sums underestimate, so
    # the first guess overflows and the drift must bring it back under the length.
    rendered = [" ab" if i % 5 else " abcdefghij" for i in range(400)]
    draft = _toy_draft([" ab"] * 400, rendered, maximal=maximal)
    for length in (100, 257, 1000):
        n, out, tokens = fit(draft, byte_tok, length, "all")
        assert tokens == count_tokens(byte_tok, out.prompt) + 2 <= length
        grown = count_tokens(byte_tok, draft.render(n + 1).prompt) + 2
        if maximal:
            assert grown > length
        else:  # within one unit of the largest
            assert count_tokens(byte_tok, draft.render(n + 2).prompt) + 2 > length or grown > length


def test_unit_sizing_matches_the_search_where_counts_add_up(byte_tok):
    import dataclasses

    from longred_bench.taskdata.ruler.sizing import fit

    rendered = [f" w{i}" for i in range(600)]
    by_units = _toy_draft(rendered, rendered)
    by_search = dataclasses.replace(by_units, units=None)
    for length in (64, 500, 1500, 5000):
        assert (
            fit(by_units, byte_tok, length, "all")[::2]
            == fit(by_search, byte_tok, length, "all")[::2]
        )


@pytest.mark.parametrize("task", ["niah_single_1", "niah_multikey_3", "vt", "cwe"])
def test_one_full_tokenization_per_sample(smol_tok, task):
    """Sized by unit counts: the empty-haystack prompt plus one full rendering per sample
    (the search without units renders about ten)."""
    import random

    from longred_bench.taskdata.ruler import registry
    from longred_bench.taskdata.ruler.sizing import fit

    rng = random.Random(3)
    draft = next(registry.BUILDERS[task](task, rng, 4096, 0, "brown", {}))
    calls: list[int] = []
    _, _, tokens = fit(_counting_draft(draft, calls), smol_tok, 4096, "all", task=task)
    assert len(set(calls) - {0}) <= 2 and tokens >= 4096 - 100, (calls, tokens)  # a needle: ~65


def test_uuid_value_matches_the_uuid_module():
    import random
    import uuid

    from longred_bench.taskdata.ruler.haystack import uuid_value

    a, b = random.Random(7), random.Random(7)
    for _ in range(200):
        assert uuid_value(a) == str(uuid.UUID(int=b.getrandbits(128), version=4))


def test_needle_haystack_draws_lazily_and_in_order(request):
    import random

    ensure_cached(request, "brown")  # the key words

    from longred_bench.taskdata.ruler.haystack import maker, vocabulary
    from longred_bench.taskdata.ruler.niah import NeedleHaystack

    make = maker("words", vocabulary("brown"))
    hay = NeedleHaystack(random.Random(1), make, maker("numbers", ()), "numbers", {"a-b"}, 500)
    first = hay[:10]
    assert len(hay.needles) == 10 and len(hay) == 500
    full = NeedleHaystack(random.Random(1), make, maker("numbers", ()), "numbers", {"a-b"}, 500)
    assert full[:40][:10] == first and hay[39] == full[39]
    keys = [n.split(" for ")[1].split(" is:")[0] for n in full[:40]]
    assert len(set(keys)) == 40 and "a-b" not in keys
    assert hay.with_prefix("\n")[:2] == ["\n" + x for x in first[:2]]


# --- exact counts by pre-token pieces (GPT-2-style byte-level tokenizers) ----------------------


def _reference_count(tok, text: str, special: bool = False) -> int:
    return len(tok.backend_tokenizer.encode(text, add_special_tokens=special).ids)


def _random_texts(seed: int, alphabet: str, k: int, longest: int) -> list[str]:
    import random

    rng = random.Random(seed)
    return ["".join(rng.choices(alphabet, k=rng.randrange(longest))) for _ in range(k)]


def test_piece_counts_match_the_tokenizer(smol_tok):
    """Every ASCII byte, contractions, whitespace runs and digit runs (split into chunks for
    SmolLM2, which has no two-digit token), plus texts the pattern must not vouch for."""
    from longred_bench.taskdata.ruler.counting import GPT2_DIGIT_PIECES, piece_counter

    counter = piece_counter(smol_tok)
    assert counter is not None and counter.pattern is GPT2_DIGIT_PIECES
    texts = _random_texts(0, "".join(map(chr, range(128))), 1500, 40)
    texts += _random_texts(1, "ab Z '\n\t\r.-,0123456789stdlmrve", 1500, 60)
    texts += ["", "'S 'll 're  x", "   ", "a \n\n b", "x'", "''ll", "12345678901 x9", " 007"]
    texts += ["caf\u00e9 au lait", "one <|endoftext|> two", "<|im_start|>"]  # not vouched for
    assert counter.count_many(texts) == [_reference_count(smol_tok, t) for t in texts]
    assert counter.count_many(texts[:50], special=True) == [
        _reference_count(smol_tok, t, special=True) for t in texts[:50]
    ]


def test_joined_counts_are_exact_or_declined(smol_tok):
    """A text given as parts is counted from the parts only where every cut is clean; a cut
    that merges pieces (``"ab" + "c"``, ``"x " + "y"``, ``"'" + "ll"``) makes it decline."""
    from longred_bench.taskdata.ruler.counting import piece_counter

    counter = piece_counter(smol_tok)
    alphabet = "ab  'stdlmrve\n\t.-,09X<|>"
    sizes = _random_texts(2, "1234567", 3000, 2)
    parts_list = [_random_texts(3 + i, alphabet, int(s or "1"), 7) for i, s in enumerate(sizes)]
    counted = 0
    for parts in parts_list:
        text = "".join(parts)
        got = counter.count_joined(text, parts, special=True)
        if got is not None:
            counted += 1
            assert got == _reference_count(smol_tok, text, special=True), parts
    assert counted > 500  # most are clean
    for parts in (["ab", "c"], ["x ", "y"], ["it'", "ll"], ["1", "2"]):
        assert counter.count_joined("".join(parts), parts) is None, parts
    assert counter.count_joined("abc", ["ab", "d"]) is None  # parts that do not make the text


def test_other_tokenizers_are_counted_whole(byte_tok):
    from longred_bench.taskdata.ruler.counting import piece_counter
    from longred_bench.taskdata.ruler.sizing import count_many

    assert piece_counter(byte_tok) is None
    assert count_many(byte_tok, ["abc", "d e"]) == [3, 3]


@pytest.mark.parametrize("task", ["niah_multikey_3", "cwe"])
def test_fill_is_close_and_never_over(smol_tok, task):
    """The samples of the two tasks sized by parts and piece counts: the recorded count is the
    tokenizer's own (prompt + answer), never over the length, and one more haystack unit does
    not fit (SmolLM2's counts add up across the units of both tasks)."""
    import random

    from longred_bench.taskdata.ruler import registry
    from longred_bench.taskdata.ruler.sizing import fit

    for length in (1024, 4096):
        for s in generate(task, smol_tok, length, 4, seed=7):
            answer = _reference_count(smol_tok, " " + ", ".join(s.outputs))
            assert s.token_count == _reference_count(smol_tok, s.input, special=True) + answer
            assert length - (100 if task == "niah_multikey_3" else 25) <= s.token_count <= length
        draft = next(registry.BUILDERS[task](task, random.Random(5), length, 0, "brown", {}))
        n, rendered, tokens = fit(draft, smol_tok, length, "all", task=task)
        answer = tokens - _reference_count(smol_tok, rendered.prompt, special=True)
        assert _reference_count(smol_tok, draft.render(n + 1).prompt, True) + answer > length


@pytest.mark.parametrize("task", ["niah_multikey_3", "cwe", "vt"])
def test_samples_do_not_depend_on_remembered_counts(smol_tok, task):
    """The same samples from a cold counter, a warm one, and as the prefix of a longer call."""
    from longred_bench.taskdata.ruler import counting

    counting._counters.pop(smol_tok, None)
    cold = generate(task, smol_tok, 1024, 3, seed=11)
    generate(task, smol_tok, 1024, 3, seed=12)
    assert generate(task, smol_tok, 1024, 3, seed=11) == cold
    assert generate(task, smol_tok, 1024, 5, seed=11)[:3] == cold


def test_word_draws_are_lazy_distinct_and_in_order():
    import random

    from longred_bench.taskdata.ruler.synthetic import WordDraws

    vocab = [f"w{i}" for i in range(50)]
    stepwise = WordDraws(random.Random(3), vocab, 3)
    for n in (4, 4, 17, 30):
        stepwise.draw(n)
    at_once = WordDraws(random.Random(3), vocab, 3)
    at_once.draw(30)
    assert stepwise.words == at_once.words and stepwise.keys == at_once.keys
    assert len(at_once.keys) == 90
    at_once.draw(80)  # capped at the vocabulary: every word once
    assert sorted(at_once.words) == sorted(vocab)


def test_piece_counts_with_multi_digit_tokens():
    """A byte-level BPE trained in-process whose merges join digits: digit runs stay whole
    pieces there, and the counts still match."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    from longred_bench.taskdata.ruler.counting import GPT2_PIECES, piece_counter

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    corpus = [f"item {i} costs {i * 37} and {i * 1234} it's" for i in range(300)]
    backend.train_from_iterator(corpus, trainer)
    tok = PreTrainedTokenizerFast(tokenizer_object=backend)
    counter = piece_counter(tok)
    assert counter is not None and counter.pattern is GPT2_PIECES  # "12"-like tokens exist
    texts = _random_texts(4, "0123456789 ab'st\n.-", 2000, 30) + corpus[:50]
    assert counter.count_many(texts) == [_reference_count(tok, t) for t in texts]


def test_every_task_too_long_for_the_shortest_length_is_named_at_once(byte_tok):
    """A run at 256 stopped at its first task that did not fit, suggesting the length that held
    that one (512), where the next needed 1,024; now one error names each task that does not
    fit with the tokens it needs, and the length that holds them all."""
    from longred_bench.taskdata.ruler.registry import check_fits_all
    from longred_bench.taskdata.ruler.sizing import Misfit

    tasks = ["vt", "fwe", "niah_multikey_1", "niah_single_1"]
    with pytest.raises(Misfit) as caught:
        check_fits_all(tasks, byte_tok, 256, 0)
    message = str(caught.value)
    assert message.startswith("RULER at length 256: 4 task(s) need more tokens")
    needs = {t: int(message.split(f"{t} ")[1].split(",")[0].split(";")[0]) for t in tasks}
    assert all(n > 256 for n in needs.values()) and caught.value.needed == max(needs.values())
    most = max(needs.values())
    assert message.endswith(f"holds them all is {1 << (most - 1).bit_length()}")
    fits = 1 << (most - 1).bit_length()
    check_fits_all(tasks, byte_tok, fits, 0)  # the length it names holds every task
    for length in (256, fits):  # as the runs' own first samples agree
        for task in tasks:
            try:
                generate(task, byte_tok, length, 1, 0)
            except Misfit:
                assert length == 256 and task in needs


def test_the_largest_size_that_fits_exactly_is_kept() -> None:
    """A size whose tokens are exactly the length fits (``<=``), from any starting size."""
    from longred_bench.taskdata.ruler.sizing import _largest_fitting

    assert _largest_fitting(lambda n: 10 * n, 50, 100) == 5
    assert _largest_fitting(lambda n: 10 * n, 55, 100) == 5
    assert _largest_fitting(lambda n: 10 * n + 7, 57, 100, lo=2) == 5
