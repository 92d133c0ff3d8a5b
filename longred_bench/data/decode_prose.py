"""Decoders for the prose corpora: Brown and the State of the Union addresses (npm tarballs),
Austen and the KJV Bible (Debian debs).

Each decoder reads verified archives and writes ``documents.jsonl`` into the entry directory
it is given; see :mod:`longred_bench.data.corpora` for that format.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import struct
import subprocess
import tarfile
import warnings
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path

from longred_bench.data.corpora import DOCUMENTS_FILE, Document, write_documents
from longred_bench.errors import UserError

# --- Brown ----------------------------------------------------------------------------------

BROWN_GENRES: dict[str, str] = {
    "a": "press: reportage",
    "b": "press: editorial",
    "c": "press: reviews",
    "d": "religion",
    "e": "skill and hobbies",
    "f": "popular lore",
    "g": "belles-lettres",
    "h": "miscellaneous: government and house organs",
    "j": "learned",
    "k": "fiction: general",
    "l": "fiction: mystery",
    "m": "fiction: science",
    "n": "fiction: adventure",
    "p": "fiction: romance",
    "r": "humor",
}
_BROWN_MEMBER = re.compile(r"^package/(c([a-r])\d\d)$")
_NO_SPACE_BEFORE = frozenset({".", ",", ";", ":", "?", "!", ")", "]", "''"})
_NO_SPACE_AFTER = frozenset({"(", "[", "``"})
_DOUBLE_QUOTES = frozenset({"``", "''"})


def brown_tokens(tagged: str) -> list[tuple[str, str]]:
    """Split ``word/tag`` tokens into (word, tag) pairs (a word may itself contain ``/``)."""
    pairs = []
    for token in tagged.split():
        word, slash, tag = token.rpartition("/")
        if not slash or not word or not tag:
            raise ValueError(f"not a word/tag token: {token!r}")
        pairs.append((word, tag))
    return pairs


def detokenize(words: Iterable[str]) -> str:
    """Join tokenised words into running text.

    No space before closing punctuation (``. , ; : ? ! ) ]`` and the closing quote ``''``)
    or after opening brackets and the opening quote; both double-quote tokens become ``"``.
    A lone ``'`` is a single quote that opens and closes alternately (Brown uses it for
    both), so it hugs the word it quotes.
    """
    pieces: list[str] = []
    glue_next = True
    single_open = False
    for word in words:
        space = not glue_next and word not in _NO_SPACE_BEFORE
        glue_next = word in _NO_SPACE_AFTER
        if word == "'":
            if single_open:
                space = False
            else:
                glue_next = True
            single_open = not single_open
        if space:
            pieces.append(" ")
        pieces.append('"' if word in _DOUBLE_QUOTES else word)
    return "".join(pieces)


def brown_text(raw: str) -> str:
    """Plain text of one Brown file: tags stripped, paragraph breaks kept.

    Paragraphs are the blank-line separated blocks, one sentence per line. A line whose tags
    all carry ``-hl`` is a headline and becomes a paragraph of its own rather than running
    into the sentence after it.
    """
    paragraphs: list[str] = []
    for block in re.split(r"\n\s*\n", raw):
        words: list[str] = []
        for line in block.splitlines():
            pairs = brown_tokens(line)
            if pairs and all("-hl" in tag for _, tag in pairs):
                if words:
                    paragraphs.append(detokenize(words))
                    words = []
                paragraphs.append(detokenize(word for word, _ in pairs))
            else:
                words.extend(word for word, _ in pairs)
        if words:
            paragraphs.append(detokenize(words))
    return "\n\n".join(paragraphs)


def decode_brown(archives: Mapping[str, Path], work: Path, out: Path) -> None:
    """One document per Brown file ``ca01``..``cr09``; CONTENTS, README etc. are skipped."""
    (archive,) = archives.values()
    documents = []
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            match = _BROWN_MEMBER.match(member.name)
            if match is None or not member.isfile():
                continue
            handle = tar.extractfile(member)
            if handle is None:
                raise ValueError(f"cannot read {member.name} in {archive.name}")
            doc_id, letter = match.groups()
            genre = BROWN_GENRES[letter]
            documents.append(
                Document(
                    corpus="brown",
                    doc_id=doc_id,
                    title=f"Brown Corpus {doc_id} ({genre})",
                    text=brown_text(handle.read().decode("utf-8")),
                    meta={"category": letter, "genre": genre},
                )
            )
    if not documents:
        raise ValueError(f"no Brown text files (package/ca01 ...) in {archive.name}")
    documents.sort(key=lambda d: d.doc_id)
    write_documents(out / DOCUMENTS_FILE, documents)


# --- State of the Union addresses ----------------------------------------------------------

_SOTU_MEMBER = re.compile(r"^package/data/((\d{4})_([a-z_]+)_[a-z]+)\.(txt|json)$")
# Typographic punctuation becomes the ASCII the other corpora use (Brown writes a dash as --).
_SOTU_ASCII = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"',
                             "\u2014": "--", "\u2013": "-", "\u2011": "-"})  # fmt: skip
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def sotu_text(raw: str) -> str:
    """Plain text of one address: typographic quotes and dashes as ASCII, control characters
    dropped, whitespace runs as one space (each file is one line: an address is one paragraph)."""
    return " ".join(_CONTROL.sub(" ", raw.translate(_SOTU_ASCII)).split())


def decode_sotu(archives: Mapping[str, Path], work: Path, out: Path) -> None:
    """One document per address ``package/data/<year>_<president>_<party>.txt``, in file-name
    order: ``doc_id`` ``<year>_<president>``, the president's name and party from the address's
    ``.json`` record beside it (which repeats the text)."""
    (archive,) = archives.values()
    files: dict[tuple[str, str], bytes] = {}
    ids: dict[str, tuple[str, str]] = {}
    with tarfile.open(archive, "r:gz") as tar:
        for member in tar.getmembers():
            match = _SOTU_MEMBER.match(member.name)
            handle = tar.extractfile(member) if match is not None and member.isfile() else None
            if match is None or handle is None:
                continue
            stem, year, president, extension = match.groups()
            files[(stem, extension)] = handle.read()
            ids[stem] = (year, president)
    if not ids:
        raise ValueError(f"no addresses (package/data/<year>_<name>_<party>.txt) in {archive.name}")
    documents = []
    for stem in sorted(ids):
        if (stem, "txt") not in files or (stem, "json") not in files:
            raise ValueError(f"{archive.name}: {stem} needs both its .txt and its .json")
        record = json.loads(files[(stem, "json")].decode("utf-8"))
        year, president = ids[stem]
        documents.append(
            Document(
                corpus="sotu",
                doc_id=f"{year}_{president}",
                title=f"State of the Union {year} ({record['name']})",
                text=sotu_text(files[(stem, "txt")].decode("utf-8")),
                meta={
                    "year": year,
                    "president": str(record["name"]),
                    "party": str(record["party"]),
                },
            )
        )
    write_documents(out / DOCUMENTS_FILE, documents)


# --- Debian packages ------------------------------------------------------------------------


def unpack_deb(deb: Path, dest: Path) -> None:
    """Extract a .deb's files into ``dest`` with ``dpkg-deb -x`` (nothing is installed)."""
    if shutil.which("dpkg-deb") is None:
        raise UserError(f"dpkg-deb is needed to unpack {deb.name} but was not found on PATH")
    dest.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        ["dpkg-deb", "-x", str(deb), str(dest)],
        check=True,
        capture_output=True,
        stdin=subprocess.DEVNULL,
    )


