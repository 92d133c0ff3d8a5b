"""What :mod:`longred_bench.evaluation.paper_suite` decides without the hub or a model.

Pinned here: which names a selection may hold and the one-line refusals (foreign tasks, hub and
offline tasks mixed, code tasks not allowed, no hub), which environment values count as set,
the hint a hub error gives, how an offline run picks and orders its tasks, the lines of the
member table, the dry-run and the report, how a load failure is reported, and the few-shot
count and record fields each task under a member gets.
"""

from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from longred_bench.errors import UserError
from longred_bench.evaluation import paper_suite
from longred_bench.evaluation.paper_suite import BY_OFFLINE, MEMBERS


@pytest.fixture
def hub_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Neither offline switch is set and the hub does not answer (no network is touched)."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_DATASETS_OFFLINE", raising=False)
    monkeypatch.setattr("longred_bench.models.loading.hub_unreachable", lambda: "no answer")


# --- which names a selection holds ----------------------------------------------------------------


def test_a_member_is_found_by_its_lm_eval_or_its_offline_name() -> None:
    """``member`` resolves both names of a member, and nothing else."""
    piqa = paper_suite.member("piqa")
    assert piqa is not None and paper_suite.member("longred_piqa") is piqa
    assert paper_suite.member("longred_squad") is None


def test_only_a_selection_of_offline_names_runs_offline() -> None:
    """Every name offline: an offline run; one hub name, none or an empty list: not."""
    assert paper_suite.runs_offline(("longred_piqa", "longred_boolq"))
    assert not paper_suite.runs_offline(("longred_piqa", "drop"))
    assert not paper_suite.runs_offline(())
    assert not paper_suite.runs_offline(None)


def test_offline_names_are_checked_as_members() -> None:
    """An offline selection passes the selection check; a name of neither kind does not."""
    paper_suite.check_selection(("longred_piqa", "longred_mmlu"), num_fewshot=None)
    with pytest.raises(UserError) as err:
        paper_suite.check_selection(("piqa", "nope"), num_fewshot=None)
    assert str(err.value) == (f"nope not in the paper_short suite; its tasks: "
                              f"{', '.join(paper_suite.task_names())}")  # fmt: skip


def test_mixing_hub_and_offline_names_is_refused_naming_each_side() -> None:
    """The error names the offline names, then the hub ones, and the flag that runs offline."""
    with pytest.raises(UserError) as err:
        paper_suite.check_selection(("drop", "longred_piqa", "humaneval"), num_fewshot=None)
    assert str(err.value) == (
        "longred_piqa run offline and drop, humaneval through the hub: one paper_short run is "
        "one or the other, never both (--offline-members runs the members that have an offline "
        "task offline)"
    )


def test_one_few_shot_count_for_every_task_is_refused() -> None:
    """``--num-fewshot`` with the suite is one line pointing at the dry-run, even 0."""
    with pytest.raises(UserError) as err:
        paper_suite.check_selection(("piqa",), num_fewshot=0)
    assert str(err.value) == ("--num-fewshot is not for the paper_short suite: each task runs "
                              "with its own count (eval --suite paper_short --dry-run lists "
                              "them)")  # fmt: skip


def test_categories_of_a_selection_leave_out_those_without_a_member() -> None:
    """With ``tasks``, only their members, and no empty category."""
    assert paper_suite.categories(["piqa", "drop", "boolq"]) == {
        "RC": ("drop", "boolq"), "Common": ("piqa",)}  # fmt: skip


# --- code tasks -----------------------------------------------------------------------------------


def test_code_tasks_are_those_that_run_model_written_code_default_all() -> None:
    """HumanEval and MBPP, of the selection or of the whole suite; offline names run none."""
    assert paper_suite.code_tasks(None) == ["humaneval", "mbpp"]
    assert paper_suite.code_tasks(()) == ["humaneval", "mbpp"]
    assert paper_suite.code_tasks(["piqa", "mbpp"]) == ["mbpp"]
    assert paper_suite.code_tasks(["longred_piqa"]) == []


def test_one_code_task_not_allowed_is_refused_in_the_singular() -> None:
    """One code task: ``executes`` and ``it``; allowed, nothing is refused."""
    with pytest.raises(UserError) as err:
        paper_suite.check_code_eval(("humaneval", "piqa"), allow_code_eval=False)
    assert str(err.value) == ("humaneval executes model-written code: pass --allow-code-eval to "
                              "run it (or --tasks without it)")  # fmt: skip
    paper_suite.check_code_eval(("humaneval", "piqa"), allow_code_eval=True)
    paper_suite.check_code_eval(None, allow_code_eval=True)


