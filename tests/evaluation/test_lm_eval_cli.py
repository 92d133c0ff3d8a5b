"""``longred-lm-eval``, lm-eval's command line with this suite's models: a problem the suite
reports (here, benchmark data never fetched) ends in one line and exit status 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def test_missing_benchmark_data_is_one_line(tmp_path: Path) -> None:
    from longred_bench.evaluation.harness import tasks_dir
    from longred_bench.models.zoo import tiny_random

    model, tokenizer = tiny_random()
    model.save_pretrained(tmp_path / "model")
    tokenizer.save_pretrained(tmp_path / "model")
    script = Path(sys.executable).with_name("longred-lm-eval")
    argv = [str(script), "run", "--model", "hf", "--model_args", f"pretrained={tmp_path / 'model'}"]
    argv += ["--include_path", str(tasks_dir()), "--tasks", "longred_boolq", "--limit", "1"]
    env = {**os.environ, "LONGRED_CACHE": str(tmp_path / "empty"), "OMP_NUM_THREADS": "1"}
    run = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 2, run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("error: ")]
    assert errors == [
        f"error: benchmark data is not cached under {tmp_path / 'empty' / 'benchmarks'}; "
        "run `longred-bench data fetch --sources benchmarks`"
    ]


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (["--include_path", "{tasks}", "--tasks", "longred_shrt"],
         "error: unknown lm-eval task(s) longred_shrt; nearest: longred_short"),
        (["--tasks", "longred_short"],
         "error: lm-eval found no task longred_short: add --include_path "
         '"$(longred-bench tasks-path)" for this suite\'s tasks'),
        (["--include_path", "{tasks}", "--tasks", "longred_tiny_swap"],
         "error: lm-eval could not open the model ("),
    ],
)  # fmt: skip
def test_a_mistyped_task_or_model_is_one_line(tmp_path, monkeypatch, capsys, given, said):
    """lm-eval's traceback ended ``longred-lm-eval`` for a misspelled task, a task of this
    suite without ``--include_path``, and a ``pretrained=`` path that is no model."""
    from longred_bench.evaluation.harness import tasks_dir

    args = [a.replace("{tasks}", str(tasks_dir())) for a in given]
    argv = ["longred-lm-eval", "run", "--model", "hf", "--model_args",
            f"pretrained={tmp_path / 'nothing'}", "--limit", "1", *args]  # fmt: skip
    _stops_in_one_line(monkeypatch, capsys, argv, said)


def _stops_in_one_line(monkeypatch, capsys, argv: list[str], said: str) -> None:
    """``longred-lm-eval`` run as ``argv`` exits 2 with one ``error`` line starting ``said``."""
    from longred_bench.cli.lm_eval_entry import main

    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(errors) == 1 and errors[0].startswith(said), errors


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--model_args", "pretrained=tiny-random"],
         'error: no task to run: give --tasks NAME (this suite\'s with --include_path "$('),
        (["--model_args", "alpha=1.5", "--include_path", "{tasks}", "--tasks",
          "longred_tiny_swap"],
         "error: the model (PcdLM) needs pretrained: give --model_args pretrained=... (a model"),
    ],
)  # fmt: skip
def test_no_task_or_no_pretrained_is_one_line(monkeypatch, capsys, args, said) -> None:
    """lm-eval's ValueError and the model's TypeError ended ``longred-lm-eval`` in tracebacks."""
    from longred_bench.evaluation.harness import tasks_dir

    argv = ["longred-lm-eval", "run", "--model", "longred-pcd", "--limit", "1"]
    argv += [a.replace("{tasks}", str(tasks_dir())) for a in args]
    _stops_in_one_line(monkeypatch, capsys, argv, said)


def test_an_output_path_under_a_file_is_refused_before_any_task(tmp_path, monkeypatch, capsys):
    """lm-eval ran every task, logged that it could not save the results, and exited 0."""
    afile = tmp_path / "keep.txt"
    afile.write_text("kept")
    argv = ["longred-lm-eval", "run", "--model", "longred-pcd", "--model_args",
            "pretrained=tiny-random", "--tasks", "longred_tiny_swap", "--output_path"]  # fmt: skip
    said = f"error: --output_path {afile / 'x'}: {afile} is a file, so no folder can be made"
    _stops_in_one_line(monkeypatch, capsys, [*argv, str(afile / "x")], said)
    _stops_in_one_line(monkeypatch, capsys, [*argv[:-1], f"-o={afile / 'x'}"], said)
    assert afile.read_text() == "kept"


def test_an_empty_pretrained_is_refused_not_read_as_this_folder(tmp_path, monkeypatch, capsys):
    """``pretrained=$(longred-bench models --path tiny-base)`` with tiny-base not built leaves
    ``pretrained=`` empty: a model folder in the working directory was evaluated (exit 0)."""
    from longred_bench.cli.lm_eval_entry import main
    from longred_bench.evaluation.harness import tasks_dir
    from longred_bench.models.zoo import tiny_random

    model, tokenizer = tiny_random()
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    monkeypatch.chdir(tmp_path)
    argv = ["longred-lm-eval", "run", "--model", "longred-pcd", "--model_args",
            "pretrained=,alpha=1.5", "--include_path", str(tasks_dir()), "--tasks",
            "longred_tiny_swap", "--limit", "1"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert len(errors) == 1
    assert errors[0].startswith("error: --model_args pretrained=: a model spec is empty")


def test_a_model_arg_lm_eval_passes_itself_is_one_line(tmp_path, monkeypatch, capsys):
    """``batch_size=`` or ``device=`` in ``--model_args`` meet lm-eval's own flag's value: a
    TypeError traceback ("got multiple values"), now one line naming the flag to use."""
    from longred_bench.cli.lm_eval_entry import main
    from longred_bench.evaluation.harness import tasks_dir
    from longred_bench.models.zoo import tiny_random

    model, tokenizer = tiny_random()
    model.save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    argv = ["longred-lm-eval", "run", "--model", "longred-pcd", "--model_args",
            f"pretrained={tmp_path / 'm'},device=cpu", "--include_path", str(tasks_dir()),
            "--tasks", "longred_tiny_swap", "--limit", "1"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as stop:
        main()
    assert stop.value.code == 2
    errors = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error")]
    assert errors == ["error: --model_args device=... is given twice: lm-eval passes its own "
                      "--device (its default too); give --device on the command line instead of "
                      "in --model_args"]  # fmt: skip


@pytest.mark.parametrize(
    "given",
    [["--model_args", "pretrained=,alpha=1.5"], ["-a", "pretrained=,alpha=1.5"],
     ["--model_args", "alpha=1.5", "pretrained=", "--tasks", "t"], ["--model_args=pretrained="],
     ["--model_args", '{"pretrained": ""}']],
)  # fmt: skip
def test_an_empty_pretrained_is_refused_in_every_form_lm_eval_reads(given, capsys) -> None:
    """lm-eval reads ``--model_args`` as ``-a`` too, as one argument or several, or as JSON:
    an empty ``pretrained`` in any of them loaded the model in the working directory."""
    from longred_bench.cli.lm_eval_entry import check_pretrained

    with pytest.raises(SystemExit) as stop:
        check_pretrained(given)
    assert stop.value.code == 2 and "pretrained=: a model spec is empty" in capsys.readouterr().err
    check_pretrained(["-a", "pretrained=/m", "--tasks", "pretrained="])  # another flag's value


def test_the_pcd_model_refuses_an_empty_pretrained_from_python_too() -> None:
    from longred_bench.errors import UserError
    from longred_bench.pcd.lm import PcdLM

    with pytest.raises(UserError, match="pretrained= is empty"):
        PcdLM(pretrained="  ", alpha=1.5)


@pytest.mark.parametrize("command", [[], ["run"], ["ls"], ["validate"]])
def test_the_help_names_this_command_not_lm_evals_own(monkeypatch, capsys, command) -> None:
    """``longred-lm-eval run --help`` said ``usage: lm-eval run`` and gave lm-eval's examples:
    a command copied from it ran lm-eval's own command line, where ``longred-pcd`` is unknown."""
    import re

    from longred_bench.cli import lm_eval_entry

    monkeypatch.setattr(sys, "argv", ["longred-lm-eval", *command, "--help"])
    with pytest.raises(SystemExit) as stop:
        lm_eval_entry.main()
    out = capsys.readouterr().out
    assert stop.value.code == 0
    assert out.startswith("usage: longred-lm-eval ")
    assert re.findall(r"(?<![\w-])lm-eval(?= |$)", out, re.M) == [], out