def paragraphs_from_lines(lines: Iterable[str]) -> str:
    """Unwrap hard-wrapped lines: runs of non-empty lines become one paragraph each."""
    paragraphs: list[str] = []
    current: list[str] = []
    for line in [*lines, ""]:
        stripped = line.strip()
        if stripped:
            current.append(stripped)
        elif current:
            paragraphs.append(" ".join(current))
            current = []
    return "\n\n".join(paragraphs)


# --- Austen ---------------------------------------------------------------------------------

AUSTEN_TITLES: dict[str, str] = {
    "emma": "Emma",
    "mansfieldpark": "Mansfield Park",
    "northangerabbey": "Northanger Abbey",
    "persuasion": "Persuasion",
    "prideprejudice": "Pride and Prejudice",
    "sensesensibility": "Sense and Sensibility",
}
_AUSTEN_DATA = "usr/lib/R/site-library/janeaustenr/data"


def _r_object(serialized: bytes) -> object:
    """Convert the bytes of one R serialization (format 2 or 3) into Python objects."""
    import rdata

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        parsed = rdata.parser.parse_data(serialized, extension=".rds")
        return rdata.conversion.convert(parsed)


def read_lazyload_db(rdx: Path, rdb: Path) -> dict[str, object]:
    """Read every variable of an R lazy-load database (``.rdx`` index + ``.rdb`` blobs).

    The index is a compressed serialized list ``variables -> [offset, length]`` (gzip as R's
    saveRDS writes it, or bare zlib); each blob is a 4-byte big-endian uncompressed length
    followed by zlib data of one serialized object.
    """
    packed = rdx.read_bytes()
    raw_index = gzip.decompress(packed) if packed[:2] == b"\x1f\x8b" else zlib.decompress(packed)
    index = _r_object(raw_index)
    if not isinstance(index, dict) or "variables" not in index or "compressed" not in index:
        raise ValueError(f"{rdx.name} is not a lazy-load index")
    if [bool(flag) for flag in index["compressed"]] != [True]:
        raise ValueError(f"{rdx.name}: only zlib-compressed lazy-load databases are supported")
    blobs = rdb.read_bytes()
    result: dict[str, object] = {}
    for name, (offset, length) in index["variables"].items():
        blob = blobs[int(offset) : int(offset) + int(length)]
        (expected,) = struct.unpack(">I", blob[:4])
        serialized = zlib.decompress(blob[4:])
        if len(serialized) != expected:
            raise ValueError(f"{rdb.name}: {name} has {len(serialized)} bytes, not {expected}")
        result[str(name)] = _r_object(serialized)
    return result


