"""The local files and folders a training data source names (``txt:``, ``jsonl:``, ``disk:``
members, a fallback's, a bare text file), found without reading anything or asking the hub, and
a missing one refused in one line naming the source and the path."""

from __future__ import annotations

from pathlib import Path

import pytest

from longred_bench.data.corpus_spec import check_local_paths, local_paths
from longred_bench.errors import UserError


@pytest.mark.parametrize(
    ("spec", "paths"),
    [
        ("austen+kjv+retrieval", ()),
        ("random", ()),
        ("pretrain", ()),
        ("hf:org/data:docs=5|austen+kjv", ()),
        ("/data/one.txt", ("/data/one.txt",)),
        ("txt:/data/books+jsonl:/data/web.jsonl:field=content", ("/data/books", "/data/web.jsonl")),
        ("hf:org/data|disk:/data/saved:split=train+kjv", ("/data/saved",)),
        ("txt:/data/a+txt:/data/a", ("/data/a",)),
    ],
)
def test_the_local_paths_of_a_source(spec: str, paths: tuple[str, ...]) -> None:
    assert local_paths(spec) == tuple(Path(p) for p in paths)


def test_a_home_path_is_expanded() -> None:
    assert local_paths("jsonl:~/web.jsonl") == (Path.home() / "web.jsonl",)


def test_a_missing_local_path_is_refused_in_one_line(tmp_path: Path) -> None:
    (tmp_path / "web.jsonl").write_text('{"text": "a"}\n')
    check_local_paths(f"jsonl:{tmp_path}/web.jsonl+austen")  # present: nothing to say
    check_local_paths("hf:org/no-such-data|austen")  # the hub is not asked
    spec = f"jsonl:{tmp_path}/web.jsonl+disk:{tmp_path}/saved"
    with pytest.raises(UserError) as caught:
        check_local_paths(spec)
    message = str(caught.value)
    assert message == (f"data {spec!r}: {tmp_path}/saved does not exist; name an existing file "
                       "or folder, or put the data there")  # fmt: skip
    assert "\n" not in message


def test_repair_commands_name_the_cache_they_repair(tmp_path, capsys):
    """``data verify --cache DIR`` and ``data list --cache DIR`` gave `data fetch` commands
    without ``--cache``, which fetch into the default cache, not DIR."""
    from longred_bench.cli import main

    cache = tmp_path / "my cache"
    cache.mkdir()
    assert main(["data", "verify", "--cache", str(cache), "--sources", "brown"]) == 1
    out = capsys.readouterr().out
    assert f"run `longred-bench data fetch --cache '{cache}' --sources brown`" in out
    entry = cache / "corpora" / "brown"
    entry.mkdir(parents=True)
    (entry / "manifest.json").write_text("{not json")
    assert main(["data", "list", "--cache", str(cache)]) == 0
    assert f"`longred-bench data fetch --cache '{cache}' --sources brown --force`" in (
        capsys.readouterr().out
    )


def test_the_fingerprint_tells_documents_apart_not_only_their_joined_text() -> None:
    """The same characters split into other documents are other data (other rows, windows)."""
    from longred_bench.data.local_corpora import texts_fingerprint

    assert texts_fingerprint(["ab", "c"]) != texts_fingerprint(["a", "bc"])
    assert texts_fingerprint(["ab", "c"]) == texts_fingerprint(["ab", "c"])
    assert texts_fingerprint(["ab", "c"]) != texts_fingerprint(["c", "ab"])  # in order


@pytest.mark.parametrize(
    ("make", "spec", "said"),
    [
        (lambda d: (d / "books").mkdir(), "txt:{d}/books",
         "folder {d}/books holds no .txt file"),
        (lambda d: (d / "web.jsonl").write_text('\n{"content": "a"}\n'), "jsonl:{d}/web.jsonl",
         "{d}/web.jsonl line 2 has no string field 'text' (it has: content); name the text "
         "field with :field=NAME"),
        (lambda d: (d / "web.jsonl").write_text("{not json\n"), "jsonl:{d}/web.jsonl",
         "{d}/web.jsonl line 1 is not JSON"),
        (lambda d: (d / "web.jsonl").write_text("\n\n"), "jsonl:{d}/web.jsonl",
         "{d}/web.jsonl holds no document (every line is blank)"),
        # a fallback's member too
        (lambda d: (d / "books").mkdir(), "hf:org/data|txt:{d}/books",
         "folder {d}/books holds no .txt file"),
    ],
)  # fmt: skip
def test_local_data_not_of_its_form_is_refused_by_its_first_document(
    tmp_path: Path, make, spec: str, said: str
) -> None:
    """An empty folder or a JSONL file without its text field passed every plan and dry run
    (they check that the path exists) and was refused once the units before the training had
    run; its first document is read now, as the reader reads it."""
    make(tmp_path)
    spec = spec.format(d=tmp_path)
    with pytest.raises(UserError) as caught:
        check_local_paths(spec)
    assert str(caught.value).endswith(said.format(d=tmp_path))


def test_local_data_of_its_form_passes_reading_only_its_first_record(tmp_path: Path) -> None:
    """A good first record passes; the rest is left to the run (a later bad line is its
    reader's to refuse, naming that line)."""
    (tmp_path / "web.jsonl").write_text('{"body": "a"}\n{"other": 1}\n')
    (tmp_path / "books").mkdir()
    (tmp_path / "books" / "a.txt").write_text("text")
    check_local_paths(f"jsonl:{tmp_path}/web.jsonl:field=body+txt:{tmp_path}/books")


def test_a_saved_dataset_without_its_split_or_column_is_refused_by_its_schema(tmp_path):
    """A ``save_to_disk`` folder is checked by its splits and columns, no row read."""
    datasets = pytest.importorskip("datasets")
    data = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"content": ["a"]})})
    data.save_to_disk(str(tmp_path / "saved"))
    with pytest.raises(UserError, match="has no column 'text' \\(it has: content\\)"):
        check_local_paths(f"disk:{tmp_path}/saved")
    with pytest.raises(UserError, match="has splits train, not 'test'"):
        check_local_paths(f"disk:{tmp_path}/saved:field=content:split=test")
    check_local_paths(f"disk:{tmp_path}/saved:field=content")
