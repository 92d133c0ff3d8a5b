"""Hub corpora lookup without the network: which offline variables and values take the hub out,
where an ``hf:`` member's entry lives, that the hub is asked once per member and process (a
commit :func:`check_available` was given is the one streamed), what the availability checks
refuse with and without a cached entry, and that a cached entry read at the hub's own commit
warns of nothing. The hub is the ``hub`` fixture's (a fixed commit and rows)."""

from __future__ import annotations

import re

import pytest

from longred_bench.data import hub_corpora
from longred_bench.data.corpus_spec import Member, parse_member

SPEC = "hf:org/books:field=body:docs=2"


def _member() -> Member:
    return parse_member(SPEC, "long_data")


@pytest.mark.parametrize("name", hub_corpora.OFFLINE_VARS)
@pytest.mark.parametrize("value", ["1", "true", "TRUE", " Yes ", "on"])
def test_each_offline_variable_set_to_a_true_word_takes_the_hub_out(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str
) -> None:
    """Each of the offline variables, set to any spelling of a true word, is the reason."""
    for other in hub_corpora.OFFLINE_VARS:
        monkeypatch.delenv(other, raising=False)
    monkeypatch.setenv(name, value)
    assert hub_corpora.offline_reason() == f"{name} is set"


@pytest.mark.parametrize("value", ["", "0", "false", "no", "off"])
def test_an_offline_variable_set_to_a_false_word_leaves_the_hub_in(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """A variable set to ``0``, ``false`` and the like is not offline mode."""
    for name in hub_corpora.OFFLINE_VARS:
        monkeypatch.setenv(name, value)
    assert hub_corpora.offline_reason() is None


def test_an_entry_is_named_by_the_dataset_and_twelve_hex_digits(hub: dict) -> None:
    """``<cache>/hub_corpora/<org>--<name>-<12 hex digits>``: the dataset stays readable."""
    path = hub_corpora.entry_dir(_member())
    assert path.parent == hub_corpora.cache_dir() / "hub_corpora"
    assert re.fullmatch(r"org--books-[0-9a-f]{12}", path.name), path.name


def test_a_member_is_resolved_once_per_process(hub: dict) -> None:
    """A second lookup of the same member asks the hub nothing and streams nothing."""
    first = hub_corpora.hub_entry(_member())
    assert hub_corpora.hub_entry(_member()) is first
    assert len(hub["revision"]) == 1 and len(hub["load"]) == 1


def test_the_commit_check_available_was_given_is_streamed_without_asking_again(
    hub: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hub's answer to the availability check is the commit streamed: the hub is asked
    once, even where it has moved on meanwhile."""
    hub_corpora.check_available(_member())
    monkeypatch.setattr(hub_corpora, "hub_revision", lambda dataset, rev: "moved")
    entry = hub_corpora.hub_entry(_member())
    assert len(hub["revision"]) == 1
    assert entry.revision == "abc123" and hub["load"][0][2]["revision"] == "abc123"


def test_the_commit_check_available_was_given_is_taken_once(
    hub: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The answer kept by the availability check serves one lookup: a later one in a new
    process view (entries forgotten) asks the hub again."""
    hub_corpora.check_available(_member())
    hub_corpora.hub_entry(_member())
    monkeypatch.setattr(hub_corpora, "_ENTRIES", {})
    hub_corpora.hub_entry(_member())
    assert len(hub["revision"]) == 2


def test_a_cached_member_is_available_offline_without_asking_the_hub(
    hub: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cached entry is enough: offline mode refuses nothing, and the hub is not asked."""
    hub_corpora.hub_entry(_member())
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    hub_corpora.check_available(_member())
    hub_corpora.check_readable(_member())
    monkeypatch.delenv("HF_HUB_OFFLINE")
    hub_corpora.check_available(_member())
    assert len(hub["revision"]) == 1


def test_an_uncached_member_offline_is_unavailable_without_asking_the_hub(
    hub: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Offline and not cached: both checks name the member and the variable; no hub call."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    for check in (hub_corpora.check_available, hub_corpora.check_readable):
        with pytest.raises(hub_corpora.HubUnavailable) as info:
            check(_member())
        assert str(info.value) == "org/books is not cached and HF_DATASETS_OFFLINE is set"
    assert hub["revision"] == []


def test_check_readable_asks_nothing_of_an_uncached_member_online(hub: dict) -> None:
    """Online, the dry run's check passes an uncached member without asking the hub."""
    hub_corpora.check_readable(_member())
    assert hub["revision"] == [] and not hub_corpora.is_cached(_member())


def test_a_cached_entry_at_the_hubs_commit_warns_of_nothing(
    hub: dict, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """Read again with the hub still at the recorded commit: no word about deleting it."""
    hub_corpora.hub_entry(_member())
    monkeypatch.setattr(hub_corpora, "_ENTRIES", {})
    capsys.readouterr()
    again = hub_corpora.hub_entry(_member())
    assert again.revision == "abc123" and not again.offline
    assert capsys.readouterr().err == ""


def test_a_cached_entry_is_read_when_the_hub_does_not_answer(
    hub: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No answer from the hub, an entry cached: its rows are read, marked as read offline."""
    hub_corpora.hub_entry(_member())
    monkeypatch.setattr(hub_corpora, "_ENTRIES", {})

    def unreachable(dataset: str, rev: str | None) -> str:
        raise hub_corpora.HubUnavailable("the hub did not answer (ConnectError)")

    monkeypatch.setattr(hub_corpora, "hub_revision", unreachable)
    entry = hub_corpora.hub_entry(_member())
    assert (entry.revision, entry.offline, entry.documents) == ("abc123", True, 2)
    assert len(hub["load"]) == 1


def test_an_uncached_member_the_hub_does_not_answer_for_names_why(
    hub: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No answer and nothing cached: unavailable, with the hub's reason in the message."""

    def unreachable(dataset: str, rev: str | None) -> str:
        raise hub_corpora.HubUnavailable("the hub did not answer (ConnectError)")

    monkeypatch.setattr(hub_corpora, "hub_revision", unreachable)
    with pytest.raises(hub_corpora.HubUnavailable) as info:
        hub_corpora.hub_entry(_member())
    assert str(info.value) == ("org/books is not cached and the hub did not answer (ConnectError)")


@pytest.mark.parametrize(
    ("message", "said"),
    [
        ("404 Client Error.\n\nRepository Not Found for url: https://x", "404 Client Error."),
        ("", "RepositoryNotFoundError"),
    ],
)
def test_a_missing_dataset_is_said_in_the_first_line_of_the_hubs_answer(
    monkeypatch: pytest.MonkeyPatch, message: str, said: str
) -> None:
    """The user's error keeps the first line of the hub client's message, or its type's name
    where the message is empty."""
    from huggingface_hub import HfApi
    from huggingface_hub.errors import RepositoryNotFoundError

    from longred_bench.errors import UserError

    def dataset_info(self, repo_id, **kwargs):
        exc = RepositoryNotFoundError.__new__(RepositoryNotFoundError)
        Exception.__init__(exc, message)
        raise exc

    monkeypatch.setattr(HfApi, "dataset_info", dataset_info)
    with pytest.raises(UserError) as info:
        hub_corpora.hub_revision("org/gone", None)
    assert str(info.value) == f"hub dataset 'org/gone' (revision default): {said}"
