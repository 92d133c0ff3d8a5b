"""``longred-bench models``: each model's window, the RULER and NIAH lengths its tokenizer allows
and the short suites that fit, found by the code the runs use; and the errors that name the
nearest valid value."""

from __future__ import annotations

import pytest
from data_helpers import ensure_cached

from longred_bench import cli
from longred_bench.jobs import limits
from longred_bench.jobs.limits import Limits, limits_table


def test_span_says_which_lengths_fall_inside_the_window() -> None:
    assert limits._span(1024, 256) == "1024-131072 (none within the 256-token window)"
    assert limits._span(256, 8192) == "256-131072 (256-4096 within the 8192-token window)"
    assert limits._span(256, 512) == "256-131072 (256 within the 512-token window)"  # not 256-256
    assert limits._span(None, 8192) == "none up to 131072"


def test_table_lists_missing_models_with_the_command_that_provides_them() -> None:
    rows = [
        Limits("a", 256, "1024-131072 (none)", "512 and up", {"short_tiny": "runs"}),
        Limits("b", missing="not fetched: `longred-bench data fetch --sources smollm2`"),
    ]
    table = limits_table(rows, ("short_tiny",), 20)
    assert "| a | 256 | 1024-131072 (none) | 512 and up | runs |" in table
    assert "| b | not fetched: `longred-bench data fetch --sources smollm2` |" in table
    assert "first 20" in table
    lengths_only = limits_table(rows[:1], (), 20)  # `--suites` alone: no short suite checked
    assert "Short suites" not in lengths_only and "RULER: lengths" in lengths_only


@pytest.mark.integration
def test_tiny_random_limits_agree_with_what_eval_refuses(capsys, request, tmp_path) -> None:
    ensure_cached(request, "brown", "austen", "sotu")
    argv = ["models", "--model", "tiny-random", "--suites", "short_tiny", "--limit", "5"]
    assert cli.main(argv) == 0
    row = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("| tiny-random"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "256"
    assert cells[2].startswith("1024-131072 (none within the 256-token window); set by ")
    assert cells[4].startswith("does not run in 256 tokens (")
    # eval refuses the length below in one line naming the nearest valid one, 1024
    task = cells[2].split("set by ")[1].split(";")[0]
    argv = ["eval", "--model", "tiny-random", "--suite", "ruler", "--tasks"]
    argv += [f"longred_ruler_{task}", "--lengths", "512", "--samples", "1", "--out", str(tmp_path)]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "the smallest RULER length that holds them all is 1024: pass --lengths" in err
    # ... and a short_tiny eval names the window the models table names
    need = cells[4].split("eval --max-length ")[1].split()[0]
    argv = ["eval", "--model", "tiny-random", "--suite", "short_tiny", "--limit", "5"]
    argv += ["--out", str(tmp_path)]
    assert cli.main([*argv, "--quiet"]) == 2
    assert f"pass --max-length {need} or more" in capsys.readouterr().err


@pytest.mark.integration
def test_compare_names_its_own_flag_when_the_short_suite_does_not_fit(capsys, request, tmp_path):
    ensure_cached(request, "brown", "austen", "sotu")
    argv = ["compare", "--original", "tiny-random", "--rope", "pi:factor=4", "--suites", "short"]
    argv += ["--short-suite", "short_tiny", "--short-limit", "3", "--out", str(tmp_path), "--quiet"]
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--short-tasks" in err and "--max-length" not in err


def test_path_alone_prints_a_folder_and_refuses_the_table_flags(capsys, tmp_path) -> None:
    """``--path M`` with ``--model``/``--limit``/``--suites`` printed one folder and dropped the
    rest without a word; it prints a local folder as it is."""
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    assert cli.main(["models", "--path", str(folder)]) == 0
    assert capsys.readouterr().out.strip() == str(folder)
    for extra, flag in ((["--model", "tiny-random"], "--model"), (["--limit", "5"], "--limit"),
                        (["--suites"], "--suites")):  # fmt: skip
        assert cli.main(["models", "--path", str(folder), *extra]) == 2
        assert capsys.readouterr().err.strip() == (
            f"error: models --path M prints one folder and reads no {flag}: give --path alone, "
            "or drop it for the limits table"
        )
    assert cli.main(["models", "--model", "tiny-random", "--limit", "0"]) == 2
    assert capsys.readouterr().err.strip() == "error: --limit must be at least 1, got 0"
