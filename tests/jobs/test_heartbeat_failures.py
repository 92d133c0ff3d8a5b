"""The ``--quiet`` heartbeat outlives a description that fails: whatever the failure, the beat
prints a line saying the progress was unreadable and describes again at the next beat."""

from __future__ import annotations

import time

import pytest

from longred_bench.jobs import heartbeat as hb


def test_any_failure_to_describe_is_a_line_and_the_beat_goes_on(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A description that fails otherwise than on a file (a half-written JSON file read while
    it is written, a key not there yet) is one line, and the next beat describes again: the
    heartbeat's thread died in a traceback and the command went on without a progress line."""
    monkeypatch.setattr(hb, "HEARTBEAT_SECONDS", 0.05)
    beats = iter(range(1000))

    def flaky() -> str:
        if next(beats) == 0:
            raise ValueError("Expecting value: line 1 column 1 (char 0)")
        return "[job] 1 unit done"

    with hb.heartbeat(flaky):
        time.sleep(0.4)
    out = capsys.readouterr().out
    assert "(progress unreadable: ValueError)" in out
    assert "[job] 1 unit done" in out
