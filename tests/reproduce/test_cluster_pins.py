"""What a cluster user reads and runs from ``--list-units``, ``--unit`` and ``--emit-slurm``:
the ids an unknown unit's error suggests, the folder a listed command starts in, and the lines
the SLURM scripts carry."""

from __future__ import annotations

import json
import shlex

from longred_bench.cli import main


def _listed(capsys, *argv: str) -> list[dict]:
    """The unit lines ``--list-units`` prints for ``argv`` (the note line left out)."""
    assert main(["reproduce", *argv, "--list-units"]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return [u for u in lines if u["kind"] != "note"]


def test_an_unknown_unit_is_told_the_ids_that_start_as_it_does(tmp_path, monkeypatch, capsys):
    """An id nothing is close to is answered with up to three ids sharing its first word, not
    the table's first units."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    assert main(["reproduce", "table1", "--profile", "smoke", "--unit", "train_bogus"]) == 2
    err = capsys.readouterr().err
    assert err.strip().endswith(
        "`--list-units` lists them (e.g. train_cpt_abf:theta=1e5_seed_0, "
        "train_cpt_abf:theta=1e6_seed_0, train_cpt_abf:theta=1e7_seed_0)"
    )


def test_a_builtin_profiles_command_under_a_relative_cache_starts_in_its_folder(
    tmp_path, monkeypatch, capsys
):
    """A relative ``LONGRED_CACHE`` is read from the folder the units were listed in, so even a
    built-in profile's command starts there; under an absolute one it needs no folder."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LONGRED_CACHE", "cache")
    units = _listed(capsys, "table1", "--profile", "smoke")
    assert units and all(
        u["command"].startswith(f"cd {shlex.quote(str(tmp_path))} && longred-bench reproduce ")
        for u in units
    )
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    units = _listed(capsys, "table1", "--profile", "smoke")
    assert all(u["command"].startswith("longred-bench reproduce table1 ") for u in units)


def test_cached_training_units_that_would_not_start_do_not_stop_the_emit(
    tmp_path, monkeypatch
) -> None:
    """The startup check covers the training units still to run: with every training unit in
    the cache, a profile whose rows no longer split over its processes still gets its jobs."""
    from longred_bench.reproduce import cluster

    listed = cluster.listed

    def trained(ctx):
        return [{**u, "cached": u["cached"] or u["kind"] == "train"} for u in listed(ctx)]

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    profile = tmp_path / "three.yaml"
    profile.write_text("extends: smoke\nhardware: {nproc_per_node: 3}\n")
    argv = ["reproduce", "table3", "--profile", str(profile), "--quiet", "--emit-slurm"]
    assert main([*argv, str(tmp_path / "refused")]) == 2  # training to run: refused
    monkeypatch.setattr(cluster, "listed", trained)
    assert main([*argv, str(tmp_path / "jobs")]) == 0
    arrays = [p.read_text() for p in (tmp_path / "jobs").glob("array-*.sbatch")]
    assert arrays and not any("\ttrain" in text for text in arrays)


def test_a_unit_id_has_no_underscore_where_its_label_starts_or_ends_with_punctuation() -> None:
    """Each run of characters a shell would read is one ``_`` inside an id, and none is left at
    either end (``(pcd) eval x`` is ``pcd_eval_x``)."""
    from types import SimpleNamespace

    from longred_bench.reproduce.cluster import unit_id

    assert (
        unit_id(SimpleNamespace(label="(pcd) eval  x, y=1e5 (ruler)")) == "pcd_eval_x_y=1e5_ruler"
    )
    assert unit_id(SimpleNamespace(label="train cpt abf:theta=1e5 seed 0")) == (
        "train_cpt_abf:theta=1e5_seed_0"
    )