def test_a_profiles_code_units_are_refused_unless_the_environment_allows_them(
    monkeypatch,
) -> None:
    """The profile's error names it, the code tasks and both ways to allow them; the code
    metric's own switch counts as allowed when set to a true value in any spelling."""
    monkeypatch.delenv("HF_ALLOW_CODE_EVAL", raising=False)
    with pytest.raises(UserError) as err:
        paper_suite.check_code_units(("mbpp",), "profile p")
    assert str(err.value) == (
        "profile p's short suite paper_short runs mbpp, which executes model-written code: pass "
        "--allow-code-eval (or set HF_ALLOW_CODE_EVAL=1), or list evaluation.short.tasks "
        "without them"
    )
    paper_suite.check_code_units(("piqa",), "profile p")  # no code task: nothing to allow
    for value in ("1", "true", " Yes ", "ON"):
        monkeypatch.setenv("HF_ALLOW_CODE_EVAL", value)
        assert paper_suite.code_eval_allowed(), value
        paper_suite.check_code_units(("mbpp",), "profile p")
    for value in ("0", "false", "", "no"):
        monkeypatch.setenv("HF_ALLOW_CODE_EVAL", value)
        assert not paper_suite.code_eval_allowed(), value


def test_a_run_allows_code_in_the_environment_only_when_asked(monkeypatch) -> None:
    """Without ``allow_code_eval`` the variable is left as it was (unset stays unset)."""
    monkeypatch.delenv("HF_ALLOW_CODE_EVAL", raising=False)
    monkeypatch.setattr(paper_suite, "require_hub", lambda instead=None: None)
    paper_suite.prepare_run(("piqa",), allow_code_eval=False)
    assert "HF_ALLOW_CODE_EVAL" not in os.environ
    paper_suite.prepare_run(("piqa",), allow_code_eval=True)
    assert os.environ["HF_ALLOW_CODE_EVAL"] == "1"


# --- the hub --------------------------------------------------------------------------------------


def test_either_offline_switch_means_no_hub_in_any_true_spelling(monkeypatch) -> None:
    """``HF_HUB_OFFLINE`` or ``HF_DATASETS_OFFLINE`` set to a true value: the hub is missing
    without asking it; a false value asks."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "True")
    monkeypatch.setattr("longred_bench.models.loading.hub_unreachable", lambda: None)
    assert paper_suite.hub_missing() == "HF_DATASETS_OFFLINE is set"
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "0")
    monkeypatch.setenv("HF_HUB_OFFLINE", "yes")
    assert paper_suite.hub_missing() == "HF_HUB_OFFLINE is set"
    monkeypatch.setenv("HF_HUB_OFFLINE", "off")
    assert paper_suite.hub_missing() is None


def test_the_hub_error_carries_the_hint_it_is_given(hub_off) -> None:
    """``require_hub(instead)`` ends its one line with ``instead``."""
    with pytest.raises(UserError) as err:
        paper_suite.require_hub("run it elsewhere")
    assert str(err.value) == ("the paper_short suite needs Hugging Face hub access (no answer); "
                              "run it elsewhere")  # fmt: skip


def test_the_hint_names_the_members_that_could_run_offline() -> None:
    """Members with an offline task: the flag and their names, in member order."""
    assert paper_suite.offline_hint(["drop", "piqa", "mmlu"]) == (
        "--offline-members runs mmlu, piqa without it, through their offline tasks; "
        "--suite short is the offline suite"
    )
    assert paper_suite.offline_hint(["drop"]) == "--suite short is the offline suite"


def test_a_profiles_offline_units_never_ask_the_hub(monkeypatch, hub_off) -> None:
    """Offline units pass without the hub; hub units do not."""
    monkeypatch.setenv("HF_ALLOW_CODE_EVAL", "1")
    paper_suite.check_units(("longred_piqa",), "profile p")
    with pytest.raises(UserError, match=r"^the paper_short suite needs .*\(no answer\)"):
        paper_suite.check_units(("piqa",), "profile p")


def test_an_offline_run_loads_without_turning_its_errors_into_hub_errors() -> None:
    """An offline run's load errors stay theirs; a hub run's ``OSError`` becomes the hub error
    with its first line, or the error's type where it says nothing."""

    def load(names):
        raise FileNotFoundError("")

    manager = SimpleNamespace(load=load)
    with pytest.raises(FileNotFoundError):
        paper_suite.load_tasks(manager, ["longred_piqa"])
    with pytest.raises(UserError) as err:
        paper_suite.load_tasks(manager, ["piqa"])
    assert str(err.value) == ("the paper_short suite needs Hugging Face hub access (loading "
                              "failed: FileNotFoundError); --suite short is the offline "
                              "suite")  # fmt: skip


def test_a_long_load_error_is_cut_to_two_hundred_characters() -> None:
    """Only the first 200 characters of the first line reach the message."""

    def load(names):
        raise OSError("x" * 300 + "\nmore")

    with pytest.raises(UserError) as err:
        paper_suite.load_tasks(SimpleNamespace(load=load), ["piqa"])
    assert f"(loading failed: {'x' * 200});" in str(err.value)


