"""What an interrupted evaluation kept (``requests/``: lm-eval's SQLite response caches, one a
rank, and the ``ppl`` suite's finished lengths) as it is counted, deleted and named in the line
an interrupt prints: every rank's responses and every finished length count, another
evaluation's prefix is neither counted nor deleted, and the line says what is really there."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from interrupt_helpers import write_responses

from longred_bench.cli.interrupt import interrupted_line
from longred_bench.jobs import in_progress
from longred_bench.jobs.saved_responses import (
    REQUESTS,
    drop_responses,
    saved_responses,
    saved_responses_under,
)


def _length(prefix: Path, length: int) -> None:
    """A finished ``ppl`` length kept in the folder of the prefix's name."""
    prefix.mkdir(parents=True, exist_ok=True)
    (prefix / f"ppl-austen-8-{length}.json").write_text("[]")


def test_every_ranks_responses_and_every_finished_length_count_and_go(tmp_path: Path) -> None:
    """A prefix's responses are those of all its ranks' files plus one per finished ``ppl``
    length (a damaged file counts none); once its unit is saved they are deleted, and another
    prefix's stay."""
    prefix, other = tmp_path / REQUESTS / "abc", tmp_path / REQUESTS / "abd"
    write_responses(tmp_path / REQUESTS / "abc_rank0.db", 3)
    write_responses(tmp_path / REQUESTS / "abc_rank1.db", 2)
    _length(prefix, 64)
    _length(prefix, 128)
    (tmp_path / REQUESTS / "abc_rank2.db").write_bytes(b"not a database")
    write_responses(tmp_path / REQUESTS / "abd_rank0.db", 4)
    _length(other, 64)
    assert saved_responses(prefix) == 3 + 2 + 2
    assert saved_responses(other) == 4 + 1
    assert saved_responses(tmp_path / "nowhere" / "abc") == 0

    drop_responses(prefix)
    assert saved_responses(prefix) == 0
    assert not prefix.exists() and not list((tmp_path / REQUESTS).glob("abc_rank*.db"))
    assert saved_responses(other) == 4 + 1  # another evaluation's work is kept


def _eval_args(out: Path) -> argparse.Namespace:
    argv = ["eval", "--model", "tiny-random", "--suite", "ppl", "--out", str(out)]
    return argparse.Namespace(command="eval", out=str(out), dry_run=False, argv=argv)


def test_an_interrupted_ppl_eval_names_the_lengths_it_kept(tmp_path: Path) -> None:
    """``eval --suite ppl`` keeps each finished length under ``requests/<prefix>/``: the
    interrupted line counts them (it said no response was finished, and to run it again, as
    if the lengths measured were lost)."""
    out = tmp_path / "out"
    args = _eval_args(out)
    assert interrupted_line(args).startswith("interrupted: no model response was finished yet")
    _length(out / REQUESTS / "abc", 64)
    _length(out / REQUESTS / "abc", 128)
    write_responses(out / REQUESTS / "abd_rank0.db", 3)
    assert saved_responses_under(out / REQUESTS) == 5
    line = interrupted_line(args)
    assert line.startswith(f"interrupted: 5 model response(s) saved under {out / REQUESTS}; ")
    assert "resume with the same command" in line
    dry = argparse.Namespace(**{**vars(args), "dry_run": True})
    assert interrupted_line(dry) == "interrupted: nothing was being saved"


