"""Pinned behaviour of ``jobs/same_tokens.py``: the words of a vocabulary difference (each kind
of difference, its first token by id), each model loaded once and the reference never compared
with itself, the shortened ids of a note, drift's layer-count check, which of a training
config's models are compared (by recipe and role), and the architecture check's leave-alones
(a hub id, a config that does not read). The models are stand-ins: no weights, no tokenizer
files."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import longred_bench.models.loading as loading
import longred_bench.models.names as names
import longred_bench.training.model_plan as model_plan
from longred_bench.errors import UserError
from longred_bench.jobs.same_tokens import (
    Mismatch,
    check_drift_shapes,
    check_same_tokens,
    check_training_models,
    check_training_shapes,
    note_other_encoding,
    vocab_difference,
)

VOCAB = {"a": 0, "b": 1}
SHAPE = {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
         "num_key_value_heads": 2, "vocab_size": 259}  # fmt: skip


class _Tokenizer:
    """A stand-in tokenizer: a vocabulary and the ids it gives every text."""

    def __init__(self, vocab: dict[str, int], ids: list[int] | None = None) -> None:
        self.vocab, self.ids = vocab, ids or [1, 2]

    def get_vocab(self) -> dict[str, int]:
        return dict(self.vocab)

    def __call__(self, text: str) -> dict[str, list[int]]:
        return {"input_ids": list(self.ids)}


TOKENIZERS: dict[str, _Tokenizer] = {}
"""Tokenizers of the stand-in models other than :data:`VOCAB`'s, by spec."""


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every tokenizer load, by spec; each model has :data:`VOCAB` unless in :data:`TOKENIZERS`."""
    seen: list[str] = []

    def load_tokenizer(spec: str) -> _Tokenizer:
        seen.append(spec)
        return TOKENIZERS.get(spec, _Tokenizer(VOCAB))

    monkeypatch.setattr(loading, "load_tokenizer", load_tokenizer)
    TOKENIZERS.clear()
    return seen


def test_each_kind_of_difference_is_named_with_its_first_token_by_id() -> None:
    """Tokens only in the checkpoint, tokens it lacks and tokens at other ids, each counted and
    the first of each by id (not by spelling) named."""
    ours = {"a": 0, "b": 1, "q": 2, "d": 3, "m": 5, "e": 6}
    theirs = {"a": 0, "b": 1, "z": 2, "y": 3, "m": 6, "e": 5}
    assert vocab_difference(theirs, ours) == (
        "2 token(s) only in it, first 'z' (id 2); 2 of the reference's missing, first 'q' "
        "(id 2); 2 at other ids, first 'm' (id 6 against 5)"
    )
    assert vocab_difference(dict(ours), ours) is None


def test_a_vocabulary_with_only_extra_tokens_names_those_alone() -> None:
    """A checkpoint with tokens added (and none lost or moved) says only that."""
    assert vocab_difference({**VOCAB, "c": 2}, VOCAB) == "1 token(s) only in it, first 'c' (id 2)"
    assert vocab_difference({"a": 0}, VOCAB) == "1 of the reference's missing, first 'b' (id 1)"


def test_each_model_loads_once_and_the_reference_is_not_compared_with_itself(loads) -> None:
    """Repeats are checked once, the reference among the others is skipped, and nothing loads
    where there is nothing to compare."""
    check_same_tokens("ref", ["x", "ref", "x", "y"], who="w", role="original", why="so")
    assert loads == ["ref", "x", "y"]
    loads.clear()
    check_same_tokens("ref", ["ref"], who="w", role="original", why="so")
    assert loads == []


def test_a_mismatch_names_the_command_both_models_and_why(loads) -> None:
    """One line: the command, the checkpoint's and the reference's token counts, the
    difference and why they must agree."""
    TOKENIZERS["x"] = _Tokenizer({**VOCAB, "c": 2})
    with pytest.raises(Mismatch) as caught:
        check_same_tokens("ref", ["x"], who="drift", role="original", why="drift feeds both")
    assert str(caught.value) == (
        "drift: tokenizer mismatch: 'x' has 3 tokens, original 'ref' has 2 tokens (1 token(s) "
        "only in it, first 'c' (id 2)); drift feeds both"
    )


def test_the_note_shows_the_first_four_ids_of_each_encoding(loads, capsys) -> None:
    """The ids of the two encodings, the first four, with ``...`` only where there are more."""
    TOKENIZERS["ref"] = _Tokenizer(VOCAB, [7, 8, 9])
    TOKENIZERS["x"] = _Tokenizer(VOCAB, [1, 7, 8, 9, 10])
    note_other_encoding("ref", ["x"], who="compare")
    err = capsys.readouterr().err
    assert "([1, 7, 8, 9, ...] against [7, 8, 9])" in err and err.count("\n") == 1


def _configs(monkeypatch: pytest.MonkeyPatch, configs: dict[str, dict]) -> None:
    """Configs by spec for both readers (``load_config`` and ``planning_config``); a spec not
    in ``configs`` does not read."""

    def read(spec: str) -> SimpleNamespace:
        if spec not in configs:
            raise UserError(f"no config for {spec}")
        return SimpleNamespace(**configs[spec])

    monkeypatch.setattr(loading, "load_config", read)
    monkeypatch.setattr(model_plan, "planning_config", read)


def test_drift_refuses_another_layer_count(monkeypatch) -> None:
    """A checkpoint of another layer count than the original is refused from the configs."""
    _configs(monkeypatch, {"orig": SHAPE, "deep": {**SHAPE, "num_hidden_layers": 3}})
    with pytest.raises(Mismatch, match=r"'deep' has layers 3, the original 'orig' 2"):
        check_drift_shapes("orig", ["deep"], who="drift")


@pytest.mark.parametrize("config", [
    {"recipe": "pretrain", "model": "m", "init": "i"},
    {"recipe": "longred", "model": "m", "teacher": "m"},
    {"recipe": "cpt", "model": "m", "merge_with": "w"},
])  # fmt: skip
def test_models_a_run_does_not_read_beside_its_own_are_not_compared(loads, config) -> None:
    """Pretraining starts from no model; a teacher that is the model itself; ``merge_with``
    outside a merge: nothing is compared, nothing loads."""
    check_training_models(config)
    assert loads == []


def test_only_the_roles_asked_for_are_compared(loads, monkeypatch) -> None:
    """``roles`` limits the comparison: an ``init`` outside them is not loaded; ``merge_with``
    of a merge is."""
    monkeypatch.setattr(names, "check_local", lambda spec: False)
    check_training_models({"recipe": "cpt", "model": "m", "init": "i"}, roles=("teacher",))
    assert loads == []
    check_training_models({"recipe": "merge", "model": "m", "merge_with": "w"})
    assert loads == ["m", "w"]


def test_only_longreds_teacher_needs_the_models_vocab_size(loads, monkeypatch) -> None:
    """LinearARD's teacher of the same tokens but another embedding size passes (it picks no
    layers by drift); LongReD's is refused."""
    monkeypatch.setattr(names, "check_local", lambda spec: False)
    _configs(monkeypatch, {"m": SHAPE, "t": {**SHAPE, "vocab_size": 320}})
    check_training_models({"recipe": "linearard", "model": "m", "teacher": "t"})
    with pytest.raises(Mismatch, match="vocab_size 320, model 'm' 259"):
        check_training_models({"recipe": "longred", "model": "m", "teacher": "t"})


