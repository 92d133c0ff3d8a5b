"""A user's own profile: ``profiles new --from smoke`` writes an editable copy, the user changes
its extensions and seeds, and ``reproduce`` runs Table 3, Table 2 and Figure 3 on it end to end;
``profiles show`` resolves it; a bad profile fails in one line that names the file and the key,
before any model is loaded."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from longred_bench.cli import main
from longred_bench.results import read_records


def _edit(path: Path, change) -> None:
    data = yaml.safe_load(path.read_text())
    change(data)
    path.write_text(yaml.safe_dump(data, sort_keys=False))


def test_profiles_new_writes_an_editable_copy_that_show_resolves(tmp_path, capsys):
    mine = tmp_path / "mine.yaml"
    assert main(["profiles", "new", "--from", "smoke", "--out", str(mine)]) == 0
    text = mine.read_text()
    assert "# data: every pipeline end to end" in text
    assert not [line for line in text.splitlines() if line.startswith("name:")]  # the stem's
    assert main(["profiles", "new", "--from", "smoke", "--out", str(mine)]) == 2  # never replaced
    assert "exists" in capsys.readouterr().err and mine.read_text() == text
    assert main(["profiles", "show", str(mine)]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["name"] == "mine" and shown["model"]["name"] == "tiny-random"
    assert shown["tables"]["table3"]["rows"] == ["control", "cpt", "longred-c"]
    assert shown["tables"]["fig3"]["snapshots"] == [1, 2, 4]
    # A copy of the copy is a profile of its own, not one that writes over mine's reports.
    (tmp_path / "yours.yaml").write_text(text)
    assert main(["profiles", "show", str(tmp_path / "yours.yaml")]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["name"] == "yours"


def test_a_copy_of_a_profile_that_extends_another_is_named_after_its_file(tmp_path, capsys):
    """The copy's resolved keys leave out the source's own name: its file's stem names it, so
    the copy trains under its own cache keys and reports folder."""
    source = tmp_path / "q.yaml"
    source.write_text("extends: smoke\nname: q\nruns: {seeds: 2}\n")
    copy = tmp_path / "q2.yaml"
    assert main(["profiles", "new", "--from", str(source), "--out", str(copy)]) == 0
    assert not [line for line in copy.read_text().splitlines() if line.startswith("name:")]
    capsys.readouterr()
    assert main(["profiles", "show", str(copy)]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["name"] == "q2" and shown["runs"]["seeds"] == 2  # the settings are q's


def test_extends_inherits_and_overrides(tmp_path, capsys):
    child = tmp_path / "child.yaml"
    child.write_text("extends: smoke\nruns:\n  seeds: 2\ntables:\n  table3:\n    rows: [cpt]\n")
    assert main(["profiles", "show", str(child)]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["name"] == "child" and shown["runs"]["seeds"] == 2
    assert shown["runs"]["extensions"] == ["abf:theta=1e5"]  # inherited
    assert shown["tables"]["table3"]["rows"] == ["cpt"] and shown["tables"]["table2"]["rows"] == [
        "cpt",
        "long-short-cpt",
    ]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("extends: smoke\nrunz: {}\n", "unknown key runz"),
        ("extends: smoke\nruns: {seeds: three}\n", "runs.seeds must be an integer, got 'three'"),
        ("extends: smoke\nevaluation: {ruler: {lenghts: [512]}}\n", "evaluation.ruler.lenghts"),
        ("extends: smoke\nmodel: {name: ./no/such/model}\n", "'./no/such/model' does not exist"),
        ("model: {window: 256}\n", "model.name is required"),
        ("extends: smoke\ntables: {table3: {rowz: [cpt]}}\n", "unknown key tables.table3.rowz"),
        ("extends: smoke\ntables: {table3: {rows: [cpt, fancy]}}\n", "unknown row 'fancy'"),
        ("extends: smoke\ntraining: {cpt: {stepz: 3}}\n", "training.cpt.stepz is not a training"),
        ("extends: smoke\ntraining: {cpt: {device: cuda}}\n", "set it under `hardware:`"),
        ("extends: nowhere.yaml\n", "extends 'nowhere.yaml': no such file"),
        ("extends: smoke\nruns: [1, 2\n", "not valid YAML at line"),
        # a bare RULER name would select lm-eval's own task of that name
        (
            "extends: smoke\nevaluation: {ruler: {tasks: [niah_single_1]}}\n",
            "'niah_single_1' is not one of the suite's RULER tasks; write "
            "longred_ruler_niah_single_1",
        ),
        (
            "extends: smoke\ntables: {table3: {evaluation: {ruler: {tasks: [vt]}}}}\n",
            "tables.table3.evaluation.ruler.tasks: 'vt' is not one",
        ),
    ],
)
def test_a_bad_profile_fails_in_one_line_naming_file_and_key(tmp_path, capsys, body, message):
    import subprocess
    import sys

    bad = tmp_path / "bad.yaml"
    bad.write_text(body)
    code = (
        "import sys\n"
        "from longred_bench.cli import main\n"
        f"status = main(['reproduce', 'table3', '--profile', {str(bad)!r}, '--out', 'x'])\n"
        "assert 'torch' not in sys.modules, 'torch was imported'\n"
        "sys.exit(status)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path)  # fmt: skip
    assert done.returncode == 2, done.stderr
    err = done.stderr.strip()
    assert len(err.splitlines()) == 1 and str(bad) in err and message in err, err
    assert not (tmp_path / "x").exists()


def test_a_window_the_model_does_not_have_is_refused_before_any_run(tmp_path, capsys):
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("extends: smoke\nmodel: {name: tiny-random, window: 512}\n")
    assert main(["reproduce", "table1", "--profile", str(wrong), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "model.window is 512, but tiny-random's config says 256" in err
    assert str(wrong) in err and err.count("\n") == 1


@pytest.mark.parametrize("command", [["--unit", "train_cpt_abf:theta=5e3_seed_0"], ["--quiet"],
                                     ["--emit-slurm", "jobs"]])  # fmt: skip
def test_an_extension_the_model_cannot_take_is_refused_before_any_unit(
    tmp_path, monkeypatch, capsys, command
):
    """An ABF base below the model's own is refused in one line naming the file, the extension
    and its tables, by ``--unit`` and before a table's first unit (and before any data is
    fetched), and by ``--emit-slurm`` before any script is written, not at the start of that
    unit."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    low = tmp_path / "low.yaml"
    low.write_text("extends: smoke\nruns: {extensions: ['abf:theta=5e3', 'pi:factor=4']}\n")
    out = tmp_path / "out"
    outs = [] if "--unit" in command else ["--out", str(out)]  # --unit writes no report
    argv = ["reproduce", "table3", "--profile", str(low), *outs, *command]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and str(low) in err, err
    assert "extension abf:theta=5e3 (table3) does not apply to tiny-random: ABF needs theta " in err
    assert not out.exists() and not (tmp_path / "cache").exists()
    assert not (tmp_path / "jobs").exists()


