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
