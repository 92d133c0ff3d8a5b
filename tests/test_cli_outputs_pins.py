"""Output folders each command may share and those it is refused, in one line: a report
folder (``reproduce``'s tables) takes ``psa``'s results and another ``reproduce`` beside its
own and no other command's."""

from __future__ import annotations

from pathlib import Path

import pytest

from longred_bench.cli.outputs import check_out_dir
from longred_bench.errors import UserError


def _report_folder(tmp_path: Path) -> Path:
    out = tmp_path / "report"
    out.mkdir()
    (out / "table3.jsonl.gz").write_bytes(b"")
    (out / "table3.md").write_text("| table |\n")
    return out


@pytest.mark.parametrize("command", ["reproduce", "psa"])
def test_a_report_folder_takes_reproduce_and_psa(tmp_path, command) -> None:
    """A folder of ``reproduce``'s tables is where ``reproduce`` and ``psa`` write."""
    check_out_dir(_report_folder(tmp_path), command)


@pytest.mark.parametrize("command", ["eval", "drift", "compare", "train"])
def test_a_report_folder_is_refused_to_other_commands(tmp_path, command) -> None:
    """Any other command is told the folder holds ``reproduce``'s reports, naming a table."""
    out = _report_folder(tmp_path)
    with pytest.raises(UserError) as caught:
        check_out_dir(out, command)
    assert str(caught.value) == (f"--out {out} holds the reports of `reproduce` (table3.jsonl.gz); "
                                 f"give {command} a folder of its own")  # fmt: skip


def test_a_training_runs_final_folder_beside_its_config_passes(tmp_path) -> None:
    """A run's own ``final/`` (its ``config.yaml`` beside it) is the run's to replace; a
    ``final/`` alone is refused, naming the folder."""
    from longred_bench.cli.outputs import check_train_out

    out = tmp_path / "run"
    (out / "final").mkdir(parents=True)
    with pytest.raises(UserError, match=r"holds final/, which no training run wrote there"):
        check_train_out(out)
    (out / "config.yaml").write_text("recipe: cpt\nprofile: smoke\n")
    check_train_out(out)


@pytest.mark.parametrize(
    ("name", "what"),
    [("metrics.jsonl", "file"), ("run.json", "file"), ("curves.png", "file"),
     ("checkpoints/", "folder")],
)  # fmt: skip
def test_a_run_file_without_a_training_config_beside_it_is_refused(tmp_path, name, what) -> None:
    """A user's ``metrics.jsonl``, ``run.json``, ``curves.png`` or ``checkpoints/`` in ``--out``
    was replaced without a word (only ``config.yaml`` and ``final/`` were looked at); beside a
    training run's ``config.yaml`` they are that run's."""
    from longred_bench.cli.outputs import check_train_out

    out = tmp_path / "run"
    out.mkdir()
    path = out / name.rstrip("/")
    path.mkdir() if what == "folder" else path.write_text("{}\n")
    with pytest.raises(UserError) as caught:
        check_train_out(out)
    assert str(caught.value) == (
        f"--out {out} holds {name}, which no training run wrote there (no config.yaml beside "
        f"it), and train would replace it: give another --out, or move that {what} away"
    )
    (out / "config.yaml").write_text("recipe: cpt\nprofile: smoke\n")
    check_train_out(out)


def test_a_runs_own_local_files_stamp_alone_passes(tmp_path) -> None:
    """``local_files.json`` is written before ``config.yaml``: a run stopped between them is
    run again in its folder."""
    from longred_bench.cli.outputs import check_train_out

    (tmp_path / "local_files.json").write_text("{}")
    check_train_out(tmp_path)


def test_a_drift_of_extensions_by_rope_alone_takes_its_saved_order(tmp_path) -> None:
    """A drift given its RoPE specs in another order than it saved them (no ``--extended``)
    takes the saved order, so that its windows resume and its results are found."""
    import yaml

    from longred_bench.cli.outputs import saved_drift_order

    saved = {"original": "tiny-random", "rope": ["yarn:factor=2", "pi:factor=2"], "extended": None}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(saved))
    mine = {**saved, "rope": ["pi:factor=2", "yarn:factor=2"]}
    assert saved_drift_order(tmp_path, mine) == {
        "rope": ("yarn:factor=2", "pi:factor=2"),
        "extended": (),
    }
    assert saved_drift_order(tmp_path, {**mine, "rope": ["pi:factor=2"]}) == {}
