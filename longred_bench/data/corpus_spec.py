"""Training data sources: the spec strings that name them, parsed into members, and the rule
that falls back from hub data to the offline corpora.

A source is ``MEMBER[+MEMBER...]``, optionally followed by ``|FALLBACK``. A member is:

- a registry corpus name (``brown``, ``austen``, ``kjv``, ``sotu``: their ``train`` split),
  ``retrieval`` (retrieval examples added to the other members' windows) or ``packed`` (the
  other members' documents joined end to end, an end-of-text token between two, before windows
  are cut: rows longer than the documents, e.g. short-text rows of a whole window from a corpus
  of shorter texts; without it a window lies within one document);
- ``txt:PATH``: a ``.txt`` file, or a folder of them (searched recursively, in path order), one
  document per file;
- ``jsonl:PATH[:field=NAME]``: a JSONL file, or a folder of ``*.jsonl`` files (recursively, in
  path order), one document per line, its text in ``NAME`` (default ``text``);
- ``disk:PATH[:field=NAME][:split=NAME]``: a folder written by ``datasets``' ``save_to_disk``
  (a ``Dataset``, or a ``DatasetDict`` read at ``split``, default ``train``), one document per row;
- ``hf:NAME[:config=C][:split=S][:field=F][:revision=R][:docs=N]``: a hub dataset read with
  ``datasets`` in streaming mode, its first ``docs`` rows (default :data:`HUB_DOCS`) of split
  ``S`` (default ``train``), cached under the suite's cache at the dataset's resolved revision.

Local and hub members are read whole: no held-out split is taken from them. ``pretrain`` and
``random`` (and, as before, a bare path to one text file) stand alone. A training config checks
a source's syntax only (it may be written where the data is not); a profile's local paths must
exist when it is planned (:func:`check_local_paths`).

Fallback rule (:func:`longred_bench.data.source_documents.resolve_source`): when a source names
hub members and one of them cannot be read (``HF_HUB_OFFLINE`` or ``HF_DATASETS_OFFLINE`` set, or
the hub does not answer) and its rows are not cached, the whole source is replaced by its
``FALLBACK`` (members without ``hf:``, e.g. the offline corpora ``austen+kjv``); this is said in
one line and recorded. Without a fallback that is an error. The side is chosen once per process
and named in the keys of the units that read the source.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from longred_bench.data.sources import SOURCES
from longred_bench.errors import UserError

DATA_KEYS = ("long_data", "short_data", "s2l_data")
"""The training keys that name a source."""

CORPORA = tuple(name for name, source in SOURCES.items() if source.kind == "corpus")
"""The registry corpora (fetched from package registries by ``data fetch``)."""
RETRIEVAL = "retrieval"
PACKED = "packed"
KEYWORDS = (RETRIEVAL, PACKED)
"""The members that change how the other (prose) members' windows are made."""
STANDALONE = ("pretrain", "random")
HUB_DOCS = 1000
"""Rows a hub member reads when its spec gives no ``docs=N``."""
LOCAL = ("txt", "jsonl", "disk")
"""The member kinds read from a local file or folder."""
OPTIONS = {
    "txt": {},
    "jsonl": {"field": "text"},
    "disk": {"field": "text", "split": "train"},
    "hf": {"config": "", "split": "train", "field": "text", "revision": "", "docs": str(HUB_DOCS)},
}
"""Each member kind's options and their defaults."""
FORMS = (
    f"corpus names ({', '.join(CORPORA)}), 'retrieval' and 'packed' joined by '+', txt:PATH, "
    "jsonl:PATH[:field=NAME], disk:PATH[:field=NAME][:split=NAME], "
    "hf:NAME[:config=C][:split=S][:field=F][:revision=R][:docs=N], each source optionally "
    "followed by '|FALLBACK' (offline members); or 'pretrain', 'random' or a .txt file alone"
)
"""The accepted forms, for error messages."""


@dataclass(frozen=True)
class Member:
    """One member of a source: ``kind`` is ``corpus``, ``retrieval`` or a key of
    :data:`OPTIONS`; ``target`` the corpus name, path or hub id; ``options`` every option of
    the kind (defaults filled in)."""

    kind: str
    target: str
    options: dict[str, str] = field(default_factory=dict, hash=False)
    spec: str = ""

    @property
    def offline(self) -> bool:
        """Read without the hub."""
        return self.kind != "hf"


@dataclass(frozen=True)
class Source:
    """A parsed source: its members and the members of its fallback (empty: none)."""

    spec: str
    members: tuple[Member, ...]
    fallback: tuple[Member, ...] = ()
    fallback_spec: str = ""

    @property
    def packed(self) -> bool:
        """Windows are cut from the prose members' documents joined end to end."""
        return any(m.kind == PACKED for m in self.members)

    @property
    def standalone(self) -> bool:
        """``pretrain``, ``random`` or a bare file path: not made of members."""
        return not self.members


