"""Fixed-length token windows for measurements, from a cached corpus, a text file or random ids.

Sources: a corpus name (``brown``, ``austen``, ``kjv``, ``sotu``: documents of its ``test``
split, or of the split named after a colon, e.g. ``kjv:all``), a path to
a UTF-8 text file (one document; a ``.jsonl`` file: one document per line, its ``text`` field), or
``random`` (uniform token ids, seeded: only for smoke runs of tiny random
models). Windows are cut from documents in order, non-overlapping, ``seq_len`` tokens each, with
no special tokens added; the first window of every document is taken before any second one, so a
small ``num_texts`` still spans many documents. Too little text is an error, never a silent
shortfall.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from longred_bench.errors import UserError

if TYPE_CHECKING:
    import torch

CORPORA = ("brown", "austen", "kjv")


def check_text_source(source: str) -> None:
    """Refuse, in one line, a source that is no corpus (with a known split), ``random`` or an
    existing file: before any model loads."""
    from longred_bench.data.corpora import SPLITS, corpus_names

    corpus, _, split = source.partition(":")
    if corpus in corpus_names():
        if split and split not in SPLITS:
            raise UserError(f"text source {source!r}: unknown split; splits: {', '.join(SPLITS)}")
    elif source != "random" and not Path(source).expanduser().is_file():
        from longred_bench.errors import meant_note

        names = ", ".join(corpus_names())
        meant = meant_note(corpus, [*corpus_names(), "random"])
        raise UserError(f"text source {source!r} is neither a corpus ({names}, random) nor a "
                        f"file{meant}")  # fmt: skip


def _documents(source: str) -> list[str]:
    from longred_bench.data.corpora import corpus_names

    check_text_source(source)
    corpus, _, split = source.partition(":")
    if corpus in corpus_names():
        from longred_bench.data.corpora import load_documents

        return [doc.text for doc in load_documents(corpus, split or "test")]
    path = Path(source).expanduser()
    if path.suffix.lower() == ".jsonl":  # JSON lines: their texts, not the JSON around them
        from longred_bench.data.local_corpora import jsonl_documents

        fix = "give each line a string text field, or give a .txt file"
        return jsonl_documents(path, "text", source, fix)
    try:
        return [path.read_text(encoding="utf-8")]
    except UnicodeDecodeError as exc:
        raise UserError(f"text file {source}: not UTF-8 text (byte {exc.start}); give a UTF-8 "
                        "text file or a corpus name") from None  # fmt: skip


WINDOW_FLAGS = {
    ("drift", "drift"): "--num-texts, --seq-len",
    ("compare", "drift"): "--drift-num-texts, --drift-seq-len",
    ("eval", "ppl"): "--samples, --lengths",
    ("reproduce", "drift"): "the profile's drift.num_texts, drift.seq_len",
    ("reproduce", "ppl"): "the profile's evaluation.ppl.windows, evaluation.ruler.lengths",
}
"""What asks for fewer or shorter windows, by (command, what it measured)."""


class TooFewWindows(UserError):
    """A source that yields fewer windows than asked for; ``measure`` (``drift`` or ``ppl``)
    says what asked, so that the command line names the flags (or profile keys) of the command
    that failed (:meth:`for_command`)."""

    def __init__(self, message: str, measure: str = "drift") -> None:
        super().__init__(message)
        self.measure = measure

    def for_command(self, command: str) -> str:
        """The message with the flags of ``command`` for what it measured (:data:`WINDOW_FLAGS`),
        where it has any."""
        flags = WINDOW_FLAGS.get((command, self.measure))
        return f"{self} ({flags})" if flags else str(self)


def token_windows(
    tokenizer: object,
    source: str,
    num_texts: int,
    seq_len: int,
    *,
    seed: int = 0,
    measure: str = "drift",
) -> torch.Tensor:
    """``[num_texts, seq_len]`` token ids from ``source`` (see the module docstring); fewer than
    ``num_texts`` windows raise :class:`TooFewWindows` for ``measure``."""
    import torch  # here, so that checking a source (configs, the parser) imports no torch

    if num_texts < 1 or seq_len < 2:
        raise UserError(f"need num_texts >= 1 and seq_len >= 2 (got {num_texts}, {seq_len})")
    if source == "random":
        gen = torch.Generator().manual_seed(seed)
        return torch.randint(0, len(tokenizer), (num_texts, seq_len), generator=gen)
    per_doc: list[list[list[int]]] = []
    for text in _documents(source):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        per_doc.append([ids[i : i + seq_len] for i in range(0, len(ids) - seq_len + 1, seq_len)])
    windows: list[list[int]] = []
    rank = 0
    while len(windows) < num_texts and any(rank < len(w) for w in per_doc):
        windows.extend(w[rank] for w in per_doc if rank < len(w))
        rank += 1
    if len(windows) < num_texts:
        raise TooFewWindows(
            f"{source!r} yields only {len(windows)} windows of {seq_len} tokens, "
            f"{num_texts} were asked for: ask for fewer or shorter windows, or give a longer "
            "text",
            measure,
        )
    return torch.tensor(windows[:num_texts], dtype=torch.long)
