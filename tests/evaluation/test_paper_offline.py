"""``paper_short`` without the hub: ``eval --offline-members`` runs the members that have an
offline ``longred_*`` task through it and skips the rest; without the flag nothing changes.

Unit tests (no model, no dataset, no network: the hub check is monkeypatched) and one
integration test that evaluates ``tiny-random`` on real offline tasks, which read the
``benchmarks`` cache (fetched once by the ``benchmarks_cache`` fixture, a no-op when there, as
in ``test_evaluation.py``), so it is marked ``network`` too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from longred_bench import cli
from longred_bench.errors import UserError
from longred_bench.evaluation import paper_suite
from longred_bench.evaluation.config import EvalConfig
from longred_bench.evaluation.harness import EvalResult
from longred_bench.evaluation.paper_suite import BY_OFFLINE, BY_TASK, MEMBERS

ROOT = Path(__file__).resolve().parents[2]
UNREACHABLE = "huggingface.co is unreachable (Name or service not known)"


@pytest.fixture
def no_hub(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hub does not answer (no network is touched)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr("longred_bench.models.loading.hub_unreachable", lambda: UNREACHABLE)


@pytest.fixture
def hub(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hub answers (no network is touched)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr("longred_bench.models.loading.hub_unreachable", lambda: None)


@pytest.fixture
def never_probed(monkeypatch: pytest.MonkeyPatch) -> None:
    """An offline run never asks whether the hub answers."""

    def probe() -> str | None:
        raise AssertionError("an offline run must not check the hub")

    monkeypatch.setattr("longred_bench.models.loading.hub_unreachable", probe)


def _offline_yaml(name: str) -> dict:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    return yaml.load((ROOT / "tasks" / f"{name}.yaml").read_text(), Loader=Loader)


# --- what the offline tasks support (unit) ----------------------------------------------------


def test_every_offline_task_reports_its_members_metric_and_takes_its_shots() -> None:
    assert len(BY_OFFLINE) == 9
    for name, m in BY_OFFLINE.items():
        cfg = _offline_yaml(name)
        metrics = [x["metric"] for x in cfg["metric_list"]]
        filters = [f["name"] for f in cfg.get("filter_list", [])] or ["none"]
        keys = {f"{x},{f}".removesuffix(",none") for x in metrics for f in filters}
        assert m.metric in keys, (name, m.metric, keys)
        if m.num_fewshot:  # MMLU 5 (its subject's dev rows), TriviaQA 5 (its validation split)
            assert cfg.get("fewshot_split"), name


def test_offline_members_are_the_nine_with_a_task_and_the_line_says_what_runs() -> None:
    assert paper_suite.offline_tasks(None) == tuple(m.offline for m in MEMBERS if m.offline)
    assert paper_suite.offline_tasks(["piqa", "boolq", "humaneval"]) == (
        "longred_boolq", "longred_piqa",
    )  # fmt: skip
    line = paper_suite.offline_line(["piqa", "boolq", "humaneval"])
    assert "\n" not in line
    assert "(boolq as longred_boolq, piqa as longred_piqa)" in line
    assert "skips 1 member(s) that need the Hugging Face hub (humaneval)" in line
    assert line.endswith("Short Avg is over these 2 member(s) in 2 categories only, not "
                         "comparable to the paper's 17")  # fmt: skip
    everything = paper_suite.offline_line(None)
    assert "runs 9 member(s)" in everything and "skips 8 member(s)" in everything


def test_a_request_without_offline_members_keeps_the_one_line_hub_error() -> None:
    with pytest.raises(UserError) as err:
        paper_suite.offline_tasks(["humaneval", "drop"])
    message = str(err.value)
    assert "\n" not in message
    assert message == ("the paper_short suite needs Hugging Face hub access (none of humaneval, "
                       "drop has an offline task); --suite short is the offline suite")  # fmt: skip


def test_one_run_is_all_hub_or_all_offline() -> None:
    cfg = EvalConfig(model="m", suite="paper_short", tasks=("longred_piqa", "longred_mmlu"))
    assert paper_suite.runs_offline(cfg.tasks)
    assert EvalConfig.from_dict(cfg.to_dict()) == cfg
    assert not paper_suite.runs_offline(None) and not paper_suite.runs_offline(("piqa",))
    with pytest.raises(UserError, match=r"^longred_piqa run offline and piqa through the hub: "):
        EvalConfig(model="m", suite="paper_short", tasks=("piqa", "longred_piqa"))
    with pytest.raises(UserError, match=r"^longred_squad not in the paper_short suite"):
        EvalConfig(model="m", suite="paper_short", tasks=("longred_squad",))


def test_offline_tasks_get_their_members_shots_and_records_name_what_ran(monkeypatch) -> None:
    from longred_bench.evaluation import harness

    class Task:  # the part of an lm-eval task harness._prepare touches
        def __init__(self) -> None:
            self.config = {"output_type": "loglikelihood", "num_fewshot": 0}

        def get_config(self, key):
            return self.config.get(key)

        def set_config(self, key, value, update=False) -> None:
            self.config[key] = value

        def set_fewshot_seed(self, seed) -> None:
            pass

    names = ("longred_mmlu", "longred_triviaqa", "longred_piqa")
    tasks = {name: Task() for name in names}
    manager = SimpleNamespace(
        all_tasks=list(names), load=lambda n: {"tasks": tasks, "groups": {}, "group_map": {}}
    )
    monkeypatch.setattr(harness, "task_manager", lambda metadata, names: manager)
    model = SimpleNamespace(window=2048, lm=lambda **kwargs: "lm")
    cfg = EvalConfig(model="m", suite="paper_short", tasks=names)
    run = harness._prepare(cfg, model, 1)
    shots = {name: t.get_config("num_fewshot") for name, t in run.tasks["tasks"].items()}
    assert shots == {"longred_mmlu": 5, "longred_triviaqa": 5, "longred_piqa": 0}
    fields = paper_suite.record_fields("longred_piqa")
    assert fields == {"category": "Common", "source": "paper", "headline": "acc",
                      "headline_scale": 1.0, "benchmark": "piqa", "ran_task": "longred_piqa",
                      "ran_via": "offline"}  # fmt: skip
    assert paper_suite.ran_fields("mmlu") == {"benchmark": "mmlu", "ran_task": "mmlu",
                                              "ran_via": "hub"}  # fmt: skip
    assert paper_suite.ran_fields(None) == {} and paper_suite.record_fields("mmlu_anatomy") == {}


# --- run_eval: which path runs, decided by the hub check (monkeypatched) ---------------------


def _fake_harness(monkeypatch: pytest.MonkeyPatch) -> list[EvalConfig]:
    """Record the configs ``run_eval`` hands the harness; each returns one record per task."""
    from longred_bench.evaluation import harness, lm

    seen: list[EvalConfig] = []

    def run_harness(cfg, model, **kwargs):
        seen.append(cfg)
        return EvalResult([{"kind": "eval", "task": t, "member": t} for t in cfg.tasks])

    monkeypatch.setattr(harness, "run_harness", run_harness)
    monkeypatch.setattr(harness, "check_task_names", lambda tasks: None)
    monkeypatch.setattr(lm, "open_model", lambda cfg: None)
    return seen


def test_with_the_hub_nothing_changes(monkeypatch, hub) -> None:
    from longred_bench.evaluation.run import run_eval

    seen = _fake_harness(monkeypatch)
    result = run_eval(EvalConfig(model="m", suite="paper_short", tasks=("piqa", "drop")))
    assert seen[0].tasks == ("piqa", "drop")  # the hub's tasks, not the offline ones
    assert {(r["ran_task"], r["ran_via"]) for r in result.records} == {
        ("piqa", "hub"), ("drop", "hub"),
    }  # fmt: skip


def test_without_the_hub_the_error_names_the_offline_flag(monkeypatch, no_hub) -> None:
    from longred_bench.evaluation.run import run_eval

    seen = _fake_harness(monkeypatch)
    with pytest.raises(UserError) as err:
        run_eval(EvalConfig(model="m", suite="paper_short", tasks=("piqa", "boolq", "drop")))
    message = str(err.value)
    assert "\n" not in message and not seen
    assert message == (f"the paper_short suite needs Hugging Face hub access ({UNREACHABLE}); "
                       "--offline-members runs boolq, piqa without it, through their offline "
                       "tasks; --suite short is the offline suite")  # fmt: skip
    with pytest.raises(UserError) as err:  # no member with an offline task: today's error
        run_eval(EvalConfig(model="m", suite="paper_short", tasks=("humaneval", "drop"),
                            allow_code_eval=True))  # fmt: skip
    assert str(err.value) == (f"the paper_short suite needs Hugging Face hub access "
                              f"({UNREACHABLE}); --suite short is the offline suite")  # fmt: skip


def test_an_offline_run_never_checks_the_hub(monkeypatch, never_probed) -> None:
    from longred_bench.evaluation.run import run_eval

    seen = _fake_harness(monkeypatch)
    tasks = paper_suite.offline_tasks(("piqa", "humaneval"))
    result = run_eval(EvalConfig(model="m", suite="paper_short", tasks=tasks))
    assert seen[0].tasks == ("longred_piqa",)
    assert result.records[0]["ran_via"] == "offline"
    paper_suite.check_units(tasks, "profile p")  # a unit of offline tasks needs no hub either


# --- the command line (no model) --------------------------------------------------------------


def _dry_run(capsys, *args: str) -> list[str]:
    argv = ["eval", "--suite", "paper_short", "--model", "tiny-random", "--dry-run", *args]
    assert cli.main(argv) == 0
    return capsys.readouterr().out.splitlines()


def _runs(lines: list[str]) -> dict[str, str]:
    """``{member: how it runs}`` from the dry-run's member lines."""
    return {line.split()[1]: line.split("runs: ")[1] for line in lines if "runs: " in line}


