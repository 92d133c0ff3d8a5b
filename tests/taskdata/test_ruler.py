"""RULER task generation: sizing, needles, determinism, caching and scoring."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from data_helpers import ensure_cached

from longred_bench.errors import UserError
from longred_bench.models.zoo import byte_tokenizer
from longred_bench.taskdata.ruler import (
    TASK_METRIC,
    TASKS,
    Sample,
    cache_path,
    generate,
    generation_rate,
    load_or_generate,
    score,
    score_all,
    score_any,
)
from longred_bench.taskdata.ruler.niah import CONFIGS

QA = ("qa_1", "qa_2")


@pytest.fixture(scope="module")
def byte_tok(request):
    ensure_cached(request, "brown", "benchmarks")
    return byte_tokenizer()


@pytest.fixture(scope="module")
def smol_tok(request):
    ensure_cached(request, "brown", "benchmarks", "smollm2")
    from transformers import AutoTokenizer

    from longred_bench.data.corpora import model_dir

    return AutoTokenizer.from_pretrained(model_dir("smollm2-135m"))


def test_registry_has_rulers_13_tasks():
    assert len(TASKS) == 13
    assert set(TASK_METRIC) == set(TASKS)
    assert {t for t, m in TASK_METRIC.items() if m == "any"} == set(QA)


def _check_sizes(samples: list[Sample], length: int) -> None:
    for s in samples:
        assert s.token_count <= length
        if s.task in QA:  # whole documents of up to ~700 tokens: see test_qa_fill_is_maximal
            assert length < 4096 or s.token_count >= 0.75 * length, (s.task, s.token_count)
        else:
            assert s.token_count >= 0.9 * length, (s.task, s.token_count, length)


@pytest.mark.parametrize("length", [256, 512, 1024])
@pytest.mark.parametrize("task", TASKS)
def test_sizes_with_smollm2(smol_tok, task, length):
    samples = generate(task, smol_tok, length, 2, seed=0)
    assert [s.index for s in samples] == [0, 1]
    _check_sizes(samples, length)


@pytest.mark.parametrize("task", TASKS)
def test_sizes_with_byte_tokenizer(byte_tok, task):
    for length in (1024, 2048):
        samples = generate(task, byte_tok, length, 2, seed=1)
        _check_sizes(samples, length)
        for s in samples:  # one byte per token: the count is exact
            answer = " " + (
                ", ".join(s.outputs)
                if TASK_METRIC[task] == "all"
                else max(s.outputs, key=lambda o: len(o.encode()))
            )
            assert s.token_count == len(s.input.encode()) + len(answer.encode())


def test_too_small_length_is_a_clear_error(byte_tok):
    with pytest.raises(UserError, match=r"needs at least \d+ tokens"):
        generate("niah_single_1", byte_tok, 256, 1, seed=0)
    with pytest.raises(UserError, match="unknown RULER task"):
        generate("niah_single_9", byte_tok, 1024, 1, seed=0)


def test_a_draw_that_leaves_no_room_is_drawn_again(byte_tok, monkeypatch):
    """A sample whose first draw cannot fit even with an empty haystack (long drawn words at a
    small length) is drawn again from its own seed; samples that fit keep their first draw."""
    from longred_bench.taskdata.ruler import registry
    from longred_bench.taskdata.ruler.sizing import Draft, Rendered

    def builder(task, rng, length, seed, corpus, state):
        word = "w" * (400 if rng.random() < 0.5 else 10)  # half the draws leave no room

        def render(n):
            return Rendered(f"Q: {word}{' x' * n} A:", ("x",))

        yield Draft(render=render, upper=40)

    monkeypatch.setitem(registry.BUILDERS, "vt", builder)
    samples = generate("vt", byte_tok, 256, 12, seed=0)
    redrawn = [s for s in samples if s.metadata.get("redraw")]
    assert redrawn and len(redrawn) < len(samples)
    assert all(s.token_count <= 256 and "w" * 10 in s.input for s in samples)
    assert [s.input for s in generate("vt", byte_tok, 256, 12, seed=0)] == [
        s.input for s in samples
    ]
    monkeypatch.setattr(registry, "REDRAWS", 0)
    with pytest.raises(UserError, match=r"needs at least \d+ tokens"):
        generate("vt", byte_tok, 256, 12, seed=0)


def test_haystack_shrinks_to_zero_when_needed(byte_tok):
    with pytest.raises(UserError) as info:
        generate("niah_single_1", byte_tok, 256, 1, seed=0)
    minimum = int(re.search(r"needs at least (\d+) tokens", str(info.value)).group(1))
    s = generate("niah_single_1", byte_tok, minimum, 1, seed=0)[0]
    assert s.metadata["haystack_units"] == 0 and s.token_count <= minimum
    assert s.outputs[0] in s.input


@pytest.mark.parametrize("task", list(CONFIGS))
def test_niah_needles_are_in_the_prompt(smol_tok, task):
    for s in generate(task, smol_tok, 1024, 3, seed=2):
        for key in s.metadata["keys"]:
            assert key in s.input
        for value in s.outputs:
            assert re.search(
                rf"for ({'|'.join(map(re.escape, s.metadata['keys']))}) is: "
                rf"{re.escape(value)}\.",
                s.input,
            )
        assert s.input.endswith("mentioned in the provided text are")
    counts = {"niah_multivalue": 4, "niah_multiquery": 4}
    assert len(s.outputs) == counts.get(task, 1)
    if task.startswith("niah_multikey"):
        assert s.input.count("One of the special magic") > 1  # distractor needles


def test_vt_chain_is_derivable(smol_tok):
    for s in generate("vt", smol_tok, 1024, 3, seed=0):
        bound = dict(re.findall(r"VAR ([A-Z]{5}) = (VAR [A-Z]{5}|\d+)\.", s.input))
        value = re.search(r"assigned the value (\d+) in the text", s.input).group(1)

        def resolve(name, bound=bound):
            target = bound[name]
            return resolve(target[4:]) if target.startswith("VAR ") else target

        assert {n for n in bound if resolve(n) == value} == set(s.outputs)
        assert len(s.outputs) == 5


def test_cwe_answer_is_the_top_ten(smol_tok):
    for length in (256, 1024, 4096):
        s = generate("cwe", smol_tok, length, 1, seed=0)[0]
        words = re.findall(r"^\d+\. (\w+)$", s.input, flags=re.M)
        counts = Counter(words)
        top = counts.most_common(11)
        assert {w for w, _ in top[:10]} == set(s.outputs)
        assert top[9][1] > (top[10][1] if len(top) > 10 else 0)
    assert s.metadata["freq_cw"] == 30 and s.metadata["freq_ucw"] == 3


def test_fwe_answer_is_the_top_three(smol_tok):
    for s in generate("fwe", smol_tok, 1024, 3, seed=0):
        text = s.input.split("most frequently appeared coded words. ")[1].split("\nQuestion")[0]
        counts = Counter(w for w in text.split() if w != "....")
        top = counts.most_common(4)
        assert {w for w, _ in top[:3]} == set(s.outputs)
        assert top[2][1] > top[3][1]


@pytest.mark.parametrize("task", QA)
def test_qa_gold_document_and_answers(smol_tok, task):
    from longred_bench.taskdata.ruler import qa

    questions = {q.qid: q for q in qa.load(task)[0]}
    samples = generate(task, smol_tok, 2048, 3, seed=0)
    assert len({s.metadata["question_id"] for s in samples}) == 3
    for s in samples:
        item = questions[s.metadata["question_id"]]
        assert item.passage in s.input and item.question in s.input
        assert s.outputs == item.answers
        assert f"Document {s.metadata['gold_document']}:\n{item.passage}" in s.input
        assert len(re.findall(r"^Document \d+:$", s.input, re.M)) == s.metadata["num_documents"]


@pytest.mark.parametrize("task", TASKS)
def test_scoring_full_and_empty(smol_tok, task):
    for s in generate(task, smol_tok, 512, 2, seed=3):
        assert score(task, " " + ", ".join(s.outputs), s.outputs) == 100.0
        assert score(task, "", s.outputs) == 0.0
        assert score(task, "I do not know.", s.outputs) == 0.0


def test_all_versus_any():
    refs = ("Saint Bernadette Soubirous", "Bernadette")
    assert score_all("It was Bernadette.", refs) == 50.0
    assert score_any("It was Bernadette.", refs) == 100.0
    assert score_all("bernadette and SAINT BERNADETTE SOUBIROUS", refs) == 100.0
    values = ("1234567", "7654321", "1111111", "2222222")
    assert score_all("1234567 and 1111111", values) == 50.0
    assert score_any("1234567 and 1111111", values) == 100.0
    with pytest.raises(ValueError):
        score_all("x", ())


@pytest.mark.parametrize("task", ["niah_single_2", "cwe", "fwe", "qa_1"])
def test_determinism_by_seed(byte_tok, task):
    a = generate(task, byte_tok, 1024, 2, seed=5)
    assert a == generate(task, byte_tok, 1024, 2, seed=5)
    b = generate(task, byte_tok, 1024, 2, seed=6)
    assert [s.input for s in a] != [s.input for s in b]
    assert a[0].input != a[1].input


def test_cache_round_trip(byte_tok, tmp_path, monkeypatch):
    first = load_or_generate("niah_multikey_3", byte_tok, 1024, 2, 0, cache=tmp_path)
    path = cache_path("niah_multikey_3", byte_tok, 1024, 2, 0, cache=tmp_path)
    assert path.is_file() and len(path.read_text().splitlines()) == 2

    def boom(*args, **kwargs):
        raise AssertionError("generated again")

    monkeypatch.setattr("longred_bench.taskdata.ruler.store.generate", boom)
    assert load_or_generate("niah_multikey_3", byte_tok, 1024, 2, 0, cache=tmp_path) == first
    other = cache_path("niah_multikey_3", byte_tok, 1024, 2, 1, cache=tmp_path)
    assert other != path


def test_cache_keys_on_tokenizer(byte_tok, smol_tok, tmp_path):
    a = cache_path("vt", byte_tok, 1024, 1, 0, cache=tmp_path)
    b = cache_path("vt", smol_tok, 1024, 1, 0, cache=tmp_path)
    assert a != b and a == cache_path("vt", byte_tokenizer(), 1024, 1, 0, cache=tmp_path)


def test_generation_rate(byte_tok):
    assert generation_rate("niah_single_1", byte_tok, 1024, 2) > 0


@pytest.mark.parametrize("task", QA)
def test_qa_fill_is_maximal(smol_tok, task):
    import random

    from longred_bench.taskdata.ruler import qa
    from longred_bench.taskdata.ruler.sizing import count_tokens, fit

    for length in (512, 2048):
        draft = next(qa.build(task, random.Random(0), length, seed=0, state={}))
        n, rendered, tokens = fit(draft, smol_tok, length, "any", task=task)
        assert tokens <= length
        assert n == draft.upper or count_tokens(smol_tok, draft.render(n + 1).prompt) > tokens
        longest = max(count_tokens(smol_tok, " " + o, special=False) for o in rendered.outputs)
        assert (
            n == draft.upper
            or count_tokens(smol_tok, draft.render(n + 1).prompt) + longest > length
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


def test_dev_and_test_seeds_share_no_sample(byte_tok):
    """``reproduce pcd`` picks PCD's settings on seed-1 samples and tests on seed-0 ones."""
    from longred_bench.reproduce.pcd import PCD_PROFILES, TEST_SEED

    dev_seed = PCD_PROFILES["tiny"].dev_seed
    for task in ("niah_single_1", "vt"):
        dev = {s.input for s in generate(task, byte_tok, 1024, 8, seed=dev_seed)}
        test = {s.input for s in generate(task, byte_tok, 1024, 8, seed=TEST_SEED)}
        assert len(dev) == len(test) == 8 and not dev & test


