"""What a run-cache unit keeps of an interrupted call's work (``partial/``) and when it is
reused: a plain call resumes from it, ``--force`` starts from nothing (the interrupted line of a
forced unit with an earlier result says no command resumes it), a unit whose code changed never
takes the old code's work, and a ``ppl`` unit keeps its finished lengths and says how many it
reuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from longred_bench.jobs import unit_compute, units
from longred_bench.jobs.units import PARTIAL, CachedUnit

RECORD = [{"kind": "eval", "task": "t", "metric": "acc", "value": 0.5}]


class _Work:
    """A stand-in of a unit's computation that leaves a mark in its work folder, then is
    interrupted (``cut``) or finishes; ``seen`` says, per call, whether the mark of an earlier
    call was there."""

    def __init__(self) -> None:
        self.seen: list[bool] = []
        self.cut = True

    def __call__(self, kind, config, progress, work: Path):
        mark = work / "kept"
        self.seen.append(mark.is_file())
        work.mkdir(parents=True, exist_ok=True)
        mark.write_text("a response")
        if self.cut:
            raise KeyboardInterrupt
        return RECORD


@pytest.fixture(autouse=True)
def _nothing_in_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    """The units these tests interrupt are not left named as in progress for other tests."""
    from longred_bench.jobs import in_progress

    monkeypatch.setattr(in_progress, "UNIT_NOW", [])


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> _Work:
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    fake = _Work()
    monkeypatch.setattr(unit_compute, "compute", fake)
    return fake


PPL = {"model": "tiny-random", "suite": "ppl", "lengths": [64, 128], "samples": 2,
       "corpus": "random", "item_scores": False}  # fmt: skip
"""A ppl unit's config, as Table 3's grid makes one (``item_scores`` only identifies it)."""


def _cut_ppl(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
             at: int | None) -> tuple[list[int], dict[str, int | None]]:  # fmt: skip
    """Perplexity measured per length into a list, and Ctrl-C as length ``cut["at"]`` starts
    (None: never), in a cache of its own."""
    import longred_bench.evaluation.ppl as ppl

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    measured: list[int] = []
    cut: dict[str, int | None] = {"at": at}

    def measure(model_spec, *, length, **kwargs):
        if length == cut["at"]:
            raise KeyboardInterrupt
        measured.append(length)
        return [{"kind": "ppl", "length": length, "nll": 1.0}]

    monkeypatch.setattr(ppl, "run_position_ppl", measure)
    return measured, cut


def _unit() -> CachedUnit:
    return CachedUnit("eval", "runs/t/unit", {"model": "tiny-random", "suite": "short"})


def test_a_plain_call_resumes_an_interrupted_ones_work_and_force_starts_anew(work) -> None:
    """``--force`` asks for the unit computed again from the start: an interrupted call's saved
    responses are not reused then, where a call without it does reuse them."""
    unit = _unit()
    with pytest.raises(KeyboardInterrupt):
        unit.run(progress=False)
    with pytest.raises(KeyboardInterrupt):
        unit.run(progress=False)  # a plain call finds the first one's work
    with pytest.raises(KeyboardInterrupt):
        unit.run(progress=False, force=True)  # --force: none of it
    assert work.seen == [False, True, False]
    work.cut = False
    assert [r["value"] for r in unit.run(progress=False)] == [0.5]
    assert not (unit.dir / PARTIAL).exists()  # gone once the result is swapped in


def test_an_interrupted_calls_work_is_not_taken_by_other_code(
    work, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The work an interrupted call kept was computed by the code of its day: once the unit's
    code changes (a fix in the harness), the unit is computed from the start, not finished from
    responses the old code gave; the same code still resumes."""
    unit = _unit()
    with pytest.raises(KeyboardInterrupt):
        unit.run(progress=False)
    with pytest.raises(KeyboardInterrupt):
        unit.run(progress=False)
    monkeypatch.setattr(units, "code_identity", lambda kind: {"code": "other code"})
    with pytest.raises(KeyboardInterrupt):
        unit.run(progress=False)
    assert work.seen == [False, True, False]


def test_a_ppl_unit_keeps_its_finished_lengths_and_says_it_reuses_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ``ppl`` unit interrupted after its first length keeps it: the interrupted line says
    so, and the next call measures only the second length and says what it reused."""
    from longred_bench.cli.interrupt import _unit_now

    measured, cut = _cut_ppl(tmp_path, monkeypatch, 128)
    unit = CachedUnit("ppl", "runs/t/ppl", PPL)
    with pytest.raises(KeyboardInterrupt):
        unit.run(progress=False)
    assert measured == [64]
    assert _unit_now().startswith("the unit in progress kept 1 model response(s) in ")
    cut["at"] = None
    capsys.readouterr()
    records = unit.run(progress=False)
    assert measured == [64, 128]  # the first length was not measured again
    assert "1 model response(s) an interrupted call saved are reused" in capsys.readouterr().out
    assert [r["length"] for r in records] == [64, 128]
    assert not (unit.dir / PARTIAL).exists()


def test_an_evaluation_unit_asks_for_the_per_document_records_it_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A unit whose config sets ``item_scores`` (Table 3's, PCD's) gets its per-document
    records from the harness, which is not given the key as an evaluation setting; its
    responses are kept in its work folder as they are computed."""
    from types import SimpleNamespace

    import longred_bench.evaluation.harness as harness
    import longred_bench.evaluation.lm as lm

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    asked: list[dict] = []

    def run_harness(cfg, model, *, progress, item_scores, request_cache):
        asked.append({"item_scores": item_scores, "cache": request_cache})
        return SimpleNamespace(records=RECORD)

    monkeypatch.setattr(harness, "run_harness", run_harness)
    monkeypatch.setattr(lm, "open_model", lambda cfg: None)
    base = {"model": "tiny-random", "suite": "ruler", "lengths": [1024], "samples": 1}
    for name, scores in (("items", True), ("plain", False)):
        unit = CachedUnit("eval", f"runs/t/{name}", {**base, "item_scores": scores})
        assert unit.run(progress=False)[0]["value"] == 0.5
    work = [a["cache"] for a in asked]
    assert [a["item_scores"] for a in asked] == [True, False]
    assert all(w.name == "requests" and w.parent.parent.name == PARTIAL for w in work)
    assert work[0].parent.parent.parent == tmp_path / "runs" / "t" / "items"


