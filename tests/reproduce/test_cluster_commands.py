"""What ``--list-units``, the dry-run and ``--emit-slurm`` print runs as printed: every command
carries the table's options (``--d1 prose``) and, for a unit that runs ``paper_short``'s code
tasks, ``--allow-code-eval``; the SLURM jobs ask one node's resources, run in the emitting
directory on the run cache the plan was read from (paths quoted), and a failed unit cancels the
jobs that wait for it."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

from longred_bench.cli import build_parser, main


def _listed(capsys, *argv: str) -> list[dict]:
    assert main(["reproduce", *argv, "--list-units"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def _run_printed(monkeypatch, capsys, command: str) -> tuple[int, str]:
    """A printed ``--unit`` command through the CLI, up to the unit's computation (stubbed: it
    prints the unit's cache folder); its exit status and its output."""
    from longred_bench.reproduce import cluster, engine

    monkeypatch.setattr(cluster, "run_unit", lambda ctx, step, steps: f"computes {step.key}")
    monkeypatch.setattr(engine, "check_model", lambda *args, **kwargs: None)  # no config read
    argv = shlex.split(command)
    assert argv[0] == "longred-bench"
    status = main(argv[1:])
    captured = capsys.readouterr()
    return status, captured.out + captured.err


def test_listed_commands_carry_the_tables_options_and_compute_the_listed_unit(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    units = _listed(capsys, "table3", "--profile", "tiny", "--d1", "prose")
    default = {u["id"]: u["folder"] for u in _listed(capsys, "table3", "--profile", "tiny")}
    parser = build_parser()
    for u in units:
        args = parser.parse_args(shlex.split(u["command"])[1:])
        assert (args.table, args.profile, args.d1, args.unit) == (
            "table3", "tiny", "prose", u["id"])  # fmt: skip
    # a trained row of the prose data: its folder is not the default unit's
    moved = next(u for u in units if u["folder"] != default.get(u["id"]))
    status, out = _run_printed(monkeypatch, capsys, moved["command"])
    assert status == 0 and out.strip() == f"computes {moved['folder']}"


def test_a_unit_running_code_tasks_is_printed_with_allow_code_eval(tmp_path, monkeypatch, capsys):
    from longred_bench.evaluation import paper_suite
    from longred_bench.reproduce import can_run

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    monkeypatch.setenv("HF_ALLOW_CODE_EVAL", "0")  # --allow-code-eval sets it; restored after
    units = _listed(capsys, "table3", "--profile", "paper")
    code = [u for u in units if "paper_short" in u["label"]]  # humaneval and mbpp among them
    assert code and all(u["command"].endswith(" --allow-code-eval") for u in code)
    assert all("--allow-code-eval" not in u["command"] for u in units if u not in code)
    assert main(["reproduce", "table3", "--profile", "paper", "--dry-run"]) == 0
    printed = [line.split("$ ", 1)[1] for line in capsys.readouterr().out.splitlines()
               if line.lstrip().startswith("$ ")]  # fmt: skip
    # the plan shows a unit two rows share under both labels; either id names it
    assert {u["command"] for u in units} <= set(printed)
    assert all(c.endswith(" --allow-code-eval") == ("paper_short" in c) for c in printed)
    # the printed command passes the checks `--unit` makes (no GPU nor hub here: stubbed)
    monkeypatch.setattr(can_run, "_check_cuda", lambda profile, table: None)
    monkeypatch.setattr(paper_suite, "require_hub", lambda *args: None)
    without = code[0]["command"].removesuffix(" --allow-code-eval")
    status, out = _run_printed(monkeypatch, capsys, without)
    assert status == 2 and "execute model-written code" in out
    status, out = _run_printed(monkeypatch, capsys, code[0]["command"])
    assert status == 0 and out.strip() == f"computes {code[0]['folder']}"


def test_slurm_jobs_ask_one_nodes_resources_and_cancel_what_waits_on_a_failure(
    tmp_path, monkeypatch
):
    cache = tmp_path / "the cache"
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    monkeypatch.setenv("HF_ALLOW_CODE_EVAL", "0")  # --allow-code-eval sets it; restored after
    out = tmp_path / "my jobs"
    argv = ["reproduce", "table3", "--profile", "paper", "--allow-code-eval"]
    assert main([*argv, "--emit-slurm", str(out)]) == 0
    scripts = sorted(out.glob("*.sbatch"))
    assert len(scripts) == 6  # three levels (training on 8 GPUs, the rest on 1) and the report
    for path in scripts:
        lines = path.read_text().splitlines()
        head = [line for line in lines if line.startswith("#SBATCH")]
        assert "#SBATCH --nodes=1" in head
        if "#SBATCH --gres=gpu:8" in head:  # training on all of a node's GPUs: all of the node
            assert {"#SBATCH --exclusive", "#SBATCH --mem=0"} <= set(head)
        else:  # one process, one GPU
            assert {"#SBATCH --gres=gpu:1", "#SBATCH --cpus-per-task=8"} <= set(head)
        assert any(line.startswith(f"#SBATCH --output='{out}/logs/%x") for line in head)
        assert f"export LONGRED_CACHE={shlex.quote(str(cache))}" in lines
        assert "export HF_ALLOW_CODE_EVAL=1" in lines
        assert " reproduce table3 --profile paper " in lines[-1]
    submit = (out / "submit.sh").read_text().splitlines()
    assert f"cd {shlex.quote(str(out))}" in submit
    deps = [line for line in submit if line.startswith("DEP=") and line != "DEP="]
    assert len(deps) == 3 and all(d.endswith(' --kill-on-invalid-dep=yes"') for d in deps)
    check = subprocess.run(["bash", "-n", str(out / "submit.sh")], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr


def test_an_array_task_runs_its_unit_where_and_on_what_it_was_emitted(
    tmp_path, monkeypatch, capsys
):
    from longred_bench.reproduce import cluster

    echo = tmp_path / "bin dir" / "longred-bench"  # prints where it runs and its arguments
    echo.parent.mkdir()
    echo.write_text('#!/bin/sh\nprintf "%s\\n" "$PWD" "$LONGRED_CACHE" "$@"\n')
    echo.chmod(0o755)
    monkeypatch.setattr(
        cluster.shutil, "which", lambda name: str(echo) if name == echo.name else None
    )
    work, cache, out = tmp_path / "work dir", tmp_path / "a cache", tmp_path / "my jobs"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    assert main(["reproduce", "table3", "--profile", "tiny", "--d1", "prose", "--emit-slurm",
                 str(out)]) == 0  # fmt: skip
    array = (out / "array-1.sbatch").read_text()
    assert "--gres" not in array and "#SBATCH --cpus-per-task=2\n" in array  # tiny: the CPU
    env = {**os.environ, "SLURM_ARRAY_TASK_ID": "1", "LONGRED_CACHE": str(tmp_path / "other")}
    unit = (out / "units-1.txt").read_text().splitlines()[1].split("\t")[0]
    # A later emit into the folder rewrites or deletes the lists: a queued task (SLURM keeps
    # its script as submitted) still runs the unit it was submitted with.
    (out / "units-1.txt").write_text("another\tplan\n")
    ran = {}
    for name in ("array-1.sbatch", "report.sbatch"):
        done = subprocess.run(["bash", str(out / name)], env=env, cwd=tmp_path,
                              capture_output=True, text=True)  # fmt: skip
        assert done.returncode == 0, done.stderr
        ran[name] = done.stdout.splitlines()
    where = [str(Path.cwd()), str(cache), "reproduce", "table3", "--profile", "tiny", "--d1",
             "prose"]  # fmt: skip
    assert ran["array-1.sbatch"] == [*where, "--unit", unit, "--quiet"]
    assert ran["report.sbatch"] == [*where, "--quiet"]
    assert capsys.readouterr().err == ""


def test_a_tables_note_is_a_json_line_of_kind_note(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    *units, note = _listed(capsys, "pcd", "--profile", "smoke")
    assert note["kind"] == "note" and "id" not in note and note["note"].startswith("then ")
    assert units and all(u["kind"] != "note" and u["id"] for u in units)


def test_jobs_emitted_on_the_fallback_model_run_it_on_every_node(tmp_path, monkeypatch, capsys):
    """`smol` states the hub's SmolLM2 with an offline fallback: emitted where the hub cannot
    give it, every job exports HF_HUB_OFFLINE=1, so a node that reaches the hub runs the same
    fallback; a profile without a fallback exports nothing of the kind."""
    from longred_bench.models.choice import chosen_model

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    chosen_model.cache_clear()
    try:
        assert main(["reproduce", "table1", "--profile", "smol", "--quiet",
                     "--emit-slurm", str(tmp_path / "smol")]) == 0  # fmt: skip
    finally:
        chosen_model.cache_clear()
    scripts = sorted((tmp_path / "smol").glob("*.sbatch"))
    assert scripts and all("export HF_HUB_OFFLINE=1" in p.read_text() for p in scripts)
    assert main(["reproduce", "table3", "--profile", "smoke", "--quiet",
                 "--emit-slurm", str(tmp_path / "smoke")]) == 0  # fmt: skip
    smoke = sorted((tmp_path / "smoke").glob("*.sbatch"))
    assert smoke and not any("HF_HUB_OFFLINE" in p.read_text() for p in smoke)
    capsys.readouterr()


def test_jobs_emitted_on_the_hub_model_refuse_its_fallback(tmp_path, monkeypatch, capsys):
    """Emitted where the hub gives `smol`'s model and its training data, every job exports
    LONGRED_NO_FALLBACK=1 for both, and a job on a node without the hub then stops in one line
    instead of training the fallback."""
    import pytest

    from longred_bench.errors import UserError
    from longred_bench.models import choice, names

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setattr(choice, "hub_unreachable", lambda: None)
    monkeypatch.setattr(names, "hub_unreachable", lambda: None)  # the data's view
    monkeypatch.setattr(choice, "hub_has_model", lambda name: True)
    choice.chosen_model.cache_clear()
    try:
        assert main(["reproduce", "table3", "--profile", "smol", "--quiet",
                     "--emit-slurm", str(tmp_path / "jobs")]) == 0  # fmt: skip
        scripts = sorted((tmp_path / "jobs").glob("*.sbatch"))
        pinned = f"export {choice.NO_FALLBACK}=1  # the hub's model and data, as when emitted"
        assert scripts and all(pinned in p.read_text() for p in scripts)
        assert not any("HF_HUB_OFFLINE" in p.read_text() for p in scripts)
        # On a node where the hub does not answer:
        choice.chosen_model.cache_clear()
        monkeypatch.setattr(choice, "hub_unreachable", lambda: "huggingface.co is unreachable")
        monkeypatch.setenv(choice.NO_FALLBACK, "1")
        with pytest.raises(UserError, match="this job was planned with it"):
            choice.chosen_model("HuggingFaceTB/SmolLM2-135M", "smollm2-135m")
    finally:
        choice.chosen_model.cache_clear()
    capsys.readouterr()


def test_jobs_run_the_source_tree_they_were_emitted_from(tmp_path, monkeypatch, capsys):
    """Emitted with ``PYTHONPATH`` set (a checkout run without installing it), every job exports
    the same ``PYTHONPATH``, so each node imports the code that planned the units; without it,
    no job sets one."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    tree = str(tmp_path / "my checkout")
    monkeypatch.setenv("PYTHONPATH", tree)
    assert main(["reproduce", "table3", "--profile", "smoke", "--quiet",
                 "--emit-slurm", str(tmp_path / "with")]) == 0  # fmt: skip
    scripts = sorted((tmp_path / "with").glob("*.sbatch"))
    assert len(scripts) > 1
    for path in scripts:
        exported = [line for line in path.read_text().splitlines()
                    if line.startswith("export PYTHONPATH=")]  # fmt: skip
        assert len(exported) == 1
        done = subprocess.run(["bash", "-c", f"{exported[0]}\nprintf %s \"$PYTHONPATH\""],
                              capture_output=True, text=True, env={})  # fmt: skip
        assert done.stdout == tree
    monkeypatch.delenv("PYTHONPATH")
    assert main(["reproduce", "table3", "--profile", "smoke", "--quiet",
                 "--emit-slurm", str(tmp_path / "without")]) == 0  # fmt: skip
    assert not any("PYTHONPATH" in p.read_text() for p in (tmp_path / "without").glob("*.s*"))
    capsys.readouterr()


def test_a_profile_files_commands_run_from_another_folder(tmp_path, monkeypatch, capsys):
    """A profile file naming its model by a relative path (``./base``): the listed command,
    run from another folder, read another (missing) model; it starts in the folder it was
    listed from. A relative ``LONGRED_CACHE`` too; a built-in profile's needs no folder."""
    import yaml

    from longred_bench.models.loading import load

    work = tmp_path / "work"
    loaded = load("tiny-random")
    loaded.model.save_pretrained(work / "base")
    loaded.tokenizer.save_pretrained(work / "base")
    profile = work / "mine.yaml"
    profile.write_text(
        yaml.safe_dump(
            {
                "extends": "smoke",
                "model": {
                    "name": "./base",
                    "window": 256,
                    "layers": loaded.model.config.num_hidden_layers,
                },
            }
        )
    )
    monkeypatch.chdir(work)
    monkeypatch.setenv("LONGRED_CACHE", "cache")  # relative: read from here
    capsys.readouterr()
    unit = _listed(capsys, "table1", "--profile", str(profile))[0]
    folder, _, command = unit["command"].partition(" && ")
    assert folder == f"cd {shlex.quote(str(work))}"
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    status, out = _run_printed(monkeypatch, capsys, command)  # without the `cd`: not found
    assert status == 2 and "./base" in out
    monkeypatch.chdir(shlex.split(folder)[1])  # what the printed `cd` does
    status, out = _run_printed(monkeypatch, capsys, command)
    assert status == 0 and out.strip() == f"computes {unit['folder']}"
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    builtin = _listed(capsys, "table1", "--profile", "smoke")[0]
    assert builtin["command"].startswith("longred-bench reproduce table1 --profile smoke ")


def test_a_unit_after_cached_units_runs_in_the_first_level() -> None:
    """Cached units are level 0, submitted by no job: a unit waiting only for cached ones is in
    the first array, and no level is left empty (an empty level's ``--dependency=afterok:``
    names no job, which ``sbatch`` refuses)."""
    from longred_bench.reproduce.cluster import levels

    def unit(uid: str, cached: bool, *after: str) -> dict:
        return {"id": uid, "cached": cached, "after": list(after)}

    units = [unit("train", True), unit("eval", False, "train"), unit("merge", False, "train"),
             unit("eval-merge", False, "merge"), unit("base", False)]  # fmt: skip
    assert [[u["id"] for u in level] for level in levels(units)] == [
        ["eval", "merge", "base"], ["eval-merge"]]  # fmt: skip
    assert levels([unit("train", True), unit("eval", True, "train")]) == []


def test_jobs_of_a_one_process_profile_train_without_torchrun(tmp_path, monkeypatch) -> None:
    """``torchrun`` launches training where the profile runs several processes per node; at one
    (smoke) every array task runs its unit, training too, with the suite's own command."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "jobs"
    assert main(["reproduce", "table3", "--profile", "smoke", "--emit-slurm", str(out)]) == 0
    arrays = [p.read_text() for p in sorted(out.glob("array-*.sbatch"))]
    assert arrays and any("train_cpt_" in text for text in arrays)
    for text in arrays:
        assert "torchrun" not in text and "torch.distributed.run" not in text
        assert 'KIND" = train' not in text and text.count("RUN=(") == 1


def test_the_memory_note_names_the_largest_of_the_units_still_to_run(capsys) -> None:
    """A cached unit is submitted by no job: the note counts only those to run, and names the
    largest estimate among them, wherever it is listed."""
    from longred_bench.reproduce.cluster import _warn_over_memory

    def unit(uid: str, cached: bool, gib: float | None) -> dict:
        return {"id": uid, "cached": cached,
                "estimate": None if gib is None else {"gib_per_gpu": gib}}  # fmt: skip

    units = [unit("done", True, 120.0), unit("a", False, 85.0), unit("b", False, 95.0),
             unit("c", False, 40.0), unit("cpu", False, None)]  # fmt: skip
    _warn_over_memory(units, 80.0)
    err = capsys.readouterr().err
    assert err.startswith("note: 2 unit(s) are estimated over the profile's 80 GiB per GPU (at "
                          "most 95.0 GiB: b); their jobs may run out of memory")  # fmt: skip
    _warn_over_memory([unit("done", True, 120.0), unit("c", False, 40.0)], 80.0)
    assert capsys.readouterr().err == ""


def test_a_numbered_cuda_device_asks_the_gpus_plain_cuda_asks(tmp_path, monkeypatch) -> None:
    """``cuda:0`` is a CUDA device as ``cuda`` is (as ``--list-units`` and the startup checks
    read it): the jobs ask the same GPUs and cores, not CPU-only nodes."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    heads = {}
    for device in ("cuda", "cuda:0"):
        folder = tmp_path / device.replace(":", "_")
        folder.mkdir()
        (folder / "mine.yaml").write_text(f"extends: smol\nhardware: {{device: '{device}'}}\n"
                                          f"evaluation: {{device: '{device}'}}\n")  # fmt: skip
        argv = ["reproduce", "table3", "--profile", str(folder / "mine.yaml")]
        assert main([*argv, "--emit-slurm", str(folder / "jobs")]) == 0
        heads[device] = {p.name: [line for line in p.read_text().splitlines()
                                  if line.startswith("#SBATCH") and "--output" not in line]
                         for p in sorted((folder / "jobs").glob("*.sbatch"))}  # fmt: skip
    assert heads["cuda:0"] == heads["cuda"]
    assert all("#SBATCH --gres=gpu:1" in lines for lines in heads["cuda"].values())


def test_no_job_is_written_for_training_units_that_would_stop_at_startup(
    tmp_path, monkeypatch, capsys
) -> None:
    """Rows that do not split over the profile's processes stop a run at startup, as the dry
    run lists: the jobs were written all the same (each would wait for its node and fail, and
    cancel every level after it); now the emit is refused naming one, and writes nothing."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    profile = tmp_path / "three.yaml"
    profile.write_text("extends: smoke\nhardware: {nproc_per_node: 3}\n")
    out = tmp_path / "jobs"
    argv = ["reproduce", "table3", "--profile", str(profile), "--quiet"]
    assert main([*argv, "--emit-slurm", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "training unit(s) of table3 would stop at startup, so no job is written" in err
    assert "do not split over 3 processes" in err and not out.exists()
    assert main([*argv, "--dry-run"]) == 0  # the dry run lists them instead
    assert "do not split over 3 processes" in capsys.readouterr().out
    profile.write_text("extends: smoke\n")  # one process: every unit starts
    assert main([*argv, "--emit-slurm", str(out)]) == 0 and (out / "submit.sh").is_file()
