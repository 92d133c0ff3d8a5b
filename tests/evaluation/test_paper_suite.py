"""``paper_short``: LongReD's 17 short benchmarks as stock lm-eval tasks (unit tier: offline,
no dataset is loaded)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from longred_bench.errors import UserError
from longred_bench.evaluation import paper_suite
from longred_bench.evaluation.config import SUITES, EvalConfig
from longred_bench.evaluation.paper_suite import MEMBERS
from longred_bench.reports.eval_report import paper_short_lines
from longred_bench.reports.paper import TABLE2
from longred_bench.reports.short_avg import (
    paper_categories,
    paper_scores,
    short_avg,
    short_categories,
)

ROOT = Path(__file__).resolve().parents[2]
# The short benchmarks LongReD itself names (Table 3's categories, Table 2's rows): General =
# MMLU, BBH, LAMBADA; Coding includes HumanEval; RC includes SQuAD v2 and DROP; PIQA; TriviaQA.
PAPER_NAMED = {
    "mmlu", "bbh_fewshot", "lambada_openai", "humaneval", "squadv2", "drop", "piqa", "triviaqa",
}  # fmt: skip


@pytest.fixture(scope="module")
def lm_eval_index():
    """lm-eval 0.4.13's own task index (YAML only: no dataset, no network)."""
    from lm_eval.tasks import TaskManager

    return TaskManager()


def test_seventeen_members_in_five_categories_of_at_least_two() -> None:
    assert len(MEMBERS) == 17
    names = paper_suite.task_names()
    assert len(set(names)) == 17
    cats = paper_suite.categories()
    assert tuple(cats) == ("General", "Code", "Math", "RC", "Common")
    assert all(len(tasks) >= 2 for tasks in cats.values()), cats
    assert sum(len(t) for t in cats.values()) == 17
    assert {m.source for m in MEMBERS} == {"paper", "suite"}
    assert SUITES["paper_short"] == names


def test_category_names_are_those_of_the_short_suite() -> None:
    # The offline suite names General, Common and RC by its groups (longred_general, ...).
    for group in ("general", "common", "rc"):
        assert (ROOT / "tasks" / f"_longred_{group}.yaml").is_file()
    assert {"General", "Common", "RC"} <= set(paper_suite.CATEGORIES)


def test_every_task_is_in_lm_evals_own_index(lm_eval_index) -> None:
    known = set(lm_eval_index.all_tasks)
    missing = [m.task for m in MEMBERS if m.task not in known]
    assert not missing, missing
    assert "siqa" not in known  # SIQA is lm-eval's social_iqa


def test_every_offline_equivalent_is_a_task_of_tasks_folder() -> None:
    offline = [m.offline for m in MEMBERS if m.offline is not None]
    assert offline, "the short suite's tasks have equivalents"
    for name in offline:
        path = ROOT / "tasks" / f"{name}.yaml"
        assert path.is_file(), name
        assert re.search(rf"^task: {name}$", path.read_text(), re.MULTILINE), name
    # longred_squad is SQuAD v1.1: no equivalent of SQuAD v2
    assert paper_suite.BY_TASK["squadv2"].offline is None


def test_paper_members_are_those_the_paper_names() -> None:
    named = {m.task for m in MEMBERS if m.source == "paper"}
    assert named == PAPER_NAMED
    # Table 2's benchmarks, as the reports hold them, are all the paper's.
    assert {name.lower() for name, _, _ in TABLE2} <= named
    assert {m.task for m in MEMBERS if m.runs_code} == {"humaneval", "mbpp"}


def test_member_table_marks_paper_and_suite_one_line_each() -> None:
    lines = paper_suite.member_table()
    assert len(lines) == 17
    by_task = {line.split()[1]: line for line in lines}
    assert re.search(r"^General\s+mmlu\s+5-shot\s+acc\s+paper\s+offline: longred_mmlu$",
                     by_task["mmlu"])  # fmt: skip
    assert re.search(r"^Math\s+gsm8k\s+5-shot\s+exact_match,strict-match\s+suite\s+offline: -$",
                     by_task["gsm8k"])  # fmt: skip
    assert sum(" paper " in line for line in lines) == len(PAPER_NAMED)
    assert paper_suite.member_table(["drop"]) == [by_task["drop"]]


def test_each_member_count_reaches_every_leaf_of_its_group() -> None:
    group_map = {"mmlu": ["mmlu_stem", "mmlu_other"], "mmlu_stem": ["mmlu_anatomy"],
                 "minerva_math": ["minerva_math_algebra"]}  # fmt: skip
    shots = paper_suite.leaf_fewshot(group_map, ["mmlu", "minerva_math", "humaneval", "piqa"])
    assert shots == {"mmlu_anatomy": 5, "mmlu_other": 5, "minerva_math_algebra": 4,
                     "humaneval": 0, "piqa": 0}  # fmt: skip


