"""Ctrl-C in a command's first seconds, while torch is being imported: torch is then half
imported and importing it again fails, yet the interrupted line still says what an earlier run
of the command kept (a checkpoint, finished drift windows) and how to resume, as it does later.

Each case runs in a fresh interpreter where ``import torch`` fails, as it does after such an
interrupt (this test process has imported torch already)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_LINE = """
import sys
sys.modules["torch"] = None  # "import torch" fails, as after an interrupt inside it
from longred_bench.cli import build_parser
from longred_bench.cli.interrupt import interrupted_line
args, _ = build_parser().parse_known_args(sys.argv[1:])
args.argv = sys.argv[1:]
print(interrupted_line(args))
"""


def _line(*argv: str) -> str:
    done = subprocess.run([sys.executable, "-c", _LINE, *argv], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_train_names_the_checkpoint_an_earlier_run_kept(tmp_path: Path) -> None:
    """It said "could not read what was saved (RuntimeError)" and gave no ``--resume``."""
    out = tmp_path / "run"
    step = out / "checkpoints" / "step-000002"
    step.mkdir(parents=True)
    for name in ("student.safetensors", "state.pt"):
        (step / name).write_bytes(b"x")
    line = _line("train", "--recipe", "cpt", "--profile", "smoke", "--out", str(out))
    assert line.startswith(f"interrupted: checkpoint {step} saved (step 2"), line
    assert line.endswith(f"--out {out} --resume"), line


def test_train_with_nothing_kept_says_so(tmp_path: Path) -> None:
    line = _line("train", "--recipe", "cpt", "--profile", "smoke", "--out", str(tmp_path / "r"))
    assert line.startswith("interrupted: no checkpoint was written yet; start again with:"), line


def test_drift_counts_the_windows_an_earlier_run_kept(tmp_path: Path) -> None:
    out = tmp_path / "drift"
    out.mkdir()
    texts = {"texts": {"abf:theta=1e5": [[0.0]] * 3, "pi:factor=4": [[0.0]] * 3}}
    (out / "drift.partial.json").write_text(json.dumps(texts))
    argv = ["drift", "--original", "tiny-random", "--rope", "abf:theta=1e5", "pi:factor=4"]
    line = _line(*argv, "--out", str(out))
    partial = out / "drift.partial.json"
    assert line.startswith(f"interrupted: the drift of 3 window(s) saved in {partial}"), line


def test_the_readers_agree_with_the_training_code(tmp_path: Path) -> None:
    """The interrupted line's checkpoint is the one a resume takes."""
    from longred_bench.jobs.in_progress import CHECKPOINT_FILES, kept_checkpoint
    from longred_bench.training import checkpoint

    assert CHECKPOINT_FILES == (checkpoint.WEIGHTS, checkpoint.STATE)
    root = tmp_path / "checkpoints"
    for step, files in ((1, CHECKPOINT_FILES), (2, CHECKPOINT_FILES), (3, CHECKPOINT_FILES[:1])):
        folder = root / f"step-{step:06d}"
        folder.mkdir(parents=True)
        for name in files:
            (folder / name).write_bytes(b"x")
    newest = root / "step-000002"
    assert kept_checkpoint(tmp_path) == checkpoint.latest_checkpoint(tmp_path) == newest
    assert kept_checkpoint(tmp_path / "none") is None


def test_the_drift_reader_agrees_with_the_drift_code(tmp_path: Path) -> None:
    from longred_bench.jobs import drift, in_progress

    assert in_progress.PARTIAL == drift.PARTIAL
    path = tmp_path / in_progress.PARTIAL
    for text in ("", "{", '{"texts": {}}', '{"texts": {"a": [[1], [2]], "b": [[1]]}}'):
        path.write_text(text)
        assert in_progress.partial_windows(path) == drift.partial_windows(path)
    for text in ('{"texts": null}', '{"texts": [[1]]}'):  # an edited file: nothing saved
        path.write_text(text)
        assert in_progress.partial_windows(path) == drift.partial_windows(path) == 0
    assert in_progress.partial_windows(tmp_path / "none") == 0