def test_only_an_os_error_of_loading_is_a_hub_error() -> None:
    """A timeout or missing file is the hub's; any other error propagates as it is."""

    def load(names):
        raise TimeoutError("read timed out")

    with pytest.raises(UserError, match=r"\(loading failed: read timed out\)"):
        paper_suite.load_tasks(SimpleNamespace(load=load), ["drop"])

    def broken(names):
        raise KeyError("x")

    with pytest.raises(KeyError):
        paper_suite.load_tasks(SimpleNamespace(load=broken), ["drop"])


def test_a_stock_tasks_load_error_outside_the_suite_names_the_tasks() -> None:
    """A run of stock tasks outside this suite that cannot load their data (offline) ends in one
    line naming them, where lm-eval's error was a traceback; other errors propagate."""

    def load(names):
        raise ConnectionError("Couldn't reach 'EleutherAI/lambada_openai' on the Hub\nmore")

    with pytest.raises(UserError) as err:
        paper_suite.load_tasks(SimpleNamespace(load=load), ["lambada_openai"], paper=False)
    assert str(err.value) == (
        "the data of task(s) lambada_openai could not be loaded (Couldn't reach "
        "'EleutherAI/lambada_openai' on the Hub): lm-eval's stock tasks read theirs from the "
        "Hugging Face hub or its local datasets cache; --suite short is the offline suite"
    )

    def broken(names):
        raise KeyError("x")

    with pytest.raises(KeyError):
        paper_suite.load_tasks(SimpleNamespace(load=broken), ["longred_piqa"], paper=False)


# --- an offline run -------------------------------------------------------------------------------


def test_offline_tasks_come_in_member_order_whatever_the_selection_order() -> None:
    """The tasks an offline run gets follow the suite's member order."""
    assert paper_suite.offline_tasks(["piqa", "mmlu", "drop", "boolq"]) == (
        "longred_mmlu", "longred_boolq", "longred_piqa")  # fmt: skip
    have, need = paper_suite.offline_split(["social_iqa", "piqa", "drop", "mmlu"])
    assert [m.task for m in have] == ["mmlu", "piqa"]
    assert [m.task for m in need] == ["drop", "social_iqa"]


def test_the_offline_line_says_none_skipped_and_one_category_in_the_singular() -> None:
    """Nothing skipped reads ``(none)``; one category ``category``."""
    line = paper_suite.offline_line(["piqa", "hellaswag"])
    assert line == (
        "paper_short offline: runs 2 member(s) through their offline tasks (piqa as "
        "longred_piqa, hellaswag as longred_hellaswag); skips 0 member(s) that need the Hugging "
        "Face hub (none); Short Avg is over these 2 member(s) in 1 category only, not "
        "comparable to the paper's 17"
    )


# --- the member table, the dry-run and the report -------------------------------------------------


def test_the_member_table_takes_offline_names_and_adds_how_each_runs() -> None:
    """Offline names select their members; ``where`` adds ``runs:`` only to the members it
    names, aligned past the widest line."""
    lines = paper_suite.member_table(["longred_piqa", "drop"], {"piqa": "offline here"})
    assert [line.split()[1] for line in lines] == ["drop", "piqa"]
    assert "runs:" not in lines[0]
    width = paper_suite._TABLE_WIDTH
    assert lines[1][width:] == "  runs: offline here" and lines[1][:width].rstrip() == (
        "Common   piqa            0-shot  acc                            paper  offline: "
        "longred_piqa")  # fmt: skip


def test_run_modes_without_the_hub_point_offline_members_at_the_flag() -> None:
    """Each member's mode: offline or skipped in an offline run; through the hub or not here
    otherwise."""
    tasks = ["piqa", "drop"]
    assert paper_suite.run_modes(tasks, offline=False, hub_why=None) == {
        "piqa": "through the hub", "drop": "through the hub"}  # fmt: skip
    assert paper_suite.run_modes(tasks, offline=True, hub_why=None) == {
        "piqa": "offline (longred_piqa)", "drop": "skipped (needs the hub)"}  # fmt: skip


def test_a_dry_run_of_a_selection_counts_and_lists_only_it() -> None:
    """The head line counts the selection and says how the hub stands; the member lines follow;
    a code task not allowed ends it."""
    lines = paper_suite.dry_run_lines(["piqa", "mbpp"], offline=False, allow_code_eval=False,
                                      hub_why="HF_HUB_OFFLINE is set")  # fmt: skip
    assert lines[0] == ("paper_short: 2 task(s); paper = named by LongReD, suite = completes its "
                        "17; Hugging Face hub missing: HF_HUB_OFFLINE is set")  # fmt: skip
    assert [line.split()[1] for line in lines[1:3]] == ["mbpp", "piqa"]
    assert lines[3:] == ["mbpp run only with --allow-code-eval"]
    allowed = paper_suite.dry_run_lines(["piqa", "mbpp"], offline=False, allow_code_eval=True,
                                        hub_why=None)  # fmt: skip
    assert len(allowed) == 3 and allowed[0].endswith("Hugging Face hub reachable")


