"""What the ``longred-bench`` subcommands of :mod:`longred_bench.cli.commands` refuse or hand
their job, pinned with the job stood in for where the command gets that far: drift refuses a
model or extension listed twice and an extended model of other layers, resumes a folder holding
an interrupted run's saved windows beside its finished files, and warns of windows past the
original's; compare checks drift's window and NIAH's lengths only where those suites run, a
long-context short task, PCD on the original as it is and on every extended model, and beside
``--pairs`` refuses ``--rope`` and takes ``--quiet``; the ppl dry run lists its lengths in
order; ``reproduce`` names the flag that does something else and hands its engine one job at a
time, an absolute job folder and code permission; ``models`` defaults to 20 items of both short
suites; an offline ``paper_short`` eval says what it runs; ``profiles show`` prints a profile as
it reads."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from cli_helpers import one_line_error

from longred_bench.cli import main

DRIFT = ["drift", "--original", "tiny-random", "--num-texts", "2", "--seq-len", "64", "--quiet"]


def _recorded(monkeypatch: pytest.MonkeyPatch, job: str) -> list:
    """The configs ``longred_bench.jobs.<job>``'s command is called with (it measures nothing,
    writes nothing)."""
    import importlib

    module = importlib.import_module(f"longred_bench.jobs.{job}")
    calls: list = []
    monkeypatch.setattr(module, f"{job}_command", lambda cfg, out, **kw: calls.append(cfg) or [])
    return calls


@pytest.fixture
def drifts(monkeypatch: pytest.MonkeyPatch) -> list:
    """The configs drift's measurement is called with."""
    return _recorded(monkeypatch, "drift")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--rope", "pi:factor=2", "pi:factor=2.0"],
         "an extension is listed twice: pi:factor=2 and pi:factor=2.0 are one extension"),
        (["--extended", "tiny-random"],
         "a model is listed twice: the original and tiny-random are one model"),
    ],
)  # fmt: skip
def test_drift_refuses_a_model_or_extension_listed_twice(
    tmp_path, capsys, drifts, flags, message
) -> None:
    """Two spellings of one extension, or the original as its own extension, are one line."""
    one_line_error(capsys, [*DRIFT, *flags, "--out", str(tmp_path / "d")], message)
    assert drifts == []


def test_drift_resumes_saved_windows_beside_finished_files(tmp_path, capsys, drifts) -> None:
    """A folder holding ``drift.jsonl`` and ``config.yaml`` of this config and the saved windows
    of an interrupted run is resumed (measured), not reported as measured."""
    import yaml

    from longred_bench.jobs.drift import PARTIAL

    out = tmp_path / "d"
    argv = [*DRIFT, "--rope", "pi:factor=2", "--out", str(out)]
    assert main(argv) == 0
    (cfg,) = drifts
    out.mkdir(exist_ok=True)
    (out / "config.yaml").write_text(yaml.safe_dump({**cfg.to_dict(), "seconds": 1.0}))
    (out / "drift.jsonl").write_text("")
    saved = {"config": cfg.to_dict(), "texts": {"pi:factor=2": [[0.0]]}}
    (out / PARTIAL).write_text(json.dumps(saved))
    capsys.readouterr()
    assert main(argv) == 0
    assert drifts == [cfg, cfg]
    assert "nothing to measure" not in capsys.readouterr().out


def test_drift_says_its_windows_run_past_the_originals(tmp_path, capsys, drifts) -> None:
    """Windows longer than the original's own (256 tokens) that the extension holds are
    measured, with a warning on stderr."""
    argv = [*DRIFT, "--rope", "pi:factor=4", "--out", str(tmp_path / "d")]
    argv[argv.index("--seq-len") + 1] = "512"
    assert main(argv) == 0
    assert len(drifts) == 1
    assert "warning: drift: --seq-len 512 is beyond the original's 256-token window" in (
        capsys.readouterr().err
    )


