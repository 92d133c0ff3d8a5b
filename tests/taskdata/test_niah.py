"""NIAH depth x length grid: sizing, needle depth, scoring, cache, lm-eval task, heatmap."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from data_helpers import ensure_cached

from longred_bench.errors import UserError
from longred_bench.models.zoo import byte_tokenizer
from longred_bench.reports.niah_plot import plot_niah_heatmap
from longred_bench.taskdata import niah_grid
from longred_bench.taskdata.niah_grid import (
    cell_cache_path,
    generate_cell,
    generate_grid,
    insertion_point,
    load_or_generate_cell,
    niah_cells,
    score_response,
    word_token_offsets,
)
from longred_bench.taskdata.ruler.niah import NEEDLE
from longred_bench.taskdata.ruler.sizing import count_tokens
from longred_bench.taskdata.ruler.store import generator_hash

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"
CONTEXT_START = "I will quiz you about the numbers afterwards.\n"
CONTEXT_END = "\nWhat are all the special magic numbers for "
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def byte_tok(request):
    ensure_cached(request, "brown")
    return byte_tokenizer()


@pytest.fixture(scope="module")
def smol_tok(request):
    ensure_cached(request, "brown", "smollm2")
    from longred_bench.models.loading import load_tokenizer

    return load_tokenizer("smollm2-135m")


@pytest.fixture
def grid_cache(tmp_path, monkeypatch):
    """Keep generated grid cells out of the user's cache (corpora are still read from it)."""
    root = tmp_path / "cache-root"
    monkeypatch.setattr(niah_grid, "cache_dir", lambda: root)
    return root / "niah_grid"


def _needle(sample) -> str:
    return NEEDLE.format(kind="numbers", key=sample.metadata["key"], value=sample.outputs[0])


def _split_context(sample) -> tuple[str, str]:
    """The haystack text before and after the needle, read back from the prompt."""
    start = sample.input.index(CONTEXT_START) + len(CONTEXT_START)
    end = sample.input.index(CONTEXT_END)
    context = sample.input[start:end]
    needle = _needle(sample)
    assert context.count(needle) == 1
    before, _, after = context.partition(needle)
    return before, after


def _expected_tokens(tok, sample) -> int:
    return count_tokens(tok, sample.input) + count_tokens(
        tok, " " + sample.outputs[0], special=False
    )


@pytest.mark.parametrize("length", [1024, 2048])
def test_budget_with_byte_tokenizer(byte_tok, length):
    for depth in (0.0, 33.0, 100.0):
        for s in generate_cell(byte_tok, length, depth, 2, seed=1):
            # one byte per token: the count is exact, prompt plus " <value>"
            assert s.token_count == len(s.input.encode()) + len((" " + s.outputs[0]).encode())
            assert s.token_count == _expected_tokens(byte_tok, s)
            assert 0.95 * length <= s.token_count <= length, (s.token_count, length)


@pytest.mark.parametrize("length", [512, 1024, 4096])
def test_budget_with_smollm2(smol_tok, length):
    for depth in (0.0, 50.0, 100.0):
        for s in generate_cell(smol_tok, length, depth, 2, seed=0):
            assert s.token_count == _expected_tokens(smol_tok, s)
            assert 0.95 * length <= s.token_count <= length, (s.token_count, length)
            assert s.input.endswith("mentioned in the provided text are")
            assert s.metadata["key"] in s.input.rsplit(CONTEXT_END, 1)[1]


@pytest.mark.parametrize("length", [1024, 4096])
def test_needle_sits_at_the_requested_depth(smol_tok, byte_tok, length):
    for tok in (smol_tok, byte_tok):
        for depth in (0.0, 10.0, 25.0, 50.0, 75.0, 90.0, 100.0):
            for s in generate_cell(tok, length, depth, 2, seed=3):
                before, after = _split_context(s)
                if depth == 0.0:
                    assert before == ""
                if depth == 100.0:
                    assert after == ""
                haystack = " ".join(p for p in (before.rstrip(" "), after.lstrip(" ")) if p)
                measured = (
                    100.0
                    * count_tokens(tok, before.rstrip(" "), special=False)
                    / count_tokens(tok, haystack, special=False)
                )
                # 2% of the haystack for sentence snapping plus word/token boundary rounding
                assert abs(measured - depth) <= 3.0, (length, depth, measured)
                assert abs(s.metadata["depth_actual"] - measured) < 1e-9


