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


def test_callers_fetching_together_download_each_source_once(tmp_path, monkeypatch, capsys):
    """Array tasks that start together each found the source missing and downloaded it: the
    second now waits on the cache's fetch lock, then finds it cached and fetches nothing."""
    import threading
    import time

    from longred_bench.data import fetch as fetch_module
    from longred_bench.reproduce.sources import fetch_missing

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    fetched: list[list[str]] = []
    present: set[str] = set()

    def slow_fetch(names, *args, **kwargs):
        fetched.append(list(names))
        time.sleep(0.4)  # the other caller arrives during the download
        present.update(names)
        return []

    monkeypatch.setattr(fetch_module, "fetch", slow_fetch)
    monkeypatch.setattr("longred_bench.reproduce.sources.missing_sources",
                        lambda names: [n for n in names if n not in present])  # fmt: skip
    callers = [threading.Thread(target=fetch_missing, args=(["brown"],)) for _ in range(2)]
    for c in callers:
        c.start()
        time.sleep(0.1)
    for c in callers:
        c.join(timeout=30)
    assert fetched == [["brown"]]
    assert "waiting for it" in capsys.readouterr().out


def test_data_fetch_waits_for_a_fetch_into_the_same_cache(tmp_path, monkeypatch):
    """``data fetch`` holds the same lock: a second call waits for the first to end."""
    import argparse
    import threading
    import time

    from longred_bench.cache import fetch_lock
    from longred_bench.jobs import data

    order: list[str] = []
    monkeypatch.setattr(data, "fetch", lambda *a, **k: order.append("second") or [])
    args = argparse.Namespace(sources=["brown"], from_dir=None, cache=tmp_path, force=False)
    with fetch_lock(tmp_path):
        second = threading.Thread(target=data.run_fetch, args=(args,))
        second.start()
        time.sleep(0.3)
        order.append("first")
    second.join(timeout=10)
    assert order == ["first", "second"]
