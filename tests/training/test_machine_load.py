"""``training.machine_load``: a training run's ``run.json`` carries the machine's 1-minute load
at the start and end of its call and the CPU count, or nothing where the system has no load
average."""

from __future__ import annotations

import os

import pytest

from longred_bench.training import machine_load
from longred_bench.training.machine_load import MachineLoad


def test_load_at_start_and_end(monkeypatch: pytest.MonkeyPatch) -> None:
    loads = iter([(0.5, 0.4, 0.3), (2.75, 1.0, 0.5)])
    monkeypatch.setattr(os, "getloadavg", lambda: next(loads))
    monkeypatch.setattr(os, "cpu_count", lambda: 16)
    load = MachineLoad()
    assert load.info() == {"load_1min_start": 0.5, "load_1min_end": 2.75, "cpus": 16}


def test_nothing_where_there_is_no_load_average(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing() -> tuple[float, float, float]:
        raise OSError("no load average")

    monkeypatch.setattr(os, "getloadavg", missing)
    assert machine_load.load_1min() is None
    assert MachineLoad().info() == {}
