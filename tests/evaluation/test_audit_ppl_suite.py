"""``eval --suite ppl`` around :func:`run_position_ppl`: the settings each length is measured at,
the order of its records, the records kept per finished length (an interrupted suite resumes)
and when kept records are not reused; and the corpus a run reads and records."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import torch

from longred_bench.evaluation import ppl
from longred_bench.evaluation.config import EvalConfig


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Each call of ``run_position_ppl`` the suite makes, with a one-record answer."""
    calls: list[dict[str, Any]] = []

    def fake(model_spec: str, **kwargs: Any) -> list[dict[str, Any]]:
        calls.append({"model": model_spec, **kwargs})
        return [{"kind": "ppl", "length": kwargs["length"], "corpus": kwargs["corpus"]}]

    monkeypatch.setattr(ppl, "run_position_ppl", fake)
    return calls


def _suite(**kwargs: Any) -> list[dict[str, Any]]:
    args: dict[str, Any] = {"rope": None, "lengths": [64], "samples": None, "corpus": None,
                            "batch_size": 1, "device": "cpu", "progress": False}  # fmt: skip
    return ppl.run_ppl_suite("tiny-random", **{**args, **kwargs})


def test_each_length_is_measured_once_in_increasing_order_at_its_bucket(measured) -> None:
    records = _suite(lengths=[16384, 64, 4096], samples=3, corpus="kjv:test")
    assert [c["length"] for c in measured] == [64, 4096, 16384]
    assert [c["bucket"] for c in measured] == [8, 512, 1024]  # ppl_bucket of each length
    assert {(c["num_windows"], c["corpus"]) for c in measured} == {(3, "kjv:test")}
    assert [r["length"] for r in records] == [64, 4096, 16384]
    assert {r["suite"] for r in records} == {"ppl"}


def test_the_defaults_are_8_windows_of_austen(measured) -> None:
    _suite()
    ((call),) = measured
    assert (call["num_windows"], call["corpus"]) == (8, "austen")


def test_a_finished_length_is_read_back_not_measured_again(measured, tmp_path: Path) -> None:
    first = _suite(lengths=[64, 128], samples=2, done_dir=tmp_path)
    assert len(measured) == 2 and len(list(tmp_path.iterdir())) == 2
    again = _suite(lengths=[64, 128], samples=2, done_dir=tmp_path)
    assert len(measured) == 2 and again == first  # nothing measured: the kept records
    _suite(lengths=[64, 256], samples=2, done_dir=tmp_path)
    assert [c["length"] for c in measured[2:]] == [256]  # only the new length is measured


def test_kept_records_of_another_window_count_or_corpus_are_not_reused(
    measured, tmp_path: Path
) -> None:
    _suite(samples=2, corpus="kjv", done_dir=tmp_path)
    _suite(samples=4, corpus="kjv", done_dir=tmp_path)  # other windows: other numbers
    _suite(samples=2, corpus="austen", done_dir=tmp_path)
    assert [(c["num_windows"], c["corpus"]) for c in measured] == [
        (2, "kjv"), (4, "kjv"), (2, "austen")
    ]  # fmt: skip


def test_a_local_text_replaced_at_its_path_is_measured_again(measured, tmp_path: Path) -> None:
    text = tmp_path / "text.txt"
    text.write_text("some words. " * 40)
    os.utime(text, ns=(10**9, 10**9))
    done = tmp_path / "done"
    _suite(corpus=str(text), done_dir=done)
    _suite(corpus=str(text), done_dir=done)
    assert len(measured) == 1
    text.write_text("other words! " * 40)
    os.utime(text, ns=(2 * 10**9, 2 * 10**9))
    _suite(corpus=str(text), done_dir=done)
    assert len(measured) == 2
    assert all(json.loads(p.read_text()) for p in done.iterdir())


def test_an_eval_config_runs_at_its_own_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}
    monkeypatch.setattr(ppl, "run_ppl_suite", lambda model, **kw: seen.update(model=model, **kw))
    cfg = EvalConfig(model="tiny-random", suite="ppl", rope="pi:factor=2", lengths=(128, 64),
                     samples=3, corpus="kjv", batch_size=2, dtype="bfloat16")  # fmt: skip
    ppl.run_ppl_config(cfg, progress=False)
    assert seen["model"] == "tiny-random" and seen["rope"] == "pi:factor=2"
    assert (seen["lengths"], seen["samples"], seen["corpus"]) == ([128, 64], 3, "kjv")
    assert (seen["batch_size"], seen["dtype"]) == (2, "bfloat16")


def test_a_bare_corpus_name_reads_and_records_its_all_split(monkeypatch) -> None:
    """``kjv`` is measured on every book (``kjv:all``), and each record says so."""
    asked: list[str] = []

    def windows(tokenizer: Any, source: str, num: int, length: int, **_: Any) -> torch.Tensor:
        asked.append(source)
        return torch.randint(0, len(tokenizer), (num, length), generator=torch.Generator())

    monkeypatch.setattr(ppl, "token_windows", windows)
    records = ppl.run_position_ppl(
        "tiny-random", corpus="kjv", length=32, num_windows=2, bucket=16, progress=False
    )
    assert asked == ["kjv:all"]
    assert {r["corpus"] for r in records} == {"kjv:all"}
    assert [r["n_tokens"] for r in records] == [2 * 15, 2 * 16]
