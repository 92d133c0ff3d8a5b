"""The sources ``reproduce`` fetches before computing: RULER's QA tasks read ``benchmarks``
besides Brown, so a plan that scores them fetches it first (it stopped after training before)."""

from __future__ import annotations

from longred_bench.reproduce.sources import unit_sources


def test_ruler_qa_tasks_need_the_benchmarks_source() -> None:
    every = unit_sources("eval", {"suite": "ruler", "tasks": None})
    assert every >= {"brown", "benchmarks"}
    assert "benchmarks" in unit_sources("eval", {"suite": "ruler", "tasks": ["qa_2", "vt"]})
    needles = unit_sources("eval", {"suite": "ruler", "tasks": ["niah_single_1", "vt"]})
    assert needles == {"brown"}


def test_a_smoke_table_that_scores_ruler_qa_fetches_benchmarks() -> None:
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.registry import get_spec
    from longred_bench.reproduce.sources import needed_sources

    spec = get_spec("table6")
    steps = spec.steps(spec.resolve(load_profile("smoke"), progress=False))
    ruler = [s for s in steps if s.unit.config.get("suite") == "ruler"]
    assert ruler and "benchmarks" in needed_sources(steps)
