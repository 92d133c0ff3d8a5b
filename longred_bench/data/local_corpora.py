"""Documents of a local training data member (:mod:`longred_bench.data.corpus_spec`): a folder of
``.txt`` files, JSONL files with a text field, or a ``datasets`` folder saved with
``save_to_disk``. Each reader returns the texts in a fixed order (files by path, lines and rows
as stored) and fails in one line naming the path when the data is not what the spec says."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from longred_bench.errors import UserError


def texts_fingerprint(texts: list[str]) -> str:
    """A short sha256 of the documents, in order: the same texts give the same fingerprint."""
    digest = hashlib.sha256()
    for text in texts:
        digest.update(hashlib.sha256(text.encode("utf-8")).digest())
    return digest.hexdigest()[:16]


def _files(path: Path, suffix: str, spec: str) -> list[Path]:
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise UserError(f"data {spec!r}: {path} does not exist")
    files = sorted(p for p in path.rglob(f"*{suffix}") if p.is_file())
    if not files:
        raise UserError(f"data {spec!r}: folder {path} holds no {suffix} file")
    return files


def _not_utf8(spec: str, where: str, exc: UnicodeDecodeError) -> UserError:
    return UserError(f"data {spec!r}: {where} is not UTF-8 text (byte {exc.start}); give UTF-8 "
                     "text (e.g. iconv -f latin1 -t utf-8)")  # fmt: skip


def txt_documents(path: Path, spec: str) -> list[str]:
    """One document per ``.txt`` file: ``path`` itself, or every one under folder ``path``."""
    texts = []
    for file in _files(path, ".txt", spec):
        try:
            texts.append(file.read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            raise _not_utf8(spec, str(file), exc) from None
    return texts


def jsonl_documents(
    path: Path, text_field: str, spec: str, fix: str = "name the text field with :field=NAME"
) -> list[str]:
    """One document per line of the JSONL file ``path`` (or of every ``.jsonl`` file under
    folder ``path``): the line's ``text_field``, a string. Blank lines are skipped; ``fix`` is
    the advice for a line without that field."""
    texts = []
    for file in _files(path, ".jsonl", spec):
        for number, line in _lines(file, spec):
            if not line.strip():
                continue
            texts.append(_text(_record(line, file, number, spec), text_field,
                               f"{file} line {number}", spec, fix))  # fmt: skip
    return texts


def _record(line: str, file: Path, number: int, spec: str) -> Any:
    """JSONL line ``number`` of ``file`` parsed, refused in one line where it is not JSON."""
    try:
        return json.loads(line)
    except ValueError:
        raise UserError(f"data {spec!r}: {file} line {number} is not JSON") from None


def _lines(file: Path, spec: str) -> Iterator[tuple[int, str]]:
    """``file``'s lines, numbered from 1, as text mode splits them (``\n``, ``\r\n`` or
    ``\r``), a UTF-8 byte-order mark dropped; read as bytes, so that a line that is not UTF-8
    is named."""
    number = 0
    with file.open("rb") as handle:
        for raw in handle:
            try:
                chunk = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise _not_utf8(spec, f"{file} line {number + 1}", exc) from None
            pieces = chunk.replace("\r\n", "\n").replace("\r", "\n").split("\n")
            if pieces[-1] == "":
                pieces.pop()
            for piece in pieces:
                number += 1
                yield number, piece.removeprefix("\ufeff") if number == 1 else piece


def _text(
    record: Any, text_field: str, where: str, spec: str,
    fix: str = "name the text field with :field=NAME",
) -> str:  # fmt: skip
    value = record.get(text_field) if isinstance(record, dict) else None
    if not isinstance(value, str):
        keys = ", ".join(record) if isinstance(record, dict) else type(record).__name__
        raise UserError(
            f"data {spec!r}: {where} has no string field {text_field!r} (it has: {keys}); {fix}"
        )
    return value


def check_form(kind: str, path: Path, options: dict[str, str], spec: str) -> None:
    """Refuse, as its reader would, a local member whose data is not of its kind's form, reading
    only the first of it: a folder with no ``.txt`` (``.jsonl``) file, a first JSONL record that
    is not JSON or lacks its text field, a ``save_to_disk`` folder without the split or column
    (its schema; no row is read). A plan and a dry run say so before any unit runs: the reader
    said it once the units before the training had run."""
    if kind == "txt":
        _files(path, ".txt", spec)
    elif kind == "jsonl":
        file = _files(path, ".jsonl", spec)[0]
        for number, line in _lines(file, spec):
            if line.strip():
                _text(_record(line, file, number, spec), options["field"],
                      f"{file} line {number}", spec)  # fmt: skip
                return
        raise UserError(f"data {spec!r}: {file} holds no document (every line is blank)")
    elif kind == "disk":
        _disk_dataset(path, options["field"], options["split"], spec)


def _disk_dataset(path: Path, text_field: str, split: str, spec: str) -> Any:
    """The ``split`` of the ``save_to_disk`` folder ``path``, checked to have ``text_field``."""
    import datasets

    if not path.is_dir():
        raise UserError(f"data {spec!r}: {path} is not a folder saved with save_to_disk")
    try:
        data = datasets.load_from_disk(str(path))
    except (FileNotFoundError, ValueError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise UserError(f"data {spec!r}: {path} does not load_from_disk: {first}") from None
    if isinstance(data, datasets.DatasetDict):
        if split not in data:
            raise UserError(
                f"data {spec!r}: {path} has splits {', '.join(data)}, not {split!r}; "
                "choose one with :split=NAME"
            )
        data = data[split]
    if text_field not in data.column_names:
        raise UserError(
            f"data {spec!r}: {path} has no column {text_field!r} (it has: "
            f"{', '.join(data.column_names)}); name the text field with :field=NAME"
        )
    return data


def disk_documents(path: Path, text_field: str, split: str, spec: str) -> tuple[list[str], str]:
    """One document per row of the ``save_to_disk`` folder ``path`` (a ``DatasetDict`` at
    ``split``): the texts and the dataset's fingerprint."""
    data = _disk_dataset(path, text_field, split, spec)
    texts = data[text_field]
    for row, value in enumerate(texts):
        if not isinstance(value, str):
            raise UserError(f"data {spec!r}: {path} row {row} of {text_field!r} is not a string")
    return list(texts), data._fingerprint
