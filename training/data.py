"""Window sets for training streams, from the cached corpora (``train`` splits only).

``window_set(tokenizer, source, length, seed=...)`` returns ``(ids [N, length], mask)``:

- ``corpus[+corpus...]``: every document of the corpora's ``train`` splits, tokenised without
  special tokens and cut into non-overlapping windows of ``length`` tokens (a document shorter
  than ``length`` gives none; data with no window at all is an error).
- ``...+packed``: the same, but the documents are joined end to end first, the tokenizer's
  end-of-text token between two (none where it has none), so that rows longer than the
  documents exist (whole-window short-text rows from a corpus of shorter texts).
- ``corpus[+corpus...]+retrieval``: those windows plus retrieval examples built at the stream's
  own ``length`` (:mod:`longred_bench.training.pretrain.retrieval`, in ``retrieval_phrasing``,
  each 40-100% of ``length`` tokens) as ``retrieval_fraction`` of the rows, right-padded: long
  data with long-range structure, as real long-context training data has.
- ``pretrain``: the tiny base's pretraining mix, at most ``length`` tokens per row: Brown windows
  and Austen + KJV windows in the ratio 3 : 1 (:data:`PRETRAIN_PROSE`), plus in-window retrieval
  examples (:mod:`longred_bench.training.pretrain.retrieval`, in ``retrieval_phrasing``) as
  ``retrieval_fraction`` of the rows, each right-padded (mask False on padding), and copy
  episodes (:func:`copy_mix_rows`) as ``copy_fraction`` of the rows.
- ``random``: seeded uniform token ids (smoke runs of the random tiny model only);
- a path to a UTF-8 text file: its windows (one document);
- any source of :mod:`longred_bench.data.corpus_spec` (local ``txt:``/``jsonl:``/``disk:``
  members, hub ``hf:`` members, a ``|FALLBACK``): its members' documents cut the same way, after
  the fallback rule (:func:`longred_bench.data.source_documents.resolve_source`).

:func:`stream_data` returns the same windows with what a run's record keeps of the data (the
source, the fallback taken, hub revisions, fingerprints, windows and long documents).

Tokenised corpora are cached per tokenizer under ``$LONGRED_CACHE/tokens``, each file with a
manifest of its size and sha256; a damaged one is tokenised again with a warning.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from longred_bench.cache import (
    atomic_write_bytes,
    cache_dir,
    check_file_entry,
    warn,
    write_file_manifest,
)
from longred_bench.data.corpus_spec import (
    CORPORA,
    FORMS,
    KEYWORDS,
    RETRIEVAL,
    Member,
    Source,
    parse_source,
)
from longred_bench.data.source_documents import member_documents, resolve_source
from longred_bench.errors import TooShort, UserError
from longred_bench.taskdata.ruler.store import tokenizer_fingerprint

PRETRAIN_PROSE = {"brown": 3.0, "austen+kjv": 1.0}
RANDOM_ROWS = 512


def _token_cache(tokenizer: Any, corpus: str, split: str) -> Path:
    return cache_dir() / "tokens" / tokenizer_fingerprint(tokenizer) / f"{corpus}-{split}.pt"


def corpus_token_ids(tokenizer: Any, corpus: str, split: str = "train") -> list[torch.Tensor]:
    """Token ids of each document of ``corpus``'s ``split`` (cached per tokenizer)."""
    if corpus not in CORPORA:
        raise UserError(f"unknown corpus {corpus!r}; accepted forms: {FORMS}")
    path = _token_cache(tokenizer, corpus, split)
    cached = _read_token_cache(path)
    if cached is not None:
        return cached
    from longred_bench.data.corpora import load_documents

    texts = [d.text for d in load_documents(corpus, split)]
    # One batch call: a fast tokenizer encodes it on every core, with the same ids per text.
    encoded = tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
    ids = [torch.tensor(t, dtype=torch.int32) for t in encoded]
    buffer = io.BytesIO()
    torch.save(ids, buffer)
    atomic_write_bytes(path, buffer.getvalue())
    write_file_manifest(path, {"kind": "tokens", "corpus": corpus, "split": split})
    return ids


def _read_token_cache(path: Path) -> list[torch.Tensor] | None:
    """The cached token ids at ``path``; None (with a warning when the file is damaged) if it
    is absent or fails its size/sha256 records or does not load: it is then tokenised again."""
    check = check_file_entry(path)
    if check.status == "missing":
        return None
    if check.usable:
        try:
            return torch.load(path)
        except Exception as err:  # any unreadable file is tokenised again
            detail = f"does not load ({type(err).__name__})"
    else:
        detail = check.detail
    warn(f"token cache {path} is damaged ({detail}); tokenising the corpus again")
    return None