@pytest.mark.parametrize(
    ("stop", "code", "cache", "said"),
    [
        (KeyboardInterrupt, 130, [], "lm-eval keeps nothing without --use_cache PATH"),
        ("terminated", 143, ["--use_cache", "c"], "the responses lm-eval finished are in its"),
    ],
)
def test_ctrl_c_ends_in_one_line_naming_what_lm_eval_kept(
    monkeypatch, capsys, stop, code, cache, said
) -> None:
    """Ctrl-C in ``longred-lm-eval run`` was a 23-frame KeyboardInterrupt traceback."""
    from longred_bench.cli import Terminated
    from longred_bench.cli.lm_eval_entry import main
    from longred_bench.evaluation import lm_eval_cli

    def stopped() -> None:
        raise Terminated if stop == "terminated" else KeyboardInterrupt

    argv = ["run", "--model", "longred-pcd", "--tasks", "longred_tiny_swap", *cache]
    monkeypatch.setattr(sys, "argv", ["longred-lm-eval", *argv])
    monkeypatch.setattr(lm_eval_cli, "main", stopped)
    with pytest.raises(SystemExit) as ended:
        main()
    assert ended.value.code == code
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"interrupted: {said}"), lines
    assert lines[0].endswith(f"run it again with: longred-lm-eval {' '.join(argv)}")