def test_insertion_point_snaps_to_sentence_ends():
    units = [f"w{i}" + ("." if i % 10 == 9 else "") for i in range(200)]  # ends after 10, 20, ...
    assert insertion_point(units, 200, 0.0) == 0
    assert insertion_point(units, 200, 100.0) == 200
    assert insertion_point(units, 200, 50.0) == 100  # a sentence ends right there
    assert insertion_point(units, 200, 51.0) == 100  # 102 -> nearest end within 4 words
    assert insertion_point(units, 200, 52.5) == 105  # no sentence end within 4 words of 105
    # token offsets: word k holds k + 1 tokens; half the tokens lie before word 141 (nearest
    # boundary), which snaps to the sentence end at 140
    offsets = [k * (k + 1) // 2 for k in range(201)]
    assert insertion_point(units, 200, 50.0, offsets) == 140


def test_word_token_offsets_match_prefix_counts(smol_tok, byte_tok):
    text = "The cat sat. On the mat, quietly! And then 1234567 (went) away -- fast."
    words = text.split(" ")
    for tok in (smol_tok, byte_tok):
        offsets = word_token_offsets(tok, words)
        assert offsets == [
            count_tokens(tok, " ".join(words[:k]), special=False) for k in range(len(words) + 1)
        ]


def test_same_needle_and_haystack_across_cells(byte_tok):
    a = generate_cell(byte_tok, 1024, 20.0, 2, seed=4)
    b = generate_cell(byte_tok, 2048, 80.0, 2, seed=4)
    for x, y in zip(a, b, strict=True):
        assert x.outputs == y.outputs and x.metadata["key"] == y.metadata["key"]
        before_x, after_x = _split_context(x)
        before_y, after_y = _split_context(y)
        haystack_x = (before_x + after_x).split()
        assert (before_y + after_y).split()[: len(haystack_x)] == haystack_x
    assert a[0].outputs != a[1].outputs


def test_determinism_by_seed(byte_tok):
    a = generate_cell(byte_tok, 1024, 50.0, 2, seed=5)
    assert a == generate_cell(byte_tok, 1024, 50.0, 2, seed=5)
    b = generate_cell(byte_tok, 1024, 50.0, 2, seed=6)
    assert [s.input for s in a] != [s.input for s in b]


def test_scoring():
    assert score_response(" 7928685.", ["7928685"]) == 100.0
    assert score_response("The number is 7928685 indeed", ["7928685"]) == 100.0
    assert score_response("", ["7928685"]) == 0.0
    assert score_response(" 7928684.", ["7928685"]) == 0.0


def test_scores_of_generated_samples(byte_tok):
    for s in generate_cell(byte_tok, 1024, 40.0, 3, seed=0):
        assert score_response(" " + s.outputs[0] + ".", s.outputs) == 100.0
        assert score_response(" I do not know.", s.outputs) == 0.0


def test_cache_round_trip(byte_tok, tmp_path, monkeypatch):
    first = load_or_generate_cell(byte_tok, 1024, 30.0, 2, 0, cache=tmp_path)
    path = cell_cache_path(byte_tok, 1024, 30.0, 2, 0, cache=tmp_path)
    assert path.is_file() and len(path.read_text().splitlines()) == 2
    assert path.name == f"brown-L1024-d30-seed0-n2-{generator_hash()}.jsonl"

    def boom(*args, **kwargs):
        raise AssertionError("generated again")

    monkeypatch.setattr(niah_grid, "generate_cell", boom)
    assert load_or_generate_cell(byte_tok, 1024, 30.0, 2, 0, cache=tmp_path) == first
    others = {
        cell_cache_path(byte_tok, 2048, 30.0, 2, 0, cache=tmp_path),
        cell_cache_path(byte_tok, 1024, 40.0, 2, 0, cache=tmp_path),
        cell_cache_path(byte_tok, 1024, 30.0, 3, 0, cache=tmp_path),
        cell_cache_path(byte_tok, 1024, 30.0, 2, 1, cache=tmp_path),
        cell_cache_path(byte_tok, 1024, 30.0, 2, 0, corpus="kjv", cache=tmp_path),
    }
    assert path not in others and len(others) == 5


def test_grid_order_and_cache(byte_tok, grid_cache):
    samples = generate_grid(byte_tok, [1024, 512], [100, 0], 2, seed=0)
    assert [(s.length, s.metadata["depth"], s.index) for s in samples] == [
        (1024, 100.0, 0),
        (1024, 100.0, 1),
        (1024, 0.0, 0),
        (1024, 0.0, 1),
        (512, 100.0, 0),
        (512, 100.0, 1),
        (512, 0.0, 0),
        (512, 0.0, 1),
    ]
    assert len(list(grid_cache.rglob("*.jsonl"))) == 4


def test_insertion_point_takes_the_earlier_of_two_equally_near_sentence_ends():
    units = ["w"] * 100
    units[47], units[51] = "one.", "two."  # ends before words 48 and 52, both 2 from 50
    assert insertion_point(units, 100, 50.0) == 48


def test_a_documents_input_and_prefix_join_with_a_space_to_the_prompt():
    """lm-eval joins ``input`` and ``gen_prefix`` with a space: that gives back the prompt."""
    from longred_bench.taskdata.ruler.sizing import Sample

    prefix = " The special magic numbers for red-fox mentioned in the provided text are"
    meta = {"answer_prefix": prefix, "depth": 50, "depth_actual": 49.5, "key": "red-fox",
            "corpus": "brown", "seed": 0}  # fmt: skip
    sample = Sample("niah_grid", 512, 0, "What are they?" + prefix, ("1234567",), 30, meta)
    doc = niah_grid.lm_eval_doc(sample)
    assert doc["input"] + " " + doc["gen_prefix"] == sample.input
    assert doc["input"] == "What are they?" and doc["gen_prefix"].startswith("The special")


def test_a_grid_repeated_value_is_one_cell():
    """A length or depth given twice (as ``50`` and ``50.0`` too) is one cell; order is kept."""
    got = niah_grid.check_grid(["1024", 512, 1024], [50, 0, 50.0], "2", "brown")
    assert got == ((1024, 512), (50.0, 0.0), 2)


@pytest.mark.parametrize(
    ("lengths", "depths", "n", "corpus", "message"),
    [
        ([1024], [120], 1, "brown", "depths are percentages"),
        ([0], [50], 1, "brown", "lengths must be positive"),
        ([1024], [50], 0, "brown", "at least 1 sample"),
        ([1024], [50], 1, "essays", "unknown corpus"),
        (["long"], [50], 1, "brown", "lists of numbers"),
    ],
)
def test_bad_grid_is_a_clear_error(byte_tok, lengths, depths, n, corpus, message):
    with pytest.raises(UserError, match=message):
        generate_grid(byte_tok, lengths, depths, n, corpus=corpus)


def test_too_short_length_is_a_clear_error(byte_tok):
    with pytest.raises(UserError, match=r"needs at least \d+ tokens"):
        generate_cell(byte_tok, 256, 50.0, 1, seed=0)


def test_niah_cells_means_per_cell():
    def logged(length, depth, score):
        return {"doc": {"length": length, "depth": depth, "outputs": ["1"]}, "score": score}

    samples = [
        logged(2048, 50.0, 100.0),
        logged(1024, 50.0, 0.0),
        logged(1024, 50.0, 100.0),
        logged(1024, 0.0, 100.0),
        # no score: scored from the filtered response
        {"doc": {"length": 1024, "depth": 0.0, "outputs": ["1234567"]}, "filtered_resps": [" 1"]},
    ]
    assert niah_cells(samples) == [
        {"kind": "niah", "length": 1024, "depth": 0.0, "score": 50.0, "n": 2},
        {"kind": "niah", "length": 1024, "depth": 50.0, "score": 50.0, "n": 2},
        {"kind": "niah", "length": 2048, "depth": 50.0, "score": 100.0, "n": 1},
    ]


def test_heatmap_png(tmp_path):
    records = [
        {"kind": "niah", "length": length, "depth": float(d), "score": random.Random(d).random()}
        for length in (1024, 2048, 4096)
        for d in range(0, 101, 25)
    ]
    path = plot_niah_heatmap(records[:-1], tmp_path / "sub" / "niah.png", "tiny")
    assert path.read_bytes().startswith(PNG)
    two = [dict(r, model="m", rope=None) for r in records]
    two += [dict(r, model="m", rope="pi:factor=4") for r in records]
    assert plot_niah_heatmap(two, tmp_path / "two.png", "two").read_bytes().startswith(PNG)
    with pytest.raises(ValueError, match="two NIAH records"):
        plot_niah_heatmap(records + records[:1], tmp_path / "dup.png", "dup")


def _task(metadata):
    from lm_eval.tasks import TaskManager

    manager = TaskManager(include_path=str(TASKS_DIR), metadata=metadata)
    return manager.load(["longred_niah"])["tasks"]["longred_niah"]


def test_task_yaml_loads(byte_tok, grid_cache):
    metadata = {
        "tokenizer": "tiny-random",
        "lengths": [512, 1024],
        "depths": [0, 50, 100],
        "niah_samples": 2,
        "seed": 7,
        "corpus": "brown",
    }
    task = _task(metadata)
    docs = list(task.test_docs())
    assert len(docs) == 2 * 3 * 2
    assert {(d["length"], d["depth"]) for d in docs} == {
        (length, depth) for length in (512, 1024) for depth in (0.0, 50.0, 100.0)
    }
    samples = generate_grid(byte_tok, [512, 1024], [0, 50, 100], 2, seed=7)
    for doc, sample in zip(docs, samples, strict=True):
        assert doc["outputs"] == list(sample.outputs)
        # lm-eval's prompt (input, delimiter, answer prefix) is the sized sample, to the byte
        context = task.fewshot_context(doc, num_fewshot=0, gen_prefix=task.doc_to_prefix(doc))
        assert context == sample.input
        assert task.process_results(doc, [f" {sample.outputs[0]}."]) == {"score": 100.0}
        assert task.process_results(doc, [" 0000000"]) == {"score": 0.0}
    generation = task.config.generation_kwargs
    assert generation["do_sample"] is False and generation["max_gen_toks"] == 32


def test_task_without_tokenizer_is_a_clear_error(byte_tok, grid_cache):
    with pytest.raises(UserError, match="--metadata"):
        _task({"lengths": [512], "depths": [50]})


def _niah_loader():
    import importlib.util

    spec = importlib.util.spec_from_file_location("_niah_loader", TASKS_DIR / "niah_utils.py")
    loader = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loader)
    return loader