def test_work_a_forced_call_kept_of_a_unit_with_a_result_is_said_to_resume_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``--force`` a unit with an earlier result is computed again: interrupted, its work
    is resumed by no command (without ``--force`` the earlier result is taken, with it the unit
    starts again), and the interrupted line says so rather than "which the command resumes
    from"; a unit with no earlier result is resumed by the plain command, as the line says."""
    from longred_bench.cli.interrupt import _unit_now
    from longred_bench.jobs import in_progress

    measured, cut = _cut_ppl(tmp_path, monkeypatch, None)
    done, fresh = CachedUnit("ppl", "runs/t/done", PPL), CachedUnit("ppl", "runs/t/new", PPL)
    done.run(progress=False)  # an earlier result
    cut["at"] = 128
    with pytest.raises(KeyboardInterrupt):
        done.run(progress=False, force=True)
    line = _unit_now(forced=True)
    assert line.startswith(f"the unit computed again kept 1 model response(s) in {done.work}, "
                           "which no command resumes from (without --force")  # fmt: skip
    assert "which the command resumes from" in _unit_now()  # a plain call's line
    with pytest.raises(KeyboardInterrupt):
        fresh.run(progress=False, force=True)
    assert f"in {fresh.work}, which the command resumes from; " in _unit_now(forced=True)
    # what the line says: without --force the earlier result, with it from the start
    measured.clear()
    monkeypatch.setattr(in_progress, "UNIT_NOW", [])
    assert [r["length"] for r in done.run(progress=False)] == [64, 128] and measured == []
    assert not (done.dir / PARTIAL).exists()  # the forced call's work went with it
    with pytest.raises(KeyboardInterrupt):
        done.run(progress=False, force=True)
    assert measured == [64]  # measured again


def test_a_forced_calls_work_stays_while_another_process_computes_the_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The work an interrupted ``--force`` call left beside a result is removed by the next
    call that takes the result, but not while another call holds the unit (computing it)."""
    from longred_bench.cache import build_lock

    _, cut = _cut_ppl(tmp_path, monkeypatch, None)
    done = CachedUnit("ppl", "runs/t/done", PPL)
    done.run(progress=False)
    cut["at"] = 128
    with pytest.raises(KeyboardInterrupt):
        done.run(progress=False, force=True)
    assert (done.dir / PARTIAL).is_dir()
    with build_lock(done.dir):  # another call computing the unit again
        done.run(progress=False)
        assert (done.dir / PARTIAL).is_dir()
    done.run(progress=False)
    assert not (done.dir / PARTIAL).exists()


class _Clock:
    """``time.perf_counter`` of a machine where each computation takes ten seconds."""

    def __init__(self) -> None:
        self.now = 0.0

    def perf_counter(self) -> float:
        return self.now


def test_a_resumed_units_time_is_the_whole_units(work, monkeypatch: pytest.MonkeyPatch) -> None:
    """A unit finished from an interrupted call's work recorded only the last call's seconds,
    so a plan timed from it (and a report's compute time) read a fraction of the unit's."""
    clock = _Clock()
    monkeypatch.setattr(unit_compute, "time", clock)
    compute = unit_compute.compute

    def ten_seconds(*args):
        clock.now += 10.0
        return compute(*args)

    monkeypatch.setattr(unit_compute, "compute", ten_seconds)
    unit = _unit()
    for _ in range(2):
        with pytest.raises(KeyboardInterrupt):
            unit.run(progress=False)
    work.cut = False
    unit.run(progress=False)
    assert unit.seconds() == 30.0


def test_work_kept_without_its_time_leaves_the_units_time_unknown(
    work, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Work an older call kept without its time (killed outright): the unit's time is not
    recorded, rather than only the last call's; a unit with no kept work is timed whole."""
    clock = _Clock()
    monkeypatch.setattr(unit_compute, "time", clock)
    unit = _unit()
    with pytest.raises(KeyboardInterrupt):
        unit.run(progress=False)
    (unit.work / unit_compute.SPENT).unlink()
    work.cut = False
    unit.run(progress=False)
    assert unit.seconds() is None
    assert not (unit.dir / units.TIMING).exists()
    assert unit_compute.spent_before(unit.work) == 0.0  # the work went with the result
