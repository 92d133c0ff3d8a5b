"""A training table's RULER lengths against the tasks it scores: a length too short for a task's
first sample with the model's tokenizer is refused before any unit runs, in the profile's words
(``evaluation.ruler.lengths`` / ``evaluation.ruler.tasks``, not ``eval``'s flags), and a window
refusal names a length the tasks can run at, or says that none can."""

from __future__ import annotations

from pathlib import Path

from longred_bench.cli import main

SHORT = "RULER at length 512: 5 task(s) need more tokens with this tokenizer"
FROM_1024 = ("the smallest RULER length that holds them all is 1024: give evaluation.ruler."
             "lengths from that one on (e.g. evaluation.ruler.lengths: [1024]), or other "
             "evaluation.ruler.tasks")  # fmt: skip


def _profile(tmp_path: Path, stem: str, body: str, *, folder: bool = True) -> Path:
    """A profile extending smoke, its model tiny-random saved to a folder (``folder``: else
    the zoo's tiny-random), with ``body`` added."""
    name = "tiny-random"
    if folder:
        from longred_bench.models.zoo import tiny_random

        model, tokenizer = tiny_random()
        name = str(tmp_path / "mymodel")  # a config and a tokenizer: nothing is loaded
        model.config.save_pretrained(name)
        tokenizer.save_pretrained(name)
    path = tmp_path / f"{stem}.yml"
    path.write_text(f"extends: smoke\nmodel: {{name: '{name}', window: 256, layers: 4}}\n{body}")
    return path


def _refused(argv: list[str], capsys) -> str:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    return err.strip()


def test_a_window_refusal_says_no_ruler_length_fits_where_the_tasks_need_more(
    smoke_cache, tmp_path, capsys
):
    """PI x2 of a 256-token byte-level model: RULER's tasks need 1,024 tokens, its window is
    512, so no length fits; the refusal advised ``evaluation.ruler.lengths: [512]``, which the
    run then refused."""
    mine = _profile(tmp_path, "pi2", 'runs: {extensions: ["pi:factor=2"]}\n')
    err = _refused(["reproduce", "table3", "--profile", str(mine), "--dry-run"], capsys)
    assert ("evaluation.ruler.lengths: no RULER length fits pi:factor=2's 512-token window with "
            "these tasks (they need a RULER length of at least 1024 with this tokenizer, set by "
            ) in err  # fmt: skip
    assert err.endswith("give runs.extensions a larger factor, or other evaluation.ruler.tasks")
    assert "[512]" not in err
    # tasks that fit in 512 tokens: the length advised is one they run at
    pi2 = 'runs: {extensions: ["pi:factor=2"]}\n'
    few = _profile(tmp_path, "few", pi2 + "evaluation: {ruler: {tasks: [longred_ruler_vt]}}\n")
    err = _refused(["reproduce", "table3", "--profile", str(few), "--dry-run"], capsys)
    assert err.endswith("give one of at most 512, e.g. evaluation.ruler.lengths: [512]")
    fits = _profile(tmp_path, "fits", pi2 + "evaluation: {ruler: {tasks: [longred_ruler_vt], "
                    "lengths: [512]}}\n")  # fmt: skip
    assert main(["reproduce", "table3", "--profile", str(fits), "--dry-run"]) == 0


def test_a_length_too_short_for_the_tasks_is_refused_by_the_dry_run(smoke_cache, tmp_path, capsys):
    """``evaluation.ruler.lengths: [512]`` passed the dry run; the run stopped at its second
    unit, naming ``eval``'s ``--lengths`` and ``--tasks``."""
    mine = _profile(tmp_path, "pi4", 'runs: {extensions: ["pi:factor=4"]}\n'
                    "evaluation: {ruler: {lengths: [512]}}\n")  # fmt: skip
    err = _refused(["reproduce", "table3", "--profile", str(mine), "--dry-run"], capsys)
    assert f"evaluation.ruler.lengths: {SHORT} (" in err and err.endswith(FROM_1024)
    assert "--lengths" not in err and "--tasks" not in err
    # with an extension whose window is below what the tasks need: no length is advised
    pi2 = _profile(tmp_path, "pi2short", 'runs: {extensions: ["pi:factor=2"]}\n'
                   "evaluation: {ruler: {lengths: [512]}}\n")  # fmt: skip
    err = _refused(["reproduce", "table3", "--profile", str(pi2), "--dry-run"], capsys)
    assert SHORT in err and "no RULER length fits pi:factor=2's 512-token window" in err


def test_a_run_names_the_profile_keys_not_evals_flags(smoke_cache, tmp_path, capsys):
    """The zoo's tiny-random (a dry run reads no tokenizer of it: no torch): the run refuses
    before any unit runs, and a unit run alone stops in the same words (eval's own check)."""
    mine = _profile(tmp_path, "zoo", 'runs: {extensions: ["pi:factor=4"]}\n'
                    "evaluation: {ruler: {lengths: [512]}}\n", folder=False)  # fmt: skip
    out = tmp_path / "out"
    run = _refused(["reproduce", "table3", "--profile", str(mine), "--out", str(out), "--quiet"],
                   capsys)  # fmt: skip
    assert f"evaluation.ruler.lengths: {SHORT} (" in run and run.endswith(FROM_1024)
    assert not out.exists() and not (smoke_cache / "runs").exists()
    unit = _refused(["reproduce", "table3", "--profile", str(mine), "--unit",
                     "eval_original_ruler"], capsys)  # fmt: skip
    assert unit == run


def test_without_the_tasks_data_the_window_refusal_does_not_vouch_for_its_example(
    tmp_path, monkeypatch, capsys
) -> None:
    """On an empty cache the tasks' lengths cannot be told: the refusal's example length comes
    with the command that tells the smallest once the data is fetched (it read as a length
    that works)."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "empty"))
    mine = tmp_path / "small.yaml"
    mine.write_text("extends: smoke\nmodel: {name: tiny-random, window: 128, layers: 4}\n")
    err = _refused(["reproduce", "table3", "--profile", str(mine), "--dry-run"], capsys)
    assert ("e.g. evaluation.ruler.lengths: [512] if it holds the tasks (`longred-bench models "
            "--model tiny-random` prints the smallest RULER length once the data is fetched)"
            ) in err  # fmt: skip