def test_drift_refuses_an_extended_model_of_other_layers_before_measuring(
    tmp_path, capsys, drifts, saved_tiny
) -> None:
    """An ``--extended`` model whose config gives another layer count than the original's is
    refused from the configs, before drift measures."""
    config = json.loads((saved_tiny / "config.json").read_text())
    config["num_hidden_layers"] -= 1
    (saved_tiny / "config.json").write_text(json.dumps(config))
    argv = [*DRIFT, "--extended", str(saved_tiny), "--out", str(tmp_path / "d")]
    capsys.readouterr()  # what saving the folder said
    one_line_error(
        capsys, argv, f"drift: '{saved_tiny}' has layers 3, the original 'tiny-random' 4"
    )
    assert drifts == []


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--dry-run", "--unit", "x"],
         "--dry-run prints the table's plan; --unit does something else: give one of them"),
        (["--force", "--list-units"], "--force computes units again as they run; --list-units "
                                      "runs none"),
        (["--force", "--emit-slurm", "JOBS"], "--force computes units again as they run; "
                                              "--emit-slurm runs none"),
        (["--out", "OUT", "--unit", "x"], "--out names the folder of the table's report; --unit "
                                          "writes no report"),
        (["--out", "OUT", "--list-units"], "--out names the folder of the table's report; "
                                           "--list-units writes no report"),
    ],
)  # fmt: skip
def test_reproduce_names_the_flag_that_does_something_else(
    tmp_path, capsys, flags, message
) -> None:
    """A flag ``reproduce`` cannot take beside another is refused naming that one."""
    flags = [str(tmp_path / f) if f in ("JOBS", "OUT") else f for f in flags]
    one_line_error(capsys, ["reproduce", "table1", "--profile", "smoke", *flags], message)
    assert list(tmp_path.iterdir()) == []


def test_an_offline_paper_short_eval_says_what_it_runs_before_it_runs(
    tmp_path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``eval --suite paper_short --offline-members`` says which members run offline and what
    its Short Avg then is, then evaluates their offline tasks."""
    from longred_bench.evaluation import paper_suite
    from longred_bench.jobs import eval as eval_job

    calls: list = []
    monkeypatch.setattr(eval_job, "eval_command", lambda cfg, out, **kw: calls.append(cfg) or [])
    argv = ["eval", "--model", "tiny-random", "--suite", "paper_short", "--tasks", "piqa",
            "--offline-members", "--out", str(tmp_path / "o"), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    assert f"[eval] {paper_suite.offline_line(['piqa'])}\n" in capsys.readouterr().out
    assert [cfg.tasks for cfg in calls] == [("longred_piqa",)]


COMPARE = ["compare", "--original", "tiny-random", "--rope", "pi:factor=2", "--quiet"]


@pytest.fixture
def compares(monkeypatch: pytest.MonkeyPatch) -> list:
    """The configs compare's job is called with."""
    return _recorded(monkeypatch, "compare")


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--suites", "drift", "--drift-seq-len", "1"],
         "compare: --drift-seq-len must be at least 2"),
        (["--suites", "short", "--drift-seq-len", "1"], None),
        (["--suites", "niah", "--lengths", "200000"], "compare: --lengths 200000 is above 131072"),
        (["--suites", "short", "--lengths", "200000"], None),
        (["--seed", "-1"], "--seed must be a whole number from 0 to 4294967295"),
    ],
)  # fmt: skip
def test_compare_checks_a_suites_flags_where_that_suite_runs(
    tmp_path, capsys, compares, flags, message
) -> None:
    """Drift's window and NIAH's lengths are refused where those suites run and left alone
    where they do not; a bad seed always."""
    argv = [*COMPARE, *flags, "--out", str(tmp_path / "c")]
    if message is None:
        assert main(argv) == 0 and len(compares) == 1
    else:
        one_line_error(capsys, argv, message)
        assert compares == []


def test_compare_pairs_refuses_rope_and_takes_quiet(tmp_path, capsys) -> None:
    """Beside ``--pairs`` a ``--rope`` is refused (the file names the models) while ``--quiet``,
    which says how the run prints, is taken."""
    pairs = tmp_path / "p.yaml"
    pairs.write_text("settings: {lengths: [256]}\npairs:\n  - {original: tiny-random, window: "
                     "256, extended: [{model: tiny-random, window: 256}]}\n")  # fmt: skip
    argv = ["compare", "--pairs", str(pairs), "--dry-run"]
    one_line_error(capsys, [*argv, "--rope", "pi:factor=2"], "--pairs takes its models from the "
                                                             "file: drop --original")  # fmt: skip
    assert main([*argv, "--quiet"]) == 0


def test_compare_refuses_a_long_context_task_among_its_short_tasks(tmp_path, capsys) -> None:
    """A NIAH task given as a short task is refused, naming the suite it belongs to."""
    argv = [*COMPARE, "--short-tasks", "longred_niah", "--out", str(tmp_path / "c")]
    one_line_error(capsys, argv, "compare: --short-tasks longred_niah is a long-context task")


