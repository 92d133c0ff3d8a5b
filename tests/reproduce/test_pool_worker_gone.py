"""A worker process or the command's own process killed (``kill -9``, the out-of-memory killer)
while units run in worker processes: a dead worker stops the command with one line saying what
stopped and how to resume (it printed ``BrokenProcessPool``'s traceback), and workers whose
command's process is gone end (they waited for their next unit for good)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

SCRIPT = """
import os, sys, time
from pathlib import Path


def sleeper(path, seconds):
    Path(path + ".part").write_text(str(os.getpid()))
    os.replace(path + ".part", path)  # whole when the test reads it
    time.sleep(seconds)


if __name__ == "__main__":
    from longred_bench.errors import UserError
    from longred_bench.reproduce.pool import Unit, run_units_parallel

    units = [Unit(sleeper, (f"{sys.argv[1]}/{i}.pid", 300), f"u{i}", key=f"u{i}")
             for i in range(2)]  # fmt: skip
    try:
        run_units_parallel(units, 2, name="t", progress=False)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in state  # a zombie has stopped


def _started(tmp_path: Path) -> tuple[subprocess.Popen, list[int]]:
    script = tmp_path / "pooled.py"
    script.write_text(SCRIPT)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path)], cwd=tmp_path,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("*.pid"))) < 2 and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1]
        time.sleep(0.2)
    return proc, [int(p.read_text()) for p in sorted(tmp_path.glob("*.pid"))]


def _gone(pids: list[int], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not any(_alive(pid) for pid in pids)


def test_a_killed_worker_stops_the_command_with_one_line(tmp_path: Path) -> None:
    proc, pids = _started(tmp_path)
    try:
        os.kill(pids[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, err
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1, err
        assert lines[0].startswith(
            "error: a worker process ended while computing a unit (signal 9 (SIGKILL);"
        ), err
        assert "(u0; u1)" in lines[0] and "run the same command again to resume" in lines[0]
        assert _gone(pids, 20)  # the worker beside it ended too
    finally:
        for pid in [proc.pid, *pids]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_workers_end_when_the_commands_process_is_killed(tmp_path: Path) -> None:
    proc, pids = _started(tmp_path)
    try:
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=60)
        assert _gone(pids, 30), "a worker outlived the command's process"
    finally:
        for pid in [proc.pid, *pids]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
