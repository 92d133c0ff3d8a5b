"""Ctrl-C on each long command (eval, drift, compare, train): one line saying what was saved and
how to resume, exit status 130 (143 for SIGTERM), and the same command run again resumes from
what was saved, computing only the rest and ending with what an uninterrupted run gives.

In-process, Ctrl-C is a ``KeyboardInterrupt`` raised at a chosen point (what Python's SIGINT
handler does); one test sends a real SIGINT to a ``longred-bench`` process."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from data_helpers import ensure_cached
from interrupt_helpers import (
    Interrupt,
    bare_records,
    patch_responses,
    written_as_declared,
)

from longred_bench import cli

RULER = ["--suite", "ruler", "--lengths", "1024", "--samples", "2", "--tasks"]
RULER += ["longred_ruler_niah_single_1", "longred_ruler_niah_single_2", "--quiet"]


class _Failing:
    """A wrapped function that fails (a full disk) once it has run."""

    def __init__(self, real) -> None:
        self.real = real

    def __call__(self, *args, **kwargs):
        self.real(*args, **kwargs)
        raise RuntimeError("disk full")


def _one_line(err: str) -> str:
    """The interrupt's line, the only one besides transformers' warning that generation runs
    past the model's window (the long suites do that on purpose)."""
    lines = [line for line in err.splitlines() if line.strip()]
    lines = [line for line in lines if not line.startswith("[transformers] This is a friendly")]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.integration
def test_eval_interrupted_resumes_from_its_saved_responses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, request
) -> None:
    ensure_cached(request, "brown")
    whole = tmp_path / "whole"
    counted = patch_responses(monkeypatch, None)
    assert cli.main(["eval", "--model", "tiny-random", *RULER, "--out", str(whole)]) == 0
    total = counted.calls
    assert total == 4  # two tasks x two samples
    monkeypatch.undo()
    capsys.readouterr()

    out = tmp_path / "cut"
    argv = ["eval", "--model", "tiny-random", *RULER, "--out", str(out)]
    patch_responses(monkeypatch, 3)
    assert cli.main(argv) == 130
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"interrupted: 3 model response(s) saved under {out / 'requests'}")
    assert line.endswith("resume with the same command: longred-bench " + " ".join(argv))
    assert not (out / "eval.jsonl").exists()
    monkeypatch.undo()

    again = patch_responses(monkeypatch, None)
    assert cli.main(argv) == 0
    assert again.calls == total - 3  # only the request not answered before
    # what is saved is counted, not claimed reused (another suite's or corpus's is not asked)
    assert "resuming: 3 model response(s)" in (said := capsys.readouterr().out)
    assert "; those this run asks again are reused, only the rest is computed" in said
    assert bare_records(out / "eval.jsonl") == bare_records(whole / "eval.jsonl")
    written_as_declared(out, "eval")


DRIFT = ["drift", "--original", "tiny-random", "--rope", "pi:factor=4", "abf:theta=1e6"]
DRIFT += ["--texts", "random", "--num-texts", "4", "--seq-len", "64", "--quiet"]


@pytest.mark.integration
def test_drift_interrupted_resumes_after_its_finished_windows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import longred_bench.metrics.drift as drift

    assert cli.main([*DRIFT, "--out", str(tmp_path / "whole")]) == 0
    out = tmp_path / "cut"
    cut = Interrupt(drift._text_sums, 5)  # two models a window: Ctrl-C in window 3
    monkeypatch.setattr(drift, "_text_sums", cut)
    capsys.readouterr()
    assert cli.main([*DRIFT, "--out", str(out)]) == 130
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"interrupted: the drift of 2 window(s) saved in {out}")
    monkeypatch.undo()

    again = Interrupt(drift._text_sums, None)
    monkeypatch.setattr(drift, "_text_sums", again)
    assert cli.main([*DRIFT, "--out", str(out)]) == 0
    assert "[drift] resuming after 2 of 4 windows" in capsys.readouterr().out  # --quiet too
    assert again.calls == 2 * 2  # the two windows left, for two models
    assert not (out / "drift.partial.json").exists()
    assert bare_records(out / "drift.jsonl") == bare_records(tmp_path / "whole" / "drift.jsonl")
    written_as_declared(out, "drift")


