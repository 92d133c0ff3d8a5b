"""``reproduce all`` / ``--dry-run``: the plan lists every unit of every table, cached or not,
counts shared units once, runs nothing and loads no model; the paper profile's plan also prints
the papers' configurations offline, and a real paper run without a GPU fails in one line."""

from __future__ import annotations

import pytest
import torch

from longred_bench.cli import main


def test_dry_run_of_all_lists_units_and_runs_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    argv = ["reproduce", "all", "--profile", "smoke", "--dry-run", "--out", str(out)]
    assert main([*argv, "--jobs", "2"]) == 0
    text = capsys.readouterr().out
    for table in (
        "table3",
        "table2",
        "table4",
        "table7",
        "table10",
        "linearard",
        "table1",
        "fig2",
        "fig3",
        "pcd",
        "tiny_base",
        "kernel",
    ):
        assert f"\n{table}:" in text or text.startswith(f"{table}:"), table
    assert "to run  train cpt abf:theta=1e5 seed 0" in text
    assert "with 2 job(s)" in text and "0 cached" in text
    # The cpt run appears in several tables but once in the total.
    distinct = int(text.split("In all: ")[1].split(" distinct")[0])
    listed = sum(int(line.split(": ")[1].split(" units")[0]) for line in text.splitlines()
                 if " units, " in line and not line.startswith("In all"))  # fmt: skip
    assert distinct < listed
    assert not out.exists() and not (tmp_path / "cache" / "runs").exists()


