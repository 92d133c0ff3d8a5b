"""A profile's task lists are checked when it is read (``profiles show``, a dry run, job scripts),
in one line naming the file, the key and the nearest task: a typo passed every check and failed
in the evaluation unit, after the jobs were submitted and the training had run."""

from __future__ import annotations

import pytest

from longred_bench.cli import main
from longred_bench.evaluation.task_names import own_task_names, tasks_dir


@pytest.mark.parametrize(
    ("section", "key", "said"),
    [
        ("evaluation: {short: {tasks: [longred_tiny_swpa]}}", "evaluation.short.tasks",
         "'longred_tiny_swpa' is none of the suite's lm-eval tasks; did you mean "
         "longred_tiny_swap"),
        ("evaluation: {ruler: {tasks: [longred_ruler_niah_singel_1]}}", "evaluation.ruler.tasks",
         "did you mean longred_ruler_niah_single_1"),
        ("tables: {table3: {evaluation: {short: {tasks: [longred_tiny_nxtsent]}}}}",
         "tables.table3.evaluation.short.tasks", "did you mean longred_tiny_nextsent"),
        ("tables: {pcd: {short_tasks: [longred_piqaa]}}", "tables.pcd.short_tasks",
         "did you mean longred_piqa"),
        ("evaluation: {short: {tasks: [niah_multikey_1]}}", "evaluation.short.tasks",
         "niah_multikey_1 is lm-eval's RULER task, built at lengths, not a short one: run the "
         "suite's RULER with the ruler suite (task longred_ruler_niah_multikey_1)"),
        ("tables: {pcd: {short_tasks: [longred_niah]}}", "tables.pcd.short_tasks",
         "longred_niah is a long-context task, built at --lengths"),
        ("tables: {pcd: {ruler_tasks: [niah_singel_1]}}", "tables.pcd.ruler_tasks",
         "unknown RULER task 'niah_singel_1'"),
        ("tables: {pcd: {psa_tasks: [niah_singl_1]}}", "tables.pcd.psa_tasks",
         "unknown task 'niah_singl_1' (did you mean niah_single_1?); retrieval tasks: "
         "niah_single_1, niah_single_2"),
        # refused once the table's other units had run
        ("tables: {pcd: {psa_tasks: [vt]}}", "tables.pcd.psa_tasks",
         "task 'vt' has no single gold answer to teacher-force"),
    ],
)  # fmt: skip
def test_a_task_typo_in_a_profile_is_refused_when_it_is_read(tmp_path, capsys, section, key, said):
    profile = tmp_path / "typo.yaml"
    profile.write_text(f"extends: smoke\n{section}\n")
    for argv in (["profiles", "show", str(profile)],
                 ["reproduce", "table3", "--profile", str(profile), "--dry-run"]):  # fmt: skip
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"error: profile {profile}: {key}: ") and said in err
        assert len(err.splitlines()) == 1


def test_lm_evals_own_niah_and_lm_evals_tasks_pass(tmp_path, capsys):
    """``longred_lmeval_niah_single_1`` (a RULER-suite task ``eval`` runs) was refused with the
    advice to write ``longred_ruler_longred_lmeval_...``; lm-eval's own task names are left to
    the evaluation, which knows them."""
    profile = tmp_path / "ok.yaml"
    profile.write_text("extends: smoke\nevaluation: {ruler: {tasks: [longred_lmeval_niah_single_1"
                       "]}, short: {tasks: [hellaswag, longred_tiny_swap]}}\n")  # fmt: skip
    assert main(["profiles", "show", str(profile)]) == 0
    capsys.readouterr()


def test_the_name_index_holds_every_task_file_and_group() -> None:
    """The index read without lm-eval holds each ``longred_*.yaml`` task and each group."""
    files = {p.stem for p in tasks_dir().glob("longred_*.yaml")}
    assert files and files <= own_task_names()
    assert {"longred_short", "longred_short_tiny", "longred_ruler"} <= own_task_names()


def test_a_drift_texts_typo_names_the_profile_and_key(tmp_path, capsys):
    """``drift.texts: brwn`` was refused when the drift unit ran, naming neither the profile
    nor the key; it is refused when the profile is read, naming both."""
    profile = tmp_path / "texts.yaml"
    profile.write_text("extends: smoke\ndrift: {texts: brwn}\n")
    assert main(["reproduce", "table1", "--profile", str(profile), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: profile {profile}: drift.texts: text source 'brwn' is ")
