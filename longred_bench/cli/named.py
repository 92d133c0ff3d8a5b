"""The models and pairs files a command names, checked before anything loads (and, but for a
pairs file's device, before torch is imported): a spec that names no model, a local model
transformers could not read, an extension the model cannot take, a pairs file's models, seed and
device."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from longred_bench.errors import EMPTY_MODEL_SPEC, UserError


def check_models(*specs: str, offline: bool = False) -> None:
    """Refuse, in one line and before torch is imported, a model spec that names no model
    (:func:`longred_bench.models.names.check_model_spec`; ``main`` has registered the zoo
    models the suite builds). ``offline`` (a dry run, a pairs file): a local path that names no
    model and a mistyped zoo name (:func:`~longred_bench.models.names.check_not_mistyped`) are
    refused; a hub id is asked for when the command runs."""
    from longred_bench.models import names

    for spec in dict.fromkeys(specs):
        if not spec.strip():  # Path("") is ".": a model folder there was taken without a word
            raise UserError(EMPTY_MODEL_SPEC)
        if offline:  # a hub id is asked for when it runs; a mistyped zoo name is refused now
            if not names.check_local(spec):
                names.check_not_mistyped(spec)
        else:
            names.check_model_spec(spec)  # a run's folder: its final
        check_model_files(spec)
        if not offline:  # a plan reads the config alone
            names.check_weights(spec)


def check_model_files(spec: str) -> None:
    """Refuse a local model transformers could not read, in one line: a folder whose
    ``config.json`` is no JSON mapping, names no ``model_type`` or has a special token id (pad,
    BOS, EOS) at or above its ``vocab_size``, a ``.gguf`` file without the GGUF magic bytes, a
    folder outside the cache whose files differ from a cache manifest copied with it
    (:func:`_check_copied_entry`). Anything else is left to the loader."""
    import json

    path = Path(spec).expanduser()
    if path.is_dir() and (path / "config.json").is_file():
        try:
            config = json.loads((path / "config.json").read_text(encoding="utf-8"))
        except (ValueError, OSError) as exc:
            raise UserError(
                f"model {spec!r}: its config.json does not read as JSON ({exc})"
            ) from None
        if not isinstance(config, dict) or "model_type" not in config:
            raise UserError(f"model {spec!r}: its config.json names no model_type, so no "
                            "model class reads it; give a Hugging Face model folder")  # fmt: skip
        vocab = config.get("vocab_size")
        for key in ("pad_token_id", "bos_token_id", "eos_token_id"):
            ids = config.get(key)
            ids = ids if isinstance(ids, list) else [ids]
            bad = [i for i in ids if isinstance(i, int) and isinstance(vocab, int) and i >= vocab]
            if bad:
                raise UserError(f"model {spec!r}: its config.json's {key} {bad[0]} is not below "
                                f"its vocab_size {vocab}, so its embeddings cannot hold it; "
                                "fix the config's vocab_size or token ids")  # fmt: skip
        tokens = _tokenizer_tokens(path / "tokenizer.json")
        if isinstance(vocab, int) and tokens is not None and tokens > vocab:
            raise UserError(f"model {spec!r}: its tokenizer.json holds {tokens} tokens, its "
                            f"config.json's vocab_size is {vocab}: text would reach ids its "
                            "embeddings do not hold; give the folder the tokenizer the model "
                            "was made with")  # fmt: skip
    if path.is_dir() and (path / "manifest.json").is_file():
        _check_copied_entry(spec, path)
    if path.suffix == ".gguf" and path.is_file():
        with path.open("rb") as f:
            if f.read(4) != b"GGUF":
                raise UserError(f"model {spec!r} is not a GGUF file (no GGUF magic bytes at "
                                "its start); give a .gguf model file or a model "
                                "folder")  # fmt: skip


def _tokenizer_tokens(path: Path) -> int | None:
    """The tokens of a ``tokenizer.json``'s model (its base vocabulary, ids 0 to N - 1; added
    special tokens left out: a model may leave those without embeddings and never see them in
    text); None where there is no such file or it reads otherwise."""
    import json

    try:
        vocab = json.loads(path.read_text(encoding="utf-8"))["model"]["vocab"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if isinstance(vocab, dict):  # BPE, WordPiece: token -> id
        ids = [i for i in vocab.values() if isinstance(i, int)]
        return max(ids) + 1 if ids else None
    return len(vocab) if isinstance(vocab, list) else None  # Unigram: [token, score] pairs


def _check_copied_entry(spec: str, path: Path) -> None:
    """A model folder copied out of the cache (``models --path``) keeps the cache's
    ``manifest.json``; once its files are edited the loader calls it a corrupt cache entry and
    says to delete the folder: the user's own model. Outside the cache, say what differs and
    that deleting the manifest (not the folder) makes it the user's."""
    from longred_bench.cache import cache_dir, check_entry

    if path.resolve().is_relative_to(cache_dir().resolve()):
        return  # a cache entry: the loader's check and its advice stand
    check = check_entry(path, required=False)
    if not check.usable:
        raise UserError(f"model {spec!r}: its files differ from the cache manifest.json copied "
                        f"with the folder ({check.detail}): delete {path / 'manifest.json'} to "
                        "use the folder as your own model (nothing else is removed)")  # fmt: skip