def test_a_hub_model_is_left_to_the_check_that_loads_it(monkeypatch) -> None:
    """A teacher, or a model, that can only be a hub id is not compared by architecture."""
    _configs(monkeypatch, {"m": SHAPE, "t": {**SHAPE, "hidden_size": 128}})
    monkeypatch.setattr(names, "check_local", lambda spec: spec != "t")
    check_training_shapes({"recipe": "longred", "model": "m", "teacher": "t"})
    monkeypatch.setattr(names, "check_local", lambda spec: spec != "m")
    check_training_shapes({"recipe": "longred", "model": "m", "teacher": "t"})


def test_a_local_path_that_is_no_model_is_left_to_the_check_that_loads_it(monkeypatch) -> None:
    """A spec that names no model (``check_local`` refuses it) is not compared here."""

    def refuse(spec: str) -> bool:
        if spec == "t":
            raise UserError("not a model folder")
        return True

    _configs(monkeypatch, {"m": SHAPE, "t": {**SHAPE, "hidden_size": 128}})
    monkeypatch.setattr(names, "check_local", refuse)
    check_training_shapes({"recipe": "longred", "model": "m", "teacher": "t"})


def test_an_unreadable_config_is_skipped_and_the_next_one_compared(monkeypatch) -> None:
    """A model whose config does not read compares nothing; a teacher whose config does not
    read is skipped and the ``init`` after it is still compared."""
    monkeypatch.setattr(names, "check_local", lambda spec: True)
    _configs(monkeypatch, {"t": SHAPE, "i": {**SHAPE, "hidden_size": 128}})
    check_training_shapes({"recipe": "longred", "model": "m", "teacher": "t", "init": "i"})
    _configs(monkeypatch, {"m": SHAPE, "i": {**SHAPE, "hidden_size": 128}})
    with pytest.raises(Mismatch, match=r"init 'i' has another architecture"):
        check_training_shapes({"recipe": "longred", "model": "m", "teacher": "t", "init": "i"})