def test_dry_run_says_how_each_member_runs_here(capsys, hub) -> None:
    lines = _dry_run(capsys, "--tasks", "piqa", "drop")
    assert lines[1].endswith("Hugging Face hub reachable")
    assert _runs(lines) == {"drop": "through the hub", "piqa": "through the hub"}


def test_dry_run_lists_every_member_and_the_code_opt_in(capsys, hub) -> None:
    lines = _dry_run(capsys)
    assert len(_runs(lines)) == len(paper_suite.task_names()) == 17
    assert lines[-1] == "humaneval and mbpp run only with --allow-code-eval"
    assert "--allow-code-eval" not in _dry_run(capsys, "--allow-code-eval")[-1]


def test_dry_run_without_the_hub_points_at_the_flag(capsys, no_hub) -> None:
    lines = _dry_run(capsys, "--tasks", "piqa", "drop")
    assert lines[1].endswith(f"Hugging Face hub missing: {UNREACHABLE}")
    assert _runs(lines) == {
        "drop": "not here (no hub)",
        "piqa": "not here (no hub); --offline-members: offline (longred_piqa)",
    }


def test_dry_run_with_the_flag_lists_offline_and_skipped(capsys, never_probed) -> None:
    lines = _dry_run(capsys, "--tasks", "piqa", "drop", "--offline-members")
    config = json.loads(lines[0].removeprefix("config: "))
    assert config["tasks"] == ["longred_piqa"]
    assert lines[1].endswith("Hugging Face hub not used")
    assert _runs(lines) == {"drop": "skipped (needs the hub)", "piqa": "offline (longred_piqa)"}
    assert lines[-1] == paper_suite.offline_line(["piqa", "drop"])
    everything = _runs(_dry_run(capsys, "--offline-members"))
    assert len(everything) == 17
    assert sum(v.startswith("offline (longred_") for v in everything.values()) == 9


