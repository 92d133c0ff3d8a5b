"""The command line a reproduced report names runs again as printed: a profile file by its
absolute path (it named the profile by its name, which no ``--profile`` takes), ``--out`` where
the report was not written to the table's default folder, every word shell-quoted."""

from __future__ import annotations

import shlex
from pathlib import Path

from longred_bench.cli import build_parser
from longred_bench.profiles import load_profile
from longred_bench.reproduce.engine import command_of, default_out


def test_a_reports_command_runs_again_as_printed(tmp_path: Path, monkeypatch) -> None:
    folder = tmp_path / "my profiles"
    folder.mkdir()
    (folder / "mine.yaml").write_text("extends: smoke\n")
    monkeypatch.chdir(tmp_path)
    prof = load_profile(Path("my profiles/mine.yaml"))
    out = tmp_path / "some out"
    command = command_of("table3", prof, 2, {"d1": "prose"}, out)
    words = shlex.split(command)
    assert words[0] == "longred-bench"
    args = build_parser().parse_args(words[1:])
    assert (args.table, args.jobs, args.d1, args.out) == ("table3", 2, "prose", str(out))
    assert load_profile(args.profile).source == prof.source  # the same file, from anywhere
    # The table's default folder goes unnamed; a built-in profile is named by its name.
    default = command_of("table3", prof, 1, {}, default_out(prof, {}))
    assert "--out" not in default
    assert command_of("table1", load_profile("smoke"), 1, {}) == (
        "longred-bench reproduce table1 --profile smoke"
    )


def test_a_table_whose_short_suite_runs_code_names_the_permission(tmp_path, monkeypatch) -> None:
    """At paper the printed command was refused as run again on an uncached machine ("pass
    --allow-code-eval"): the report's command carries the flag where the table's short suite runs
    code (HumanEval, MBPP), and nowhere else."""
    from longred_bench.reproduce.engine import _runs_code
    from longred_bench.reproduce.registry import get_spec

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))

    def runs_code(profile: str) -> bool:
        ctx = get_spec("table3").resolve(load_profile(profile), progress=False, force=False,
                                         options={})  # fmt: skip
        return _runs_code(ctx)

    assert runs_code("paper") and not runs_code("smoke")


def test_a_forced_calls_report_says_it_was_forced(tmp_path: Path, monkeypatch) -> None:
    """A ``--force`` call's report named the command without it, and its wall note said cached
    units were reused, which that call did not do."""
    from longred_bench.cli import main
    from longred_bench.reproduce.pool import wall_note

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "out"
    argv = ["reproduce", "table1", "--profile", "smoke", "--out", str(out), "--quiet"]
    assert main([*argv, "--force"]) == 0
    assert f"command: `longred-bench reproduce table1 --profile smoke --out {out} --force`" in (
        out / "table1.md").read_text()  # fmt: skip
    assert "cached units are reused" in wall_note(1, 0.5)
    forced = wall_note(1, 0.5, forced=True)
    assert "--force: every evaluation and measurement computed again" in forced
    assert "cached units are reused" not in forced


def test_a_table3_data_variant_writes_to_a_folder_of_its_own() -> None:
    """``--d1 prose`` trains Table 3's runs on other data: its report goes to
    ``reports/<profile>/d1-prose``, not over the default variant's ``reports/<profile>``, and
    the command naming that folder needs no ``--out``."""
    prof = load_profile("smoke")
    assert default_out(prof, {}) == Path("reports") / "smoke"
    assert default_out(prof, {"d1": "prose"}) == Path("reports") / "smoke" / "d1-prose"
    folder = default_out(prof, {"d1": "prose"})
    assert command_of("table3", prof, 1, {"d1": "prose"}, folder) == (
        "longred-bench reproduce table3 --profile smoke --d1 prose"
    )
