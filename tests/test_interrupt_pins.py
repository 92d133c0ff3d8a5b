"""The line an interrupted command prints, read from what it left on disk: a command that saves
nothing says so; ``compare`` counts its finished units (not the request caches beside them,
and a pairs file's in every pair's folder), the responses of the unit in progress and its own
drift windows; ``drift`` with no window measured says to run it again; a dry run,
``--list-units`` and ``--rebuild`` save nothing; a checkpoint's step is said without its run's
total where the run's settings cannot be read or the training code cannot be imported, and at
the last step as leaving only the final model; a run stopped after its final model is said
finished; and several units computed again under ``--force`` are named together."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pytest
from interrupt_helpers import write_responses

from longred_bench.cli.interrupt import interrupted_line
from longred_bench.jobs import in_progress


def _checkpoint(run: Path, step: int) -> Path:
    path = run / "checkpoints" / f"step-{step:06d}"
    path.mkdir(parents=True)
    for name in in_progress.CHECKPOINT_FILES:
        (path / name).write_bytes(b"")
    return path


@pytest.mark.parametrize(
    "args",
    [
        argparse.Namespace(command="profiles", argv=["profiles"]),
        argparse.Namespace(command="psa", out=None, argv=["psa", "--model", "tiny-random"]),
    ],
)
def test_a_command_that_saves_nothing_says_so(args: argparse.Namespace) -> None:
    """A command with nothing to keep, and ``psa`` without ``--out``, keep nothing."""
    assert interrupted_line(args) == "interrupted: nothing was being saved"


def test_a_train_dry_run_saves_nothing(tmp_path: Path) -> None:
    """A dry run writes no checkpoint: the line does not offer to resume or start again."""
    out = tmp_path / "run"
    argv = ["train", "--recipe", "cpt", "--dry-run", "--out", str(out)]
    args = argparse.Namespace(command="train", out=str(out), dry_run=True, argv=argv)
    assert interrupted_line(args) == "interrupted: nothing was being saved"


def test_compare_counts_its_units_responses_and_own_drift_windows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Finished units are the ``config.json`` files under ``runs`` outside its request caches;
    the unit in progress adds its saved responses, and this call's drift file its windows."""
    out = tmp_path / "cmp"
    runs = out / "runs"
    for unit in ("a", "b/c", "requests/x"):
        (runs / unit).mkdir(parents=True)
        (runs / unit / "config.json").write_text("{}")
    argv = ["compare", "--rope", "none", "--out", str(out)]
    args = argparse.Namespace(command="compare", out=str(out), argv=argv)
    again = f"longred-bench {' '.join(argv)}"
    monkeypatch.setattr(in_progress, "DRIFT_NOW", [])
    assert interrupted_line(args) == (
        f"interrupted: 2 finished unit(s) under {runs} saved; resume with the same command: {again}"
    )
    write_responses(runs / "requests" / "abc_rank0.db", 4)
    drift = tmp_path / "drift.partial.json"
    drift.write_text(json.dumps({"texts": {"a": [[0.0]] * 2, "b": [[0.0]] * 3}}))
    monkeypatch.setattr(in_progress, "DRIFT_NOW", [drift])
    assert interrupted_line(args) == (
        f"interrupted: 2 finished unit(s) under {runs}, 4 model response(s) of the unit in "
        f"progress, the drift of 2 window(s) saved; resume with the same command: {again}"
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["reproduce", "table1", "--profile", "tiny", "--dry-run"],
        ["reproduce", "table1", "--profile", "tiny", "--list-units"],
        ["reproduce", "table1", "--profile", "tiny", "--rebuild"],
    ],
)
def test_a_command_that_runs_no_unit_saves_nothing(argv: list[str]) -> None:
    """A plan, a list of units or a rebuilt report computes nothing: the line offered to reuse
    the finished units of a dry run."""
    from longred_bench.cli import build_parser

    args = build_parser().parse_args(argv)
    args.argv = argv
    assert interrupted_line(args) == "interrupted: nothing was being saved"


