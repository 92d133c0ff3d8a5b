"""The NIAH grid's needle placement and bookkeeping, pinned on small inputs: the token
boundary the needle goes to, how far it may move to a sentence end, the measured depth of a
generated sample, the documented default grid and the lm-eval document of a sample."""

from __future__ import annotations

import inspect
import re

import pytest
from data_helpers import ensure_cached

from longred_bench.errors import UserError
from longred_bench.models.zoo import byte_tokenizer
from longred_bench.taskdata import niah_grid
from longred_bench.taskdata.niah_grid import (
    generate_cell,
    insertion_point,
    token_depth,
    word_token_offsets,
)
from longred_bench.taskdata.ruler.niah import NEEDLE
from longred_bench.taskdata.ruler.sizing import Sample

CONTEXT_START = "I will quiz you about the numbers afterwards.\n"
CONTEXT_END = "\nWhat are all the special magic numbers for "
TEXT = "The cat sat. On the mat, quietly! And then 1234567 (went) away -- fast."


@pytest.fixture(scope="module")
def byte_tok():
    return byte_tokenizer()


@pytest.fixture(scope="module")
def brown(request):
    """Brown, the haystack's prose (the test skips without it)."""
    ensure_cached(request, "brown")


@pytest.fixture(scope="module")
def bpe_tok():
    """A GPT-2-style byte-level BPE tokenizer trained here on a few sentences: its tokens
    carry the space before a word ("Ġcat"), as SmolLM2's do; it adds a BOS token to every text
    unless special tokens are turned off, as Llama's does."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=["<s>"],
        show_progress=False,
    )
    corpus = ["The cat sat on the mat and then the cat went away quietly.", "On the mat!"] * 20
    tok.train_from_iterator(corpus, trainer)
    bos = tok.token_to_id("<s>")
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", bos)]
    )
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>")


def _plain_count(tok, text: str) -> int:
    """Tokens of ``text`` without special tokens, straight from the tokenizer."""
    return len(tok(text, add_special_tokens=False)["input_ids"])


def _prefix_counts(tok, words: list[str]) -> list[int]:
    return [_plain_count(tok, " ".join(words[:k])) for k in range(len(words) + 1)]


def test_word_token_offsets_are_token_counts_of_each_prefix(byte_tok, bpe_tok):
    """``offsets[k]`` is the number of tokens of the first ``k`` words joined by spaces, for a
    byte tokenizer (one token per character here) and a BPE one (tokens start at the space)."""
    words = TEXT.split(" ")
    assert word_token_offsets(byte_tok, words) == [len(" ".join(words[:k])) for k in range(15)]
    assert word_token_offsets(bpe_tok, words) == _prefix_counts(bpe_tok, words)
    assert word_token_offsets(bpe_tok, words) != list(range(len(words) + 1))
    assert word_token_offsets(bpe_tok, ["alone"]) == _prefix_counts(bpe_tok, ["alone"])
    assert word_token_offsets(bpe_tok, []) == [0]


def test_without_a_fast_tokenizer_words_stand_in_for_tokens():
    """A tokenizer without a Rust backend counts one token per word."""
    assert word_token_offsets(object(), ["a", "bb", "ccc"]) == [0, 1, 2, 3]


def test_the_needle_goes_to_the_token_boundary_nearest_the_depth():
    """With token offsets and no sentence end near, the boundary whose share of the tokens is
    nearest the depth is taken, on either side of the exact share."""
    units = ["w"] * 100
    offsets = [k * k for k in range(101)]  # word k holds 2k + 1 tokens
    # 50% of 10,000 tokens: boundary 71 (5,041) is nearer than 70 (4,900)
    assert insertion_point(units, 100, 50.0, offsets) == 71
    # 40% of 10,000: boundary 63 (3,969) is nearer than 64 (4,096)
    assert insertion_point(units, 100, 40.0, offsets) == 63
    # an exact boundary: 25% of 10,000 is 2,500 = 50 * 50
    assert insertion_point(units, 100, 25.0, offsets) == 50
    # words as tokens: the rounded share of the words
    assert insertion_point(units, 100, 33.0) == 33
    assert insertion_point(units, 100, 33.6) == 34


def test_the_depth_is_measured_in_the_haystack_it_is_cut_to():
    """Only the first ``n`` words count: the share is of ``offsets[n]``, not of every word."""
    units = ["w"] * 100
    offsets = list(range(101))
    assert insertion_point(units, 40, 50.0, offsets) == 20
    assert insertion_point(units, 40, 100.0, offsets) == 40


def test_a_needle_moves_at_most_two_percent_of_the_words_to_a_sentence_end():
    """A sentence end exactly ``int(0.02 * n)`` words away, on either side, is taken; one a
    word further is not."""
    units = [f"w{i}" + ("." if i % 10 == 9 else "") for i in range(200)]  # ends at 10, 20, ...
    assert insertion_point(units, 200, 52.0) == 100  # 104: the end at 100 is 4 words back
    assert insertion_point(units, 200, 48.0) == 100  # 96: the end at 100 is 4 words ahead
    assert insertion_point(units, 200, 47.5) == 95  # 95: both ends are 5 words away
    assert insertion_point(units, 200, 52.5) == 105


@pytest.mark.parametrize("end", ['."', ".'", '?"', '!"', "!", "?"])
def test_a_sentence_may_end_in_a_closing_quote_or_any_end_mark(end):
    """A word ending in ``.``, ``!`` or ``?``, or in one and a closing quote, ends a sentence."""
    units = ["w"] * 100
    units[51] = "said" + end  # a sentence ends before word 52
    assert insertion_point(units, 100, 50.0) == 52


def test_depth_0_and_100_stay_at_the_ends_whatever_sentences_end_near_them():
    """Depth 0 is before the first word and 100 after the last, even beside a sentence end."""
    units = ["w"] * 100
    units[0] = units[1] = units[97] = units[98] = "end."
    assert insertion_point(units, 100, 0.0) == 0
    assert insertion_point(units, 100, 100.0) == 100
    assert insertion_point(units, 100, 0.0, list(range(101))) == 0
    assert insertion_point(units, 100, 100.0, list(range(101))) == 100


def test_a_needle_never_snaps_onto_an_end_of_the_haystack():
    """Near the start or the end, a sentence end that would put the needle before the first
    word or after the last is not a candidate: the needle stays at its exact point."""
    units = ["w"] * 100
    units[99] = "last."  # the haystack's last word ends a sentence
    assert insertion_point(units, 100, 99.0) == 99
    assert insertion_point(units, 100, 1.0) == 1
    assert insertion_point(units, 100, 0.4) == 0
    assert insertion_point(units, 100, 99.6) == 100


def test_token_depth_is_the_share_of_tokens_before_the_needle(byte_tok):
    """``token_depth`` is 100 times the tokens before word ``pos`` over the haystack's tokens."""
    words = ["ab", "cde", "f"]  # "ab cde f": 8 byte tokens, "ab cde" 6, "ab" 2
    assert token_depth(byte_tok, words, 2) == pytest.approx(75.0)
    assert token_depth(byte_tok, words, 1) == pytest.approx(25.0)
    assert token_depth(byte_tok, words, 0) == 0.0
    assert token_depth(byte_tok, words, 3) == 100.0
    assert token_depth(byte_tok, [], 0) == 0.0


