"""The engine's order of work and what it says of it: the worker pool starts the costliest units
first (a long training run started last keeps every worker but one idle at the end), tiny-base
is built before any unit where one unit of a partly cached table is still to compute, an output
folder holding another profile's report is refused before anything is fetched or built, and a
duration that rounds to a minute reads as one."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from longred_bench.reproduce.pool import Unit, longest_first


def _noop() -> None:
    """A unit's function (the order is what is tested)."""


def test_the_costliest_units_come_first_and_ties_keep_their_order() -> None:
    costs = (("eval", 0.1), ("cpt", 1.0), ("drift", 0.1), ("merge", 2.0))
    units = [Unit(_noop, (), label, cost=cost, key=label) for label, cost in costs]
    assert [u.label for u in longest_first(units)] == ["merge", "cpt", "eval", "drift"]


def test_tiny_base_is_built_first_where_any_unit_is_to_compute(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A second call of a table whose units are cached but one (a new extension, a unit
    deleted): tiny-base, not in this cache, is built first with the call's progress, not by
    that unit with its own bars."""
    import longred_bench.jobs.limits as limits
    import longred_bench.jobs.tiny_base as tiny_base
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.engine import build_tiny_base_first

    calls: list[dict] = []
    monkeypatch.setattr(tiny_base, "tiny_base_dir", lambda **kw: calls.append(kw))
    monkeypatch.setattr(limits, "tiny_base_built", lambda: False)

    def step(cached):
        return SimpleNamespace(unit=SimpleNamespace(cached=lambda: cached, kind="eval"))

    tiny = load_profile("tiny")
    build_tiny_base_first(tiny, [step("cached"), step(None), step("cached")], force=False,
                          progress=False)  # fmt: skip
    assert calls == [{"progress": False}]
    build_tiny_base_first(tiny, [step("cached"), step("cached")], force=False, progress=False)
    assert calls == [{"progress": False}]  # nothing to compute: nothing built
    build_tiny_base_first(tiny, [step("cached")], force=True, progress=True)  # --force: again
    assert calls == [{"progress": False}, {"progress": True}]


def test_another_profiles_report_is_refused_before_any_fetch_or_build(
    tmp_path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """``--out`` a folder of another profile's report at a tiny-base profile with an empty
    cache: refused at once, not after the data fetch and tiny-base's build (15 minutes)."""
    import longred_bench.jobs.limits as limits
    import longred_bench.jobs.tiny_base as tiny_base
    import longred_bench.reproduce.engine as engine
    from longred_bench.cli import main

    done: list[str] = []
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(engine, "fetch_missing", lambda *a, **kw: done.append("fetch"))
    monkeypatch.setattr(tiny_base, "tiny_base_dir", lambda **kw: done.append("build"))
    monkeypatch.setattr(limits, "tiny_base_built", lambda: False)
    out = tmp_path / "out"
    out.mkdir()
    (out / "table2.md").write_text("# LongReD Table 2 (profile `smol`)\n")
    mine = tmp_path / "mine.yaml"
    mine.write_text("extends: tiny\n")
    assert main(["reproduce", "table2", "--profile", str(mine), "--out", str(out)]) == 2
    assert "holds table2's report of profile smol" in capsys.readouterr().err
    assert done == []


def test_a_duration_that_reads_60_seconds_is_a_minute() -> None:
    """59.96 s rounds to 60.0: it reads ``1.0 min``, not ``60.0 s``."""
    from longred_bench.reproduce.pool import duration

    assert [duration(s) for s in (59.94, 59.96, 59.99)] == ["59.9 s", "1.0 min", "1.0 min"]
