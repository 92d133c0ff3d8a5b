"""The data lines of ``train --dry-run``: for each stream, whether its data covers the budget, and
how many epochs it runs where it does not (the line :func:`~longred_bench.training.plan.
epochs_line` writes, the same as at the start of training).

A dry run builds no model and asks no hub: the windows are counted with the tokenizer where it
is local (a zoo model, a model folder, the pretraining tokenizer once trained) and with the data
where it is local (registry corpora, local members, hub rows already cached); the fallback rule
is applied as it would be offline. Anything else is said in one line instead of counted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from longred_bench.errors import TooShort, UserError
from longred_bench.training.config import TrainConfig
from longred_bench.training.impactful_tokens import MEASURED


def local_tokenizer(cfg: TrainConfig) -> tuple[Any | None, str]:
    """The run's tokenizer where it can be read without building or fetching anything, else
    None and why not."""
    if cfg.recipe == "pretrain":
        from longred_bench.cache import cache_dir
        from longred_bench.training.pretrain.tokenizer import tokenizer_for_pretraining
        from longred_bench.training.versions import TOKENIZER_VERSION

        trained = cache_dir() / "tokenizers" / f"bpe-{cfg.vocab_size}-v{TOKENIZER_VERSION}"
        if cfg.tokenizer == "bpe" and not (trained / "tokenizer.json").is_file():
            return None, "the pretraining tokenizer is trained at the start of the run"
        return tokenizer_for_pretraining(cfg.tokenizer, cfg.vocab_size), ""
    from longred_bench.models.builders import BUILDERS
    from longred_bench.models.loading import load_tokenizer
    from longred_bench.models.zoo import ZOO

    if cfg.model in BUILDERS:  # loading it would build it
        return None, f"its tokenizer is zoo model {cfg.model}'s, which a dry run does not build"
    if cfg.model not in ZOO and not Path(cfg.model).expanduser().exists():
        return None, f"the tokenizer of {cfg.model} is read from the hub at training time"
    try:
        return load_tokenizer(cfg.model), ""
    except UserError as exc:  # e.g. a zoo model not fetched yet
        return None, str(exc)
    except ValueError:  # a folder without tokenizer files (transformers says so in many lines)
        return None, f"no tokenizer can be read from {cfg.model}"


def memo_tokenizer(cfg: TrainConfig, memo: dict | None) -> tuple[Any | None, str]:
    """:func:`local_tokenizer`, read once per model (pretraining: per tokenizer) in ``memo``."""
    if memo is None:
        return local_tokenizer(cfg)
    key = ("tokenizer", cfg.model if cfg.recipe != "pretrain" else (cfg.tokenizer, cfg.vocab_size))
    if key not in memo:
        memo[key] = local_tokenizer(cfg)
    return memo[key]


def data_lines(
    cfg: TrainConfig, window: int, tokenizer: Any | None = None, memo: dict | None = None,
    select: bool = True, strict: bool = False,
) -> list[str]:  # fmt: skip
    """One line per stream whose data repeats (its epochs), or one saying why the data was not
    counted; nothing when every stream reads each row at most once. ``tokenizer``: the run's,
    where the caller has it; else :func:`local_tokenizer`. ``memo``: where a caller counting
    many runs keeps what one count found (:func:`counted_rows`), so each data source is read
    once per row length. LongRecipe's sentence selection is applied where its anchors are
    known and ``select`` (it takes seconds: a plan of many runs counts without it); a count
    without it says so (the selection keeps fewer rows). ``strict``: a source with no window
    of its stream's length is refused, as the run refuses it (else a line says so)."""
    from longred_bench.data.corpus_spec import parse_source
    from longred_bench.data.source_documents import resolve_source
    from longred_bench.training.plan import epochs_line, micro_rows, stream_lengths, stream_reads

    sources = {"long": cfg.long_data, "short": cfg.short_data, "s2l": cfg.s2l_data}
    lengths = stream_lengths(cfg, window)
    reads = stream_reads(cfg, window)
    why = ""
    lines = []
    for i, name in enumerate(micro_rows(cfg, window)):
        source, label, own = sources[name], name, True  # own: what the run itself reads
        parsed = parse_source(source)
        if not parsed.standalone:
            used = resolve_source(source, network=False).source
            if any(m.kind == "hf" for m in used.members):
                lines.append(f"data {name}: {source} is read from the hub at training time; "
                             f"its epochs are said then")  # fmt: skip
                if not parsed.fallback:
                    continue
                # What a run without the hub reads instead, counted now.
                source, label = parsed.fallback_spec, f"{name} offline (its fallback)"
                own = False  # a run with the hub reads the hub's rows
        if tokenizer is None and not why:
            tokenizer, why = memo_tokenizer(cfg, memo)
        if tokenizer is None:
            lines.append(f"data {label}: epochs not counted in a dry run: {why}")
            continue
        selection = None
        if name == "long" and cfg.recipe == "longrecipe" and cfg.anchors:
            if select and MEASURED not in cfg.anchors:
                selection = (cfg.anchors, cfg.keep_other)
            else:  # measured anchors are known only once the run has measured them
                label += ", counted before LongRecipe's sentence selection keeps fewer rows"
        got = counted_rows(cfg, tokenizer, source, lengths[name], cfg.seed + 101 * i,
                           selection, {} if memo is None else memo)  # fmt: skip
        if isinstance(got, TooShort) and strict and own:
            raise UserError(f"train: the {name} stream cannot start: {got}")
        if isinstance(got, str | TooShort):
            lines.append(f"data {label}: epochs not counted: {got}")
            continue
        line = epochs_line(label, got[1], got[0], reads[name])
        lines += [line] if line else []
    return lines


