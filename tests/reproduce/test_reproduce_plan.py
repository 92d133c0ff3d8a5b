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
    # Into an empty cache only the merge has an estimate: the total says it is its own (it
    # read "about 0.0 min of compute" for the whole plan; under a minute it reads in seconds).
    total = text.split("In all: ")[1].splitlines()[0]
    # one estimate: its own time, whatever the jobs (one job runs it)
    assert "(about 1.0 s of compute with 2 job(s)" in total
    assert " for the 1 with an estimate, " in total
    assert f", {distinct - 1} without one)" in total
    # What the counts leave out (tiny-base's 15-minute build) is said under them too.
    besides = text.split("In all: ")[1].splitlines()[1]
    assert besides.startswith("Besides the units: ") and "tiny_base: tiny-base is built" in besides


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


def test_paper_plan_prints_what_the_training_units_run(capsys):
    """The papers' table reads the units' own configs: the grid sets each row's model, RoPE and
    budget over the profile's ``training`` sections, so LongRecipe runs the base Llama-3-8B at
    the table's extension with its replay inside the others' budget, not the Instruct model at
    4.89e7 for 104 steps of 3.1M tokens that ``training.longrecipe`` holds."""
    assert main(["reproduce", "all", "--profile", "paper", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert ("| longred-c | meta-llama/Meta-Llama-3-8B | abf:theta=2e7 | 512 x 2,097,152 = "
            "1,073,741,824 | long 536.9M x 32,768, short 402.7M x 1,024, s2l 134.2M x 8,192 | "
            "2e-05 | a1 5, a2 10, top_m 6 |") in text  # fmt: skip
    assert "train longred-c abf:theta=2e7 seed 0" in text  # every unit of every table
    assert "32K: cpt 22.4 h" in text
    # LongRecipe's rows the share of the table's 32K window its profile states (24K of 80K)
    assert ("| longrecipe | meta-llama/Meta-Llama-3-8B | abf:theta=2e7 | 78 + 26 replay = 104 x "
            "3,145,632 = 327,145,728 | long 245.4M x 9,830, short 81.8M x 8,192 | 5e-05 |"
            ) in text  # fmt: skip
    table = text[text.index("What the training runs of profile paper "):
                 text.index("Where the values of paper")]  # fmt: skip
    assert "| meta-llama/Meta-Llama-3-8B-Instruct |" not in table and "4.89e7" not in table
    assert "| control | meta-llama/Meta-Llama-3-8B | original | " in table
    # The other papers' recipes, with what their papers state of compute.
    assert "16 H100-hours at 80K" in text and "4.25M training tokens" in text
    assert "| pose | meta-llama/Meta-Llama-3-8B | abf:theta=2e7 | " in text


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
    # one table's call points to that table's plan (it named all's)
    assert main(["reproduce", "table3", "--profile", "paper"]) != 0
    err = capsys.readouterr().err
    assert (
        "`longred-bench reproduce table3 --profile paper --dry-run` prints its plan; to run it "
        "on this machine's CPU, a profile file that extends it sets hardware.device: cpu and "
        "evaluation.device: cpu" in err
    )


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
    import longred_bench.jobs.unit_compute as unit_compute
    from longred_bench.reproduce.grid import eval_unit

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    record = {"kind": "eval", "task": "t", "metric": "acc", "value": 1.0}
    monkeypatch.setattr(unit_compute, "run_eval_unit", lambda unit, progress, **_: [dict(record)])
    unit = eval_unit({"suite": "ruler", "model": "m", "seed": 0})
    assert unit.cached() is None and unit.seconds() is None
    got = unit.run(progress=False)
    assert got[0]["value"] == 1.0 and unit.cached() == got
    assert unit.seconds() is not None and unit.seconds() >= 0.0
    assert unit.dir == tmp_path / unit.folder and unit.folder.startswith("runs/table3-eval/")


def test_the_paper_plan_has_the_128k_mistral_and_linearard_settings(capsys):
    """LongReD's 128K and Mistral rows and LinearARD's own setting are profiles of their own,
    listed by ``reproduce all --profile paper --dry-run`` with where each value comes from; each
    row as its units run it (LinearARD at its table's extension, from the light CPT run; the
    short-to-long rows at the model's window)."""
    assert main(["reproduce", "all", "--profile", "paper", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert ("| longred-c | meta-llama/Meta-Llama-3-8B | abf:theta=1e8,factor=16 | 512 x 2,097,152 "
            "= 1,073,741,824 | long 536.9M x 131,072, short 402.7M x 1,024, s2l 134.2M x 8,192 | "
            "2e-05 | a1 2, a2 15, top_m 3 |") in text  # fmt: skip
    assert ("| linearard (from cpt-light) | meta-llama/Meta-Llama-3-8B | abf:theta=1e8,factor=16 "
            "| ") in text  # fmt: skip
    assert ("| longred-c | mistralai/Mistral-7B-v0.3 | abf:theta=2e7,factor=4 | 512 x 2,097,152 = "
            "1,073,741,824 | long 536.9M x 131,072, short 402.7M x 1,024, s2l 134.2M x 32,768 |"
            ) in text  # fmt: skip
    assert "| linearard (from cpt-light) | meta-llama/Llama-2-7b-hf | pi:factor=8 | " in text
    assert "- training.cpt.long_len: LongReD: 32K; 32,768 tokens chosen by the suite" in text


def test_a_tables_counts_are_its_distinct_units(tmp_path, monkeypatch, capsys):
    """Table 6's short-eighth row at ``paper`` is LongReD-C itself (an eighth of 8,192 is its
    1,024): the table counts that unit and its evaluations once, as ``--list-units`` lists them,
    and says which row shares it; one table's count is the plan's distinct count."""
    import json

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    assert main(["reproduce", "table6", "--profile", "paper", "--list-units"]) == 0
    listed = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    units = [u for u in listed if u["kind"] != "note"]
    assert main(["reproduce", "table6", "--profile", "paper", "--dry-run"]) == 0
    text = capsys.readouterr().out
    head = next(x for x in text.splitlines() if x.startswith("table6: "))
    assert head.startswith(f"table6: {len(units)} units, 0 cached, {len(units)} to run")
    assert f"In all: {len(units)} distinct units" in text
    lines = text.splitlines()
    unit = "   to run  train longred-c abf:theta=2e7 seed 0  ("
    shared = next(i for i, x in enumerate(lines) if x.startswith(unit))
    assert lines[shared + 1] == (
        "           the same unit as: train longred-c-short-eighth abf:theta=2e7 seed 0"
    )
    hours = [float(x.split("(")[1].split(" GPU-h")[0]) for x in lines
             if x.startswith("   to run  ") and " GPU-h," in x]  # fmt: skip
    assert f"({sum(hours):.1f} GPU-hours" in head


def test_wall_clock_runs_training_on_every_gpu_and_evaluations_on_one():
    """On a node of 8 GPUs a training run's 16 GPU-hours take 2 hours; 8 one-GPU evaluations of
    1 GPU-hour take 1 hour side by side, 8 one after another: the plan says both."""
    from types import SimpleNamespace as NS

    from longred_bench.reproduce.costs import UnitCost
    from longred_bench.reproduce.plan import PlannedUnit, gpu_totals

    train = PlannedUnit("t", "train", "train", False, None, "cpt", 1, cost=UnitCost(1, 16.0, 50))
    evals = [PlannedUnit(f"e{i}", "eval", "eval", False, None, suite="ruler",
                         cost=UnitCost(1, 1.0, 20)) for i in range(8)]  # fmt: skip
    node = NS(nproc_per_node=8, gpu_memory_gib=80)
    assert gpu_totals([train, *evals], node).startswith(
        "24.0 GPU-hours (3.0 h on a node of 8 GPUs with the one-GPU units 8 at a time, 10.0 h "
        "with them one at a time)")  # fmt: skip
    one = NS(nproc_per_node=1, gpu_memory_gib=80)
    assert gpu_totals([train, *evals], one).startswith("24.0 GPU-hours (24.0 h on 1 GPU)")


def test_the_footer_says_how_each_profiles_short_suites_were_estimated(
    tmp_path, monkeypatch, capsys
):
    """``paper``'s short evaluations are ``paper_short``, whose tokens are not counted offline:
    its footer says they are not estimated, not that they were counted with SmolLM2's
    tokenizer; ``smol``'s ``short`` evaluations were."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    assert main(["reproduce", "table2", "--profile", "paper", "--dry-run"]) == 0
    text = capsys.readouterr().out
    footer = next(x for x in text.splitlines() if x.startswith("In all: "))
    shorts = sum(1 for x in text.splitlines() if x.startswith("   to run  eval ")
                 and x.split("  (")[0].endswith(" paper_short"))  # fmt: skip
    assert "SmolLM2" not in footer
    assert (f"not estimated, so not in the GPU-hours: {shorts} paper_short evaluation(s) "
            "(paper_short: its members' tokens are not counted offline") in footer  # fmt: skip
    assert main(["reproduce", "table7", "--profile", "smol", "--dry-run"]) == 0
    footer = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("In all: "))
    assert ("the short evaluations from their tasks' tokens as SmolLM2's tokenizer counts them"
            in footer and "not estimated" not in footer)  # fmt: skip
    # the counted FLOPs bound no time: a 135M model's evaluation runs far below the MFU
    assert "an upper bound on their FLOPs, not on their time" in footer


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
    # A training unit of a GPU profile (hardware.device auto, evaluation on CUDA): refused too,
    # rather than training SmolLM2 at 32K rows on the CPU.
    argv = ["reproduce", "table3", "--profile", "smol", "--unit", "train_cpt_abf:theta=4e6_seed_0"]
    assert main(argv) != 0 and "runs on CUDA GPUs" in capsys.readouterr().err

    class Reached(Exception):
        pass

    def reached(*args, **kwargs):
        raise Reached

    # past the GPU check: stop at the step after it (before SmolLM2 is fetched into the cache)
    monkeypatch.setattr(engine, "fetch_missing", reached)
    with pytest.raises(Reached):
        engine.reproduce("table1", "smol", tmp_path / "o", progress=False)


def test_a_tables_own_extensions_are_named_where_they_are_not_the_grids(tmp_path, capsys):
    """A profile that changes ``runs.extensions`` leaves a table with its own (smol's Table 4
    at ABF 4e6): the plan says so, and how to change it."""
    mine = tmp_path / "my2.yaml"
    mine.write_text('extends: smoke\nname: my2\nruns: {extensions: ["abf:theta=5e6"]}\n'
                    'tables: {table4: {extensions: ["pi:factor=4"]}}\n')  # fmt: skip
    assert main(["reproduce", "table4", "--profile", str(mine), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert ("  at pi:factor=4: `tables.table4.extensions`, not `runs.extensions` "
            "(abf:theta=5e6); set the table's own to change it") in out  # fmt: skip
    assert main(["reproduce", "table3", "--profile", str(mine), "--dry-run"]) == 0
    assert "`tables.table3.extensions`" not in capsys.readouterr().out


def test_a_training_units_tokens_are_its_steps_times_tokens_per_step(tmp_path, monkeypatch):
    """An uncached run is estimated from cached runs' seconds per token: each planned run's
    tokens are its steps times its tokens per step (runs of other batch sizes compare)."""
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.plan import planned_units
    from longred_bench.reproduce.registry import get_spec

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    ctx = get_spec("table3").resolve(load_profile("smoke"), progress=False)
    runs = [u for u in planned_units(ctx) if u.kind == "train"]
    assert runs and all(u.config["tokens_per_step"] > 1 for u in runs)
    assert all(u.tokens == u.config["steps"] * u.config["tokens_per_step"] for u in runs)


def test_estimates_prefer_their_own_recipes_rate_and_a_cpt_run_for_evaluations():
    """An uncached run is estimated at its own recipe's cached seconds per token (not every
    recipe's), a recipe with none cached at every cached run's; an evaluation with nothing of
    its suite cached at a third of the CPT runs (not of every run)."""
    from longred_bench.reproduce.grid import UNIT_COST
    from longred_bench.reproduce.plan import PlannedUnit, estimate

    units = [
        PlannedUnit("c", "train cpt seed 0", "train", True, 100.0, "cpt", 1000),
        PlannedUnit("l", "train longred seed 0", "train", True, 300.0, "longred", 1000),
        PlannedUnit("l1", "train longred seed 1", "train", False, None, "longred", 2000),
        PlannedUnit("p", "train pose seed 0", "train", False, None, "pose", 1000),
        PlannedUnit("e", "eval", "eval", False, None, suite="ruler"),
    ]
    got = {u.key: (u.seconds, u.basis) for u in estimate(units)}
    assert got["l1"] == (600.0, "tokens")  # 0.3 s per token, longred's own
    assert got["p"] == (200.0, "tokens")  # the median of 0.1 and 0.3 s per token
    assert got["e"] == (UNIT_COST["eval"] * 100.0, "guess")


def test_the_papers_table_shows_seed_0_of_each_row(tmp_path, monkeypatch):
    """At a profile of several seeds the papers' table still lists each row's seed-0 run once
    per extension, not each seed's."""
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.paper_plan import row_configs

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    mine = tmp_path / "seeds.yaml"
    mine.write_text("extends: paper\nruns: {seeds: 2}\n")
    rows = row_configs(load_profile(mine), ("cpt",))
    assert rows and all(cfg.seed == 0 for _, _, cfg in rows)
    assert len({ext for _, ext, _ in rows}) == len(rows)


def test_the_papers_table_shows_a_row_at_each_of_its_extensions(tmp_path, monkeypatch):
    """A row trained at two extensions (paper's ABF and PI) is two runs: two lines of the
    papers' table, not the first one's alone."""
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.paper_plan import row_configs

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    paper = load_profile("paper")
    assert len(paper.runs.extensions) > 1
    shown = {ext for _, ext, _ in row_configs(paper, ("cpt",))}
    assert shown >= set(paper.runs.extensions)