def test_loader_metadata(byte_tok, grid_cache):
    loader = _niah_loader()
    with pytest.raises(UserError, match="seed must be"):
        loader.load_niah(tokenizer="tiny-random", lengths=[512], seed="first")
    with pytest.raises(UserError, match="depths are percentages"):
        loader.load_niah(tokenizer="tiny-random", lengths=[512], depths=[50, 150])
    # the hf backend's --model_args reach the loader too: `pretrained` names the tokenizer
    # when no `tokenizer` is given; unrelated keys are ignored
    split = loader.load_niah(
        pretrained="tiny-random", lengths=512, depths="0,100", niah_samples=1, max_length=4
    )["test"]
    assert [(d["length"], d["depth"]) for d in split] == [(512, 0.0), (512, 100.0)]


def test_loader_reads_its_tokenizer_corpus_and_lists_as_documented(byte_tok, grid_cache):
    """``tokenizer`` wins over ``pretrained`` (an empty one does not count), the haystack is
    Brown's unless ``corpus`` says otherwise, and a single number is a one-item list."""
    loader = _niah_loader()
    assert loader._spec({"tokenizer": "a", "pretrained": "b"}) == "a"
    assert loader._spec({"tokenizer": "", "pretrained": "b"}) == "b"
    assert loader._as_list(12.5) == [12.5] and loader._as_list(512) == [512]
    assert loader._as_list("0, 50,100") == ["0", "50", "100"]
    (doc,) = loader.load_niah(tokenizer="tiny-random", lengths=512, depths=12.5, niah_samples=1)[
        "test"
    ]
    assert (doc["corpus"], doc["depth"]) == ("brown", 12.5)