def decode_austen(archives: Mapping[str, Path], work: Path, out: Path) -> None:
    """One document per novel from janeaustenr's ``data/Rdata.rdb`` (character vectors)."""
    (deb,) = archives.values()
    unpack_deb(deb, work / "deb")
    data = work / "deb" / _AUSTEN_DATA
    novels = read_lazyload_db(data / "Rdata.rdx", data / "Rdata.rdb")
    if sorted(novels) != sorted(AUSTEN_TITLES):
        raise ValueError(f"unexpected janeaustenr variables: {sorted(novels)}")
    documents = [
        Document(
            corpus="austen",
            doc_id=doc_id,
            title=title,
            text=paragraphs_from_lines(str(line) for line in novels[doc_id]),
            meta={"author": "Jane Austen"},
        )
        for doc_id, title in AUSTEN_TITLES.items()
    ]
    write_documents(out / DOCUMENTS_FILE, documents)


# --- KJV ------------------------------------------------------------------------------------

KJV_BOOKS: tuple[tuple[str, str], ...] = (
    ("Ge", "Genesis"), ("Exo", "Exodus"), ("Lev", "Leviticus"), ("Num", "Numbers"),
    ("Deu", "Deuteronomy"), ("Josh", "Joshua"), ("Jdgs", "Judges"), ("Ruth", "Ruth"),
    ("1Sm", "1 Samuel"), ("2Sm", "2 Samuel"), ("1Ki", "1 Kings"), ("2Ki", "2 Kings"),
    ("1Chr", "1 Chronicles"), ("2Chr", "2 Chronicles"), ("Ezra", "Ezra"),
    ("Neh", "Nehemiah"), ("Est", "Esther"), ("Job", "Job"), ("Psa", "Psalms"),
    ("Prv", "Proverbs"), ("Eccl", "Ecclesiastes"), ("SSol", "Song of Solomon"),
    ("Isa", "Isaiah"), ("Jer", "Jeremiah"), ("Lam", "Lamentations"), ("Eze", "Ezekiel"),
    ("Dan", "Daniel"), ("Hos", "Hosea"), ("Joel", "Joel"), ("Amos", "Amos"),
    ("Obad", "Obadiah"), ("Jonah", "Jonah"), ("Mic", "Micah"), ("Nahum", "Nahum"),
    ("Hab", "Habakkuk"), ("Zep", "Zephaniah"), ("Hag", "Haggai"), ("Zec", "Zechariah"),
    ("Mal", "Malachi"), ("Mat", "Matthew"), ("Mark", "Mark"), ("Luke", "Luke"),
    ("John", "John"), ("Acts", "Acts"), ("Rom", "Romans"), ("1Cor", "1 Corinthians"),
    ("2Cor", "2 Corinthians"), ("Gal", "Galatians"), ("Eph", "Ephesians"),
    ("Phi", "Philippians"), ("Col", "Colossians"), ("1Th", "1 Thessalonians"),
    ("2Th", "2 Thessalonians"), ("1Tim", "1 Timothy"), ("2Tim", "2 Timothy"),
    ("Titus", "Titus"), ("Phmn", "Philemon"), ("Heb", "Hebrews"), ("Jas", "James"),
    ("1Pet", "1 Peter"), ("2Pet", "2 Peter"), ("1Jn", "1 John"), ("2Jn", "2 John"),
    ("3Jn", "3 John"), ("Jude", "Jude"), ("Rev", "Revelation"),
)  # fmt: skip
_VERSE = re.compile(r"^([1-3]?[A-Za-z]+)(\d+):(\d+) (.*)$")