def test_the_flag_fails_in_one_line_where_it_cannot_apply(capsys, never_probed, tmp_path) -> None:
    base = ["eval", "--model", "tiny-random", "--offline-members", "--out", str(tmp_path / "o")]
    assert cli.main([*base, "--suite", "short"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: eval: --offline-members is for the paper_short suite, not short"
    assert cli.main([*base, "--suite", "paper_short", "--tasks", "humaneval", "mbpp"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err
    assert err.startswith("error: the paper_short suite needs Hugging Face hub access (none of "
                          "humaneval, mbpp has an offline task)")  # fmt: skip
    assert not (tmp_path / "o" / "eval.jsonl").exists()


# --- a real offline run (integration) ---------------------------------------------------------


@pytest.fixture(scope="module")
def benchmarks_cache() -> None:
    """Fill the default cache with the benchmark data (a no-op when already there)."""
    from longred_bench.data.fetch import fetch

    fetch(["benchmarks"])


@pytest.mark.integration
@pytest.mark.network
def test_offline_members_run_without_the_hub(
    tmp_path: Path, capsys, monkeypatch, benchmarks_cache: None
) -> None:
    from longred_bench.results import read_records

    def probe() -> str | None:
        raise AssertionError("an offline run must not check the hub")

    monkeypatch.setattr("longred_bench.models.loading.hub_unreachable", probe)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    out = tmp_path / "run"
    # MMLU's five shots need about 1,000 byte tokens: a window past tiny-random's 256.
    argv = ["eval", "--suite", "paper_short", "--model", "tiny-random", "--offline-members",
            "--tasks", "piqa", "arc_challenge", "mmlu", "humaneval", "--limit", "2",
            "--max-length", "1024", "--out", str(out), "--quiet"]  # fmt: skip
    assert cli.main(argv) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first == "[eval] " + paper_suite.offline_line(["piqa", "arc_challenge", "mmlu",
                                                          "humaneval"])  # fmt: skip
    assert "skips 1 member(s) that need the Hugging Face hub (humaneval)" in first
    records = [r for r in read_records(out / "eval.jsonl") if r["kind"] == "eval"]
    assert {r["task"] for r in records} == {"longred_piqa", "longred_arc_challenge",
                                            "longred_mmlu"}  # fmt: skip
    for r in records:  # every record names the task that ran, offline, and its member
        assert r["ran_via"] == "offline" and r["ran_task"] == r["task"] == r["member"]
        assert BY_OFFLINE[r["task"]].task == r["benchmark"]
        assert r["num_fewshot"] == BY_TASK[r["benchmark"]].num_fewshot
        assert r["headline"] == BY_TASK[r["benchmark"]].metric
        assert r["n_samples"] == 2
    shots = {r["task"]: r["num_fewshot"] for r in records}
    assert shots["longred_mmlu"] == 5
    assert records[0]["provenance"]["config"]["tasks"] == [
        "longred_mmlu", "longred_piqa", "longred_arc_challenge",
    ]  # fmt: skip
    md = (out / "eval.md").read_text()
    assert md.startswith("# `paper_short` evaluation of `tiny-random`, offline members only")
    assert re.search(r"piqa .* runs: offline \(longred_piqa\)", md)
    assert "only, not comparable to the paper's 17; the other 14 did not run" in md
    assert "| Short Avg (2 categories) |" in md