@pytest.mark.integration
def test_compare_interrupted_inside_a_unit_resumes_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys, request
) -> None:
    ensure_cached(request, "brown")
    out = tmp_path / "cmp"
    argv = ["compare", "--original", "tiny-random", "--rope", "pi:factor=4", "--suites", "niah"]
    argv += ["--lengths", "1024", "--niah-depths", "0", "50", "100", "--out", str(out), "--quiet"]
    counted = patch_responses(monkeypatch, 3 + 2)  # in the second unit (3 cells a unit)
    assert cli.main(argv) == 130
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(
        f"interrupted: 1 finished unit(s) under {out / 'runs'}, 2 model response(s) of the unit "
        "in progress saved; resume with the same command"
    )
    assert counted.calls == 5
    monkeypatch.undo()

    again = patch_responses(monkeypatch, None)
    assert cli.main(argv) == 0
    assert again.calls == 3 - 2
    assert "| pi:factor=4 |" in (out / "compare.md").read_text()
    written_as_declared(out, "compare")


@pytest.mark.integration
def test_train_interrupted_resumes_from_its_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import longred_bench.training.loop as loop

    out = tmp_path / "run"
    argv = ["train", "--recipe", "cpt", "--profile", "smoke", "--set", "steps=4"]
    argv += ["checkpoint_every=2", "--out", str(out), "--quiet"]
    monkeypatch.setattr(loop, "save_checkpoint", Interrupt(loop.save_checkpoint, 1))
    assert cli.main(argv) == 130
    line = _one_line(capsys.readouterr().err)
    assert line == (
        f"interrupted: checkpoint {out / 'checkpoints' / 'step-000002'} saved (step 2 of 4; "
        "the steps after it train again); resume with: "
        f"longred-bench {' '.join(argv)} --resume"
    )
    monkeypatch.undo()
    assert cli.main([*argv, "--resume"]) == 0
    steps = [json.loads(x)["step"] for x in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4]
    # under --quiet too, as eval and drift say what they reuse
    assert f"resuming {out} from step-000002: step 2 of 4" in capsys.readouterr().out
    (out / "final" / "config.json").unlink()  # unfinished again: it resumes, and says so
    assert cli.main([*argv[:-1], "--resume"]) == 0
    assert f"resuming {out} from step-000004: step 4 of 4" in capsys.readouterr().out
    assert (out / "final" / "config.json").is_file()
    written_as_declared(out, "train")


@pytest.mark.integration
def test_compare_interrupted_in_drift_counts_its_own_windows_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Another call's saved windows (other settings) stay beside this call's, for that call to
    resume: the line counted them as this call's."""
    import longred_bench.metrics.drift as drift

    out = tmp_path / "cmp"
    argv = ["compare", "--original", "tiny-random", "--rope", "pi:factor=4", "--suites", "drift"]
    argv += ["--drift-texts", "random", "--drift-num-texts", "4", "--out", str(out), "--quiet"]
    monkeypatch.setattr(drift, "_text_sums", Interrupt(drift._text_sums, 3))  # 2 windows kept
    assert cli.main([*argv, "--drift-seq-len", "64"]) == 130
    assert "the drift of 2 window(s)" in _one_line(capsys.readouterr().err)
    monkeypatch.setattr(drift, "_text_sums", Interrupt(drift._text_sums.real, 2))  # 1 window
    assert cli.main([*argv, "--drift-seq-len", "32"]) == 130
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(f"interrupted: 0 finished unit(s) under {out / 'runs'}, the drift of "
                           "1 window(s) saved; resume with the same command")  # fmt: skip
    assert len(list((out / "runs" / "drift").glob("*.partial.json"))) == 2  # both kept


