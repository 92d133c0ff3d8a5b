"""RULER task generation: sizes, needles, determinism, seeds, fixed depths, caching and scoring
(token counting and sizing: ``test_ruler_sizing.py``; fixtures in ``conftest.py``)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

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
from longred_bench.taskdata.ruler.haystack import insert_at_depths
from longred_bench.taskdata.ruler.niah import CONFIGS

QA = ("qa_1", "qa_2")


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


def test_drop_answers_count_as_whole_words():
    """qa_2's DROP answers are mostly short numbers: "2" is not found in "2012" or "12" there;
    qa_1 (SQuAD) keeps RULER's substring match."""
    assert score("qa_2", "It happened in 2012, 12 times.", ["2"]) == 0.0
    assert score("qa_2", "The answer is 2.", ["2"]) == 100.0
    assert score("qa_2", "(2) touchdowns", ["2", "two"]) == 100.0
    assert score("qa_2", "Tom Brady threw it", ["tom brady"]) == 100.0
    assert score("qa_1", "It happened in 2012.", ["2"]) == 100.0


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


def test_stored_samples_are_named_by_the_code_that_generates_them(byte_tok, tmp_path, monkeypatch):
    """A change to a file under the generating code (``taskdata/``, ``data/``) names another
    store file, so its samples are generated again; a change elsewhere does not."""
    from longred_bench import source_tree

    blobs = dict(source_tree.source_blobs())
    task_file = next(k for k in blobs if k.startswith("longred_bench/taskdata/ruler/"))
    report_file = next(k for k in blobs if k.startswith("longred_bench/reports/"))

    def path_with(changed: str | None) -> Path:
        edited = {**blobs, changed: "0" * 40} if changed else blobs
        monkeypatch.setattr(source_tree, "source_blobs", lambda: edited)
        source_tree.source_hash.cache_clear()
        return cache_path("vt", byte_tok, 1024, 1, 0, cache=tmp_path)

    try:
        same = path_with(None)
        assert path_with(report_file) == same
        assert path_with(task_file) != same and path_with(task_file).parent == same.parent
    finally:
        source_tree.source_hash.cache_clear()


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


def test_dev_and_test_seeds_share_no_sample(byte_tok):
    """``reproduce pcd`` picks PCD's settings on seed-1 samples and tests on seed-0 ones."""
    from profile_helpers import ctx_of

    from longred_bench.reproduce.pcd import TEST_SEED

    dev_seed = ctx_of("pcd").settings.dev_seed
    for task in ("niah_single_1", "vt"):
        dev = {s.input for s in generate(task, byte_tok, 1024, 8, seed=dev_seed)}
        test = {s.input for s in generate(task, byte_tok, 1024, 8, seed=TEST_SEED)}
        assert len(dev) == len(test) == 8 and not dev & test


def test_items_go_in_at_their_depth_of_the_haystack():
    units = [f"w{i}" for i in range(100)]
    out = insert_at_depths(units, ["B", "A"], [75.0, 10.0])
    assert out.index("A") == 10 and out.index("B") == 76  # 10 and 75 units precede them
    assert [u for u in out if u not in "AB"] == units
    ends = [u + "." if i == 6 else u for i, u in enumerate(units)]  # a sentence ends at unit 6
    assert insert_at_depths(ends, ["A"], [10.0], snap=True).index("A") == 7  # just after it
    assert insert_at_depths(ends, ["A"], [10.0]).index("A") == 10
    # a depth between two units rounds to the nearer (half of 3 units: after 2 of them); items
    # at one depth go in in the order given
    assert insert_at_depths(["a", "b", "c"], ["X"], [50.0]) == ["a", "b", "X", "c"]
    assert insert_at_depths(["a", "b"], ["X", "Y"], [50.0, 50.0]) == ["a", "X", "Y", "b"]


def test_the_needle_sits_at_its_depth_in_the_prompt(byte_tok):
    """At 4,096 byte tokens the instruction and question are a few percent of the prompt: the
    needle's value sits within 0.1 of its depth's fraction of the whole prompt."""
    for s in generate("niah_single_1", byte_tok, 4096, 6, 0, depths=(10.0, 50.0, 90.0)):
        value, (depth,) = s.outputs[0], s.metadata["depth_percent"]
        assert s.input.count(value) == 1
        assert abs(s.input.find(value) / len(s.input) - depth / 100) < 0.1, (depth, s.input)


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
