"""Pinned behaviour of ``training/data_plan.py``: why a dry run has no tokenizer to count with
(a BPE tokenizer not trained yet, a hub model, a model whose tokenizer does not read), that it
tries to read one once per plan, the seed each stream counts with (the run's), a count made
without LongRecipe's selection saying so, a count that fails said in a line (raised only where
strict), and a plan whose model window cannot be read."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from train_helpers import smoke

import longred_bench.models.loading as loading
import longred_bench.training.data as data_module
import longred_bench.training.data_plan as data_plan
from longred_bench.errors import TooShort, UserError
from longred_bench.training.plan import micro_rows


def test_an_untrained_bpe_tokenizer_is_not_counted_with(tmp_path, monkeypatch) -> None:
    """Pretraining with a BPE tokenizer not in the cache yet: it is trained by the run."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    tok, why = data_plan.local_tokenizer(smoke("pretrain", tokenizer="bpe"))
    assert tok is None and why == "the pretraining tokenizer is trained at the start of the run"


def test_a_hub_models_tokenizer_is_not_fetched(monkeypatch) -> None:
    """A model that is neither a zoo name nor a local path is read from the hub at training
    time; a dry run does not ask the hub."""

    def fetch(spec):
        raise AssertionError(f"asked for {spec}")

    monkeypatch.setattr(loading, "load_tokenizer", fetch)
    tok, why = data_plan.local_tokenizer(smoke("cpt", model="org/not-here-model"))
    assert tok is None
    assert why == "the tokenizer of org/not-here-model is read from the hub at training time"


@pytest.mark.parametrize(("error", "said"), [
    (UserError("model x is not fetched yet"), "model x is not fetched yet"),
    (ValueError("many lines\nof transformers"), "no tokenizer can be read from {}"),
])  # fmt: skip
def test_a_tokenizer_that_does_not_read_is_said_not_raised(
    tmp_path, monkeypatch, error, said
) -> None:
    """A local model whose tokenizer does not load: the dry run says why in one line."""

    def fail(spec):
        raise error

    monkeypatch.setattr(loading, "load_tokenizer", fail)
    tok, why = data_plan.local_tokenizer(smoke("cpt", model=str(tmp_path)))
    assert tok is None and why == said.format(tmp_path)


def test_a_plan_tries_to_read_the_tokenizer_once(monkeypatch) -> None:
    """Each stream of a run whose tokenizer cannot be read says so; it is tried once."""
    tried = []
    monkeypatch.setattr(data_plan, "local_tokenizer", lambda cfg: tried.append(1) or (None, "no"))
    cfg = smoke("longred")
    lines = data_plan.data_lines(cfg, 256)
    assert len(lines) == len(micro_rows(cfg, 256)) > 1 and len(tried) == 1
    assert lines[0] == "data long: epochs not counted in a dry run: no"


def _counting(monkeypatch, got) -> list[tuple]:
    """``counted_rows`` replaced by one that answers ``got`` and records each call."""
    calls: list[tuple] = []

    def counted(cfg, tokenizer, source, length, seed, selection, memo):
        calls.append((source, seed, selection))
        return got

    monkeypatch.setattr(data_plan, "counted_rows", counted)
    return calls


def test_each_stream_counts_with_the_seed_the_run_gives_it(monkeypatch) -> None:
    """Stream ``i`` of the run's streams is read with seed ``seed + 101 i``, as the run reads
    it (a selection drawn from the seed keeps the same rows)."""
    calls = _counting(monkeypatch, (10**9, {}))
    cfg = smoke("longred", seed=7)
    data_plan.data_lines(cfg, 256, object())
    assert [seed for _, seed, _ in calls] == [7 + 101 * i for i in range(len(micro_rows(cfg, 256)))]


def test_a_count_without_the_selection_says_it_counts_more_rows(monkeypatch) -> None:
    """``select=False``: LongRecipe's long stream is counted whole, and its line says the
    selection keeps fewer."""
    calls = _counting(monkeypatch, (1, {"source": "s", "length": 512}))
    cfg = smoke("longrecipe", anchors=["digit"], keep_other=0.5)
    lines = data_plan.data_lines(cfg, 256, object(), select=False)
    assert all(selection is None for _, _, selection in calls)
    assert lines[0].startswith("data long, counted before LongRecipe's sentence selection keeps "
                               "fewer rows:")  # fmt: skip


def test_data_too_short_is_a_line_unless_strict(monkeypatch) -> None:
    """A source with no window of its length: a line in a plan, the run's refusal when
    strict."""
    _counting(monkeypatch, TooShort("no window of 512"))
    cfg = smoke("cpt")
    lines = data_plan.data_lines(cfg, 256, object())
    assert lines == ["data long: epochs not counted: no window of 512"]
    with pytest.raises(UserError, match="train: the long stream cannot start: no window of 512"):
        data_plan.data_lines(cfg, 256, object(), strict=True)


def test_a_source_that_does_not_read_is_counted_as_its_error_text(monkeypatch) -> None:
    """``counted_rows`` keeps a user error as its text (said in the plan, not raised)."""

    def refuse(*args, **kwargs):
        raise UserError("data 'x' is no file and no source")

    monkeypatch.setattr(data_module, "stream_data", refuse)
    cfg = SimpleNamespace(retrieval_fraction=0.0, retrieval_phrasing="train", copy_fraction=0.0)
    got = data_plan.counted_rows(cfg, object(), "x", 64, 0, None, {})
    assert got == "data 'x' is no file and no source"


def test_a_plan_whose_window_cannot_be_read_counts_no_data(monkeypatch) -> None:
    """Where the model's window cannot be read, the plan (which says so) is all there is."""
    import longred_bench.training.model_plan as model_plan
    import longred_bench.training.plan as plan

    def unreadable(model):
        raise UserError("no config")

    monkeypatch.setattr(model_plan, "planning_config", unreadable)
    monkeypatch.setattr(plan, "describe_plan", lambda cfg, window: "the plan")
    monkeypatch.setattr(data_plan, "data_lines", lambda *a, **k: ["a data line"])
    assert data_plan.describe_plan_with_data(smoke("cpt")) == "the plan"
    assert data_plan.describe_plan_with_data(smoke("cpt"), 256) == "the plan\na data line"
