"""Asking the hub for a dataset's commit and streaming its rows: a dataset or revision the hub
says does not exist is the user's error in one line, never taken for the hub not answering
(which would silently train on the offline fallback); the revision and split asked for are the
ones sent; and a source reads its hub side only where every hub member can be read."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from huggingface_hub import HfApi
from huggingface_hub.errors import RepositoryNotFoundError, RevisionNotFoundError

from longred_bench.data import hub_corpora
from longred_bench.data.corpus_spec import parse_member
from longred_bench.data.source_documents import resolve_source, source_read
from longred_bench.errors import UserError


def _hub_error(cls: type[Exception], message: str) -> Exception:
    """An instance of the hub client's ``cls`` saying ``message`` (built without an HTTP
    response, which only the client's own requests have)."""
    exc = cls.__new__(cls)
    Exception.__init__(exc, message)
    return exc


@pytest.fixture
def asked(monkeypatch: pytest.MonkeyPatch) -> list:
    """``HfApi.dataset_info`` answering sha ``f00d`` for ``org/books`` at any revision but
    ``nope``, refusing other datasets; each call's arguments are recorded."""
    calls: list = []

    def dataset_info(self, repo_id, *, revision=None, timeout=None, **kwargs):
        calls.append((repo_id, revision, timeout))
        if repo_id != "org/books":
            raise _hub_error(RepositoryNotFoundError, "404 Client Error. Repository Not Found")
        if revision == "nope":
            raise _hub_error(RevisionNotFoundError, "404 Client Error. Revision Not Found")
        return SimpleNamespace(sha="f00d")

    monkeypatch.setattr(HfApi, "dataset_info", dataset_info)
    return calls


def test_the_revision_asked_for_is_sent_and_its_commit_returned(asked: list) -> None:
    assert hub_corpora.hub_revision("org/books", "v2") == "f00d"
    assert hub_corpora.hub_revision("org/books", None) == "f00d"
    assert [(r, rev) for r, rev, _ in asked] == [("org/books", "v2"), ("org/books", None)]
    assert all(t == hub_corpora.REVISION_TIMEOUT_S for *_, t in asked)  # never waits forever


@pytest.mark.parametrize(
    ("dataset", "revision", "said"),
    [("org/books", "nope", "Revision Not Found"), ("org/bokos", None, "Repository Not Found")],
)
def test_a_missing_dataset_or_revision_is_the_users_error(
    asked: list, dataset: str, revision: str | None, said: str
) -> None:
    with pytest.raises(UserError, match=said) as info:
        hub_corpora.hub_revision(dataset, revision)
    assert dataset in str(info.value) and (revision or "default") in str(info.value)
    assert "\n" not in str(info.value)


def test_no_answer_is_the_hub_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    def dataset_info(self, repo_id, **kwargs):
        raise OSError("Network is unreachable")

    monkeypatch.setattr(HfApi, "dataset_info", dataset_info)
    with pytest.raises(hub_corpora.HubUnavailable, match="did not answer"):
        hub_corpora.hub_revision("org/books", None)


def test_a_wrong_revision_is_refused_not_replaced_by_the_fallback(
    asked: list, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    for name in hub_corpora.OFFLINE_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(hub_corpora, "_ANSWERED", {})
    with pytest.raises(UserError, match="Revision Not Found"):
        source_read("hf:org/books:revision=nope|austen+kjv")
    with pytest.raises(UserError, match="Revision Not Found"):
        resolve_source("hf:org/books:revision=nope|austen+kjv", network=False)


def test_the_split_and_commit_are_the_ones_streamed(hub: dict) -> None:
    member = parse_member(
        "hf:org/books:split=test:config=fr:field=body:revision=v3:docs=2", "long_data"
    )
    hub_corpora.hub_documents(member)
    assert hub["revision"] == [("org/books", "v3")]
    [(path, name, kwargs)] = hub["load"]
    assert (path, name) == ("org/books", "fr")
    assert kwargs["split"] == "test" and kwargs["revision"] == "abc123"
    assert kwargs["streaming"] is True


def test_a_source_reads_its_fallback_where_any_hub_member_cannot_be_read(
    hub: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    def revision(dataset: str, rev: str | None) -> str:
        if dataset == "org/late":
            raise hub_corpora.HubUnavailable("the hub did not answer (ReadTimeout)")
        return "abc123"

    monkeypatch.setattr(hub_corpora, "hub_revision", revision)
    spec = "hf:org/books:field=body:docs=2+hf:org/late:field=body:docs=2|austen+kjv"
    assert source_read(spec) == "austen+kjv"  # the first member answered, the second did not
    assert resolve_source(spec).record["fallback"]["used"] == "austen+kjv"
