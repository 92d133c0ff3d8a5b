"""Data a user names that cannot be read stops in one line naming the data and what to do, never
in a traceback: local files and folders (``txt:``, ``jsonl:``, ``disk:``), measurement texts,
and hub rows whose stream fails or holds nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longred_bench.data import hub_corpora
from longred_bench.data.corpus_spec import parse_member
from longred_bench.data.source_documents import member_documents, resolve_source, source_read
from longred_bench.data.texts import check_text_source, token_windows
from longred_bench.errors import UserError


def _one_line(info: pytest.ExceptionInfo, *words: str) -> None:
    text = str(info.value)
    assert "\n" not in text
    for word in words:
        assert word in text, (word, text)


def test_a_folder_without_data_files_and_a_missing_path(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("not a text file of the kind")
    with pytest.raises(UserError) as info:
        member_documents(parse_member(f"txt:{tmp_path}", "long_data"))
    _one_line(info, str(tmp_path), "holds no .txt file")
    with pytest.raises(UserError) as info:
        member_documents(parse_member(f"jsonl:{tmp_path / 'gone'}", "long_data"))
    _one_line(info, "gone", "does not exist")


def test_a_jsonl_line_that_is_not_json_is_named_by_its_number(tmp_path: Path) -> None:
    path = tmp_path / "docs.jsonl"
    path.write_text(json.dumps({"text": "a b c"}) + "\n\n{'text': 'single quotes'}\n")
    with pytest.raises(UserError) as info:
        member_documents(parse_member(f"jsonl:{path}", "long_data"))
    _one_line(info, f"{path} line 3 is not JSON")


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A ``save_to_disk`` folder of a dataset dict: ``train`` with a string column ``body``
    and an integer column ``n``."""
    import datasets

    folder = tmp_path_factory.mktemp("disk") / "saved"
    rows = datasets.Dataset.from_dict({"body": ["one two", "three four"], "n": [1, 2]})
    datasets.DatasetDict({"train": rows}).save_to_disk(str(folder))
    return folder


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (":field=body:split=test", "has splits train, not 'test'; choose one with :split=NAME"),
        ("", "has no column 'text' (it has: body, n); name the text field with :field=NAME"),
        (":field=n", "row 0 of 'n' is not a string"),
    ],
)
def test_a_saved_dataset_read_wrongly(saved: Path, options: str, said: str) -> None:
    with pytest.raises(UserError) as info:
        member_documents(parse_member(f"disk:{saved}{options}", "long_data"))
    _one_line(info, said)


def test_a_path_that_is_no_saved_dataset(saved: Path, tmp_path: Path) -> None:
    file = tmp_path / "rows.txt"
    file.write_text("text")
    with pytest.raises(UserError) as info:
        member_documents(parse_member(f"disk:{file}", "long_data"))
    _one_line(info, "is not a folder saved with save_to_disk")
    with pytest.raises(UserError) as info:
        member_documents(parse_member(f"disk:{tmp_path}", "long_data"))
    _one_line(info, f"{tmp_path} does not load_from_disk")
    assert (saved / "dataset_dict.json").is_file()  # the good folder beside it reads


def test_measurement_texts_read_wrongly(tmp_path: Path) -> None:
    with pytest.raises(UserError) as info:
        check_text_source("brown:valid")
    _one_line(info, "'brown:valid'", "unknown split", "test")
    latin = tmp_path / "latin1.txt"
    latin.write_bytes("caf\xe9 au lait".encode("latin-1"))
    with pytest.raises(UserError) as info:
        token_windows(None, str(latin), 1, 4)
    _one_line(info, str(latin), "not UTF-8 text (byte 3)")
    with pytest.raises(UserError) as info:
        token_windows(None, "random", 0, 4)
    _one_line(info, "num_texts >= 1", "(got 0, 4)")


@pytest.mark.parametrize(
    ("failure", "raised", "said"),
    [
        (ValueError("BuilderConfig 'fr' not found. Available: ['en']\nmore"), UserError,
         "BuilderConfig 'fr' not found"),
        (FileNotFoundError("no split named test"), UserError, "no split named test"),
        (ConnectionError("reset by peer"), hub_corpora.HubUnavailable, "streaming stopped"),
    ],
)  # fmt: skip
def test_a_stream_that_fails(
    hub: dict, monkeypatch: pytest.MonkeyPatch, failure: Exception, raised: type, said: str
) -> None:
    import datasets

    def load_dataset(*args, **kwargs):
        raise failure

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    with pytest.raises(raised) as info:
        hub_corpora.hub_documents(parse_member("hf:org/books:field=body:docs=2", "long_data"))
    _one_line(info, said)


def test_a_split_without_rows(hub: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: iter([]))
    with pytest.raises(UserError) as info:
        hub_corpora.hub_documents(parse_member("hf:org/books:split=test", "long_data"))
    _one_line(info, "split 'test' has no rows")
    assert not list(Path(hub_corpora.cache_dir()).rglob("documents.jsonl"))  # nothing kept


def test_the_hub_stopping_after_the_run_chose_its_rows(
    hub: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    import datasets

    spec = "hf:org/books:field=body:docs=2|austen+kjv"
    assert source_read(spec) == "hf:org/books:field=body:docs=2"  # the hub answered
    monkeypatch.setattr(
        datasets, "load_dataset", lambda *a, **k: (_ for _ in ()).throw(TimeoutError())
    )
    with pytest.raises(UserError) as info:
        resolve_source(spec)
    _one_line(info, "the hub answered when this run was planned", "HF_DATASETS_OFFLINE=1")


def test_a_mistyped_source_name_is_answered_with_the_one_meant() -> None:
    """``data fetch --sources brwn`` listed the sources with no guess, where every other
    command names the close one."""
    from longred_bench.data.sources import get_source

    with pytest.raises(UserError, match=r"^unknown source 'brwn' \(did you mean brown\?\); valid"):
        get_source("brwn")
    with pytest.raises(UserError) as far:
        get_source("nothing-like-it")
    assert "did you mean" not in str(far.value)