def _bad(spec: str, why: str) -> UserError:
    return UserError(f"data source {spec!r}: {why}; accepted forms: {FORMS}")


def parse_member(text: str, spec: str) -> Member:
    """One member of source ``spec`` (see the module docstring)."""
    if text in CORPORA:
        return Member("corpus", text, {}, text)
    if text in KEYWORDS:
        return Member(text, text, {}, text)
    kind, sep, rest = text.partition(":")
    if not sep or kind not in OPTIONS:
        raise _bad(spec, f"{text!r} is no corpus name and no KIND:TARGET member")
    pieces = rest.split(":")
    cut = len(pieces)
    while cut > 1 and "=" in pieces[cut - 1]:
        cut -= 1
    target, options = ":".join(pieces[:cut]), dict(OPTIONS[kind])
    for piece in pieces[cut:]:
        key, _, value = piece.partition("=")
        if key not in options or not value:
            allowed = ", ".join(options) or "none"
            raise _bad(spec, f"{kind}: option {piece!r} is not KEY=VALUE of {allowed}")
        options[key] = value
    if not target:
        raise _bad(spec, f"{text!r} names no {'dataset' if kind == 'hf' else 'path'}")
    if kind == "hf" and not (options["docs"].isdigit() and int(options["docs"]) > 0):
        raise _bad(spec, f"docs={options['docs']} must be a whole number above 0")
    return Member(kind, target, options, text)


def parse_source(spec: str) -> Source:
    """Parse a data source string; a one-line :class:`UserError` naming ``spec`` and the
    accepted forms if it is malformed. Paths are not checked here (a config is valid on a
    machine without the data)."""
    if not isinstance(spec, str) or not spec.strip():
        raise _bad(str(spec), "empty")
    primary, bar, fallback = spec.partition("|")
    if spec in STANDALONE or Path(spec).expanduser().is_file():
        return Source(spec, ())
    if not bar and ":" not in spec and "+" not in spec and _is_path(spec):
        return Source(spec, ())
    if bar and (not fallback or "|" in fallback):
        raise _bad(spec, "'|' must be followed by one fallback source")
    members = tuple(parse_member(m, spec) for m in primary.split("+"))
    backup = tuple(parse_member(m, spec) for m in fallback.split("+")) if bar else ()
    for part in (members, backup):
        if part and all(m.kind in KEYWORDS for m in part):
            raise _bad(spec, "'retrieval' and 'packed' change prose members; name at least one")
    if any(not m.offline for m in backup):
        raise _bad(spec, f"the fallback {fallback!r} must be offline (no hf: member)")
    if bar and all(m.offline for m in members):
        raise _bad(spec, "a fallback is for a source with hf: members")
    return Source(spec, members, backup, fallback)


def _is_path(spec: str) -> bool:
    """A bare name that is no corpus or keyword: the legacy single text file form."""
    if spec in CORPORA or spec in KEYWORDS:
        return False
    return "/" in spec or Path(spec).suffix != "" or Path(spec).expanduser().is_file()


def local_paths(spec: str) -> tuple[Path, ...]:
    """The local files and folders source ``spec`` reads: its ``txt:``, ``jsonl:`` and ``disk:``
    members and its fallback's, or the bare text file it names. Registry corpora and ``hf:``
    members are not among them; nothing is read and the hub is not asked."""
    source = parse_source(spec)
    if source.standalone:
        return () if spec in STANDALONE else (Path(spec).expanduser(),)
    members = (*source.members, *source.fallback)
    return tuple(dict.fromkeys(Path(m.target).expanduser() for m in members if m.kind in LOCAL))


def check_local_paths(spec: str) -> None:
    """Refuse, in one line naming ``spec`` and the path, a source whose local file or folder
    does not exist (a relative path is read from the current folder, as at training time), or
    whose data is not of its member's form by the first of it
    (:func:`~longred_bench.data.local_corpora.check_form`: an empty folder, a JSONL record
    without its text field)."""
    from longred_bench.data.local_corpora import check_form

    for path in local_paths(spec):
        if not path.exists():
            raise UserError(f"data {spec!r}: {path} does not exist; name an existing file or "
                            "folder, or put the data there")  # fmt: skip
    source = parse_source(spec)
    for m in (*source.members, *source.fallback):
        if m.kind in LOCAL:
            check_form(m.kind, Path(m.target).expanduser(), m.options, m.spec)