def counted_rows(
    cfg: TrainConfig, tokenizer: Any, source: str, length: int, seed: int,
    selection: tuple[tuple[str, ...], float] | None, memo: dict,
) -> tuple[int, dict] | str | TooShort:  # fmt: skip
    """``(rows, record)`` of stream data ``source`` at ``length`` for run ``cfg``
    (:func:`~longred_bench.training.data.stream_data`), or the error that stops reading it (a
    :class:`~longred_bench.errors.TooShort` itself, the run's refusal; else its text).
    Kept in ``memo`` under what decides them: the tokenizer, the source, the length and the
    retrieval and copy settings; the seed only where a sentence selection draws from it (the
    row count of the other data does not depend on it)."""
    from longred_bench.training.data import stream_data

    memo.setdefault(("alive", id(tokenizer)), tokenizer)  # its id stays its own
    key = (id(tokenizer), source, length, cfg.retrieval_fraction, cfg.retrieval_phrasing,
           cfg.copy_fraction, selection, seed if selection is not None else None)  # fmt: skip
    if key not in memo:
        try:
            got = stream_data(
                tokenizer, source, length, seed=seed, retrieval_fraction=cfg.retrieval_fraction,
                retrieval_phrasing=cfg.retrieval_phrasing, copy_fraction=cfg.copy_fraction,
                selection=selection,
            )  # fmt: skip
            memo[key] = (len(got.ids), got.record)
        except TooShort as exc:  # the run's own refusal: a strict plan raises it
            memo[key] = exc
        except UserError as exc:
            memo[key] = str(exc)
    return memo[key]


def describe_plan_with_data(cfg: TrainConfig, window: int | None = None,
                            tokenizer: Any | None = None) -> str:  # fmt: skip
    """:func:`~longred_bench.training.plan.describe_plan`, then :func:`data_lines` (where the
    model's window is known and the recipe trains), strict: a run's dry run."""
    from longred_bench.training.methods import METHODS
    from longred_bench.training.model_plan import ARCHITECTURE_DEFAULTS, planning_config
    from longred_bench.training.plan import describe_plan

    text = describe_plan(cfg, window)
    if not METHODS[cfg.recipe].TRAINS:
        return text
    if cfg.recipe == "pretrain":
        window = int({**ARCHITECTURE_DEFAULTS, **cfg.architecture}["max_position_embeddings"])
    elif window is None:
        try:
            window = int(planning_config(cfg.model).max_position_embeddings)
        except UserError:  # the plan already says the window could not be read
            return text
    return "\n".join([text, *data_lines(cfg, window, tokenizer, strict=True)])
