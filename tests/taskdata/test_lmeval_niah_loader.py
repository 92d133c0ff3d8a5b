"""The ``longred_lmeval_niah_single_1`` loader (``tasks/lmeval_ruler_utils.py``): lm-eval's own
``niah_single_1`` samples, sized with the evaluated model's tokenizer (here ``tiny-random``'s
byte tokenizer) for every requested length and keyed like the suite's RULER tasks. Importing
lm-eval's generator builds its word lists, which takes most of this module's time."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from typing import Any

import pytest

from longred_bench.errors import UserError
from longred_bench.models.loading import load_tokenizer

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"
GENERATION = 128  # lm-eval's generation budget, counted in each length


def _load(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"_{name}", TASKS_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    loader = _load("lmeval_ruler_utils")
    split = loader.load_niah_single_1(tokenizer="tiny-random", lengths="1024,512", ruler_samples=2)
    return list(split["test"])


def test_every_length_gets_the_requested_samples_in_length_order(rows) -> None:
    """``ruler_samples`` rows per length, shortest length first, each keyed by its length."""
    assert [(r["length"], r["index"]) for r in rows] == [(512, 0), (512, 1), (1024, 0), (1024, 1)]
    assert all(r["lengths"] == [512, 1024] and r["task"] == "niah_single_1" for r in rows)


def test_prompts_fill_their_length_less_the_generation_budget(rows) -> None:
    """A prompt fits its length less lm-eval's 128-token generation budget; the longer length
    holds a longer haystack."""
    tok = load_tokenizer("tiny-random")
    for row in rows:
        assert len(tok(row["input"]).input_ids) + GENERATION <= row["length"], row["length"]
    short = max(len(r["input"]) for r in rows if r["length"] == 512)
    assert min(len(r["input"]) for r in rows if r["length"] == 1024) > short + 256


def test_the_needle_is_a_number_in_the_prompt_and_scores_as_retrieval(rows) -> None:
    """The one reference is a 7-digit number found in the prompt (repeated-sentence haystack);
    the suite's RULER scoring gives it 100 under its length's key and 0 for silence."""
    ru = _load("ruler_utils")
    for row in rows:
        (value,) = row["outputs"]
        assert re.fullmatch(r"\d{7}", value) and value in row["input"]
        assert "The grass is green." in row["input"]
        got = ru.process_results(row, [f" {value}."])
        assert got["score"] == got[str(row["length"])] == 100.0
        assert ru.process_results(row, [""])["score"] == 0.0


def test_a_missing_tokenizer_or_a_bad_length_is_a_user_error() -> None:
    loader = _load("lmeval_ruler_utils")
    with pytest.raises(UserError, match="--metadata"):
        loader.load_niah_single_1(lengths=[512])
    with pytest.raises(UserError, match="not supported"):
        loader.load_niah_single_1(tokenizer="tiny-random", lengths=[1000])


def test_the_samples_are_the_same_for_a_seed_and_every_length_gets_all_it_asked(rows) -> None:
    """lm-eval's generator draws its needles from Python's unseeded global generator: each load
    gave other samples, and now and then a length one sample short (lm-eval drops a sample whose
    needle words take a token more than the length: 513 of 512 for tiny-random, one run in a
    few). The same seed gives the same samples; another seed others; the global generator is
    left as it was."""
    import random

    loader = _load("lmeval_ruler_utils")
    random.seed(7)
    expected = random.random()
    random.seed(7)
    again = list(loader.load_niah_single_1(tokenizer="tiny-random", lengths="1024,512",
                                           ruler_samples=2)["test"])  # fmt: skip
    assert random.random() == expected
    assert again == rows
    other = list(loader.load_niah_single_1(tokenizer="tiny-random", lengths="512",
                                           ruler_samples=2, seed=1)["test"])  # fmt: skip
    assert [r["outputs"] for r in other] != [r["outputs"] for r in rows[:2]]
    many = list(loader.load_niah_single_1(tokenizer="tiny-random", lengths="512",
                                          ruler_samples=12)["test"])  # fmt: skip
    assert [r["index"] for r in many] == list(range(12))
