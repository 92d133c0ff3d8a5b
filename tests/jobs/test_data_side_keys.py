"""A training run whose data source has hub members and an offline fallback (``hf:...|austen+kjv``)
is keyed by the side it reads in its process: a run trained offline on the fallback is not taken
for one trained on the hub's rows (nor the other way round), the hub's rows once cached are the
hub's side everywhere, and a run keyed with the hub's rows never trains on the fallback."""

from __future__ import annotations

import pytest

from longred_bench.data import hub_corpora, source_documents
from longred_bench.data.source_documents import resolve_source
from longred_bench.errors import UserError
from longred_bench.jobs.units import train_key, unit_folder
from longred_bench.training.config import resolve_config

SPEC = "hf:org/books:field=body:docs=3|austen+kjv"


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(source_documents, "_CHOSEN", {})
    monkeypatch.setattr(source_documents, "_SAID", set())
    monkeypatch.setattr(hub_corpora, "_ENTRIES", {})


def test_a_run_on_the_fallback_is_another_run_than_one_on_the_hubs_rows(
    hub: dict, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    cfg = resolve_config("cpt", profile="smoke", overrides={"long_data": SPEC})
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")  # no hub, rows not cached: the fallback
    offline = train_key(cfg)
    assert resolve_source(SPEC).record["fallback"]["used"] == "austen+kjv"
    assert train_key(cfg) == offline  # decided once in a process
    _new_process(monkeypatch)
    monkeypatch.delenv("HF_DATASETS_OFFLINE")  # the hub answers: its rows
    online = train_key(cfg)
    assert online != offline
    assert resolve_source(SPEC).record["hub"][0]["revision"] == "abc123"  # now cached
    assert len(hub["revision"]) == 1  # the revision asked once in the process
    _new_process(monkeypatch)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")  # offline again, the rows cached: the hub's
    assert train_key(cfg) == online
    assert "hub" in resolve_source(SPEC).record
    capsys.readouterr()


def test_a_plain_source_keeps_its_key_and_an_evaluation_names_the_side(
    hub: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A source without a fallback adds nothing to a key; an evaluation keyed by a training
    source (Table 3's D1 variants) names the side as its run does."""
    plain = {"model": "tiny-random", "long_data": "austen+kjv"}
    assert unit_folder("t", plain) == unit_folder("t", {**plain})
    keyed = {"model": "tiny-random", "long_data": SPEC}
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    offline = unit_folder("t", keyed)
    _new_process(monkeypatch)
    monkeypatch.delenv("HF_DATASETS_OFFLINE")
    assert unit_folder("t", keyed) != offline


def test_a_run_keyed_with_the_hubs_rows_is_refused_the_fallback(
    hub: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hub answered when the run's key was made and stopped before its rows were read: the
    run stops in one line instead of training on the fallback under the hub's key."""
    import datasets

    cfg = resolve_config("cpt", profile="smoke", overrides={"long_data": SPEC})
    train_key(cfg)

    def stopped(*args, **kwargs):
        raise ConnectionError("reset")

    monkeypatch.setattr(datasets, "load_dataset", stopped)
    with pytest.raises(UserError, match="its key names the hub's rows") as exc:
        resolve_source(SPEC)
    assert len(str(exc.value).splitlines()) == 1 and "HF_DATASETS_OFFLINE=1" in str(exc.value)