def test_an_offline_dry_run_says_the_hub_is_not_used_and_ends_with_what_runs() -> None:
    """No code opt-in line for an offline run: its last line is what it runs."""
    lines = paper_suite.dry_run_lines(["piqa", "mbpp"], offline=True, allow_code_eval=False,
                                      hub_why=None)  # fmt: skip
    assert lines[0].endswith("Hugging Face hub not used")
    assert lines[-1] == paper_suite.offline_line(["piqa", "mbpp"])


def test_the_report_of_an_offline_run_says_how_many_members_did_not_run() -> None:
    """An offline run's report ends with its Short Avg's scope and the members left out."""
    lines = paper_suite.report_lines(("longred_piqa", "longred_boolq"))
    assert len(lines) == 3
    assert lines[-1] == ("run offline: Short Avg is over these 2 member(s) in 2 categories only, "
                         "not comparable to the paper's 17; the other 15 did not run")  # fmt: skip
    assert lines[0].endswith("runs: offline (longred_boolq)")
    hub = paper_suite.report_lines(("piqa",))
    assert len(hub) == 1 and hub[0].endswith("runs: through the hub")
    assert len(paper_suite.report_lines(None)) == len(MEMBERS)


# --- records and few-shot counts ------------------------------------------------------------------


def test_a_member_without_a_group_gets_its_count_and_subgroups_none() -> None:
    """Only leaf tasks get a count: a subgroup under a member is left to its leaves."""
    group_map = {"bbh_fewshot": ["bbh_fewshot_date"], "minerva_math": ["m_alg", "m_sub"],
                 "m_sub": ["m_leaf"]}  # fmt: skip
    assert paper_suite.leaf_fewshot(group_map, ["bbh_fewshot", "minerva_math", "drop"]) == {
        "bbh_fewshot_date": 3, "m_alg": 4, "m_leaf": 4, "drop": 3}  # fmt: skip


def test_every_members_records_carry_its_category_source_and_headline() -> None:
    """Each member's own fields, for its lm-eval and its offline name."""
    for m in MEMBERS:
        fields = paper_suite.record_fields(m.task)
        assert (fields["category"], fields["source"], fields["headline"]) == (
            m.category, m.source, m.metric)  # fmt: skip
        assert fields["headline_scale"] == m.scale
        assert (fields["benchmark"], fields["ran_task"], fields["ran_via"]) == (
            m.task, m.task, "hub")  # fmt: skip
    for name, m in BY_OFFLINE.items():
        fields = paper_suite.record_fields(name)
        assert (fields["benchmark"], fields["ran_task"], fields["ran_via"]) == (
            m.task, name, "offline")  # fmt: skip


# The suite as the module documents it: task -> (category, shots, record metric, scale).
DOCUMENTED = {
    "mmlu": ("General", 5, "acc", 1.0),
    "bbh_fewshot": ("General", 3, "exact_match", 1.0),
    "lambada_openai": ("General", 0, "acc", 1.0),
    "triviaqa": ("General", 5, "exact_match,remove_whitespace", 1.0),
    "humaneval": ("Code", 0, "pass@1,create_test", 1.0),
    "mbpp": ("Code", 3, "pass_at_1", 1.0),
    "gsm8k": ("Math", 5, "exact_match,strict-match", 1.0),
    "minerva_math": ("Math", 4, "exact_match", 1.0),
    "squadv2": ("RC", 0, "f1", 0.01),
    "drop": ("RC", 3, "f1", 1.0),
    "boolq": ("RC", 0, "acc", 1.0),
    "piqa": ("Common", 0, "acc", 1.0),
    "hellaswag": ("Common", 0, "acc_norm", 1.0),
    "winogrande": ("Common", 0, "acc", 1.0),
    "arc_easy": ("Common", 0, "acc", 1.0),
    "arc_challenge": ("Common", 0, "acc_norm", 1.0),
    "social_iqa": ("Common", 0, "acc", 1.0),
}


def test_each_member_runs_its_documented_shots_and_reads_its_documented_metric() -> None:
    """Every member's category, few-shot count, score metric and scale, in member order."""
    got = {m.task: (m.category, m.num_fewshot, m.metric, m.scale) for m in MEMBERS}
    assert got == DOCUMENTED
    assert list(got) == list(DOCUMENTED)
