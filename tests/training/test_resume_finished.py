"""``--resume`` of a finished run leaves it as it is (it rewrote ``final/`` and ``run.json`` from
a call that trained nothing; it draws the loss curves a stop before them left undrawn), and a
run of another config in ``--out`` is refused before a recipe's preparation (LongRecipe
measured its anchors into that folder first)."""

from __future__ import annotations

import pytest
from train_helpers import smoke

from longred_bench.errors import UserError
from longred_bench.jobs.train import run_training


@pytest.mark.integration
def test_resuming_a_finished_run_trains_and_writes_nothing(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    cfg = smoke("cpt", steps=2)
    final = run_training(cfg, out, progress=False)
    kept = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert run_training(cfg, out, resume=True) == final
    assert f"{out} holds this run finished" in capsys.readouterr().out
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == kept
    with pytest.raises(UserError, match=r"holds this run, finished .*: nothing to train"):
        run_training(cfg, out, progress=False)  # not "pass --resume", which trains nothing
    # another recipe's preparation never starts in a folder holding another config's run
    other = smoke("longrecipe", anchors=["measured"], impact_steps=1, steps=2)
    with pytest.raises(UserError, match="holds a run of another config"):
        run_training(other, out, progress=False)
    assert not (out / "impact").exists()


@pytest.mark.integration
def test_resuming_a_run_stopped_before_its_curves_draws_them(tmp_path, capsys) -> None:
    """A Ctrl-C after ``final/`` was written, before ``curves.png``: ``--resume`` said "nothing
    to resume" and the curves were never drawn; it draws them, and trains nothing."""
    out = tmp_path / "run"
    cfg = smoke("cpt", steps=2)
    run_training(cfg, out, progress=False)
    (out / "curves.png").unlink()
    metrics = (out / "metrics.jsonl").read_bytes()
    capsys.readouterr()
    run_training(cfg, out, resume=True)
    assert f"nothing to resume; its loss curves drawn: {out / 'curves.png'}" in (
        capsys.readouterr().out
    )
    assert (out / "curves.png").stat().st_size > 0
    assert (out / "metrics.jsonl").read_bytes() == metrics


@pytest.mark.integration
def test_a_finished_run_without_its_checkpoints_is_still_a_run(tmp_path, capsys) -> None:
    """A finished run whose checkpoints/ were deleted (to save disk) was replaced by any config
    without a word (final/, metrics, run.json); it is refused, and resuming it trains nothing."""
    import shutil

    out = tmp_path / "run"
    cfg = smoke("cpt", steps=2)
    final = run_training(cfg, out, progress=False)
    shutil.rmtree(out / "checkpoints")
    kept = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    with pytest.raises(UserError, match=r"another config \(differs in lr\): use a new --out$"):
        run_training(cfg.replace(lr=1e-3), out, progress=False)
    with pytest.raises(UserError, match=r"holds this run, finished .*: nothing to train"):
        run_training(cfg, out, progress=False)
    capsys.readouterr()
    assert run_training(cfg, out, resume=True) == final
    assert f"{out} holds this run finished" in capsys.readouterr().out
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == kept


@pytest.mark.integration
def test_a_run_resumes_with_other_checkpoint_settings(tmp_path) -> None:
    """checkpoint_every and keep_checkpoints change which checkpoints are kept, not what trains:
    a resume under others was refused as another config's."""
    out = tmp_path / "run"
    cfg = smoke("cpt", steps=3, checkpoint_every=1)
    run_training(cfg, out, progress=False, stop_after=1)
    assert not (out / "final").exists()
    other = cfg.replace(checkpoint_every=2, keep_checkpoints=1)
    assert (run_training(other, out, resume=True, progress=False) / "config.json").is_file()
    with pytest.raises(UserError, match=r"differs in lr"):  # what trains still counts
        run_training(cfg.replace(lr=1e-3), out, resume=True, progress=False)


@pytest.mark.integration
def test_a_run_resumes_under_another_profile_that_resolves_it_alike(tmp_path) -> None:
    """A profile's name decides nothing a run trains: a run stopped under ``smoke`` resumes
    under a copy of it (it was refused as "another config (differs in profile)"); a setting
    that does differ is still refused."""
    out = tmp_path / "run"
    cfg = smoke("cpt", steps=3, checkpoint_every=1)
    run_training(cfg, out, progress=False, stop_after=1)
    saved = out / "config.yaml"  # the line names the config that resumes it
    with pytest.raises(UserError, match=rf"\(differs in lr\).* to resume \(--config {saved}\)$"):
        run_training(cfg.replace(profile="mine", lr=1e-3), out, resume=True, progress=False)
    run_training(cfg.replace(profile="mine"), out, resume=True, progress=False)
    steps = [int(line.split('"step": ')[1].split(",")[0]) for line in
             (out / "metrics.jsonl").read_text().splitlines()]  # fmt: skip
    assert steps == [1, 2, 3] and (out / "final" / "config.json").is_file()


@pytest.mark.integration
def test_a_finished_merge_is_kept_as_a_finished_run_is(tmp_path, capsys) -> None:
    """A merge was merged and written again on every call: ``--resume`` said "nothing to resume"
    and rewrote ``final/`` and ``run.json``; a call without it wrote over the finished merge."""
    trained = run_training(smoke("cpt", steps=1), tmp_path / "cpt", progress=False)
    cfg = smoke("merge", merge_with=str(trained), merge_weight=0.5)
    out = tmp_path / "merge"
    final = run_training(cfg, out, progress=False)
    kept = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert run_training(cfg, out, resume=True) == final
    assert f"{out} holds this run finished" in capsys.readouterr().out
    with pytest.raises(UserError, match=r"holds this run, finished .*: nothing to train"):
        run_training(cfg, out, progress=False)
    for same in (cfg.replace(profile="mine"), cfg.replace(checkpoint_every=7)):  # decide nothing
        assert run_training(same, out, resume=True, progress=False) == final
    with pytest.raises(UserError, match="holds a merge run of another config: give the merge"):
        run_training(cfg.replace(merge_weight=0.25), out, progress=False)
    assert {
        p: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.rglob("*") if p.is_file()
    } == kept


@pytest.mark.integration
def test_a_run_continues_under_another_profiles_name(tmp_path) -> None:
    """``continue_run`` refused "differs in profile" for a copy of the profile that trained it."""
    from longred_bench.training.loop import continue_run

    cfg = smoke("cpt", steps=2, checkpoint_every=2)
    run_training(cfg, tmp_path / "a", progress=False)
    continue_run(tmp_path / "a", tmp_path / "b", cfg.replace(steps=3, profile="mine"))
    with pytest.raises(UserError, match=r"differs in lr"):
        continue_run(tmp_path / "a", tmp_path / "c", cfg.replace(steps=3, lr=1e-3))
    run_training(cfg.replace(steps=3, profile="mine"), tmp_path / "b", resume=True, progress=False)
    assert (tmp_path / "b" / "final" / "config.json").is_file()


def test_resume_of_a_run_stopped_before_its_first_checkpoint_says_what_to_run(tmp_path) -> None:
    """``kill -9`` before the first checkpoint leaves ``config.yaml`` and no checkpoint; the
    ``--resume`` after it said only that there was none, not that the command without
    ``--resume`` trains the run (it does: nothing is lost but the steps never saved)."""
    from longred_bench.training.loop import check_run_dir

    out = tmp_path / "run"
    out.mkdir()
    (out / "config.yaml").write_text("recipe: cpt\n")
    with pytest.raises(UserError, match="without --resume, which trains the run from its first"):
        check_run_dir(smoke("cpt", steps=2), out, resume=True)
    assert check_run_dir(smoke("cpt", steps=2), out, resume=False) is False


def test_resume_into_a_folder_that_does_not_exist_names_the_path(tmp_path) -> None:
    """A mistyped ``--out`` with ``--resume`` was told to run again without ``--resume``, which
    starts a new run in the mistyped folder."""
    from longred_bench.training.loop import check_run_dir

    out = tmp_path / "rn"
    with pytest.raises(UserError) as caught:
        check_run_dir(smoke("cpt", steps=2), out, resume=True)
    assert str(caught.value) == (f"--resume: {out} does not exist: give the --out of the run to "
                                 "resume (a run's folder holds its config.yaml and "
                                 "checkpoints/)")  # fmt: skip
    assert not out.exists()


def test_a_run_whose_config_yaml_is_damaged_is_refused_in_one_line(tmp_path) -> None:
    """A run cache's finished run with a damaged ``run.json`` is resumed; where its
    ``config.yaml`` was cut short too, ``reproduce`` stopped with yaml's traceback from the
    worker. One line now, naming the file and what to do."""
    from longred_bench.training.loop import check_run_dir

    out = tmp_path / "run"
    (out / "final").mkdir(parents=True)
    (out / "final" / "config.json").write_text("{}")
    (out / "run.json").write_text("{}")
    (out / "config.yaml").write_text("recipe: cpt\nco")
    with pytest.raises(UserError, match=r"config.yaml is damaged \(ScannerError\).*delete "):
        check_run_dir(smoke("cpt", steps=2), out, resume=True)
    (out / "config.yaml").write_text("- a list")
    with pytest.raises(UserError, match=r"config.yaml is damaged \(no mapping\)"):
        check_run_dir(smoke("cpt", steps=2), out, resume=True)
