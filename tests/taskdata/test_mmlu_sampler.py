"""MMLU's few-shot sampler in ``tasks/utils.py``: the first ``n`` dev rows of the evaluated
row's own subject, read from a stand-in dev split (the real one is checked under
``--run-network`` in ``test_tasks.py``)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from longred_bench.taskdata import short_benchmarks

UTILS = Path(__file__).resolve().parents[2] / "tasks" / "utils.py"


@pytest.fixture
def sampler(monkeypatch: pytest.MonkeyPatch):
    dev = [{"subject": s, "question": f"{s} {i}"} for i in range(3) for s in ("anatomy", "law")]
    monkeypatch.setattr(short_benchmarks, "load_mmlu_all", lambda: {"dev": dev})
    spec = importlib.util.spec_from_file_location("longred_task_utils", UTILS)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.MMLUSubjectSampler([], rnd=0)


def test_the_first_dev_rows_of_the_evaluated_subject(sampler) -> None:
    rows = sampler.sample(2, eval_doc={"subject": "law", "question": "?"})
    assert [r["question"] for r in rows] == ["law 0", "law 1"]
    assert len(sampler.sample(3, eval_doc={"subject": "anatomy"})) == 3  # the whole pool
    assert sampler.sample(0, eval_doc=None) == []


def test_more_shots_than_dev_rows_or_no_row_is_an_error(sampler) -> None:
    with pytest.raises(ValueError, match="4 few-shot examples asked, 3 dev rows available"):
        sampler.sample(4, eval_doc={"subject": "anatomy"})
    with pytest.raises(ValueError, match="needs the evaluated row"):
        sampler.sample(1)
