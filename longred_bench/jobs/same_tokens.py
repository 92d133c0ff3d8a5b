"""Two models that must read the same token ids, checked from their tokenizers and configs before
any weights load, each mismatch refused in one line naming both models and what differs.

The pairs: ``drift``'s and ``compare``'s extended checkpoints against their original (drift feeds
both the original's token ids; retention scores both on the same documents), and in training
the distillation ``teacher``, the LinearARD ``init`` and the ``merge_with`` checkpoint against
``model`` (the student reads ``model``'s ids; a merge adds embedding rows id by id). Without
these checks a teacher or a drift checkpoint is refused only after both models load, a
``compare --pairs`` file only when its pair's turn comes, and an ``init`` or ``merge_with`` of
another tokenizer is not refused at all: it trains (or merges) into a checkpoint whose
embeddings belong to other tokens.

Not in the run cache's code lists (:data:`longred_bench.jobs.units.UNIT_CODE`): these checks
refuse earlier what would fail (or be wrong) later, and change no unit's result.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from longred_bench.errors import UserError

PROBE = "The needle: 7319 is the magic number. Remember it!"
"""A text both tokenizers of ``compare`` should encode alike (a BOS one adds and the other does
not, say, makes the two models score different inputs)."""


class Mismatch(UserError):
    """Two models that must share their tokens do not (a model that fails to load is a plain
    :class:`UserError`)."""


def describe(tokenizer: Any) -> str:
    """``<n> tokens``."""
    return f"{len(tokenizer.get_vocab())} tokens"


def vocab_difference(theirs: Mapping[str, int], ours: Mapping[str, int]) -> str | None:
    """What differs between vocabularies ``theirs`` (a checkpoint's) and ``ours`` (the
    reference's), in words: the first token only one has, or one at another id; None if equal."""
    if theirs == ours:
        return None
    extra = sorted(set(theirs) - set(ours), key=theirs.__getitem__)
    missing = sorted(set(ours) - set(theirs), key=ours.__getitem__)
    moved = sorted((t for t in set(theirs) & set(ours) if theirs[t] != ours[t]), key=ours.get)
    parts = []
    if extra:
        parts.append(f"{len(extra)} token(s) only in it, first {extra[0]!r} (id "
                     f"{theirs[extra[0]]})")  # fmt: skip
    if missing:
        parts.append(f"{len(missing)} of the reference's missing, first {missing[0]!r} (id "
                     f"{ours[missing[0]]})")  # fmt: skip
    if moved:
        parts.append(f"{len(moved)} at other ids, first {moved[0]!r} (id {theirs[moved[0]]} "
                     f"against {ours[moved[0]]})")  # fmt: skip
    return "; ".join(parts)


def _loaded(reference: str, others: Iterable[str], load: Any) -> Iterator[tuple[str, Any, Any]]:
    """``(spec, load(reference), load(spec))`` for each of ``others`` once, in order, but
    ``reference`` itself; ``reference`` is loaded once, and only where there is another."""
    others = [s for s in dict.fromkeys(others) if s != reference]
    if others:
        base = load(reference)
        for spec in others:
            yield spec, base, load(spec)


def check_same_tokens(
    reference: str, others: Iterable[str], *, who: str, role: str, why: str
) -> None:
    """Raise :class:`Mismatch` for the first of ``others`` whose tokenizer's vocabulary is not
    that of ``reference`` (``role`` names it: ``original``, ``model``), in one line: ``who``
    (the command), both tokenizers, the first difference and ``why`` the two must agree."""
    from longred_bench.models.loading import load_tokenizer

    for spec, base, tok in _loaded(reference, others, load_tokenizer):
        diff = vocab_difference(tok.get_vocab(), base.get_vocab())
        if diff is not None:
            raise Mismatch(f"{who}: tokenizer mismatch: {spec!r} has {describe(tok)}, {role} "
                           f"{reference!r} has {describe(base)} ({diff}); {why}")  # fmt: skip


def note_other_encoding(reference: str, others: Iterable[str], *, who: str) -> None:
    """One line on stderr for each of ``others`` whose tokenizer, of the same vocabulary,
    encodes :data:`PROBE` otherwise than ``reference``'s (a BOS or EOS added by one only): its
    documents are scored as other token sequences."""
    from longred_bench.models.loading import load_tokenizer

    for spec, base, tok in _loaded(reference, others, load_tokenizer):
        got, want = list(tok(PROBE)["input_ids"]), list(base(PROBE)["input_ids"])
        if got != want:
            print(f"[{who}] note: {spec!r} encodes a text otherwise than {reference!r} with the "
                  f"same vocabulary ({_first_ids(got)} against {_first_ids(want)}): its "
                  "documents are scored as other token sequences (a BOS added by one only?)",
                  file=sys.stderr, flush=True)  # fmt: skip


def _first_ids(ids: list[int]) -> str:
    return str(ids[:4])[:-1] + (", ...]" if len(ids) > 4 else "]")


DRIFT_KEYS = (("num_hidden_layers", "layers"), ("vocab_size", "vocab_size"))


def check_drift_shapes(original: str, others: Iterable[str], *, who: str) -> None:
    """Raise :class:`Mismatch` for the first of ``others`` whose config has another layer
    count or ``vocab_size`` than ``original``'s, which drift refuses only after both load (after
    every evaluation of ``compare``); from the configs alone."""
    from longred_bench.models.loading import load_config

    for spec, base, config in _loaded(original, others, load_config):
        for key, what in DRIFT_KEYS:
            theirs, ours = getattr(config, key, None), getattr(base, key, None)
            if theirs != ours:
                raise Mismatch(f"{who}: {spec!r} has {what} {theirs}, the original {original!r} "
                               f"{ours}: drift compares the two layer by layer on the same "
                               "vocabulary")  # fmt: skip


SHAPE_KEYS = ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads")
"""What a teacher, an ``init`` or a ``merge_with`` checkpoint must share with ``model``."""


def _training_pairs(config: Mapping[str, Any], roles: tuple[str, ...]) -> list[tuple[str, str]]:
    """``(key, spec)`` of each of ``roles`` a training ``config`` uses besides ``model``: the
    ``teacher`` of a recipe with one (where it is another model), ``init``, and ``merge``'s
    ``merge_with``."""
    from longred_bench.training.methods import METHODS

    recipe, model = config.get("recipe"), config.get("model")
    if recipe not in METHODS or recipe == "pretrain" or not model:
        return []
    pairs = []
    teacher = config.get("teacher")
    if "teacher" in roles and teacher not in (None, model) and METHODS[recipe].TEACHER:
        pairs.append(("teacher", teacher))
    if "init" in roles and config.get("init"):
        pairs.append(("init", config["init"]))
    if "merge_with" in roles and recipe == "merge" and config.get("merge_with"):
        pairs.append(("merge_with", config["merge_with"]))
    return pairs


def check_training_shapes(config: Mapping[str, Any], *, roles: tuple[str, ...] = (
        "teacher", "init", "merge_with")) -> None:  # fmt: skip
    """Refuse a training ``config`` whose ``teacher``, ``init`` or ``merge_with`` (among
    ``roles``) has another architecture (:data:`SHAPE_KEYS`) than ``model``, from the configs
    alone (:func:`~longred_bench.training.model_plan.planning_config`: a zoo model the suite builds,
    ``tiny-base``, is compared before it is built, not 15 minutes later). A hub id, or a config
    that cannot be read, is left to the check that loads it."""
    from longred_bench.models.names import check_local
    from longred_bench.training.model_plan import planning_config

    def here(spec: str) -> bool:  # a zoo name or a local folder: a hub id is not asked for
        try:
            return check_local(spec)
        except UserError:
            return False

    pairs = [(key, spec) for key, spec in _training_pairs(config, roles) if here(spec)]
    if not pairs or not here(config["model"]):
        return
    try:
        ours = planning_config(config["model"])
    except UserError:
        return
    for key, spec in pairs:
        try:
            theirs = planning_config(spec)
        except UserError:
            continue
        pairs_of = {k: (getattr(theirs, k, None), getattr(ours, k, None)) for k in SHAPE_KEYS}
        diff = [f"{k} {a} against {b}" for k, (a, b) in pairs_of.items() if a != b]
        if diff:
            raise Mismatch(f"train: {key} {spec!r} has another architecture than model "
                           f"{config['model']!r} ({', '.join(diff)}): {key} must be a model of "
                           "the same shape")  # fmt: skip


WHY = {
    "teacher": "distillation feeds the teacher the student's token ids",
    "init": "a student starting from it reads the model's token ids as other tokens",
    "merge_with": "a merge adds the two models' embeddings token id by token id",
}


def check_training_models(config: Mapping[str, Any], *, roles: tuple[str, ...] = (
        "teacher", "init", "merge_with")) -> None:  # fmt: skip
    """Refuse, before any weights load, a training ``config`` (:class:`TrainConfig`'s dict)
    whose ``teacher`` (a recipe with one), ``init`` or ``merge_with`` (recipe ``merge``), among
    ``roles``, has another architecture (:func:`check_training_shapes`, first) or tokenizer than
    ``model``; and a LongReD teacher of another vocabulary size where its layers are chosen by
    drift (no ``layers``)."""
    check_training_shapes(config, roles=roles)
    recipe, model = config.get("recipe"), config.get("model")
    pairs = _training_pairs(config, roles)
    for key, spec in pairs:
        check_same_tokens(model, [spec], who=f"train: {key}", role="model", why=WHY[key])
    teacher = dict(pairs).get("teacher")
    if teacher is not None and recipe == "longred" and not config.get("layers"):
        from longred_bench.models.loading import load_config

        theirs, ours = load_config(teacher).vocab_size, load_config(model).vocab_size
        if theirs != ours:
            raise Mismatch(f"train: teacher {teacher!r} has vocab_size {theirs}, model "
                           f"{model!r} {ours}: LongReD chooses its layers by the drift of the "
                           "two, which needs one vocabulary size; give layers=[...]")  # fmt: skip
