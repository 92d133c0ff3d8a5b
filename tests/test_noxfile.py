"""The nox sessions' command lines (unit, with a session that records instead of running):
``reproduce`` adds ``--jobs 2`` only where the call runs a pool (``--rebuild`` refused it), and
a benchmark session given ``-- ARGS`` runs only the script they are for, so its other scripts do
not write over their committed reports; ``nox -l`` shows each session's whole first sentence."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import nox.command
import pytest
from script_loader import load_noxfile

ROOT = Path(__file__).resolve().parents[1]
noxfile = load_noxfile()


class Recorder:
    """Stands for a nox session: records each command it is asked to run."""

    def __init__(self, tmp: Path, posargs: list[str], codes: tuple[int, ...] = ()) -> None:
        self.tmp, self.posargs, self.runs, self.logs = tmp, posargs, [], []
        self.envs: list[dict[str, str] | None] = []
        self.installs: list[list[str]] = []
        self.codes = list(codes)  # the exit status of each command run, in turn (then 0)

    def create_tmp(self) -> str:
        return str(self.tmp)

    def install(self, *args: str, **kwargs: Any) -> None:
        self.installs.append(list(args))

    def run(self, *args: str, **kwargs: Any) -> str:
        self.runs.append(list(args))
        self.envs.append(kwargs.get("env"))
        code = self.codes.pop(0) if self.codes else 0
        if code:  # as nox does for an exit status not in ``success_codes``
            raise nox.command.CommandFailed(f"exit status {code}", return_code=code)
        return "True"  # torch.cuda.is_available(), where asked: a GPU machine

    def log(self, message: str) -> None:
        self.logs.append(message)

    def error(self, message: str) -> None:
        raise SessionFailed(message)


class SessionFailed(Exception):
    """``session.error``: the session fails with this message."""


def _run(tmp_path: Path, session: Any, posargs: list[str], **params: Any) -> Recorder:
    recorder = Recorder(tmp_path, posargs)
    session.func(recorder, **params)
    return recorder


@pytest.mark.parametrize(
    ("posargs", "jobs"),
    [([], True), (["--rebuild"], False), (["--profile", "smoke", "--rebuild"], False),
     (["--list-units"], False), (["--jobs", "1"], False), (["--dry-run"], True)],
)  # fmt: skip
def test_reproduce_adds_jobs_only_where_a_pool_runs(tmp_path, posargs, jobs) -> None:
    (command,) = _run(tmp_path, noxfile.reproduce, posargs, table="table3").runs
    assert command[:3] == ["longred-bench", "reproduce", "table3"]
    assert (command[-2:] == ["--jobs", "2"]) is jobs
    assert command.count("--jobs") <= 1


@pytest.mark.parametrize(
    ("session", "script", "others"),
    [("bench_eval", "bench_eval.py", ("bench_ruler_rate.py", "bench_pcd.py")),
     ("bench_train", "bench_train.py", ("bench_malloc.py",)),
     ("bench_kernels", "bench_relation_kl_cpu.py", ("bench_relation_kl_gpu.py",))],
)  # fmt: skip
def test_args_go_to_one_script_and_the_others_do_not_run(tmp_path, session, script, others):
    session = getattr(noxfile, session)
    given = _run(tmp_path, session, ["--out", str(tmp_path / "mine")])
    scripts = [Path(c[1]).name for c in given.runs if c[0] == "python" and c[1].endswith(".py")]
    assert scripts == [script] and given.runs[-1][-2:] == ["--out", str(tmp_path / "mine")]
    assert given.logs and "not run" in given.logs[-1]
    default = _run(tmp_path, session, [])
    ran = {Path(c[1]).name for c in default.runs if c[0] == "python" and c[1].endswith(".py")}
    assert script in ran and set(others) <= ran


def test_nox_lists_each_sessions_first_sentence_whole() -> None:
    out = subprocess.run([sys.executable, "-m", "nox", "-l", "-f", str(ROOT / "noxfile.py")],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    lines = [line for line in out.splitlines() if " -> " in line]
    assert len(lines) >= 10
    assert all(line.rstrip().endswith((".", ")")) for line in lines), lines


def test_torch_is_installed_first_from_the_index_given(tmp_path, monkeypatch) -> None:
    """PyPI's Linux wheel of the pinned torch is the CUDA build: ``$LONGRED_TORCH_INDEX`` adds an
    index (PyTorch's CPU wheels) for the torch install alone; unset, pip looks where it does."""
    monkeypatch.delenv("LONGRED_TORCH_INDEX", raising=False)
    plain = _run(tmp_path, noxfile.tests, []).installs
    assert plain[0][-1] == noxfile.TORCH_PIN and "--extra-index-url" not in plain[0]
    monkeypatch.setenv("LONGRED_TORCH_INDEX", "https://download.pytorch.org/whl/cpu")
    for session in (noxfile.tests, noxfile.tests_vllm):
        first, *rest = _run(tmp_path, session, []).installs
        assert first[-3:] == ["--extra-index-url", "https://download.pytorch.org/whl/cpu",
                              noxfile.TORCH_PIN]  # fmt: skip
        assert rest and all("--extra-index-url" not in r for r in rest)


def test_tests_runs_the_readmes_unit_tier_on_an_empty_cache_then_the_rest(tmp_path) -> None:
    """Pass 1 is the README's unit-tier command (GPU tests left out) on an empty cache, as a fresh
    clone runs it, writing the tests it skipped; pass 2 runs the integration tier and those tests
    with the cache; ``-- ARGS`` runs pytest once. CI runs this session."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    lines = [line.split("#", 1)[0] for line in readme if "# unit tier" in line]
    assert len(lines) == 1, "README.md names no unit-tier command (`... # unit tier ...`)"
    command = shlex.split(lines[0])
    (tmp_path / "empty-cache" / "corpora").mkdir(parents=True)  # left by an earlier call
    session = _run(tmp_path, noxfile.tests, [])
    (first, second), (env, env2) = session.runs, session.envs
    listed = str(tmp_path / "skipped-tests.txt")
    assert first[0] == command[0] == "pytest"
    assert first[first.index("-m") + 1] == f"not gpu and {command[command.index('-m') + 1]}"
    assert first[first.index("-n") + 1] == command[command.index("-n") + 1] == "auto"
    assert f"--write-skipped={listed}" in first and "--run-network" not in first
    assert env == {"LONGRED_CACHE": str(tmp_path / "empty-cache")}
    assert not any((tmp_path / "empty-cache").iterdir())
    assert f"--run-skipped={listed}" in second and "--run-network" in second
    assert second[second.index("-m") + 1] == "not gpu" and env2 is None
    assert _run(tmp_path, noxfile.tests, ["-x", "tests/test_cli.py"]).runs == [
        ["pytest", "-x", "tests/test_cli.py"]]  # fmt: skip
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert any(line.strip().endswith("nox -s tests") for line in ci if not line.startswith("#"))


@pytest.mark.parametrize(
    ("codes", "failed"),
    [((1, 0), ["pass 1"]), ((0, 1), ["pass 2"]), ((1, 1), ["pass 1", "pass 2"])],
)  # fmt: skip
def test_a_pass_with_failing_tests_does_not_stop_the_other(tmp_path, codes, failed) -> None:
    """Failing tests (pytest's exit status 1) in one pass leave the other to run, so that one
    call shows every failure; the session then fails naming the pass(es) that failed."""
    session = Recorder(tmp_path, [], codes)
    with pytest.raises(SessionFailed) as raised:
        noxfile.tests.func(session)
    assert len(session.runs) == 2 and "--run-skipped" in session.runs[1][-1]
    named = [p for p in ("pass 1", "pass 2") if p in str(raised.value)]
    assert named == failed


@pytest.mark.parametrize("code", [2, 3, 4, 5])
def test_an_interrupted_or_broken_first_pass_stops_the_session(tmp_path, code) -> None:
    """Interrupted (2), an internal (3) or usage (4) error, or no tests collected (5): nothing
    to go on with, and nox's own failure ends the session before pass 2."""
    session = Recorder(tmp_path, [], (code,))
    with pytest.raises(nox.command.CommandFailed):
        noxfile.tests.func(session)
    assert len(session.runs) == 1