def _config_only_model(tmp_path: Path, theta: float = 1e5) -> Path:
    """A local model folder holding only its config: 4 layers, a 256-token window, RoPE base
    ``theta``."""
    import json

    folder = tmp_path / "my model"
    folder.mkdir()
    config = {
        "model_type": "llama",
        "max_position_embeddings": 256,
        "num_hidden_layers": 4,
        "hidden_size": 64,
        "num_attention_heads": 4,
        "intermediate_size": 128,
        "vocab_size": 300,
        "rope_parameters": {"rope_type": "default", "rope_theta": theta},
    }
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.mark.parametrize("plan", ["--dry-run", "--list-units"])
def test_the_plan_of_a_local_model_checks_its_window_and_extensions(tmp_path, monkeypatch,
                                                                    capsys, plan):  # fmt: skip
    """A local model's config is read by the dry-run and by ``--list-units`` (which listed the
    units, and their estimates for the stated shape, with exit 0): a window it does not have,
    or an extension it cannot take, is refused in one line before anything is printed."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    folder = _config_only_model(tmp_path)
    profile = tmp_path / "mine.yaml"
    base = f"extends: smoke\nmodel: {{name: '{folder}', window: 256, layers: 4}}\n"
    profile.write_text(base + "runs: {extensions: ['abf:theta=1e5', 'pi:factor=4']}\n")
    assert main(["reproduce", "table3", "--profile", str(profile), plan]) == 2
    out, err = capsys.readouterr()
    assert "extension abf:theta=1e5 (table3) does not apply to " in err
    assert "ABF needs theta above the original 100000 (got 100000)" in err and not out
    profile.write_text(base.replace("window: 256", "window: 512"))
    assert main(["reproduce", "table3", "--profile", str(profile), plan]) == 2
    out, err = capsys.readouterr()
    assert "model.window is 512, but " in err and not out
    profile.write_text(base + "runs: {extensions: ['abf:theta=1e6', 'pi:factor=4']}\n")
    assert main(["reproduce", "table3", "--profile", str(profile), plan]) == 0
    assert ("table3: " if plan == "--dry-run" else '"id": ') in capsys.readouterr().out


def test_profiles_show_checks_a_local_models_window_depth_and_extensions(
    tmp_path, monkeypatch, capsys
):
    """``profiles show FILE`` (which, the copy's header says, checks it) passed a local model's
    wrong depth, window or extension with exit 0 that a dry run refuses; it refuses them in
    the same line now, and shows the profile where they hold."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    folder = _config_only_model(tmp_path, theta=1e4)  # below every extension of smoke's
    profile = tmp_path / "mine.yaml"
    base = f"extends: smoke\nmodel: {{name: '{folder}', window: 256, layers: 4}}\n"
    for body, said in (
        (base.replace("layers: 4", "layers: 3"), f"model.layers is 3, but {folder} has 4"),
        (base.replace("window: 256", "window: 512"), "model.window is 512, but "),
        (base + "runs: {extensions: ['abf:theta=1e3']}\n", "extension abf:theta=1e3 (table3, "),
    ):
        profile.write_text(body)
        assert main(["profiles", "show", str(profile)]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: profile {profile}: {said}") and err.count("\n") == 1, err
    profile.write_text(base)
    assert main(["profiles", "show", str(profile)]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["model"]["name"] == str(folder)


def test_a_paper_short_profile_is_checked_before_any_unit_runs(tmp_path, monkeypatch, capsys):
    """``paper_short`` evaluations need the user's leave to run model-written code and the hub:
    both are checked in one line before anything is fetched, trained or evaluated."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_ALLOW_CODE_EVAL", raising=False)
    mine = tmp_path / "mine.yaml"
    mine.write_text("extends: smoke\nevaluation:\n  short: {suite: paper_short}\n")
    out = tmp_path / "out"
    assert main(["reproduce", "table2", "--profile", str(mine), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "humaneval and mbpp, which execute model-written code" in err and err.count("\n") == 1
    argv = ["reproduce", "table2", "--profile", str(mine), "--out", str(out), "--allow-code-eval"]
    assert main(argv) == 2  # allowed; the hub is off in the tests
    err = capsys.readouterr().err
    assert "the paper_short suite needs Hugging Face hub access" in err and err.count("\n") == 1
    assert not (tmp_path / "cache").exists() and not out.exists()


def test_emitted_slurm_jobs_carry_the_code_permission_given_where_they_are_written(
    tmp_path, monkeypatch, capsys
):
    """``--emit-slurm`` refuses a ``paper_short`` profile's code tasks without the user's leave,
    writing nothing; with ``--allow-code-eval`` every job script exports the permission."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_ALLOW_CODE_EVAL", raising=False)
    mine = tmp_path / "mine.yaml"
    mine.write_text("extends: smoke\nevaluation:\n  short: {suite: paper_short}\n")
    slurm = tmp_path / "slurm"
    argv = ["reproduce", "table2", "--profile", str(mine), "--emit-slurm", str(slurm)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "humaneval and mbpp, which execute model-written code" in err and err.count("\n") == 1
    assert not slurm.exists()
    assert main([*argv, "--allow-code-eval"]) == 0
    scripts = [*sorted(slurm.glob("array-*.sbatch")), slurm / "report.sbatch"]
    assert len(scripts) >= 2
    assert all("export HF_ALLOW_CODE_EVAL=1\n" in p.read_text() for p in scripts)
    monkeypatch.delenv("HF_ALLOW_CODE_EVAL")
    plain = tmp_path / "plain"
    assert main(["reproduce", "table2", "--profile", "smoke", "--emit-slurm", str(plain)]) == 0
    assert "HF_ALLOW_CODE_EVAL" not in (plain / "report.sbatch").read_text()


def test_the_code_check_covers_the_tasks_of_every_pending_paper_short_unit():
    """Units may name different members (Figure 2's MMLU only beside the full group): the check
    sees their union, and every member when one names none."""
    from types import SimpleNamespace as NS

    from longred_bench.reproduce.engine import pending_tasks

    def step(tasks):
        return NS(unit=NS(config={"suite": "paper_short", "tasks": tasks}))

    assert pending_tasks([step(["mmlu"]), step(["piqa", "humaneval", "mmlu"])]) == [
        "mmlu", "piqa", "humaneval"]  # fmt: skip
    assert pending_tasks([step(["mmlu"]), step(None)]) is None


@pytest.mark.integration
def test_a_users_profile_runs_table3_table2_and_fig3(tmp_path, smoke_cache, capsys):
    mine = tmp_path / "mine.yaml"
    assert main(["profiles", "new", "--from", "smoke", "--out", str(mine)]) == 0

    def change(data):
        data["runs"]["extensions"] = ["yarn:factor=4"]
        data["runs"]["seeds"] = 2
        data["tables"]["table3"]["rows"] = ["cpt", "longred-c"]
        data["tables"]["fig3"].update(seeds=1)

    _edit(mine, change)
    for table in ("table3", "table2", "fig3"):
        out = tmp_path / table
        argv = ["reproduce", table, "--profile", str(mine), "--out", str(out), "--quiet"]
        assert main(argv) == 0, table
        records = read_records(out / f"{table}.jsonl.gz")
        assert {r["extension"] for r in records} - {None} == {"yarn:factor=4"}, table
        assert "profile `mine`" in (out / f"{table}.md").read_text() or table == "fig3"
    table3 = read_records(tmp_path / "table3" / "table3.jsonl.gz")
    seeds = {(r["row"], r["seed"]) for r in table3 if r["train"]}
    assert seeds == {("cpt", 0), ("cpt", 1), ("longred-c", 0), ("longred-c", 1)}
    # Table 2 reuses Table 3's cpt runs: the same run folders.
    table2 = read_records(tmp_path / "table2" / "table2.jsonl.gz")
    dirs = lambda rs, row: {r["train"]["dir"] for r in rs if r["row"] == row}  # noqa: E731
    assert dirs(table2, "cpt") == dirs(table3, "cpt")
    runs = list((smoke_cache / "runs").glob("train-*/config.yaml"))
    assert runs and all("profile: mine" in p.read_text() for p in runs)


def test_force_reruns_of_cached_paper_short_units_are_checked_up_front(monkeypatch):
    """``--force`` computes cached evaluations again, so their code tasks are checked too."""
    from types import SimpleNamespace as NS

    from longred_bench.errors import UserError
    from longred_bench.reproduce.engine import check_can_run

    monkeypatch.delenv("HF_ALLOW_CODE_EVAL", raising=False)
    cached = NS(
        unit=NS(
            kind="eval",
            cached=lambda: {"done": True},
            config={"suite": "paper_short", "tasks": ["humaneval"], "device": "cpu"},
        )
    )
    profile = NS(
        name="mine", hardware=NS(nproc_per_node=1, device="auto"), evaluation=NS(device="cpu")
    )
    check_can_run(profile, [cached])  # cached and not forced: nothing to check
    with pytest.raises(UserError, match="humaneval"):
        check_can_run(profile, [cached], force=True)


@pytest.mark.parametrize(
    ("body", "message"),
    [("tables: {tabel3: {seeds: 2}}",
      "tables.tabel3 is no table (did you mean table3?); the tables: table3, "),
     ("tables: {qqq: {seeds: 2}}", "tables.qqq is no table; the tables: table3, "),
     ("tables: {table1: {rows: [cpt]}}", "unknown key tables.table1.rows (keys of tables.table1"),
     ("tables: {table1: {after_cpt: nah}}", "tables.table1.after_cpt must be true or false, got"),
     ("evaluation: {ruler: {lengths: [768]}}",
      "evaluation.ruler.lengths: RULER lengths [768] not supported"),
     ('runs: {extensions: ["abf:theta=5e6", "abf:thta=5e6"]}',
      "runs.extensions[1]: RoPE spec 'abf:thta=5e6': unknown key 'thta'"),
     ('tables: {longrecipe: {extensions: ["abf:thta=5e6"]}}',
      "tables.longrecipe.extensions[0]: RoPE spec 'abf:thta=5e6': unknown key 'thta'"),
     ("tables: {longrecipe: {evaluation: {ruler: {lengths: [768]}}}}",
      "tables.longrecipe.evaluation.ruler.lengths: RULER lengths [768] not supported"),
     # a local data file or folder that is not there, in any key that names training data
     ('training: {cpt: {long_data: "jsonl:/nonexistent"}}',
      "training.cpt.long_data: data 'jsonl:/nonexistent': /nonexistent does not exist"),
     ('runs: {overrides: {long_data: "disk:/nonexistent"}}',
      "runs.overrides.long_data: data 'disk:/nonexistent': /nonexistent does not exist"),
     ('tables: {table3: {overrides: {short_data: "hf:org/x|txt:/nonexistent"}}}',
      "tables.table3.overrides.short_data: data 'hf:org/x|txt:/nonexistent': /nonexistent "
      "does not exist"),
     # training keys of every section: known, and of their type, named by their key path
     ('training: {cpt: {lr: "fast"}}', "training.cpt.lr must be a number, got 'fast'"),
     ("runs: {overrides: {stepz: 2}}",
      "runs.overrides.stepz is not a training key (did you mean steps? see docs/training.md)"),
     ("training: {cpt: {zzz: 2}}", "training.cpt.zzz is not a training key (see docs/training"),
     ("tables: {table3: {overrides: {lr: fast}}}",
      "tables.table3.overrides.lr must be a number, got 'fast'"),
     # of their type, and still unable to run: refused by key path too
     ("runs: {overrides: {lr: .nan}}", "runs.overrides.lr: nan is not a finite number"),
     ('training: {cpt: {rope: "abf:theta=4e5x"}}',
      "training.cpt.rope: RoPE spec 'abf:theta=4e5x': theta='4e5x' is not a number"),
     ('tables: {pcd: {ropes: [none, "pi:factor=0.5"]}}',
      "tables.pcd.ropes[1]: RoPE spec 'pi:factor=0.5': factor must be > 1"),
     ("model: {window: 0}", "model.window must be at least 1, not 0"),
     # a length or extension twice counts its samples twice: refused before any unit runs
     ("evaluation: {ruler: {lengths: [512, 512]}}",
      "evaluation.ruler.lengths: 512 given more than once"),
     ('tables: {pcd: {ropes: [none, "pi:factor=4", "pi:factor=4.0"]}}',
      "tables.pcd.ropes: pi:factor=4 given more than once"),
     ('tables: {fig2: {zero_shot: ["pi:factor=2", "pi:factor=2.0", "pi:factor=3"]}}',
      "tables.fig2.zero_shot: pi:factor=2 given more than once"),
     ("tables: {table3: {rows: [cpt, cpt]}}", "tables.table3.rows: cpt given more than once")],
)  # fmt: skip
@pytest.mark.parametrize("command", ["dry-run", "emit-slurm", "show"])
def test_what_the_schema_cannot_check_is_refused_before_anything_is_planned(
    tmp_path, monkeypatch, capsys, body, message, command
):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"extends: smoke\n{body}\n")
    argv = {"dry-run": ["reproduce", "table3", "--profile", str(bad), "--dry-run"],
            "emit-slurm": ["reproduce", "table3", "--profile", str(bad), "--emit-slurm",
                           str(tmp_path / "jobs")],
            "show": ["profiles", "show", str(bad)]}[command]  # fmt: skip
    assert main(argv) == 2
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"error: profile {bad}: {message}")
    assert out.out == "" and not (tmp_path / "jobs").exists()


@pytest.mark.parametrize(
    ("table", "body", "message"),
    [("table1", "{aftr: 1}", "unknown key tables.table1.aftr"),
     ("table3", "{rows: [control, cpt, nope]}", "tables.table3.rows: unknown row 'nope'"),
     ("table2", "{seeds: {nope: 2}}", "tables.table2.seeds: row 'nope' is not a row"),
     ("fig3", "{snapshots: [4, 2, 0]}", "tables.fig3.snapshots: must be increasing steps")],
)  # fmt: skip
def test_profiles_show_refuses_a_table_section_its_table_refuses(
    tmp_path, monkeypatch, capsys, table, body, message
):
    """``profiles show FILE`` is how a profile is checked (its header says so): a table's own
    section that the table refuses was listed as "cannot run" with exit status 0, found only
    when that table ran (perhaps as a queued job)."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    bad = tmp_path / "bad.yaml"
    bad.write_text(f"extends: smoke\ntables:\n  {table}: {body}\n")
    for argv in (["profiles", "show", str(bad)],
                 ["reproduce", table, "--profile", str(bad), "--dry-run"]):  # fmt: skip
        assert main(argv) == 2
        out = capsys.readouterr()
        lines = out.err.strip().splitlines()
        assert len(lines) == 1 and message in lines[0] and out.out == "", lines


def test_profiles_show_lists_tables_that_cannot_run_where_the_file_gives_no_section(
    smoke_cache, tmp_path, capsys
):
    """A model whose window fits no RULER length: tables whose sections the file inherits are
    listed as "cannot run" (each with its reason, the listing kept, status 0), those without a
    section too (their plan is checked as the run checks it). The reason names no length that
    its tasks could not run at: tiny-random's byte tokens need 1,024 for RULER's tasks, beyond
    the 512-token window of the extension (it read "e.g. evaluation.ruler.lengths: [512]")."""
    mine = tmp_path / "small.yaml"
    mine.write_text("extends: smoke\nmodel: {name: tiny-random, window: 128, layers: 4}\n")
    assert main(["profiles", "show", str(mine)]) == 0
    tables = yaml.safe_load(capsys.readouterr().out)["tables"]
    for name in ("table3", "table5"):  # a section from smoke, and none
        assert tables[name].startswith(f"cannot run: {name} cannot run at profile small")
        assert (
            "evaluation.ruler.lengths: no RULER length fits abf:theta=1e5's 512-token window "
            "with these tasks (they need a RULER length of at least 1024 "
        ) in tables[name]
        assert tables[name].endswith("give runs.extensions a larger factor, or other "
                                     "evaluation.ruler.tasks")  # fmt: skip
    assert main(["reproduce", "table5", "--profile", str(mine), "--dry-run"]) == 2


def test_existing_local_data_and_hub_data_pass_without_asking_the_hub(
    tmp_path, monkeypatch, capsys
):
    """Only local paths are checked: an ``hf:`` member is neither streamed nor asked about."""
    import huggingface_hub

    from longred_bench.data import hub_corpora

    def refuse(*args, **kwargs):
        raise AssertionError(f"the hub was asked: {args} {kwargs}")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr("socket.create_connection", refuse)
    monkeypatch.setattr(huggingface_hub.HfApi, "dataset_info", refuse)
    monkeypatch.setattr(hub_corpora, "hub_entry", refuse)
    monkeypatch.setattr(hub_corpora, "check_readable", refuse)
    (tmp_path / "web.jsonl").write_text('{"text": "a document"}\n')
    mine = tmp_path / "mine.yaml"
    local = f"jsonl:{tmp_path}/web.jsonl"
    mine.write_text(f"extends: smoke\ntraining:\n  cpt:\n    long_data: {local}\n"
                    '    short_data: "hf:org/no-such-data:docs=5|austen+kjv"\n')  # fmt: skip
    assert main(["profiles", "show", str(mine)]) == 0
    shown = yaml.safe_load(capsys.readouterr().out)
    assert shown["training"]["cpt"]["long_data"] == local


@pytest.mark.parametrize(
    ("hardware", "message"),
    [
        ("{mfu: 0}", "hardware.mfu must be above 0 and at most 1, got 0.0"),
        ("{mfu: 1.5}", "hardware.mfu must be above 0 and at most 1, got 1.5"),
        ("{gpu_tflops: -5}", "hardware.gpu_tflops must be above 0, got -5.0"),
        ("{gpu_memory_gib: -1}", "hardware.gpu_memory_gib must be above 0, got -1.0"),
        # NaN fails no comparison and inf none with no upper bound: the plans said nan GPU-hours
        ("{mfu: .nan}", "hardware.mfu: nan is not a finite number"),
        ("{gpu_tflops: .inf}", "hardware.gpu_tflops: inf is not a finite number"),
        ("{gpu_memory_gib: .nan}", "hardware.gpu_memory_gib: nan is not a finite number"),
    ],
)
def test_hardware_figures_out_of_range_are_one_line(tmp_path, hardware, message):
    """A plan's GPU-hours divide by them: 0 was a ZeroDivisionError, -5 negative GPU-hours."""
    from longred_bench.errors import UserError
    from longred_bench.profiles.loader import load_profile

    path = tmp_path / "hw.yaml"
    path.write_text(f"extends: smol\nname: hw\nhardware: {hardware}\n")
    with pytest.raises(UserError, match=re.escape(message)):
        load_profile(path)


def test_a_copy_of_a_profile_plans_table1_under_the_same_keys(tmp_path, monkeypatch) -> None:
    """Table 1's zero-shot drift unit held the profile's name in its folder: a copy of a profile
    under another name measured it again, while its training runs were reused."""
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.registry import get_spec

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    copy = tmp_path / "my-copy.yaml"
    copy.write_text("extends: smoke\n")
    spec = get_spec("table1")
    keys = [{s.key for s in spec.steps(spec.resolve(load_profile(p), progress=False))}
            for p in ("smoke", copy)]  # fmt: skip
    assert keys[0] == keys[1] and any(k.startswith("runs/table1/") for k in keys[0])