@pytest.mark.integration
def test_lm_eval_runs_the_grid_on_tiny_model(byte_tok, grid_cache, tmp_path):
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    from longred_bench.models.loading import load

    lengths, depths, gen = [512, 768], [0, 50, 100], 8
    manager = TaskManager(
        include_path=str(TASKS_DIR),
        metadata={"tokenizer": "tiny-random", "lengths": lengths, "depths": depths,
                  "niah_samples": 1, "seed": 0, "corpus": "brown"},
    )  # fmt: skip
    model = load("tiny-random")
    lm = HFLM(
        pretrained=model.model,
        tokenizer=model.tokenizer,
        max_length=max(lengths) + gen,
        batch_size=1,
    )
    out = lm_eval.simple_evaluate(
        model=lm,
        tasks=["longred_niah"],
        task_manager=manager,
        gen_kwargs={"max_gen_toks": gen},
        log_samples=True,
        verbosity="ERROR",
    )
    logged = out["samples"]["longred_niah"]
    cells = niah_cells(logged)
    assert [(c["length"], c["depth"]) for c in cells] == [
        (length, float(depth)) for length in lengths for depth in depths
    ]
    assert all(c["n"] == 1 and c["score"] in (0.0, 100.0) for c in cells)
    for sample in logged:  # the logged score is the substring match of the generated text
        response = sample["filtered_resps"][0]
        assert sample["score"] == score_response(response, sample["doc"]["outputs"])
    metrics = {k for k in out["results"]["longred_niah"] if "," in k}
    assert metrics == {"score,none", "score_stderr,none"}
    mean = sum(s["score"] for s in logged) / len(logged)
    assert out["results"]["longred_niah"]["score,none"] == pytest.approx(mean)
    png = plot_niah_heatmap(cells, tmp_path / "niah.png", "tiny-random")
    assert png.read_bytes().startswith(PNG)