def kjv_books(verse_lines: Iterable[str]) -> dict[str, list[list[str]]]:
    """Group ``Ge1:1 In the beginning ...`` lines into book -> chapters -> verse texts."""
    books: dict[str, dict[int, list[str]]] = {}
    for line in verse_lines:
        if not line.strip():
            continue
        match = _VERSE.match(line)
        if match is None:
            raise ValueError(f"not a verse line: {line[:60]!r}")
        book, chapter, _verse, text = match.groups()
        books.setdefault(book, {}).setdefault(int(chapter), []).append(text.strip())
    return {book: [chapters[n] for n in sorted(chapters)] for book, chapters in books.items()}


def decode_kjv(archives: Mapping[str, Path], work: Path, out: Path) -> None:
    """Run the packaged ``bible`` program over Gen1:1-Rev22:21; one document per book."""
    root = work / "kjv"
    for deb in archives.values():
        unpack_deb(deb, root)
    env = {key: value for key, value in os.environ.items() if key != "COLUMNS"}
    env["LC_ALL"] = "C"
    try:
        result = subprocess.run(
            [str(root / "usr/bin/bible"), "-f", "-p", str(root / "usr/lib"), "Gen1:1-Rev22:21"],
            check=True,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            env=env,
            timeout=300,
        )
    except OSError as exc:
        raise UserError(f"source 'kjv': cannot run the packaged bible program: {exc}") from exc
    except subprocess.CalledProcessError as exc:
        lines = exc.stderr.decode(errors="replace").strip().splitlines()
        detail = lines[-1] if lines else f"exit status {exc.returncode}"
        raise UserError(f"source 'kjv': the packaged bible program failed: {detail}") from exc
    books = kjv_books(result.stdout.decode("ascii").splitlines())
    if list(books) != [abbreviation for abbreviation, _ in KJV_BOOKS]:
        raise ValueError(f"unexpected KJV books: {list(books)}")
    documents = [
        Document(
            corpus="kjv",
            doc_id=title.lower().replace(" ", "-"),
            title=title,
            text="\n\n".join(" ".join(verses) for verses in books[abbreviation]),
            meta={"book_number": str(number), "abbreviation": abbreviation},
        )
        for number, (abbreviation, title) in enumerate(KJV_BOOKS, start=1)
    ]
    write_documents(out / DOCUMENTS_FILE, documents)