def test_fixed_depths_are_the_same_at_every_length(byte_tok, tmp_path):
    depths = (10.0, 90.0)
    by_length = {
        n: load_or_generate("niah_single_1", byte_tok, n, 4, 0, cache=tmp_path, depths=depths)
        for n in (512, 1024)
    }
    for samples in by_length.values():
        assert [s.metadata["depth_percent"] for s in samples] == [[10.0], [90.0], [10.0], [90.0]]
    # Only the depth changes: the same needle values as the drawn-depth samples.
    drawn = generate("niah_single_1", byte_tok, 1024, 4, 0)
    assert [s.outputs for s in drawn] == [s.outputs for s in by_length[1024]]
    assert [s.metadata["depth_percent"] for s in drawn] != [[10.0], [90.0], [10.0], [90.0]]
    assert cache_path("niah_single_1", byte_tok, 512, 4, 0, cache=tmp_path) != cache_path(
        "niah_single_1", byte_tok, 512, 4, 0, cache=tmp_path, depths=depths
    )
    with pytest.raises(UserError, match="single-needle tasks"):
        generate("niah_multivalue", byte_tok, 1024, 1, 0, depths=(50.0,))
    with pytest.raises(UserError, match="for the NIAH tasks, not 'vt'"):
        generate("vt", byte_tok, 1024, 1, 0, depths=(50.0,))
    with pytest.raises(UserError, match="percents in \\[0, 100\\]"):
        generate("niah_single_1", byte_tok, 1024, 1, 0, depths=(150.0,))