def _cut(docs: list[torch.Tensor], length: int) -> torch.Tensor:
    rows = [doc[i : i + length] for doc in docs for i in range(0, len(doc) - length + 1, length)]
    if not rows:
        return torch.empty(0, length, dtype=torch.long)
    return torch.stack(rows).long()


def member_token_ids(
    tokenizer: Any, member: Member, split: str = "train"
) -> tuple[list[torch.Tensor], dict[str, Any]]:
    """Token ids of each document of one member (a registry corpus's ``split``, cached per
    tokenizer; the whole of any other) and the member's record
    (:func:`~longred_bench.data.source_documents.member_documents`)."""
    if member.kind == "corpus":
        ids = corpus_token_ids(tokenizer, member.target, split)
        return ids, {"spec": member.spec, "split": split, "documents": len(ids)}
    texts, record = member_documents(member, split)
    encoded = tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
    return [torch.tensor(t, dtype=torch.int32) for t in encoded], record


def _prose_members(source: Source) -> list[Member]:
    return [m for m in source.members if m.kind not in KEYWORDS]


def _source_docs(
    tokenizer: Any, source: Source, split: str
) -> tuple[list[torch.Tensor], list[dict[str, Any]]]:
    docs: list[torch.Tensor] = []
    records = []
    for member in _prose_members(source):
        ids, record = member_token_ids(tokenizer, member, split)
        docs += ids
        records.append(record)
    return docs, records


def joined(docs: list[torch.Tensor], tokenizer: Any) -> list[torch.Tensor]:
    """``docs`` end to end as one document, the tokenizer's end-of-text token between two (none
    where it has none): the documents of a ``packed`` source."""
    if not docs:
        return []
    eos = getattr(tokenizer, "eos_token_id", None)
    parts = [docs[0]]
    for doc in docs[1:]:
        if eos is not None:
            parts.append(torch.tensor([eos], dtype=doc.dtype))
        parts.append(doc)
    return [torch.cat(parts)]


def _windows_of(
    docs: list[torch.Tensor], source: str, length: int, join_with: Any = None
) -> torch.Tensor:
    """Windows of ``docs``; ``join_with``: a packed source's tokenizer, to cut them from the
    documents joined (:func:`joined`)."""
    windows = _cut(joined(docs, join_with) if join_with is not None else docs, length)
    if len(windows) == 0 and join_with is not None:
        raise TooShort(
            f"data {source!r} has {sum(len(d) for d in docs)} tokens in all, fewer than one "
            f"window of {length}: use a shorter length or more documents"
        )
    if len(windows) == 0:
        longest = max((len(d) for d in docs), default=0)
        raise TooShort(
            f"data {source!r} has no document of {length} tokens (the longest has {longest}): "
            "use a shorter length, longer documents (austen, kjv) or '+packed' (documents "
            "joined end to end)"
        )
    return windows


def corpus_windows(tokenizer: Any, source: str, length: int, split: str = "train") -> torch.Tensor:
    """Non-overlapping ``length``-token windows of the ``split`` documents of ``a+b+...`` (any
    members of :mod:`longred_bench.data.corpus_spec`; the fallback rule applied)."""
    parsed = resolve_source(source).source
    docs, _ = _source_docs(tokenizer, parsed, split)
    return _windows_of(docs, source, length, tokenizer if parsed.packed else None)


