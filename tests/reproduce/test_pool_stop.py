"""SIGTERM (``kill``, a scheduler's cancel) to a command running units in worker processes ends
the workers too: none is left computing after the command has stopped, and nothing is printed of
what they held (a lock's semaphore that the resource tracker would call leaked)."""

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
    import multiprocessing

    lock = multiprocessing.RLock()  # as a tqdm bar in a unit makes one
    Path(path + ".part").write_text(str(os.getpid()))
    os.replace(path + ".part", path)  # whole when the test reads it
    time.sleep(seconds)


if __name__ == "__main__":
    from longred_bench.cli import sigterm_as_interrupt
    from longred_bench.reproduce.pool import Unit, run_units_parallel

    short = float(sys.argv[2]) if len(sys.argv) > 2 else 300  # u1's: its worker then idles
    units = [Unit(sleeper, (f"{sys.argv[1]}/{i}.pid", 300 if i == 0 else short), f"u{i}",
                  key=f"u{i}") for i in range(2)]  # fmt: skip
    try:
        with sigterm_as_interrupt():
            run_units_parallel(units, 2, name="t", progress=False)
    except KeyboardInterrupt:
        sys.exit(130)
"""


def _sigint_default() -> None:
    """As a terminal starts a command: Ctrl-C not ignored, even where this test run was started
    in the background of a shell without job control (which ignores SIGINT, and a child
    inherits that)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "\nState:\tZ" not in state  # a zombie has stopped


import pytest  # noqa: E402


@pytest.mark.parametrize("how", ["sigterm", "ctrl-c"])
def test_sigterm_and_ctrl_c_end_the_worker_processes_quietly(tmp_path: Path, how: str) -> None:
    """Ctrl-C in a terminal reaches every process of its group, the workers too: a worker idle
    after its unit printed multiprocessing's "Process SpawnProcess-1:" beside the interrupted
    line."""
    script = tmp_path / "pooled.py"
    script.write_text(SCRIPT)
    short = "300" if how == "sigterm" else "0.1"
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path), short], cwd=tmp_path,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_sigint_default)  # fmt: skip
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("*.pid"))) < 2 and time.monotonic() < deadline:
        assert proc.poll() is None, "the pool stopped before its units started"
        time.sleep(0.2)
    time.sleep(0.3)  # u1 done: its worker idles
    pids = [int(p.read_text()) for p in tmp_path.glob("*.pid")]
    try:
        assert len(pids) == 2 and all(_alive(pid) for pid in pids)
        if how == "sigterm":
            os.kill(proc.pid, signal.SIGTERM)
        else:  # as a terminal sends it: to the command's whole process group
            os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)  # the resource tracker has exited: it has spoken
        assert proc.returncode == 130
        assert err == "", err
        deadline = time.monotonic() + 20
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(pid) for pid in pids)
    finally:  # nothing left behind when the test fails
        for pid in [proc.pid, *pids]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def _fail_soon() -> None:
    time.sleep(0.5)
    raise ValueError("this unit fails")


def _finish_later(path: str) -> None:
    time.sleep(3.0)
    Path(path).write_text("finished")


def test_a_failing_unit_lets_the_unit_beside_it_finish(tmp_path: Path) -> None:
    """A unit's error stops the pool once the units running beside it are done (they stay
    cached); only Ctrl-C and SIGTERM end the workers at once."""
    import pytest

    from longred_bench.reproduce.pool import Unit, run_units_parallel

    done = tmp_path / "slow"
    units = [Unit(_finish_later, (str(done),), "slow", cost=2.0, key="s"),
             Unit(_fail_soon, (), "fails", cost=1.0, key="f")]  # fmt: skip
    with pytest.raises(ValueError, match="this unit fails"):
        run_units_parallel(units, 2, name="t", progress=False)
    assert done.read_text() == "finished"


FORKED = """
import multiprocessing as mp, signal, sys, time
from longred_bench.cli import sigterm_as_interrupt

with sigterm_as_interrupt():
    child = mp.get_context("fork").Process(target=time.sleep, args=(60,))
    child.start()
    time.sleep(0.5)
    child.terminate()  # as lm-eval's bootstrap pool ends its workers
    child.join(30)
    print(child.exitcode == -signal.SIGTERM)
"""


def test_a_process_forked_inside_the_command_dies_quietly_on_sigterm() -> None:
    out = subprocess.run([sys.executable, "-c", FORKED], capture_output=True, text=True,
                         timeout=120)  # fmt: skip
    assert out.returncode == 0 and out.stdout.split() == ["True"], out.stderr
    assert "Traceback" not in out.stderr and "KeyboardInterrupt" not in out.stderr