def local_names(spec: str) -> str:
    """A model spec as the same model named from any folder (a local path absolute, links
    resolved; a zoo name or hub id as it is): what results and their ``--out`` checks record,
    so a call from another folder neither takes another model of the same relative name for
    this one, nor refuses this one spelled another way."""
    from longred_bench.training.model_plan import absolute_path

    return absolute_path(spec)


def _named_text(source: str | None) -> bool:
    """Whether text source ``source`` names no file: none, ``random`` or a corpus (its part
    before ``:``)."""
    from longred_bench.data.corpora import corpus_names

    return source is None or source == "random" or source.partition(":")[0] in corpus_names()


def local_text(source: str | None) -> str | None:
    """A text source (a corpus, ``corpus:split``, ``random`` or a file) with a file named
    absolute, as :func:`local_names` names a model."""
    return source if _named_text(source) else local_names(source)


def check_corpus_name(source: str | None) -> None:
    """Refuse a ``--corpus`` that names no corpus (its part before ``:``), is not ``random``
    and is no file (with the corpus it is closest to), before a model loads: where ``--out``
    holds another run's results, the typo was reported as "another config (differs in
    corpus)", with the advice to delete those results; elsewhere it was refused once the
    model had loaded (minutes, for a large one)."""
    from longred_bench.data.corpora import corpus_names
    from longred_bench.errors import meant_note

    if not _named_text(source) and not Path(source).expanduser().is_file():
        meant = meant_note(source.partition(":")[0], corpus_names())
        raise UserError(f"--corpus {source!r} is neither a corpus ({', '.join(corpus_names())}) "
                        f"nor a file{meant}")  # fmt: skip


def config_if_at_hand(spec: str) -> Any:
    """Model ``spec``'s config where it reads without the hub (the suite's models, a local
    folder or ``.gguf``), else None (a hub id, a zoo model not fetched: its run checks)."""
    from longred_bench.models.names import check_local, zoo_names
    from longred_bench.training.model_plan import planning_config

    if spec not in zoo_names() and not check_local(spec):
        return None
    try:
        return planning_config(spec)
    except (UserError, OSError, ValueError, TypeError, AttributeError):
        return None


def warn_past_window(original: str, seq_len: int, ropes: tuple[str, ...] = (),
                     extended: tuple[str, ...] = ()) -> None:  # fmt: skip
    """Say, in one line, when drift's windows are longer than the original model's own window
    (``--seq-len`` defaults to 1,024, a 512-token model's window twice over): the original then
    runs past its window, and that shows in the drift it is measured against. Not where no
    compared model's window holds them (the run refuses that in its own words)."""
    from longred_bench.cache import warn
    from longred_bench.models.loading import extended_config

    config = config_if_at_hand(original)
    window = getattr(config, "max_position_embeddings", None)
    if not isinstance(window, int) or seq_len <= window:
        return
    others = [extended_config(config, rope).max_position_embeddings for rope in ropes]
    others += [getattr(config_if_at_hand(m), "max_position_embeddings", None) for m in extended]
    if all(isinstance(w, int) and seq_len > w for w in others):
        return
    warn(f"drift: --seq-len {seq_len} is beyond the original's {window}-token window: it "
         f"runs past its window too (LongReD measures within it: --seq-len {window})")  # fmt: skip


def check_extensions(spec: str, ropes: tuple[str, ...] | list[str]) -> None:
    """Refuse an extension that does not apply to model ``spec`` (an ABF base below its own,
    say), and two spellings of one extension of it (``pi:factor=4`` and ``pi:max_len=`` four
    times its window: one model measured twice, its samples counted twice), from the model's
    config alone, before its weights load."""
    if not ropes:
        return
    import json

    from longred_bench.models.rope import parse_rope_spec
    from longred_bench.training.model_plan import planning_config

    config = planning_config(spec)
    seen: dict[str, str] = {}
    for rope in ropes:
        new = extension_applies(config, spec, rope)
        key = json.dumps([new.rope_parameters, new.max_position_embeddings], sort_keys=True)
        first = seen.setdefault(key, rope)
        # one spelled alike (pi:factor=4.0) is left to each command's own listed-twice line
        if parse_rope_spec(first).label() != parse_rope_spec(rope).label():
            raise UserError(f"--rope {first} and --rope {rope} are one extension of {spec} "
                            f"({new.rope_parameters}, window {new.max_position_embeddings}): "
                            "give it once")  # fmt: skip