def _subsample(windows: torch.Tensor, n: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return windows[torch.randperm(len(windows), generator=gen)[: min(n, len(windows))]]


def _filler_sentences(tokenizer: Any) -> list[str]:
    """Prose haystack for retrieval examples: Brown train documents split into lines."""
    from longred_bench.data.corpora import load_documents

    out: list[str] = []
    for doc in load_documents("brown", "train"):
        out.extend(s.strip() for s in doc.text.replace("\n", " ").split(". ") if s.strip())
    return [s if s.endswith(".") else s + "." for s in out]


COPY_MIX_DIGITS = (2, 12)
"""Shortest and longest digit string of a digit copy episode."""
COPY_MIX_TOKENS = (2, 64)
"""Shortest and longest sequence of a copy episode over the whole vocabulary."""


def copy_mix_rows(tokenizer: Any, n: int, length: int, seed: int) -> torch.Tensor:
    """``n`` rows of ``length`` tokens of copy episodes (``s s``, as in the copy warm-up of
    :mod:`longred_bench.training.pretrain.induction`): the first half random digit strings, the
    rest random sequences of any non-special token. A number to retrieve almost always repeats a
    digit (94% of 7-digit ones), so copying it exactly takes more than the previous token; the
    warm-up's episodes over a 4K vocabulary almost never repeat one, and without copy rows in the
    mix the warm-up's copying fades during pretraining."""
    from longred_bench.training.pretrain.induction import alphabet, copy_rows

    gen = torch.Generator().manual_seed(seed + 9173)
    digits = torch.tensor(
        [tokenizer.convert_tokens_to_ids(str(d)) for d in range(10)], dtype=torch.long
    )
    if len(set(digits.tolist())) != 10 or tokenizer.unk_token_id in digits.tolist():
        raise UserError("copy_fraction needs a tokenizer with a token for each digit 0-9")
    half = n // 2
    first, _ = copy_rows(half, length, COPY_MIX_DIGITS, digits, None, gen)
    rest, _ = copy_rows(n - half, length, COPY_MIX_TOKENS, alphabet(tokenizer), None, gen)
    return torch.cat([first, rest])


def pretrain_windows(
    tokenizer: Any,
    length: int,
    *,
    retrieval_fraction: float,
    seed: int,
    retrieval_phrasing: str = "train",
    copy_fraction: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The pretraining mix (see the module docstring): ``(ids, mask)``."""
    weights = PRETRAIN_PROSE
    per_source = {src: corpus_windows(tokenizer, src, length) for src in weights}
    unit = min(len(w) / weights[src] for src, w in per_source.items())
    prose = torch.cat(
        [
            _subsample(w, round(unit * weights[s]), seed + i)
            for i, (s, w) in enumerate(per_source.items())
        ]
    )
    if not copy_fraction:
        return with_retrieval(tokenizer, prose, retrieval_fraction, seed, retrieval_phrasing)
    # retrieval and copy rows are their fractions of all rows: r / (1 - c) of the rows before
    # the copy rows are added
    ids, mask = with_retrieval(
        tokenizer, prose, retrieval_fraction / (1 - copy_fraction), seed, retrieval_phrasing
    )
    n_copy = round(len(prose) * copy_fraction / (1 - retrieval_fraction - copy_fraction))
    copies = copy_mix_rows(tokenizer, n_copy, length, seed)
    return torch.cat([ids, copies]), torch.cat([mask, torch.ones_like(copies, dtype=torch.bool)])


def with_retrieval(
    tokenizer: Any, prose: torch.Tensor, fraction: float, seed: int, phrasing: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """``prose`` windows ``[N, length]`` plus retrieval examples of at most ``length`` tokens as
    ``fraction`` of the rows, right-padded: ``(ids, mask)``."""
    from longred_bench.training.pretrain.retrieval import retrieval_examples

    length = prose.shape[1]
    n_retrieval = round(len(prose) * fraction / (1 - fraction))
    pad = tokenizer.pad_token_id
    ids = torch.full((len(prose) + n_retrieval, length), pad, dtype=torch.long)
    mask = torch.zeros_like(ids, dtype=torch.bool)
    ids[: len(prose)] = prose
    mask[: len(prose)] = True
    if n_retrieval:
        texts = retrieval_examples(
            tokenizer,
            _filler_sentences(tokenizer),
            n=n_retrieval,
            max_tokens=length,
            seed=seed,
            phrasing=phrasing,
        )
        encoded = tokenizer(texts, add_special_tokens=False)["input_ids"]
        for row, tok in enumerate(encoded, start=len(prose)):
            tok = tok[:length]
            ids[row, : len(tok)] = torch.tensor(tok)
            mask[row, : len(tok)] = True
    return ids, mask


def selected_windows(
    tokenizer: Any, source: str, length: int, anchors: tuple[str, ...], keep_other: float, seed: int
) -> torch.Tensor:
    """``length``-token windows of the train documents of source ``a+b+...`` after LongRecipe's
    sentence selection (:func:`longred_bench.training.impactful_tokens.select_sentences`): each
    document keeps, in order, its sentences that hold an ``anchors`` type and each other one with
    probability ``keep_other`` (drawn from ``seed``); a ``packed`` source's kept documents are
    joined before windows are cut."""
    import random

    from longred_bench.data.sentences import split_sentences
    from longred_bench.training.impactful_tokens import select_sentences

    rng = random.Random(f"longrecipe/{source}/{seed}")
    texts = []
    used = resolve_source(source).source
    for member in _prose_members(used):
        for text in member_documents(member, "train")[0]:
            sentences = [text[s.start : s.end] for s in split_sentences(text)]
            kept = select_sentences(sentences, anchors, keep_other, rng)
            if kept:
                texts.append(" ".join(kept))
    encoded = tokenizer(texts, add_special_tokens=False)["input_ids"] if texts else []
    kept_docs = [torch.tensor(t) for t in encoded]
    windows = _cut(joined(kept_docs, tokenizer) if used.packed else kept_docs, length)
    if len(windows) == 0:
        raise TooShort(
            f"sentence selection (anchors {list(anchors)}, keep_other {keep_other}) left no "
            f"{length}-token window of {source!r}: keep more sentences or shorten long_len"
        )
    return windows


@dataclass
class StreamData:
    """A stream's window set, ``ids [N, length]`` and ``mask``, and ``record``: what a run's
    record keeps of its data (``source``; ``fallback`` where taken; ``hub`` revisions;
    ``members`` with document counts and fingerprints; ``windows``; ``long_documents``, the
    documents of at least ``length`` tokens, where the source has documents)."""

    ids: torch.Tensor
    mask: torch.Tensor
    record: dict[str, Any] = field(default_factory=dict)


def stream_data(
    tokenizer: Any,
    source: str,
    length: int,
    *,
    seed: int,
    retrieval_fraction: float = 0.0,
    retrieval_phrasing: str = "train",
    copy_fraction: float = 0.0,
    selection: tuple[tuple[str, ...], float] | None = None,
) -> StreamData:
    """The window set of a data source (module docstring) with its record; ``selection`` =
    ``(anchors, keep_other)`` selects sentences of the source's prose first
    (:func:`selected_windows`); its ``+retrieval`` member, if any, is added after, unselected."""
    record: dict[str, Any] = {"source": source, "length": length}
    if source == "random":
        gen = torch.Generator().manual_seed(seed * 7919 + length)
        ids = torch.randint(0, len(tokenizer), (RANDOM_ROWS, length), generator=gen)
        return StreamData(ids, torch.ones_like(ids, dtype=torch.bool), record)
    if source == "pretrain":
        ids, mask = pretrain_windows(
            tokenizer,
            length,
            retrieval_fraction=retrieval_fraction,
            seed=seed,
            retrieval_phrasing=retrieval_phrasing,
            copy_fraction=copy_fraction,
        )
        return StreamData(ids, mask, {**record, "windows": len(ids)})
    parsed = parse_source(source)
    if parsed.standalone:
        path = Path(source).expanduser()
        if not path.is_file():
            raise UserError(f"data {source!r} is no file and no source; accepted forms: {FORMS}")
        try:
            text = path.read_text("utf-8")
        except UnicodeDecodeError as exc:
            raise UserError(f"data file {path}: not UTF-8 text (byte {exc.start}); give a "
                            "UTF-8 text file") from None  # fmt: skip
        doc = torch.tensor(tokenizer(text, add_special_tokens=False)["input_ids"])
        ids = _cut([doc], length)
        if len(ids) == 0:
            raise TooShort(
                f"data file {path} has {len(doc)} tokens, fewer than one window of {length}: "
                "use more text or a shorter length"
            )
        record.update(windows=len(ids), long_documents=1)
        return StreamData(ids, torch.ones_like(ids, dtype=torch.bool), record)
    resolved = resolve_source(source)
    record.update(resolved.record)
    used = resolved.source
    prose = "+".join(m.spec for m in _prose_members(used))
    if used.packed:
        record["packed"] = True
        prose += "+packed"
    if selection is not None:
        ids = selected_windows(tokenizer, prose, length, *selection, seed=seed)
        record["members"] = [{"spec": m.spec} for m in _prose_members(used)]
    else:
        docs, record["members"] = _source_docs(tokenizer, used, "train")
        ids = _windows_of(docs, prose, length, tokenizer if used.packed else None)
        record["long_documents"] = sum(len(d) >= length for d in docs)
    record["windows"] = len(ids)
    if any(m.kind == RETRIEVAL for m in used.members):
        ids, mask = with_retrieval(tokenizer, ids, retrieval_fraction, seed, retrieval_phrasing)
        return StreamData(ids, mask, {**record, "rows": len(ids)})
    return StreamData(ids, torch.ones_like(ids, dtype=torch.bool), record)


def window_set(
    tokenizer: Any,
    source: str,
    length: int,
    *,
    seed: int,
    retrieval_fraction: float = 0.0,
    retrieval_phrasing: str = "train",
    copy_fraction: float = 0.0,
    selection: tuple[tuple[str, ...], float] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids [N, length], mask [N, length])`` of :func:`stream_data`."""
    data = stream_data(
        tokenizer, source, length, seed=seed, retrieval_fraction=retrieval_fraction,
        retrieval_phrasing=retrieval_phrasing, copy_fraction=copy_fraction, selection=selection,
    )  # fmt: skip
    return data.ids, data.mask