FAILING = """
import os, sys, time
from pathlib import Path


def sleeper(path):
    Path(path + ".part").write_text(str(os.getpid()))
    os.replace(path + ".part", path)  # whole when the test reads it
    time.sleep(300)


def fails(path):
    Path(path + ".part").write_text(str(os.getpid()))
    os.replace(path + ".part", path)  # whole when the test reads it
    time.sleep(1.0)
    raise ValueError("this unit fails")


if __name__ == "__main__":
    from longred_bench.cli import sigterm_as_interrupt
    from longred_bench.reproduce.pool import Unit, run_units_parallel

    units = [Unit(sleeper, (f"{sys.argv[1]}/s.pid",), "s", cost=2.0, key="s"),
             Unit(fails, (f"{sys.argv[1]}/f.pid",), "f", cost=1.0, key="f")]
    try:
        with sigterm_as_interrupt():
            run_units_parallel(units, 2, name="t", progress=False)
    except KeyboardInterrupt:
        sys.exit(130)
"""


def test_ctrl_c_while_the_pool_waits_beside_a_failed_unit_ends_it(tmp_path: Path) -> None:
    """A unit failed; the pool waited for the unit beside it to finish, and Ctrl-C in that wait
    left the command and both workers running until that unit ended (300 s here)."""
    script = tmp_path / "failing.py"
    script.write_text(FAILING)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path)], cwd=tmp_path,
                            stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_sigint_default)  # fmt: skip
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("*.pid"))) < 2 and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2.5)  # the failing unit has failed: the pool waits for the sleeper
    pids = [int(p.read_text()) for p in tmp_path.glob("*.pid")]
    try:
        os.killpg(proc.pid, signal.SIGINT)
        proc.communicate(timeout=60)
        assert proc.returncode == 130
        deadline = time.monotonic() + 20
        while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not any(_alive(pid) for pid in pids)
    finally:
        for pid in [proc.pid, *pids]:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


KEEPERS = """
import os, sys, time
from pathlib import Path


def keeper(work):
    Path(work).mkdir(parents=True)
    (Path(work) / "drift.partial.json").write_text('{"texts": {"x": [[0], [0]]}}')
    Path(work + ".pid").write_text(str(os.getpid()))
    time.sleep(300)


if __name__ == "__main__":
    from longred_bench.cli.interrupt import _unit_now
    from longred_bench.jobs.in_progress import TRAINING_NOW
    from longred_bench.reproduce.pool import Unit, run_units_parallel

    units = [Unit(keeper, (f"{sys.argv[1]}/w{i}",), f"u{i}", key=f"u{i}",
                  keeps=("unit", Path(f"{sys.argv[1]}/w{i}"))) for i in range(2)]  # fmt: skip
    units.append(Unit(time.sleep, (300,), "t", cost=0.5, key="t",
                      keeps=("train", Path(sys.argv[1], "run"))))  # fmt: skip
    try:
        run_units_parallel(units, 3, name="t", progress=False)
    except KeyboardInterrupt:
        print(_unit_now())
        print(*TRAINING_NOW)
        sys.exit(130)
"""


def test_ctrl_c_names_the_work_each_worker_kept(tmp_path: Path) -> None:
    """Under ``--jobs`` the units run in workers: the interrupted line said nothing of the work
    they kept (model responses, drift windows, a training run's checkpoint), which the next call
    resumes from; it names each unit's now."""
    script = tmp_path / "keepers.py"
    script.write_text(KEEPERS)
    proc = subprocess.Popen([sys.executable, str(script), str(tmp_path)], cwd=tmp_path,
                            stdout=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=_sigint_default)  # fmt: skip
    deadline = time.monotonic() + 120
    while len(list(tmp_path.glob("*.pid"))) < 2 and time.monotonic() < deadline:
        assert proc.poll() is None, "the pool stopped before its units started"
        time.sleep(0.2)
    time.sleep(1.0)  # the third worker has started its unit too
    try:
        os.killpg(proc.pid, signal.SIGINT)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130
    line, training = out.splitlines()
    assert line.startswith("the units in progress kept the drift of 2 window(s) in ")
    assert all(f"the drift of 2 window(s) in {tmp_path / f'w{i}'}" in line for i in range(2))
    assert training == str(tmp_path / "run")
