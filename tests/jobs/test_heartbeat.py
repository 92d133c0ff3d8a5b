"""``--quiet`` progress: one line at least every heartbeat, read from what the command saved."""

from __future__ import annotations

import re
import time

import pytest

from longred_bench.jobs import heartbeat as hb


def test_a_line_comes_every_beat_and_none_when_disabled(monkeypatch, capsys) -> None:
    monkeypatch.setattr(hb, "HEARTBEAT_SECONDS", 0.05)
    done = iter(range(100))
    with hb.heartbeat(lambda: f"[job] {next(done)} done"):
        time.sleep(0.4)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) >= 3
    assert re.match(r"\[job\] 0 done; 0\.\d s so far", lines[0]), lines[0]
    with hb.heartbeat(lambda: "[job] never", enabled=False):
        time.sleep(0.2)
    assert capsys.readouterr().out == ""


def test_a_failing_description_does_not_stop_the_command(monkeypatch, capsys) -> None:
    monkeypatch.setattr(hb, "HEARTBEAT_SECONDS", 0.05)

    def broken() -> str:
        raise OSError("gone")

    with hb.heartbeat(broken):
        time.sleep(0.2)
    assert "(progress unreadable: OSError)" in capsys.readouterr().out


@pytest.mark.integration
def test_compare_quiet_prints_its_progress(tmp_path, monkeypatch, capsys, request) -> None:
    from data_helpers import ensure_cached

    from longred_bench import cli

    ensure_cached(request, "brown")
    # often enough to fall inside the original's NIAH unit, which takes about a second
    monkeypatch.setattr(hb, "HEARTBEAT_SECONDS", 0.1)
    argv = ["compare", "--original", "tiny-random", "--rope", "pi:factor=4", "--suites", "niah"]
    argv += ["drift", "--lengths", "1024", "--niah-depths", "0", "100", "--drift-num-texts", "2"]
    argv += ["--drift-seq-len", "64", "--out", str(tmp_path / "cmp"), "--quiet"]
    assert cli.main(argv) == 0
    lines = [
        x
        for x in capsys.readouterr().out.splitlines()
        if x.startswith("[compare]") and " unit(s) done" in x
    ]  # not its closing count
    assert lines, "no progress line under --quiet"
    assert any("of 3 unit(s) done; now original: niah" in x for x in lines)
    assert all("so far" in x for x in lines)


@pytest.mark.integration
def test_psa_quiet_prints_its_progress(tmp_path, monkeypatch, capsys, request) -> None:
    """psa --quiet printed nothing until its end (13 min at smol's documented run), and saves
    nothing when interrupted."""
    from data_helpers import ensure_cached

    from longred_bench import cli

    ensure_cached(request, "brown")
    monkeypatch.setattr(hb, "HEARTBEAT_SECONDS", 0.05)
    # as smollm2-135m, a zoo name standing for registry weights, whose report says what they are
    monkeypatch.setattr("longred_bench.data.sources.zoo_weights", lambda name: f"{name} weights")
    argv = ["psa", "--model", "tiny-random", "--rope", "none", "pi:factor=4", "--tasks",
            "niah_single_1", "--lengths", "512", "--samples", "3", "--out",
            str(tmp_path / "psa"), "--quiet"]  # fmt: skip
    assert cli.main(argv) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("[psa]")]
    assert lines, "no progress line under --quiet"
    assert all(" of 6 sample(s) scored; now " in x and "so far" in x for x in lines)
    report = (tmp_path / "psa" / "psa.md").read_text()
    assert " Model `tiny-random` (tiny-random weights)." in report


def test_the_compare_line_names_no_unit_once_the_last_one_finished(tmp_path) -> None:
    from longred_bench.jobs.compare import _Progress

    state = _Progress(total=3)
    state.start("original: ruler", cache=tmp_path / "requests")
    assert state.line() == (
        "[compare] 0 of 3 unit(s) done; now original: ruler, 0 model response(s) so far"
    )
    state.finish()
    assert state.line() == "[compare] 1 of 3 unit(s) done; now checking saved units"
    state.start("drift: pi:factor=4", partial=tmp_path / "models-x.partial.json")
    state.finish()
    assert state.line() == "[compare] 2 of 3 unit(s) done; now checking saved units"