def test_compare_of_a_pairs_file_counts_the_units_of_every_pair(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pairs file's pairs keep their units in ``OUT/<pair>/runs``: the line said 0 finished
    units under ``OUT/runs`` and no responses, whatever had been measured."""
    out = tmp_path / "cmp"
    for unit in ("llama/runs/a", "llama/runs/b", "mistral/runs/c", "mistral/runs/requests/x"):
        (out / unit).mkdir(parents=True)
        (out / unit / "config.json").write_text("{}")
    write_responses(out / "mistral" / "runs" / "requests" / "abc_rank0.db", 3)
    argv = ["compare", "--pairs", "compare", "--out", str(out)]
    args = argparse.Namespace(command="compare", out=str(out), pairs="compare", argv=argv)
    monkeypatch.setattr(in_progress, "DRIFT_NOW", [])
    assert interrupted_line(args) == (
        f"interrupted: 3 finished unit(s) under {out}, 3 model response(s) of the unit in "
        f"progress saved; resume with the same command: longred-bench {' '.join(argv)}"
    )


def test_a_compare_dry_run_saves_nothing() -> None:
    """``compare --pairs P --dry-run`` has no ``--out``: the line read "could not read what was
    saved (TypeError)"."""
    argv = ["compare", "--pairs", "compare", "--dry-run"]
    args = argparse.Namespace(command="compare", out=None, pairs="compare", dry_run=True,
                              argv=argv)  # fmt: skip
    assert interrupted_line(args) == "interrupted: nothing was being saved"


def test_a_drift_run_with_no_window_finished_says_to_run_it_again(tmp_path: Path) -> None:
    """Nothing measured yet (no partial file, or one of no windows): run it again."""
    out = tmp_path / "drift"
    argv = ["drift", "--original", "tiny-random", "--rope", "pi:factor=4", "--out", str(out)]
    args = argparse.Namespace(command="drift", out=str(out), argv=argv)
    again = f"longred-bench {' '.join(argv)}"
    said = f"interrupted: no window was finished yet; run it again with: {again}"
    assert interrupted_line(args) == said
    out.mkdir()
    (out / in_progress.PARTIAL).write_text(json.dumps({"texts": {"a": []}}))
    assert interrupted_line(args) == said


def _train_args(out: Path) -> argparse.Namespace:
    argv = ["train", "--recipe", "cpt", "--out", str(out)]
    return argparse.Namespace(command="train", out=str(out), dry_run=False, argv=argv)


def test_a_checkpoint_of_a_run_whose_settings_are_refused_names_its_step_alone(
    tmp_path: Path,
) -> None:
    """A run's ``config.yaml`` the training code refuses gives no total: the step alone."""
    out = tmp_path / "run"
    step = _checkpoint(out, 2)
    (out / "config.yaml").write_text("recipe: no-such-recipe\n")
    assert interrupted_line(_train_args(out)).startswith(
        f"interrupted: checkpoint {step} saved (step 2; the steps after it train again); "
    )


def test_a_checkpoint_is_named_where_the_training_code_cannot_be_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupt while torch was imported leaves it half imported: the step alone."""
    out = tmp_path / "run"
    step = _checkpoint(out, 3)
    monkeypatch.setitem(sys.modules, "longred_bench.training.loop", None)
    assert interrupted_line(_train_args(out)).startswith(
        f"interrupted: checkpoint {step} saved (step 3; the steps after it train again); "
    )


def test_units_computed_again_are_named_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``--force``, two units with earlier results kept work no command resumes: one
    plural line names both (a unit's folder is two above its work folder)."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(in_progress, "TRAINING_NOW", [])
    works = []
    for name in ("u1", "u2"):
        unit = tmp_path / "cache" / "runs" / "t" / name
        work = unit / "partial" / "0123"
        write_responses(work / "requests_rank0.db", 2)
        (unit / "eval.jsonl").write_text("{}\n")
        works.append(work)
    monkeypatch.setattr(in_progress, "UNIT_NOW", works)
    argv = ["reproduce", "table1", "--force"]
    args = argparse.Namespace(command="reproduce", force=True, argv=argv)
    assert interrupted_line(args).startswith(
        f"interrupted: the units computed again kept 2 model response(s) in {works[0]}; "
        f"2 model response(s) in {works[1]}, which no command resumes from (without --force"
    )


def test_a_run_stopped_after_its_final_model_is_said_finished(tmp_path: Path) -> None:
    """A Ctrl-C as the curves were drawn offered to resume from the last checkpoint; the run
    had finished: its model is named, and ``--resume`` draws the curves it lacks."""
    out = tmp_path / "run"
    _checkpoint(out, 4)
    (out / "final").mkdir()
    (out / "final" / "config.json").write_text("{}")
    (out / "run.json").write_text("{}")
    argv = " ".join(_train_args(out).argv)
    assert interrupted_line(_train_args(out)) == (
        f"interrupted: the run had finished: its model is in {out / 'final'}; draw its loss "
        f"curves with: longred-bench {argv} --resume"
    )
    (out / "curves.png").write_bytes(b"png")
    assert interrupted_line(_train_args(out)) == (
        f"interrupted: the run had finished: its model is in {out / 'final'}"
    )


def test_a_checkpoint_at_the_last_step_leaves_only_the_final_model(tmp_path: Path) -> None:
    """Stopped as it wrote its final model: "step 2 of 2; the steps after it train again"."""
    import yaml

    from longred_bench.training.config import resolve_config

    out = tmp_path / "run"
    step = _checkpoint(out, 2)
    cfg = resolve_config("cpt", profile="smoke", overrides={"steps": 2})
    (out / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict()))
    assert interrupted_line(_train_args(out)).startswith(
        f"interrupted: checkpoint {step} saved (step 2 of 2, the last; only its final model is "
        "written again); resume with: "
    )