def test_token_depth_counts_no_special_tokens(bpe_tok):
    """A tokenizer that adds a BOS token: the depth is of the haystack's own tokens."""
    words = TEXT.split(" ")
    assert len(bpe_tok("The cat")["input_ids"]) == _plain_count(bpe_tok, "The cat") + 1
    expected = 100.0 * _plain_count(bpe_tok, " ".join(words[:5])) / _plain_count(bpe_tok, TEXT)
    assert token_depth(bpe_tok, words, 5) == pytest.approx(expected)


def _haystack(sample: Sample) -> tuple[str, str]:
    start = sample.input.index(CONTEXT_START) + len(CONTEXT_START)
    context = sample.input[start : sample.input.index(CONTEXT_END)]
    needle = NEEDLE.format(kind="numbers", key=sample.metadata["key"], value=sample.outputs[0])
    assert context.count(needle) == 1
    before, _, after = context.partition(needle)
    return before.strip(" "), after.strip(" ")


@pytest.mark.parametrize("depth", [0.0, 10.0, 37.0, 50.0, 90.0, 100.0])
def test_a_generated_needle_sits_at_its_depth_in_tokens(byte_tok, brown, depth):
    """In a generated sample the needle is within 3 points of the requested depth, measured
    in tokens of the haystack around it, and ``depth_actual``, ``needle_word`` and
    ``haystack_units`` say where it is."""
    for sample in generate_cell(byte_tok, 1024, depth, 2, seed=11):
        before, after = _haystack(sample)
        haystack = " ".join(p for p in (before, after) if p)
        measured = 100.0 * len(before.encode()) / len(haystack.encode())  # a byte a token
        assert abs(measured - depth) <= 3.0, (depth, measured)
        assert sample.metadata["depth_actual"] == pytest.approx(measured, abs=1e-9)
        assert sample.metadata["needle_word"] == (len(before.split(" ")) if before else 0)
        assert sample.metadata["haystack_units"] == len(haystack.split(" "))
        assert sample.metadata["depth"] == depth and sample.metadata["seed"] == 11
        assert sample.token_count <= 1024
        if depth == 0.0:
            assert before == ""
        if depth == 100.0:
            assert after == ""


