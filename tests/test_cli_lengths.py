"""Lengths and task names the run could not use, refused in one line before anything loads:
a NIAH or PSA length above RULER's longest (``--lengths 10000000`` built a ten-million-token
haystack in one tokenizer call, past 12 GB and deaf to Ctrl-C), and a RULER task given by
RULER's own name (``vt``), which was called "not a RULER task"."""

from __future__ import annotations

import pytest

from longred_bench.cli import main


@pytest.mark.parametrize(
    ("argv", "who"),
    [
        (["eval", "--model", "tiny-random", "--suite", "niah", "--lengths", "1024", "10000000"],
         "eval"),
        (["psa", "--model", "tiny-random", "--rope", "none", "--tasks", "niah_single_1",
          "--samples", "1", "--lengths", "262144"], "psa"),
        (["compare", "--original", "tiny-random", "--rope", "pi:factor=2", "--suites", "niah",
          "--lengths", "262144"], "compare"),
    ],
)  # fmt: skip
def test_a_length_above_the_longest_is_refused_at_once(tmp_path, capsys, argv, who):
    out = tmp_path / "out"
    assert main([*argv, "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {who}: --lengths ") and "is above 131072 tokens" in err
    assert not out.exists()


def test_a_ruler_task_by_ruler_s_own_name_is_named_with_its_prefix(tmp_path, capsys):
    argv = ["eval", "--model", "tiny-random", "--suite", "ruler", "--tasks", "vt",
            "--lengths", "1024", "--out", str(tmp_path / "out")]  # fmt: skip
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        "error: eval: --tasks vt: the ruler suite's tasks are named longred_ruler_<name>: "
        "give longred_ruler_vt\n"
    )


def test_compare_refuses_a_one_token_drift_window_before_any_unit(tmp_path, capsys):
    """It was refused after the niah units were measured, as "seq_len >= 2"."""
    argv = ["compare", "--original", "tiny-random", "--rope", "pi:factor=2", "--suites",
            "niah", "drift", "--drift-seq-len", "1", "--out", str(tmp_path / "out")]  # fmt: skip
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith("error: compare: --drift-seq-len must be at least 2")
    assert not (tmp_path / "out").exists()


def test_drift_says_when_its_windows_pass_the_originals(capsys):
    """drift's default 1,024-token windows ran a 512-token model past its window, without a
    word in the command or its report."""
    from longred_bench.cli.named import warn_past_window

    warn_past_window("tiny-random", 512, ("pi:factor=4",))
    assert capsys.readouterr().err == (
        "warning: drift: --seq-len 512 is beyond the original's 256-token window: it runs past "
        "its window too (LongReD measures within it: --seq-len 256)\n"
    )
    warn_past_window("tiny-random", 256)
    warn_past_window("tiny-random", 4096, ("pi:factor=4",))  # no window holds it: refused
    warn_past_window("org/not-at-hand", 10**6)  # a hub id: its config is not asked for
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["eval", "--model", "tiny-random", "--suite", "ppl", "--rope", "none"],
         "error: eval: --rope none: leave it out (eval without --rope evaluates the model as it "
         "is)"),
        (["drift", "--original", "tiny-random", "--rope", "none", "pi:factor=2"],
         "error: drift: --rope none: the original is always drift's reference, with its own "
         "RoPE: leave none out"),
        (["compare", "--original", "tiny-random", "--rope", "none"],
         "error: compare: --rope none: the original is always compare's reference, with its "
         "own RoPE: leave none out"),
    ],
)  # fmt: skip
def test_rope_none_says_to_leave_it_out(tmp_path, capsys, argv, said):
    """It read "unknown RoPE extension method 'none'" (psa and train take none)."""
    assert main([*argv, "--out", str(tmp_path / "out")]) == 2
    assert capsys.readouterr().err == said + "\n"


@pytest.mark.integration
def test_a_niah_window_too_small_names_no_tasks_flag(tmp_path, capsys):
    """The niah suite refuses --tasks; its window error suggested "or other --tasks"."""
    argv = ["eval", "--model", "tiny-random", "--suite", "niah", "--lengths", "512", "--samples",
            "1", "--depths", "0", "--max-length", "100", "--quiet",
            "--out", str(tmp_path / "o")]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "no document fits the 100-token window in longred_niah" in err
    assert err.rstrip().endswith("(a window past the model's own is allowed)")


def test_a_checkpoints_own_rope_is_not_called_original():
    """eval --suite ppl of an extended checkpoint labelled its line "original"."""
    from longred_bench.reports.ppl_plot import _label

    assert _label(("ext", None, "austen", 1024), []) == "ext, its own RoPE"
    assert _label(("orig", "pi:factor=2", "austen", 1024), []) == "orig, pi:factor=2"