def test_every_task_under_a_member_names_that_member() -> None:
    group_map = {"mmlu": ["mmlu_stem", "mmlu_other"], "mmlu_stem": ["mmlu_anatomy"]}
    assert paper_suite.member_of(group_map, ["mmlu", "piqa"]) == {
        "mmlu": "mmlu", "mmlu_stem": "mmlu", "mmlu_anatomy": "mmlu", "mmlu_other": "mmlu",
        "piqa": "piqa",
    }  # fmt: skip


def test_group_members_weight_their_subtasks_by_size(lm_eval_index) -> None:
    """Why a group member's documents, pooled over its subtasks, average to its score: each of
    lm-eval's groups in the suite (and MMLU's category groups) weights its headline by size."""
    for m in MEMBERS:
        entry = lm_eval_index.task_index[m.task]
        if "group" not in entry.cfg:
            continue
        names = [m.task, *(t for t in entry.cfg["task"] if t in lm_eval_index.task_index)]
        for name in names:
            cfg = lm_eval_index.task_index[name].cfg
            if "group" not in cfg:
                continue
            agg = {a["metric"]: a for a in cfg.get("aggregate_metric_list", [])}
            assert agg[m.metric.split(",")[0]].get("weight_by_size") is True, name


def test_units_check_code_permission_then_the_hub_in_one_line(monkeypatch) -> None:
    monkeypatch.delenv("HF_ALLOW_CODE_EVAL", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError) as err:
        paper_suite.check_units(None, "profile paper")
    message = str(err.value)
    assert "\n" not in message and message.startswith("profile paper's short suite paper_short")
    assert "humaneval and mbpp" in message and "--allow-code-eval" in message
    with pytest.raises(UserError, match=r"^the paper_short suite needs .*HF_HUB_OFFLINE"):
        paper_suite.check_units(("piqa",), "profile paper")  # no code task: the hub is next
    monkeypatch.setenv("HF_ALLOW_CODE_EVAL", "1")
    with pytest.raises(UserError, match=r"^the paper_short suite needs .*HF_HUB_OFFLINE"):
        paper_suite.check_units(None, "profile paper")


def _records(values: dict[str, float], metric_of=None) -> list[dict]:
    out = []
    for task, value in values.items():
        fields = paper_suite.record_fields(task)
        metric = fields["headline"] if metric_of is None else metric_of(task)
        out.append({"kind": "eval", "suite": "paper_short", "task": task, "group": None,
                    "metric": metric, "value": value, "n_samples": None, **fields})  # fmt: skip
        out.append({"kind": "eval", "suite": "paper_short", "task": task, "metric": "other",
                    "value": 0.0, **fields})  # fmt: skip
    return out


FAKE = {
    "mmlu": 0.60, "bbh_fewshot": 0.40, "lambada_openai": 0.70, "triviaqa": 0.50,
    "humaneval": 0.30, "mbpp": 0.40,
    "gsm8k": 0.50, "minerva_math": 0.10,
    "squadv2": 60.0, "drop": 0.45, "boolq": 0.75,
    "piqa": 0.80, "hellaswag": 0.70, "winogrande": 0.70, "arc_easy": 0.80,
    "arc_challenge": 0.50, "social_iqa": 0.50,
}  # fmt: skip


def test_short_avg_is_the_mean_of_the_five_category_means() -> None:
    # By hand: General (0.6+0.4+0.7+0.5)/4 = 0.55; Code 0.35; Math 0.30;
    # RC (0.60+0.45+0.75)/3 = 0.60 (SQuAD v2's 60.0 is a percentage);
    # Common (0.8+0.7+0.7+0.8+0.5+0.5)/6 = 0.6666...; mean of the five = 2.4666.../5.
    expected = (0.55 + 0.35 + 0.30 + 0.60 + 4.0 / 6.0) / 5.0
    records = _records(FAKE)
    cats = short_categories(records)
    assert cats == paper_categories(records)
    assert {c: set(t) for c, t in cats.items()} == {
        c: set(t) for c, t in paper_suite.categories().items()
    }
    scores = paper_scores(records)
    assert scores["squadv2"] == pytest.approx(0.60)
    assert short_avg(scores, cats) == pytest.approx(expected, abs=1e-12)
    # Not the mean over the 17 tasks, which weights Common six times Code.
    assert expected != pytest.approx(sum(scores.values()) / 17)
    lines = paper_short_lines(records)
    assert lines[-1] == f"| Short Avg (5 categories) | | {100 * expected:.2f} |"
    assert any(line.startswith("| RC | boolq, drop*, squadv2* | 60.00 |") for line in lines)


def test_short_avg_reads_each_members_own_metric_only() -> None:
    records = _records(FAKE, metric_of=lambda task: "acc")  # the wrong metric for most
    scores = paper_scores(records)
    assert set(scores) == {m.task for m in MEMBERS if m.metric == "acc"}


def test_a_missing_member_leaves_its_category_incomplete() -> None:
    partial = {k: v for k, v in FAKE.items() if k != "mbpp"}
    records = _records(partial)
    cats = paper_categories(records)
    assert cats["Code"] == ("humaneval",)  # what ran; the report names the members it has