def test_the_default_grid_is_the_documented_one():
    """Lengths 1K-8K, depths 0, 10, ..., 100 and 4 samples a cell: 176 prompts by default."""
    assert niah_grid.DEFAULT_LENGTHS == (1024, 2048, 4096, 8192)
    depths = tuple(float(10 * k) for k in range(11))
    assert depths == niah_grid.DEFAULT_DEPTHS
    assert niah_grid.DEFAULT_SAMPLES == 4
    defaults = inspect.signature(niah_grid.generate_grid).parameters
    grid = [defaults[name].default for name in ("lengths", "depths", "num_samples", "seed")]
    assert len(grid[0]) * len(grid[1]) * grid[2] == 176 and grid[3] == 0


def test_an_lm_eval_document_carries_the_samples_record():
    """The lm-eval document holds the sample's fields, depths as floats and the seed as an int."""
    prefix = " The special magic numbers for red-fox mentioned in the provided text are"
    meta = {"answer_prefix": prefix, "depth": 50, "depth_actual": 49, "key": "red-fox",
            "corpus": "kjv", "seed": "3"}  # fmt: skip
    sample = Sample("niah_grid", 512, 2, "Question?" + prefix, ("1234567",), 30, meta)
    doc = niah_grid.lm_eval_doc(sample)
    assert doc == {
        "input": "Question?",
        "gen_prefix": prefix.lstrip(),
        "outputs": ["1234567"],
        "length": 512,
        "depth": 50.0,
        "depth_actual": 49.0,
        "index": 2,
        "token_count": 30,
        "key": "red-fox",
        "corpus": "kjv",
        "seed": 3,
    }
    assert isinstance(doc["depth"], float) and isinstance(doc["seed"], int)
    bad = Sample("niah_grid", 512, 0, "Question? no prefix", ("1",), 30, meta)
    with pytest.raises(ValueError, match="answer prefix"):
        niah_grid.lm_eval_doc(bad)


def test_a_cell_file_is_named_by_its_exact_depth(byte_tok, tmp_path):
    """A cell file's name carries corpus, length, depth (as given), seed and sample count."""
    path = niah_grid.cell_cache_path(byte_tok, 2048, 12.5, 3, 7, corpus="kjv", cache=tmp_path)
    assert path.parent.parent == tmp_path
    assert path.name.startswith("kjv-L2048-d12.5-seed7-n3-")


def test_a_grid_is_stored_under_the_cache_root_it_is_given(byte_tok, brown, tmp_path, monkeypatch):
    """``generate_grid(cache=...)`` keeps every cell there, not under the default cache."""
    default = tmp_path / "default"
    monkeypatch.setattr(niah_grid, "cache_dir", lambda: default)
    given = tmp_path / "given"
    samples = niah_grid.generate_grid(byte_tok, [512], [0, 100], 1, seed=2, cache=given)
    assert [s.metadata["depth"] for s in samples] == [0.0, 100.0]
    assert len(list(given.rglob("*.jsonl"))) == 2
    assert not default.exists()


def test_cells_of_two_corpora_are_stored_apart(byte_tok, request, tmp_path):
    """A cell's file is named by its corpus: a KJV cell is not read back from a Brown one."""
    ensure_cached(request, "brown", "kjv")
    (brown,) = niah_grid.load_or_generate_cell(byte_tok, 512, 50.0, 1, 0, cache=tmp_path)
    (kjv,) = niah_grid.load_or_generate_cell(
        byte_tok, 512, 50.0, 1, 0, corpus="kjv", cache=tmp_path
    )
    assert (brown.metadata["corpus"], kjv.metadata["corpus"]) == ("brown", "kjv")
    assert kjv.input != brown.input
    assert len(list(tmp_path.rglob("*.jsonl"))) == 2


def test_a_length_with_room_for_the_prompt_alone_is_a_clear_error(byte_tok, brown):
    """A length that holds the prompt and answer but not one haystack word is refused."""
    with pytest.raises(UserError, match=r"needs at least (\d+) tokens") as info:
        generate_cell(byte_tok, 64, 50.0, 1, seed=0)
    needed = int(re.search(r"needs at least (\d+) tokens", str(info.value)).group(1))
    with pytest.raises(UserError, match=f"no room for a haystack.*more than {needed} tokens"):
        generate_cell(byte_tok, needed, 50.0, 1, seed=0)