def test_the_unit_in_progress_names_the_responses_it_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``reproduce`` interrupted inside an evaluation unit: the line names the model responses
    the unit kept in its work folder (every rank's), which the same command resumes from."""
    monkeypatch.setattr(in_progress, "UNIT_NOW", [])
    monkeypatch.setattr(in_progress, "TRAINING_NOW", [])
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    work = tmp_path / "cache" / "runs" / "t" / "unit" / "partial" / "0123"
    argv = ["reproduce", "table1", "--profile", "smoke"]
    args = argparse.Namespace(command="reproduce", force=False, argv=argv)
    with pytest.raises(KeyboardInterrupt), in_progress.unit_now(work):
        write_responses(work / "requests_rank0.db", 2)
        write_responses(work / "requests_rank1.db", 1)
        raise KeyboardInterrupt
    assert interrupted_line(args).startswith(
        f"interrupted: the unit in progress kept 3 model response(s) in {work}, which the "
        "command resumes from; every finished unit is kept in the run cache"
    )


def test_an_interrupted_resumed_run_says_resume_once(tmp_path: Path) -> None:
    """``train ... --resume`` interrupted again: the command it gives resumes with the flag
    once, as typed (it appended a second ``--resume``)."""
    out = tmp_path / "run"
    step = out / "checkpoints" / "step-000002"
    step.mkdir(parents=True)
    (step / "state.pt").write_bytes(b"")
    (step / "student.safetensors").write_bytes(b"")
    argv = ["train", "--recipe", "cpt", "--out", str(out)]
    for given in (argv, [*argv, "--resume"]):
        args = argparse.Namespace(command="train", out=str(out), dry_run=False, argv=given)
        line = interrupted_line(args)
        assert line.endswith(f"; resume with: longred-bench {' '.join(argv)} --resume"), line
        assert line.count("--resume") == 1


def _checkpoint(run: Path, step: int) -> Path:
    """A whole checkpoint of training run ``run`` at ``step``."""
    path = run / "checkpoints" / f"step-{step:06d}"
    path.mkdir(parents=True)
    (path / "state.pt").write_bytes(b"")
    (path / "student.safetensors").write_bytes(b"")
    return path


def test_every_training_run_in_progress_names_its_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``reproduce --jobs 2`` interrupted while two workers trained: the line names the
    checkpoint each run kept (a run without one yet, none), not the last run's only."""
    monkeypatch.setattr(in_progress, "UNIT_NOW", [])
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    runs = [tmp_path / "cache" / "runs" / f"train-cpt-{i}" for i in range(3)]
    kept = [_checkpoint(runs[0], 2), _checkpoint(runs[1], 4)]
    runs[2].mkdir()  # started, no checkpoint yet
    monkeypatch.setattr(in_progress, "TRAINING_NOW", list(runs))
    args = argparse.Namespace(command="reproduce", force=False, argv=["reproduce", "table3"])
    assert interrupted_line(args).startswith(
        f"interrupted: the training runs in progress kept checkpoints {kept[0]} (step 2; the "
        f"steps after it train again); {kept[1]} (step 4; the steps after it train again), "
        f"which the command resumes from; the training run in progress in {runs[2]} had "
        "written no checkpoint yet: the command trains it again from the first step; every "
        "finished unit is kept"
    )
    monkeypatch.setattr(in_progress, "TRAINING_NOW", [runs[2], runs[1]])
    assert interrupted_line(args).startswith(
        f"interrupted: the training run in progress kept checkpoint {kept[1]} (step 4; "
    )
    monkeypatch.setattr(in_progress, "TRAINING_NOW", [runs[2]])  # said: it was silent
    assert interrupted_line(args).startswith(
        f"interrupted: the training run in progress in {runs[2]} had written no checkpoint "
        "yet: the command trains it again from the first step; every finished unit is kept"
    )
    (runs[2] / "final").mkdir()
    (runs[2] / "final" / "config.json").write_text("{}")  # finished: nothing trains again
    assert interrupted_line(args).startswith("interrupted: every finished unit is kept")


def test_a_run_that_finished_is_no_longer_named_as_in_progress(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A training run trained to its end, then Ctrl-C while the table's evaluations run: the
    line named the finished run's last checkpoint as the training in progress to resume from.
    Only a run interrupted in its block is named."""
    monkeypatch.setattr(in_progress, "UNIT_NOW", [])
    monkeypatch.setattr(in_progress, "TRAINING_NOW", [])
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    run = tmp_path / "cache" / "runs" / "train-cpt-0"
    args = argparse.Namespace(command="reproduce", force=False, argv=["reproduce", "table3"])
    with in_progress.training_now(run):
        kept = _checkpoint(run, 4)
    assert interrupted_line(args).startswith("interrupted: every finished unit is kept")
    with pytest.raises(KeyboardInterrupt), in_progress.training_now(run):
        raise KeyboardInterrupt
    assert interrupted_line(args).startswith(
        f"interrupted: the training run in progress kept checkpoint {kept} (step 4; "
    )


def test_a_train_without_a_checkpoint_names_the_anchors_it_kept(tmp_path: Path) -> None:
    # LongRecipe's measured anchors survive a stop before the first checkpoint: the line says so
    out = tmp_path / "run"
    argv = ["train", "--recipe", "longrecipe", "--out", str(out)]
    args = argparse.Namespace(command="train", out=str(out), dry_run=False, argv=argv)
    again = f"longred-bench {' '.join(argv)}"
    assert interrupted_line(args) == (
        f"interrupted: no checkpoint was written yet; start again with: {again}"
    )
    out.mkdir()
    (out / "impact.json").write_text("{}")
    assert interrupted_line(args) == (
        "interrupted: no checkpoint was written yet (LongRecipe's measured anchors are kept, "
        f"in impact.json); start again with: {again}"
    )


def test_data_fetch_alone_says_its_sources_are_kept() -> None:
    def line(action: str) -> str:
        argv = ["data", action]
        return interrupted_line(argparse.Namespace(command="data", data_command=action, argv=argv))

    assert line("fetch") == (
        "interrupted: sources fetched before the interrupt are cached (a source is swapped in "
        "whole or not at all); fetch the rest with: longred-bench data fetch"
    )
    assert line("verify") == "interrupted: nothing was being saved"


def test_a_saved_state_that_cannot_be_read_still_gives_the_line() -> None:
    # the line comes out whatever is on disk: here compare's --out is no path at all
    args = argparse.Namespace(command="compare", out=5, argv=["compare", "--rope", "none"])
    assert interrupted_line(args) == (
        "interrupted: could not read what was saved (TypeError); run again with: "
        "longred-bench compare --rope none"
    )