@pytest.mark.integration
def test_a_real_ctrl_c_prints_one_line_and_no_traceback(tmp_path: Path) -> None:
    out = tmp_path / "drift"
    argv = [*DRIFT[:6], "--texts", "random", "--num-texts", "200", "--seq-len", "64"]
    argv += ["--out", str(out), "--quiet"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "longred_bench", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1"},
        # as a terminal starts a command: Ctrl-C not ignored, even where this test run was
        # started in the background of a shell without job control (which ignores SIGINT)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    deadline = time.monotonic() + 120
    while not (out / "drift.partial.json").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    line = _one_line(err)
    assert line.startswith("interrupted: the drift of ") and "Traceback" not in err


def test_trains_progress_bar_closes_before_the_interrupted_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """The bar was closed only when collected, after the line: its last redraw came below it,
    and the command that resumes was no longer the last line."""
    import longred_bench.training.loop as loop

    argv = ["train", "--recipe", "cpt", "--profile", "smoke", "--set", "steps=4",
            "checkpoint_every=2", "--out", str(tmp_path / "run")]  # fmt: skip
    monkeypatch.setattr(loop, "save_checkpoint", Interrupt(loop.save_checkpoint, 1))
    assert cli.main(argv) == 130
    import gc

    gc.collect()  # whatever was left to close, closed
    err = capsys.readouterr().err
    assert "train cpt" in err  # the bar was drawn
    last = [line for line in err.replace("\r", "\n").splitlines() if line.strip()][-1]
    assert last.startswith("interrupted: checkpoint "), err[-1000:]


def test_under_torchrun_process_0_alone_says_how_to_resume_as_launched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """Every process printed the line, each naming ``longred-bench train ...``: one process,
    not the launch that was stopped."""
    from longred_bench.cli import train_command

    def stopped(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(train_command, "cmd_train", stopped)
    argv = ["train", "--recipe", "cpt", "--profile", "smoke", "--out", str(tmp_path / "run")]
    launches = (("2", "2", "torchrun --nproc-per-node 2"),
                ("16", "8", "torchrun --nnodes 2 --nproc-per-node 8"))  # fmt: skip
    for world, local, launch in launches:
        monkeypatch.setenv("WORLD_SIZE", world)
        monkeypatch.setenv("LOCAL_WORLD_SIZE", local)
        monkeypatch.setenv("RANK", "1")
        assert cli.main(argv) == 130
        assert capsys.readouterr().err == ""
        monkeypatch.setenv("RANK", "0")
        assert cli.main(argv) == 130
        assert _one_line(capsys.readouterr().err) == (
            "interrupted: no checkpoint was written yet; start again with: "
            f"{launch} -m longred_bench {' '.join(argv)}"
        )


def test_the_interrupted_line_starts_a_line_after_a_progress_bar(monkeypatch, capsys) -> None:
    """Off a terminal too (a log file), the line never continues a bar's last redraw."""
    from longred_bench.cli import commands

    def cut(args):
        print("\rdrift:  40%|####      | 2/5", end="", file=sys.stderr)
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "cmd_tasks_path", cut)
    assert cli.main(["tasks-path"]) == 130
    err = capsys.readouterr().err
    assert "2/5\ninterrupted: " in err


def test_sigterm_prints_the_same_line_and_exits_143(monkeypatch, capsys) -> None:
    """SIGTERM (``kill``, a scheduler's cancel) stops the command as Ctrl-C does, with the same
    line, but exits 128 + SIGTERM, as a terminated command does; Ctrl-C keeps 130."""
    from longred_bench.cli import commands

    def killed(args):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler runs before this ends
        raise AssertionError("SIGTERM did not stop the command")

    monkeypatch.setattr(commands, "cmd_tasks_path", killed)
    before = signal.getsignal(signal.SIGTERM)
    assert cli.main(["tasks-path"]) == 143
    assert capsys.readouterr().err.strip() == "interrupted: nothing was being saved"
    assert signal.getsignal(signal.SIGTERM) == before  # the handler before is back


def test_a_second_stop_while_the_line_is_written_is_ignored() -> None:
    """A terminal's Ctrl-C reaches nox (or any parent in the job) too, which sends its own
    SIGINT or SIGTERM: one landing while the line was written ended in a traceback instead (run
    in a process of its own: the old code's second SIGINT would stop the test session)."""
    code = (
        "import os, signal, sys\n"
        "from longred_bench import cli\n"
        "from longred_bench.cli import commands, interrupt\n"
        "def cut(args):\n    raise KeyboardInterrupt\n"
        "def line(args):\n"
        "    os.kill(os.getpid(), signal.SIGINT)\n    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    return 'interrupted: said whole'\n"
        "commands.cmd_tasks_path, interrupt.interrupted_line = cut, line\n"
        "handlers = [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)]\n"
        "rc = cli.main(['tasks-path'])\n"
        "print(rc, [signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)] == handlers)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert (done.stdout.strip(), done.stderr.strip()) == ("130 True", "interrupted: said whole")


@pytest.mark.parametrize("force", [False, True])
def test_an_interrupted_reproduce_names_the_command_that_reuses_its_units(
    monkeypatch, capsys, force
) -> None:
    """The same command reuses the finished units; under ``--force`` it would compute them all
    again, so the line gives the command without it, and says what that takes from the cache."""
    from longred_bench.reproduce import engine

    def cut(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(engine, "reproduce", cut)
    argv = ["reproduce", "table1", "--profile", "smoke", *(["--forc"] if force else [])]
    assert cli.main(argv) == 130
    line = capsys.readouterr().err.strip()
    plain = "longred-bench reproduce table1 --profile smoke"
    from longred_bench.cache import cache_dir

    assert f"kept in the run cache ({cache_dir() / 'runs'})" in line  # not "$LONGRED_CACHE"
    if force:
        assert f"reuse them with: {plain} (without --force" in line
    else:
        assert line.endswith(f"run the same command again to reuse them: {plain}")


def test_an_interrupted_training_unit_names_the_checkpoint_it_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """``reproduce --unit train_...`` stopped after a checkpoint said only that finished units
    are kept, as if the training were lost; it resumes from the checkpoint."""
    import longred_bench.training.loop as loop
    from longred_bench.jobs.in_progress import TRAINING_NOW

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    profile = tmp_path / "p.yaml"
    profile.write_text("extends: smoke\nruns: {overrides: {steps: 6, checkpoint_every: 2}}\n")
    argv = ["reproduce", "table3", "--profile", str(profile), "--quiet"]
    assert cli.main([*argv, "--list-units"]) == 0
    units = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    unit = next(u for u in units if u["kind"] == "train")
    monkeypatch.setattr(loop, "save_checkpoint", Interrupt(loop.save_checkpoint, 1))
    assert cli.main([*argv, "--unit", unit["id"]]) == 130
    line = _one_line(capsys.readouterr().err)
    run = tmp_path / unit["folder"]
    kept = run / "checkpoints" / "step-000002"
    assert line.startswith(
        f"interrupted: the training run in progress kept checkpoint {kept} (step 2 of 6; the "
        "steps after it train again), which the command resumes from; every finished unit"
    ), line
    TRAINING_NOW.clear()  # as the next command's process starts
    monkeypatch.setattr(loop, "save_checkpoint", _Failing(loop.save_checkpoint))
    with pytest.raises(RuntimeError, match="disk full"):  # a failure is no run in progress
        cli.main([*argv, "--unit", unit["id"]])
    assert TRAINING_NOW == []


def test_the_interrupt_line_counts_every_optimizer_step(tmp_path: Path) -> None:
    """A checkpoint's step is among all the run's steps (LongRecipe's replay included): its
    ``steps`` alone read "step 3 of 2"."""
    import yaml

    from longred_bench.cli.interrupt import _step_of
    from longred_bench.training.config import resolve_config

    cfg = resolve_config("longrecipe", profile="smoke", overrides={"steps": 2, "replay_steps": 2})
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict()))
    line = _step_of(tmp_path / "checkpoints" / "step-000003", tmp_path)
    assert line == "step 3 of 4; the steps after it train again"
    (tmp_path / "config.yaml").write_text("recipe: [")  # unreadable: no total, no crash
    assert _step_of(tmp_path / "step-000003", tmp_path) == "step 3; the steps after it train again"


def test_a_reader_that_stops_reading_ends_the_command_in_silence() -> None:
    """``longred-bench profiles | head -c 10``, ``reproduce ... --list-units | true``: the
    command ended in a BrokenPipeError traceback; now as a command SIGPIPE ends, status 141 and
    nothing on stderr."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        done = subprocess.run([sys.executable, "-m", "longred_bench", "profiles"], stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)  # fmt: skip
    finally:
        os.close(write)
    assert done.returncode == 141 and done.stderr == "", done.stderr[-2000:]


def test_a_broken_pipe_of_another_stream_is_not_silenced() -> None:
    """Only standard output's reader going away ends the command in silence: a broken pipe of
    a worker or a subprocess, with the output still read, is the failure it is (a traceback,
    status 1)."""
    code = ("import sys\nfrom longred_bench.cli import commands, main\n"
            "def broken(args):\n    raise BrokenPipeError(\"a worker's pipe\")\n"
            "commands.cmd_profiles = broken\nsys.exit(main(['profiles']))\n")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=120)  # fmt: skip
    assert done.returncode == 1 and "BrokenPipeError: a worker's pipe" in done.stderr


def test_a_progress_bar_left_open_closes_before_the_interrupted_line(monkeypatch, capsys) -> None:
    """lm-eval's bar, open when Ctrl-C stopped ``eval``, closed only when collected: its last
    redraw came below the interrupted line."""
    from tqdm import tqdm

    from longred_bench.cli import commands

    kept = []

    def cut(args):
        bar = tqdm(total=5, desc="Running generate_until requests", file=sys.stderr)
        bar.update(2)
        kept.append(bar)  # held, as lm-eval's frame holds its bar until the exit
        raise KeyboardInterrupt

    monkeypatch.setattr(commands, "cmd_tasks_path", cut)
    assert cli.main(["tasks-path"]) == 130
    kept.clear()
    import gc

    gc.collect()
    err = capsys.readouterr().err
    last = [line for line in err.replace("\r", "\n").splitlines() if line.strip()][-1]
    assert "Running generate_until" in err and last.startswith("interrupted: "), err