def extension_applies(config: Any, spec: str, rope: str) -> Any:
    """The config of model ``spec`` (its ``config``) under RoPE spec ``rope``; refused where it
    cannot take it, in one line naming both (the extension's own words named neither: with
    several ``--rope`` given, not which one)."""
    from longred_bench.models.loading import extended_config

    try:
        return extended_config(config, rope)
    except UserError as exc:
        raise UserError(f"--rope {rope} does not apply to {spec}: {exc}") from None


def check_pcd_model(spec: str, ropes: tuple[str | None, ...], pcd: Any) -> None:
    """Refuse a PCD config that model ``spec`` (as it is, ``None``, or under each RoPE spec of
    ``ropes``) cannot take, before its weights load: a ``first_pair`` past its RoPE pairs or on
    a RoPE type whose frequencies move, a ``local_base`` not below its RoPE base. The checks are
    the run's own (:class:`~longred_bench.pcd.model.PcdModel`) on the model built without
    weights; they were met only once the weights had loaded, and passed ``--dry-run``. A model
    whose config is not at hand, or that does not build from it, is checked by its run."""
    for rope in ropes:
        check_pcd_rope_type(spec, rope)
    if pcd is None or not (pcd.first_pair or pcd.local_base is not None):
        return  # the other settings are the model's to take at any shape
    config = config_if_at_hand(spec)
    if config is None:
        return
    import torch
    from transformers import AutoModelForCausalLM

    from longred_bench.models.loading import extended_config
    from longred_bench.pcd.model import PcdModel

    for rope in ropes:
        shaped = extended_config(config, rope) if rope else config  # its refusal: the run's
        try:
            with torch.device("meta"):  # shapes and buffers, no memory, no weights
                model = AutoModelForCausalLM.from_config(shaped)
        except Exception:  # a best effort: a config it does not build from, its run checks
            continue
        PcdModel(model, pcd)


def check_pcd_rope_type(spec: str, rope: str | None) -> None:
    """Refuse PCD on a RoPE type whose frequencies move with the input's length (dynamic NTK,
    LongRoPE): ``rope``'s (a spec of ``--rope``), else model ``spec``'s own where its config is
    a local file. PCD's local window W' is set by a base B' solved once from the frequencies
    as built, and such a type rescales them at every long prompt, so the window that ran was
    not the W' its records name (under dynamic NTK a 256-token W' ran as 1,280 tokens). Reads
    the spec or the ``config.json`` alone: nothing heavy is imported."""
    import json

    from longred_bench.models.rope import parse_rope_spec
    from longred_bench.pcd.config import MOVING_ROPE_TYPES

    if rope:
        rope_type = "dynamic" if parse_rope_spec(rope).method == "dynamic" else None
    else:
        path = Path(spec).expanduser() / "config.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
        except (OSError, ValueError):
            data = {}  # its run says what is wrong with it
        data = data if isinstance(data, dict) else {}
        params = data.get("rope_parameters") or data.get("rope_scaling") or {}
        params = params if isinstance(params, dict) else {}
        rope_type = params.get("rope_type") or params.get("type")
    if rope_type in MOVING_ROPE_TYPES:
        which = f"--rope {rope}" if rope else f"{spec}'s own RoPE"
        raise UserError(f"PCD needs a RoPE type whose frequencies are fixed: {which} is "
                        f"{rope_type!r}, which rescales them with the prompt's length, so PCD's "
                        "local window would not be the one it records; use --decoding greedy, "
                        "or another RoPE")  # fmt: skip


def check_pairs_file(spec: str, *, here: bool) -> None:
    """What a pairs file names, checked as the same flags are before anything loads: its models
    (a missing local path refused; a hub id is asked for when its pair runs, which stops that
    pair alone), ``settings.seed`` and ``settings.device`` (its name; that this machine has it
    only where the run is ``here``)."""
    from longred_bench.cli.devices import check_device
    from longred_bench.evaluation.config import check_seed
    from longred_bench.jobs.pairs import load_pairs

    settings, listed, path = load_pairs(spec)
    check_models(*(p.original for p in listed), *(m for p in listed for m, _ in p.extended),
                 offline=True)  # fmt: skip
    check_seed(settings.get("seed", 0), f"pairs {path}: settings.seed")
    check_device(settings.get("device", "cpu"), f"pairs {path}: settings.device",
                 "settings.device: cpu", here=here)  # fmt: skip
    from longred_bench.jobs.pairs import check_settings, check_windows

    check_settings(settings, listed, path)
    check_windows(listed, path)