def test_offline_run_fails_at_once_in_one_line(monkeypatch) -> None:
    from longred_bench.evaluation.run import run_eval

    def never(*args, **kwargs):
        raise AssertionError("nothing may load without the hub")

    monkeypatch.setattr("longred_bench.evaluation.lm.open_model", never)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    cfg = EvalConfig(model="smollm2-135m", suite="paper_short", tasks=("piqa",))
    with pytest.raises(UserError) as err:
        run_eval(cfg)
    message = str(err.value)
    assert "\n" not in message
    assert "paper_short suite needs Hugging Face hub access" in message
    assert "HF_HUB_OFFLINE is set" in message
    assert "--suite short is the offline suite" in message


def test_unreachable_hub_fails_in_one_line(monkeypatch) -> None:
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    why = "huggingface.co is unreachable (Network is unreachable)"
    monkeypatch.setattr("longred_bench.models.loading.hub_unreachable", lambda: why)
    with pytest.raises(UserError, match=r"^the paper_short suite needs .*unreachable.*short"):
        paper_suite.require_hub()


def test_a_dataset_that_cannot_load_fails_in_one_line() -> None:
    def load(names):
        raise ConnectionError("Couldn't reach 'EleutherAI/drop' on the Hub (LocalEntryNotFound)\n"
                              "long traceback text")  # fmt: skip

    with pytest.raises(UserError) as err:
        paper_suite.load_tasks(SimpleNamespace(load=load), ["drop"])
    message = str(err.value)
    assert "\n" not in message and "Couldn't reach 'EleutherAI/drop'" in message
    assert message.startswith("the paper_short suite needs Hugging Face hub access")


def test_code_tasks_need_the_users_opt_in(monkeypatch) -> None:
    monkeypatch.setenv("HF_ALLOW_CODE_EVAL", "0")  # restored after the test
    monkeypatch.setattr(paper_suite, "require_hub", lambda instead=None: None)
    with pytest.raises(UserError, match=r"^humaneval and mbpp execute .*--allow-code-eval"):
        paper_suite.prepare_run(None, allow_code_eval=False)
    with pytest.raises(UserError, match=r"^mbpp execute"):
        paper_suite.prepare_run(("mbpp", "piqa"), allow_code_eval=False)
    paper_suite.prepare_run(("piqa",), allow_code_eval=False)  # no code task: nothing to allow
    assert os.environ["HF_ALLOW_CODE_EVAL"] == "0"
    paper_suite.prepare_run(None, allow_code_eval=True)
    assert os.environ["HF_ALLOW_CODE_EVAL"] == "1"


def test_config_refuses_foreign_tasks_and_one_shot_count_for_all() -> None:
    with pytest.raises(UserError, match=r"^longred_squad not in the paper_short suite"):
        EvalConfig(model="m", suite="paper_short", tasks=("piqa", "longred_squad"))
    with pytest.raises(UserError, match=r"^--num-fewshot is not for the paper_short suite"):
        EvalConfig(model="m", suite="paper_short", num_fewshot=5)
    cfg = EvalConfig(model="m", suite="paper_short", allow_code_eval=True)
    assert EvalConfig.from_dict(cfg.to_dict()) == cfg
    assert "allow_code_eval" not in EvalConfig(model="m").to_dict()  # old cache keys unchanged


class _FakeTask:
    """The part of an lm-eval task ``harness._prepare`` touches."""

    def __init__(self, **config) -> None:
        self.config = {"output_type": "loglikelihood", **config}

    def get_config(self, key):
        return self.config.get(key)

    def set_config(self, key, value, update=False) -> None:
        self.config[key] = value

    def set_fewshot_seed(self, seed) -> None:
        self.seed = seed


def test_the_harness_gives_each_leaf_its_members_count(monkeypatch) -> None:
    from longred_bench.evaluation import harness

    tasks = {"mmlu_anatomy": _FakeTask(), "humaneval": _FakeTask(num_fewshot=0),
             "triviaqa": _FakeTask(num_fewshot=0), "piqa": _FakeTask()}  # fmt: skip
    group_map = {"mmlu": ["mmlu_stem"], "mmlu_stem": ["mmlu_anatomy"]}
    manager = SimpleNamespace(
        all_tasks=["mmlu", "humaneval", "triviaqa", "piqa"],
        load=lambda names: {"tasks": tasks, "groups": {}, "group_map": group_map},
    )
    monkeypatch.setattr(harness, "task_manager", lambda metadata, names: manager)
    model = SimpleNamespace(window=2048, lm=lambda **kwargs: "lm")
    names = ("mmlu", "humaneval", "triviaqa", "piqa")
    cfg = EvalConfig(model="m", suite="paper_short", tasks=names, allow_code_eval=True)
    run = harness._prepare(cfg, model, 1)
    shots = {name: t.get_config("num_fewshot") for name, t in run.tasks["tasks"].items()}
    # triviaqa's YAML 0 is replaced by the member's 5 (a global --num-fewshot would keep it)
    assert shots == {"mmlu_anatomy": 5, "humaneval": 0, "triviaqa": 5, "piqa": 0}