@pytest.mark.parametrize("profile", ["smoke", "tiny", "smol", "paper"])
def test_every_table_plans_at_every_builtin_profile(profile, tmp_path, monkeypatch, capsys):
    """``reproduce T --profile P --dry-run`` succeeds for every table at every built-in
    profile, offline: the profile states the model's window and depth. Without torch where the
    profile's model has no known shape (smoke, tiny); the GPU estimates of smol and paper ask
    the recipes' streams of the training code."""
    import subprocess
    import sys

    from longred_bench.reproduce.registry import table_names

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    code = (
        "import sys\n"
        "from longred_bench.reproduce.engine import reproduce\n"
        f"for t in {list(table_names())!r}:\n"
        f"    reproduce(t, {profile!r}, dry_run=True)\n"
        f"assert ('torch' in sys.modules) == {profile in ('smol', 'paper')}\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("--dry-run") == len(table_names())
    assert not (tmp_path / "cache" / "runs").exists()


def test_paper_plan_prints_longreds_configurations(capsys):
    assert main(["reproduce", "all", "--profile", "paper", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "| longred (cream) | meta-llama/Meta-Llama-3-8B | abf:theta=2e7 | 32768 / 1024 |" in text
    assert "train longred-c abf:theta=2e7 seed 0" in text  # every unit of every table
    assert "a1 5, a2 10, top_m 6" in text and "32K: cpt 22.4 h" in text
    # The other papers' recipes, with what their papers state of compute.
    assert "| longrecipe | meta-llama/Meta-Llama-3-8B-Instruct | abf:theta=4.89e7 |" in text
    assert "16 H100-hours at 80K" in text and "4.25M training tokens" in text
    assert "| pose | meta-llama/Meta-Llama-3-8B |" in text


def test_paper_plan_evaluates_longreds_17_short_benchmarks(capsys):
    """The paper profile's short evaluations are ``paper_short``; its plan lists the members,
    which LongReD names and which complete the list, once."""
    assert main(["reproduce", "table3", "--profile", "paper", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "eval original paper_short" in out
    assert out.count("Short suite paper_short (17 of LongReD's 17") == 1
    members = [line.split() for line in out.splitlines() if "offline:" in line]
    assert len(members) == 17
    assert {m[1] for m in members if m[4] == "paper"} == {
        "mmlu", "bbh_fewshot", "lambada_openai", "triviaqa", "humaneval", "squadv2", "drop",
        "piqa",
    }  # fmt: skip


def test_paper_train_dry_run_works_without_the_model(monkeypatch, capsys):
    import longred_bench.models.loading as loading
    from longred_bench.errors import UserError

    def offline(model):
        raise UserError(f"model {model!r} cannot be reached")

    monkeypatch.setattr(loading, "load_config", offline)
    assert main(["train", "--recipe", "linearard", "--profile", "paper", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "model: meta-llama/Meta-Llama-3-8B" in out and "steps: 512" in out
    # the window is the profile's (8192): the rows are planned without the model's config
    assert "stream s2l: 256 rows x 8192 tokens per step" in out


@pytest.mark.skipif(torch.cuda.is_available(), reason="the check is for machines without a GPU")
def test_paper_run_without_gpu_fails_at_once(capsys):
    assert main(["reproduce", "all", "--profile", "paper"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "runs on CUDA GPUs and none is visible here" in err
    assert "`longred-bench reproduce all --profile paper --dry-run` prints its plan" in err


def test_estimates_come_from_cached_runs_of_the_plan():
    from longred_bench.reproduce.grid import UNIT_COST
    from longred_bench.reproduce.plan import PlannedUnit, estimate

    units = [
        PlannedUnit("a", "train longred seed 0", "train", True, 100.0, "longred", 1000),
        PlannedUnit("b", "train longred seed 1", "train", False, None, "longred", 2000),
        PlannedUnit("c", "eval", "eval", False, None),
    ]
    got = {u.key: u.seconds for u in estimate(units)}
    # Twice the tokens at the cached run's rate; an evaluation from the cached run when the plan
    # holds no CPT run.
    assert got == {"a": 100.0, "b": 200.0, "c": UNIT_COST["eval"] * 100.0}


def test_evaluations_are_estimated_from_recorded_times_of_their_suite():
    from longred_bench.reproduce.grid import UNIT_COST
    from longred_bench.reproduce.plan import PlannedUnit, estimate

    units = [
        PlannedUnit("t", "train cpt seed 0", "train", True, 90.0, "cpt", 1000),
        PlannedUnit("r1", "eval ruler", "eval", True, 40.0, suite="ruler"),
        PlannedUnit("r2", "eval ruler", "eval", True, 60.0, suite="ruler"),
        PlannedUnit("r3", "eval ruler", "eval", False, None, suite="ruler"),
        PlannedUnit("s1", "eval short", "eval", True, None, suite="short_tiny"),  # no timing kept
        PlannedUnit("s2", "eval short", "eval", False, None, suite="short_tiny"),
    ]
    got = {u.key: u.seconds for u in estimate(units)}
    assert got["r3"] == 50.0  # the median of the recorded ruler units
    assert got["s2"] == UNIT_COST["eval"] * 90.0  # none recorded for its suite: a third of CPT
    assert got["s1"] == UNIT_COST["eval"] * 90.0  # cached without a timing: estimated alike


def test_an_evaluation_unit_records_its_time(tmp_path, monkeypatch):
    import longred_bench.jobs.units as units
    from longred_bench.reproduce.grid import eval_unit

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    record = {"kind": "eval", "task": "t", "metric": "acc", "value": 1.0}
    monkeypatch.setattr(units, "run_eval_unit", lambda unit, progress: [dict(record)])
    unit = eval_unit({"suite": "ruler", "model": "m", "seed": 0})
    assert unit.cached() is None and unit.seconds() is None
    got = unit.run(progress=False)
    assert got[0]["value"] == 1.0 and unit.cached() == got
    assert unit.seconds() is not None and unit.seconds() >= 0.0
    assert unit.dir == tmp_path / unit.folder and unit.folder.startswith("runs/table3-eval/")


def test_the_paper_plan_has_the_128k_mistral_and_linearard_settings(capsys):
    """LongReD's 128K and Mistral rows and LinearARD's own setting are profiles of their own,
    listed by ``reproduce all --profile paper --dry-run`` with where each value comes from."""
    assert main(["reproduce", "all", "--profile", "paper", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert ("| longred (cream) | meta-llama/Meta-Llama-3-8B | abf:theta=1e8,factor=16 | "
            "131072 / 1024 | 512 x 2,097,152 = 1,073,741,824 | 2e-05 | a1 2, a2 15, top_m 3 |"
            ) in text  # fmt: skip
    assert ("| longred (cream) | mistralai/Mistral-7B-v0.3 | abf:theta=2e7,factor=4 | "
            "131072 / 1024 |") in text  # fmt: skip
    assert "| linearard | meta-llama/Llama-2-7b-hf | pi:factor=8 | 32768 / 1024 |" in text
    assert "- training.cpt.long_len: LongReD: 32K; 32,768 tokens chosen by the suite" in text


@pytest.mark.skipif(torch.cuda.is_available(), reason="the check is for machines without a GPU")
def test_the_gpu_check_asks_the_units_a_table_computes(tmp_path, monkeypatch, capsys):
    """smol's training tables evaluate on CUDA, its Table 1 measures drift on the CPU: only the
    former are refused without a GPU (and before any model loads)."""
    from longred_bench.reproduce import engine

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    assert main(["reproduce", "table3", "--profile", "smol", "--out", str(tmp_path / "o")]) != 0
    assert "runs on CUDA GPUs and none is visible here" in capsys.readouterr().err
    argv = ["reproduce", "table3", "--profile", "smol", "--unit", "eval_original_ruler"]
    assert main(argv) != 0 and "runs on CUDA GPUs" in capsys.readouterr().err

    class Reached(Exception):
        pass

    def reached(*args, **kwargs):
        raise Reached

    monkeypatch.setattr(engine, "check_model", reached)  # past the GPU check: stop there
    with pytest.raises(Reached):
        engine.reproduce("table1", "smol", tmp_path / "o", progress=False)