def test_compare_checks_pcd_on_every_extended_model(tmp_path, capsys, compares, saved_tiny) -> None:
    """A PCD local base below the original's RoPE base but not below an extended model's is
    refused for that model before anything is measured."""
    config = json.loads((saved_tiny / "config.json").read_text())
    rope = config.get("rope_parameters") or config
    rope["rope_theta"] = 1000.0
    (saved_tiny / "config.json").write_text(json.dumps(config))
    argv = ["compare", "--original", "tiny-random", "--extended", str(saved_tiny), "--decoding",
            "pcd", "--pcd-local-base", "5000", "--quiet", "--out", str(tmp_path / "c")]  # fmt: skip
    capsys.readouterr()  # what saving the folder said
    one_line_error(capsys, argv, "PCD local base 5000 is not below the model's RoPE base 1000")
    assert compares == []


def test_the_ppl_dry_run_lists_its_lengths_in_order(capsys) -> None:
    """``--lengths`` given out of order are said shortest first, with a bucket each."""
    argv = ["eval", "--model", "tiny-random", "--suite", "ppl", "--lengths", "512", "256",
            "--dry-run"]  # fmt: skip
    assert main(argv) == 0
    assert ("ppl: 8 window(s) of austen at length(s) 256, 512, NLL by position in buckets of "
            "32, 64 tokens") in capsys.readouterr().out  # fmt: skip


def test_compare_checks_pcd_on_the_original_as_it_is_beside_its_extensions(
    tmp_path, capsys, compares
) -> None:
    """The original decodes with PCD too: a local base that only its extension's RoPE base is
    above is refused, naming the original's base."""
    argv = ["compare", "--original", "tiny-random", "--rope", "abf:theta=1e8", "--decoding",
            "pcd", "--pcd-local-base", "1e6", "--quiet", "--out", str(tmp_path / "c")]  # fmt: skip
    one_line_error(capsys, argv, "PCD local base 1e+06 is not below the model's RoPE base 10000")
    assert compares == []


@pytest.fixture
def reproduces(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """The calls ``reproduce``'s engine gets (it runs nothing and says it wrote two files)."""
    from longred_bench.reproduce import engine

    calls: list[dict] = []

    def record(table, profile, out, **kwargs):
        calls.append({"table": table, "profile": profile, "out": out, **kwargs})
        return [Path("a.md"), Path("b.md")]

    monkeypatch.setattr(engine, "reproduce", record)
    return calls


def test_reproduce_hands_its_engine_one_job_a_resolved_job_folder_and_code_permission(
    tmp_path, capsys, monkeypatch: pytest.MonkeyPatch, reproduces
) -> None:
    """By default a table runs one unit at a time; ``--emit-slurm`` given relative is the
    folder under the working one; ``--allow-code-eval`` is passed on as lm-eval's permission;
    the files the engine wrote are said."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HF_ALLOW_CODE_EVAL", "0")
    assert main(["reproduce", "table1", "--profile", "smoke", "--allow-code-eval"]) == 0
    assert os.environ["HF_ALLOW_CODE_EVAL"] == "1"
    assert capsys.readouterr().out == "wrote a.md, b.md\n"
    assert main(["reproduce", "table1", "--profile", "smoke", "--emit-slurm", "jobs"]) == 0
    first, second = reproduces
    assert first["jobs"] == 1 and first["emit_slurm"] is None
    assert second["emit_slurm"] == tmp_path.resolve() / "jobs"


def test_the_models_table_defaults_to_twenty_items_of_both_short_suites(
    capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``models`` without flags asks each zoo model's limits at 20 items of ``short_tiny`` and
    ``short``."""
    from longred_bench.jobs import limits

    asked: list = []
    monkeypatch.setattr(limits, "model_limits", lambda m, **kw: asked.append((m, kw)) or m)
    monkeypatch.setattr(limits, "limits_table", lambda rows, suites, limit: "table")
    assert main(["models"]) == 0
    assert capsys.readouterr().out == "table\n"
    assert [m for m, _ in asked] == list(limits.ZOO_ORDER)
    assert {(kw["limit"], kw["suites"]) for _, kw in asked} == {(20, ("short_tiny", "short"))}


def test_profiles_show_prints_the_profile_as_it_reads(capsys) -> None:
    """``profiles show`` prints the profile's text as it is, adding no blank line at its end."""
    from longred_bench.reproduce.profile_views import show_profile

    assert main(["profiles", "show", "smoke"]) == 0
    assert capsys.readouterr().out == show_profile("smoke")
