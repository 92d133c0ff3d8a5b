"""The benchmark scripts on bad input and failures (unit): a user error is one line and status
2, as on the command line; a ``--device`` the machine lacks, counts that leave nothing to time,
head counts that do not divide, are refused before any work; a run whose every row failed, or
whose child process failed, exits non-zero and shows why; a report records its command line as
given."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from script_loader import load_script

from longred_bench.errors import UserError

common = load_script("bench_common")
train = load_script("bench_train")
kl_cpu = load_script("bench_relation_kl_cpu")
malloc = load_script("bench_malloc")
eval_bench = load_script("bench_eval")
drift_cost = load_script("bench_drift_cost")


def test_run_script_makes_a_user_error_one_line_and_status_2(capsys) -> None:
    def bad() -> int:
        raise UserError("model 'nosuch' is not a zoo name")

    with pytest.raises(SystemExit) as stop:
        common.run_script(bad)
    assert stop.value.code == 2
    assert capsys.readouterr().err == "error: model 'nosuch' is not a zoo name\n"
    for status, code in ((3, 3), ([Path("a.md")], 0), (None, 0)):
        with pytest.raises(SystemExit) as stop:
            common.run_script(lambda status=status: status)
        assert stop.value.code == code


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has a GPU")
def test_a_cuda_device_on_a_machine_without_one_is_refused_before_any_work(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(UserError, match="sees no CUDA device here; use --device cpu"):
        train.main(["--device", "cuda"])
    with pytest.raises(UserError, match="sees no CUDA device here"):
        eval_bench.main(["--device", "cuda"])
    monkeypatch.setattr("sys.argv", ["bench_drift_cost.py", "--device", "cuda"])
    with pytest.raises(UserError, match="sees no CUDA device here"):
        drift_cost.main()


@pytest.mark.parametrize(
    ("main", "argv", "message"),
    [
        (train.main, ["--steps", "1"], "--steps must be at least 2"),
        (train.main, ["--steps", "3", "--repeats", "0"], "--repeats must be at least 1"),
        (malloc.main, ["--steps", "1"], "--steps must be at least 2"),
        (kl_cpu.main, ["--repeats", "0"], "--repeats and every --lengths"),
        (kl_cpu.main, ["--lengths", "0"], "--repeats and every --lengths"),
        (kl_cpu.main, ["--heads", "3", "--kv-heads", "2"], r"--heads \(3\) must be a positive"),
    ],
)
def test_counts_that_leave_nothing_to_time_are_refused(main, argv, message, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    assert re.search(message, capsys.readouterr().err)


def test_drift_cost_refuses_a_window_of_no_tokens(monkeypatch, capsys) -> None:
    monkeypatch.setattr("sys.argv", ["bench_drift_cost.py", "--seq-len", "0"])
    with pytest.raises(SystemExit) as stop:
        drift_cost.main()
    assert stop.value.code == 2 and "--seq-len must be at least 2" in capsys.readouterr().err


def test_drift_cost_profile_prints_no_profiler_log(tmp_path) -> None:
    """Each profiled run printed torch's "USDT: ... profiler_start" / "profiler_stop" lines
    between the script's own; checked in a fresh process (the profiler reads its log level once
    per process)."""
    from script_loader import BENCHMARKS

    code = (
        "import sys; sys.path.insert(0, {d!r}); import runpy, torch; "
        "g = runpy.run_path({f!r}, run_name='bench'); "
        "print(sorted(g['profile_phases'](lambda: torch.ones(3).sum(), [])))"
    ).format(d=str(BENCHMARKS), f=str(BENCHMARKS / "bench_drift_cost.py"))
    env = {k: v for k, v in os.environ.items() if k != "KINETO_LOG_LEVEL"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=tmp_path, env=env)  # fmt: skip
    assert "wall" in out.stdout and "profiler_" not in out.stderr, out.stderr


def test_relation_kl_cpu_exits_1_and_writes_nothing_when_no_row_was_measured(
    tmp_path, monkeypatch, capsys
) -> None:
    """Every row failed, or naive was skipped and chunked failed: exit 1, and the report (the
    committed one at the default --out) is left as it was."""
    monkeypatch.setattr(kl_cpu, "measure", lambda spec, timeout: {"status": "failed: rc=1: boom"})
    argv = ["--lengths", "64", "--max-naive-gib", "0", "--out", str(tmp_path)]
    assert kl_cpu.main(argv) == 1
    err = capsys.readouterr().err
    assert "error: no row was measured (failed: rc=1: boom; skipped: would need" in err
    assert list(tmp_path.iterdir()) == []


def test_malloc_shows_why_its_child_failed(tmp_path, monkeypatch, capsys) -> None:
    def child(cmd, **kwargs):
        return subprocess.CompletedProcess(cmd, 1, stdout="", stderr="Traceback\nValueError: x")

    monkeypatch.setattr(malloc.subprocess, "run", child)
    assert malloc.main(["--steps", "2", "--repeats", "1", "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert "ValueError: x" in err and "LONGRED_MALLOC=default failed (exit 1)" in err


def test_bench_train_records_its_command_as_given(tmp_path, monkeypatch) -> None:
    def measure(recipe, extra, steps, scratch, run):
        return {"recipe": recipe, "tokens_per_step": 8192, "seconds_per_step": 1.0,
                "tokens_per_second": 8192.0, "rope": "pi:factor=2", "final_loss": 3.0,
                "device": "cpu", "dtype": "float32"}  # fmt: skip

    monkeypatch.setattr(train, "measure", measure)
    argv = ["--steps", "2", "--skip-memory", "--recipes", "cpt", "--out", str(tmp_path)]
    assert train.main(argv) == 0
    text = (tmp_path / "train_throughput.md").read_text()
    assert (
        f"`python benchmarks/bench_train.py --steps 2 --skip-memory --recipes cpt --out {tmp_path}`"
        in text
    )


def test_linear_ce_judges_its_target_on_a_lower_bound_where_plain_did_not_run(
    tmp_path, monkeypatch
) -> None:
    """The longest length's plain run would exceed --max-gib: the ratio against a shorter row's
    plain peak (a lower bound of its own) is judged. It was text compared with a number, a
    TypeError after the CSV was written."""
    linear_ce = load_script("bench_linear_ce")

    def measure(tokens, dim, vocab, impl, compare, threads):
        peak = float(tokens) if impl == "plain" else 10.0  # the plain peak grows with tokens
        diffs = dict.fromkeys(("loss_rel_diff", "grad_hidden_rel_diff", "grad_weight_rel_diff"), 0)
        return {"peak_mib": peak, "seconds": 1.0, **diffs}

    monkeypatch.setattr(linear_ce, "measure", measure)
    max_gib = 3 * 100 * 1000 * 4 / 2**30  # plain at 64 tokens fits, at 128 does not
    argv = ["--lengths", "64", "128", "--vocab", "1000", "--max-gib", str(max_gib)]
    assert linear_ce.main([*argv, "--out", str(tmp_path)]) == 0
    text = (tmp_path / "linear_ce_cpu.md").read_text()
    assert "1/4 of the plain one's: met (chunked / plain = <= 0.156 (plain at 64 tokens" in text
