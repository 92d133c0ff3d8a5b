"""A table unit by unit: ``--list-units`` lists every unit with the units it waits for, its
command and its GPU estimate, ``--unit ID`` computes one (refusing one whose units are missing),
``--emit-slurm`` writes one job array per dependency level; the units computed one by one in any
order their dependencies allow, then ``reproduce``, give the records one call gives."""

from __future__ import annotations

import json
import os
import random
import subprocess

import pytest

from longred_bench.cli import main
from longred_bench.reproduce.cluster import levels
from longred_bench.results import read_records


def _units(capsys, table: str = "table7") -> list[dict]:
    assert main(["reproduce", table, "--profile", "smoke", "--list-units"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_list_units_names_each_units_dependencies_and_command(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    units = _units(capsys)
    ids = [u["id"] for u in units]
    assert len(ids) == len(set(ids)) == 16
    merge = next(u for u in units if u["id"] == "train_merge_abf:theta=1e5_seed_0")
    assert merge["after"] == ["train_cpt_abf:theta=1e5_seed_0"]
    assert merge["command"] == ("longred-bench reproduce table7 --profile smoke --unit "
                                "train_merge_abf:theta=1e5_seed_0")  # fmt: skip
    evals = [u for u in units if u["after"] == [merge["id"]]]
    assert {u["kind"] for u in evals} == {"eval"} and len(evals) == 2
    stages = levels(units)
    assert [len(s) for s in stages] == [7, 7, 2]  # base evals and trains; evals and merge; evals
    assert merge in stages[1] and all(u in stages[2] for u in evals)


def test_list_units_carries_the_dry_runs_estimate(tmp_path, monkeypatch, capsys):
    from profile_helpers import ctx_of

    from longred_bench.reproduce.costs import unit_cost
    from longred_bench.reproduce.registry import get_spec

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    assert all(u["estimate"] is None for u in _units(capsys))  # smoke's model: no known shape
    assert main(["reproduce", "table3", "--profile", "paper-128k", "--list-units"]) == 0
    units = {u["label"]: u for u in map(json.loads, capsys.readouterr().out.splitlines())}
    ctx = ctx_of("table3", "paper-128k")
    step = next(s for s in get_spec("table3").steps(ctx) if s.label.startswith("train cpt "))
    cost = unit_cost(step, ctx.profile)
    assert units[step.label]["estimate"] == {
        "gpu_hours": cost.gpu_hours, "gib_per_gpu": cost.gib_per_gpu,
        "host_gib_per_gpu": cost.host_gib_per_gpu}  # fmt: skip
    assert 0 < cost.gib_per_gpu <= 80 and cost.host_gib_per_gpu > 32 and cost.gpu_hours > 1


def test_a_unit_whose_units_are_missing_is_refused(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    argv = ["reproduce", "table7", "--profile", "smoke", "--unit"]
    assert main([*argv, "eval_merge_abf:theta=1e5_seed_0_ruler"]) == 2
    assert "waits for train_merge_abf:theta=1e5_seed_0: compute those first" in (
        capsys.readouterr().err)  # fmt: skip
    assert main([*argv, "no-such-unit"]) == 2
    err = capsys.readouterr().err
    assert "table7 has no unit 'no-such-unit' at profile smoke; `--list-units`" in err
    assert main([*argv, "eval_merge_abf:theta=1e5_seed_0_rulr"]) == 2  # a typo: the one meant
    assert ("has no unit 'eval_merge_abf:theta=1e5_seed_0_rulr' at profile smoke (did you mean "
            "eval_merge_abf:theta=1e5_seed_0_ruler?); `--list-units` lists them") in (
        capsys.readouterr().err)  # fmt: skip


def test_emit_slurm_writes_an_array_per_level_and_the_report_job(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "slurm"
    argv = ["reproduce", "table7", "--profile", "smoke", "--emit-slurm", str(out), "--out",
            str(tmp_path / "report")]  # fmt: skip
    assert main(argv) == 0
    assert [len(p.read_text().splitlines()) for p in sorted(out.glob("units-*.txt"))] == [7, 7, 2]
    array = (out / "array-2.sbatch").read_text()
    assert "#SBATCH --array=0-6" in array and '--unit "$ID"' in array
    submit = (out / "submit.sh").read_text()
    assert submit.count("sbatch --parsable") == 4 and "--dependency=afterok:${J" in submit
    assert f"--out {tmp_path / 'report'}" in (out / "report.sbatch").read_text()
    # submitted through an sbatch that answers "ID;CLUSTER", as --parsable does on a
    # multi-cluster setup: each level depends on the IDs alone
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "sbatch").write_text('#!/usr/bin/env bash\necho "$*" >> "$LOG"\n'
                                    'n=$(wc -l < "$LOG"); echo "$((100 + n));west"\n')  # fmt: skip
    (bin_dir / "sbatch").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "LOG": str(tmp_path / "log")}
    subprocess.run(["bash", str(out / "submit.sh")], env=env, check=True, capture_output=True)
    calls = (tmp_path / "log").read_text().splitlines()
    assert calls[1].startswith("--parsable --dependency=afterok:101 --kill-on-invalid-dep=yes")
    assert calls[-1].startswith("--parsable --dependency=afterok:103 ") and ";" not in calls[-1]


@pytest.mark.integration
def test_units_one_by_one_then_reproduce_give_the_records_of_one_call(
    tmp_path, smoke_cache, capsys
):
    units = _units(capsys, "table3")
    rng = random.Random(3)
    for stage in levels(units):  # any order the dependencies allow
        rng.shuffle(stage)
        for u in stage:
            argv = ["reproduce", "table3", "--profile", "smoke", "--unit", u["id"], "--quiet"]
            assert main(argv) == 0, u["id"]
    capsys.readouterr()
    assert main(["reproduce", "table3", "--profile", "smoke", "--unit", units[0]["id"]]) == 0
    assert "cached" in capsys.readouterr().out
    out = tmp_path / "by-unit"
    assert main(["reproduce", "table3", "--profile", "smoke", "--out", str(out), "--quiet"]) == 0
    assert "units, 13 cached, 0 to run" in _plan(capsys)
    by_unit = read_records(out / "table3.jsonl.gz")
    assert {(r["row"], r["extension"]) for r in by_unit} >= {("cpt", "abf:theta=1e5")}
    # as one call writes (tests/reproduce/test_reproduce_table3.py): 400 evaluation records, and
    # one per-step record for each of the 3 trained runs
    kinds = [r["kind"] for r in by_unit]
    assert len(kinds) - kinds.count("train_steps") == 400 and kinds.count("train_steps") == 3


def _plan(capsys) -> str:
    assert main(["reproduce", "table3", "--profile", "smoke", "--dry-run"]) == 0
    return capsys.readouterr().out


def test_a_unit_two_rows_share_is_listed_and_scheduled_once(tmp_path, monkeypatch, capsys):
    from profile_helpers import ctx_of

    from longred_bench.reproduce.registry import get_spec

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    steps = get_spec("table3").steps(ctx_of("table3", "tiny"))
    keys = [s.key for s in steps]
    assert len(keys) > len(set(keys))  # control's evaluations serve both extensions
    assert main(["reproduce", "table3", "--profile", "tiny", "--list-units"]) == 0
    units = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    folders = [u["folder"] for u in units if "folder" in u]
    assert sorted(folders) == sorted(set(keys))
    out = tmp_path / "slurm"
    assert main(["reproduce", "table3", "--profile", "tiny", "--emit-slurm", str(out)]) == 0
    ids = [
        line.split("\t")[0] for p in out.glob("units-*.txt") for line in p.read_text().splitlines()
    ]
    assert len(ids) == len(set(ids)) == len(set(keys))


def test_paper_jobs_launch_torchrun_standalone_and_the_report_job_gets_the_gpus(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "slurm"
    monkeypatch.setenv("HF_ALLOW_CODE_EVAL", "0")  # --allow-code-eval sets it; restored after
    argv = ["reproduce", "table3", "--profile", "paper", "--allow-code-eval", "--emit-slurm"]
    assert main([*argv, str(out)]) == 0
    arrays = {p.stem: p.read_text() for p in out.glob("array-*.sbatch")}
    assert any(name.endswith("-1gpu") for name in arrays) and any(
        not name.endswith("-1gpu") for name in arrays
    )
    for name, text in arrays.items():
        kinds = {line.split("\t")[1] for line in
                 (out / f"units{name[5:]}.txt").read_text().splitlines()}  # fmt: skip
        if name.endswith("-1gpu"):  # evaluations and measurements: one process, one GPU
            assert "#SBATCH --gres=gpu:1\n" in text and "train" not in kinds
        else:  # training on the profile's 8 processes
            assert "#SBATCH --gres=gpu:8\n" in text and kinds == {"train"}
            assert " --standalone --nproc-per-node 8 -m longred_bench" in text
    # what the report job computes (PCD's test split) are evaluations: one GPU
    assert "#SBATCH --gres=gpu:1\n" in (out / "report.sbatch").read_text()
    submit = (out / "submit.sh").read_text()
    # a level waits for both arrays before it
    assert 'DEP="--dependency=afterok:${J0%%;*}:${J1%%;*} --kill-on-invalid-dep=yes"' in submit
    capsys.readouterr()
    assert main(["reproduce", "table3", "--profile", "paper", "--list-units"]) == 0
    commands = [
        json.loads(line).get("command", "") for line in capsys.readouterr().out.splitlines()
    ]
    assert any(
        c.startswith("torchrun --standalone --nproc-per-node 8 -m longred_bench ") for c in commands
    )


def test_units_the_profile_runs_on_the_cpu_ask_no_gpu_and_have_no_gpu_estimate(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "slurm"
    assert main(["reproduce", "fig2", "--profile", "smol", "--emit-slurm", str(out)]) == 0
    arrays = sorted(p.name for p in out.glob("array-*.sbatch"))
    assert arrays == ["array-1-cpu.sbatch"]  # smol evaluates Figure 2 on the CPU
    assert "--gres" not in (out / "array-1-cpu.sbatch").read_text()
    assert "--gres" not in (out / "report.sbatch").read_text()  # nothing of fig2 on a GPU
    capsys.readouterr()
    assert main(["reproduce", "fig2", "--profile", "smol", "--list-units"]) == 0
    units = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert units and all(u["device"] == "cpu" and u["estimate"] is None for u in units)
    assert main(["reproduce", "fig2", "--profile", "smol", "--dry-run"]) == 0
    plan = capsys.readouterr().out
    assert f"({len(units)} unit(s) on the CPU (no time estimate; no GPU estimate))" in plan
    assert "GPU-h" not in plan.split("In all")[0] and "(on the CPU, unknown)" in plan


@pytest.mark.integration
def test_a_torchrun_training_unit_holds_its_run_and_starts_over_without_a_checkpoint(
    smoke_cache, capsys
):
    """``--unit`` under ``torchrun`` (2 CPU processes, gloo): while another process holds the
    run, the launch stops at once in one line and writes nothing; a folder left by a run killed
    before its first checkpoint is trained from the start (it was refused as nothing to resume);
    launched again, the unit is cached."""
    import fcntl
    import os
    import subprocess
    import sys

    train = next(u for u in _units(capsys, "table3") if u["id"] == "train_cpt_abf:theta=1e5_seed_0")
    run = smoke_cache / train["folder"]
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           "-m", "longred_bench", "reproduce", "table3", "--profile", "smoke", "--unit",
           train["id"], "--quiet"]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}

    def launch() -> subprocess.CompletedProcess:
        return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)

    run.parent.mkdir(parents=True)
    with open(run.parent / f".{run.name}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process is training the run
        held = launch()
    said = (held.stdout + held.stderr).splitlines()
    assert held.returncode != 0
    assert [line for line in said if "another process" in line] == [
        f"error: another process is training {run}: run this unit again once it has finished "
        "(it then finds the run trained)"
    ]  # rank 0's line, once; rank 1 stops without a word (nor a broken connection's trace)
    assert not any("Connection closed" in line or "gloo" in line.lower() for line in said)
    assert not run.exists()

    run.mkdir()
    (run / "metrics.jsonl").write_text("")  # killed before its first checkpoint
    done = launch()
    assert done.returncode == 0, done.stderr[-3000:]
    assert (run / "final" / "config.json").is_file()
    assert len(read_records(run / "metrics.jsonl")) == 2  # smoke's steps
    assert "cached" in launch().stdout


def test_emit_slurm_replaces_its_own_table_scripts_and_keeps_another_tables(
    tmp_path, monkeypatch, capsys
):
    """A second emit of a table into its folder left the first plan's extra levels beside the
    new ones; an emit of another table into it overwrote that table's scripts, the record of
    what was submitted from the folder. Logs and other files stay."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "slurm"
    argv = ["reproduce", "table3", "--profile", "smoke", "--emit-slurm", str(out)]
    assert main(argv) == 0
    first = sorted(p.name for p in out.iterdir())
    stale = ["array-9.sbatch", "units-9.txt", "array-9-cpu.sbatch", "units-9-1gpu.txt"]
    for name in [*stale, "notes.txt"]:
        (out / name).write_text("earlier\n")
    (out / "logs" / "lrb-table3-1-0.out").write_text("a log\n")
    assert main(argv) == 0
    assert sorted(p.name for p in out.iterdir()) == sorted([*first, "notes.txt"])
    assert (out / "logs" / "lrb-table3-1-0.out").is_file()
    capsys.readouterr()
    scripts = {p.name: p.read_text() for p in out.iterdir() if p.is_file()}
    assert main(["reproduce", "fig3", "--profile", "smoke", "--emit-slurm", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: --emit-slurm {out} holds the job scripts of table3 at profile smoke, "
                   "whose jobs log to it: give fig3 at smoke another folder")  # fmt: skip
    assert {p.name: p.read_text() for p in out.iterdir() if p.is_file()} == scripts
    # the same table at another profile: the same
    assert main(["reproduce", "table3", "--profile", "tiny", "--emit-slurm", str(out)]) == 2
    assert "holds the job scripts of table3 at profile smoke" in capsys.readouterr().err
    assert {p.name: p.read_text() for p in out.iterdir() if p.is_file()} == scripts


@pytest.mark.parametrize("name", ["submit.sh", "array-0.sbatch", "units-1.txt", "report.sbatch"])
def test_emit_slurm_keeps_files_of_its_names_that_no_emit_wrote(
    tmp_path, monkeypatch, capsys, name
) -> None:
    """A folder with a user's own submit.sh or array-0.sbatch and no emit's report.sbatch: the
    emit overwrote the one and deleted the other."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "slurm"
    out.mkdir()
    (out / name).write_text("mine\n")
    argv = ["reproduce", "table3", "--profile", "smoke", "--emit-slurm", str(out)]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: --emit-slurm {out} holds {name}, which no --emit-slurm wrote (no "
                   "report.sbatch of one beside it): give another folder")  # fmt: skip
    assert [p.name for p in out.iterdir()] == [name] and (out / name).read_text() == "mine\n"


def test_emit_slurm_emits_again_for_a_profile_path_with_a_quote(tmp_path, monkeypatch) -> None:
    """The earlier emit's profile is read back as the shell reads it (a ' in the path is quoted
    by shlex in a form a simple pattern misread, refusing the folder's own emit)."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "it's"
    folder.mkdir()
    (folder / "p.yaml").write_text("extends: smoke\n")
    argv = ["reproduce", "table3", "--profile", str(folder / "p.yaml"), "--emit-slurm",
            str(tmp_path / "slurm")]  # fmt: skip
    assert main(argv) == 0
    assert main(argv) == 0


def test_emit_slurm_says_which_units_are_estimated_over_the_gpus_memory(
    tmp_path, monkeypatch, capsys
) -> None:
    """The dry run counted units estimated over the profile's memory per GPU; --emit-slurm
    wrote their jobs without a word."""
    from longred_bench.models.loading import load

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "model"
    loaded = load("tiny-random")  # a whole folder: --emit-slurm refuses one of a config only
    loaded.model.save_pretrained(model)
    loaded.tokenizer.save_pretrained(model)
    profile = tmp_path / "small.yaml"
    profile.write_text(f"extends: smoke\nmodel: {{name: '{model}'}}\n"
                       "hardware: {device: cuda, gpu_memory_gib: 0.001}\n")  # fmt: skip
    argv = ["reproduce", "table3", "--profile", str(profile)]
    assert main([*argv, "--emit-slurm", str(tmp_path / "jobs")]) == 0
    err = capsys.readouterr().err
    assert "note: 3 unit(s) are estimated over the profile's 0.001 GiB per GPU" in err
    assert "their jobs may run out of memory" in err
    # the default 80 GiB: all fit
    profile.write_text(f"extends: smoke\nmodel: {{name: '{model}'}}\nhardware: {{device: cuda}}\n")
    assert main([*argv, "--emit-slurm", str(tmp_path / "jobs2")]) == 0
    assert "note:" not in capsys.readouterr().err


def test_unit_force_computes_an_evaluation_again_and_unit_listings_refuse_it(
    tmp_path, monkeypatch, capsys
) -> None:
    """``--unit ID --force`` computes a cached evaluation again (as ``--force`` does a table's),
    and says so; ``--list-units`` and ``--emit-slurm`` compute nothing, so ``--force`` beside
    them is refused, not ignored."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    argv = ["reproduce", "table1", "--profile", "smoke", "--quiet", "--unit", "drift_zero-shot"]
    assert main(argv) == 0
    assert "drift_zero-shot: computed (" in capsys.readouterr().out
    assert main(argv) == 0
    assert "drift_zero-shot: cached (" in capsys.readouterr().out
    records = tmp_path / next(u["folder"] for u in _units(capsys, "table1")) / "drift.jsonl"
    before = records.stat().st_mtime_ns
    assert main([*argv, "--force"]) == 0
    assert "drift_zero-shot: computed again (--force) (" in capsys.readouterr().out
    assert records.stat().st_mtime_ns != before
    for flag in (["--list-units"], ["--emit-slurm", str(tmp_path / "s")]):
        assert main(["reproduce", "table1", "--profile", "smoke", "--force", *flag]) == 2
        assert "--force computes units again as they run" in capsys.readouterr().err


def test_a_unit_another_process_computed_meanwhile_says_so(tmp_path, monkeypatch, capsys):
    """``--unit ID`` whose unit another array task computed while this one waited on its lock
    says it took that result; it said "computed", as if it had run the unit itself."""
    from longred_bench.jobs import units

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    real = units.CachedUnit.run

    def other_process_first(self, *, progress=True, force=False, outcome=None):
        (outcome if outcome is not None else []).append("taken")
        return real(self, progress=progress, force=force)

    monkeypatch.setattr(units.CachedUnit, "run", other_process_first)
    argv = ["reproduce", "table1", "--profile", "smoke", "--quiet", "--unit", "drift_zero-shot"]
    assert main(argv) == 0
    assert "drift_zero-shot: computed by another process meanwhile, taken from the cache (" in (
        capsys.readouterr().out
    )


def test_emit_slurm_names_the_sources_the_jobs_would_fetch(tmp_path, monkeypatch, capsys):
    """Sources the units read that the cache lacks are named, with the command that fetches
    them, before the array tasks would each fetch them at once (or fail on a node without a
    registry); a cache that holds them gets no note."""
    from longred_bench.reproduce import engine

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    argv = ["reproduce", "table3", "--profile", "smoke", "--quiet", "--emit-slurm"]
    assert main([*argv, str(tmp_path / "s")]) == 0
    out = capsys.readouterr().out
    assert "note: the jobs read brown" in out and "longred-bench data fetch --sources brown" in out
    monkeypatch.setattr(engine, "missing_sources", lambda names: [])
    assert main([*argv, str(tmp_path / "s2")]) == 0
    assert "note: the jobs read" not in capsys.readouterr().out


def test_training_on_device_auto_is_listed_where_its_jobs_run(tmp_path, monkeypatch, capsys):
    """``hardware.device: auto`` trains on the CPU at a profile that evaluates there
    (``smoke``): ``--list-units`` said ``gpu`` for its training units while their jobs asked
    no GPU; at a GPU profile (``smol``) it is the GPU."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "slurm"
    assert main(["reproduce", "table3", "--profile", "smoke", "--emit-slurm", str(out)]) == 0
    assert not any("--gres" in p.read_text() for p in out.glob("*.sbatch"))
    capsys.readouterr()
    for profile, device in (("smoke", "cpu"), ("smol", "gpu")):
        assert main(["reproduce", "table3", "--profile", profile, "--list-units"]) == 0
        units = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        trains = [u for u in units if u["kind"] == "train"]
        assert trains and all(u["device"] == device for u in trains), profile


def test_unit_force_keeps_a_cached_training_run() -> None:
    """``--unit ID --force`` computes evaluations again, never a training run: a cached run
    is reported cached, not "computed again"."""
    from types import SimpleNamespace as NS

    from longred_bench.reproduce.cluster import run_unit
    from longred_bench.reproduce.spec import Step

    def broken(**kw):
        raise AssertionError("a cached run trained again")

    unit = NS(kind="train", folder="runs/train-x", cached=lambda: {"done": True}, run=broken)
    step = Step(unit, "train cpt seed 0")
    ctx = NS(force=True, progress=False)
    assert run_unit(ctx, step, [step]) == "train_cpt_seed_0: cached (runs/train-x)"
