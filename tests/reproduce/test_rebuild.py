"""``reproduce TABLE --rebuild``: a report written again from the records an earlier call left,
with this version's rules, computing nothing; and every committed report is what this version's
rules write from its own records (so a rule change cannot leave a committed report stale)."""

from __future__ import annotations

import gzip
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from script_loader import load_noxfile

from longred_bench.cli import main

ROOT = Path(__file__).resolve().parents[2]
# (folder under reports/, table): every committed report a builder writes from its records;
# those of the training tables take 5-20 s each on 2 cores (their bootstraps), so they are slow.
COMMITTED = [("smol", "table1"), ("smol", "fig2"), ("smol", "pcd")]
SLOW = [
    ("tiny", "table2"), ("tiny", "table3"), ("tiny", "table4"), ("tiny", "table5"),
    ("tiny", "table6"), ("tiny", "table7"), ("tiny", "table10"), ("tiny", "linearard"),
    ("tiny", "longrecipe"), ("tiny", "fig2"), ("tiny", "fig3"), ("tiny", "table1"),
    ("tiny/amd_build", "table3"), ("tiny/amd_build", "longrecipe"), ("tiny", "pcd"),
]  # fmt: skip


def _body(text: str) -> list[str]:
    """A report less the lines naming the call (its command and wall time)."""
    return [line for line in text.splitlines() if not line.startswith(("- Command:", "Command:"))
            and "; command: `" not in line]  # fmt: skip


def _rebuilt(tmp_path: Path, folder: str, table: str) -> tuple[str, str]:
    src = ROOT / "reports" / folder
    shutil.copy(src / f"{table}.jsonl.gz", tmp_path)
    profile = folder.split("/")[0]
    assert main(["reproduce", table, "--profile", profile, "--rebuild", "--out", str(tmp_path),
                 "--quiet"]) == 0  # fmt: skip
    return (src / f"{table}.md").read_text(), (tmp_path / f"{table}.md").read_text()


@pytest.mark.parametrize(("folder", "table"), COMMITTED)
def test_a_committed_report_is_what_its_records_give_under_these_rules(tmp_path, folder, table):
    committed, rebuilt = _rebuilt(tmp_path, folder, table)
    assert _body(rebuilt) == _body(committed), (
        f"reports/{folder}/{table}.md is stale: rebuild it with `longred-bench reproduce {table} "
        f"--profile {folder.split('/')[0]} --rebuild --out reports/{folder}`"
    )


@pytest.mark.slow
@pytest.mark.parametrize(("folder", "table"), SLOW)
def test_a_committed_training_report_is_what_its_records_give(tmp_path, folder, table):
    test_a_committed_report_is_what_its_records_give_under_these_rules(tmp_path, folder, table)


def test_rebuild_names_itself_and_leaves_the_records(tmp_path, capsys):
    records = ROOT / "reports/smol/fig2.jsonl.gz"
    shutil.copy(records, tmp_path)
    assert main(["reproduce", "fig2", "--profile", "smol", "--rebuild", "--out",
                 str(tmp_path)]) == 0  # fmt: skip
    text = (tmp_path / "fig2.md").read_text()
    assert f"`longred-bench reproduce fig2 --profile smol --rebuild --out {tmp_path}`" in text
    assert "report rebuilt from the records in `fig2.jsonl.gz`, computing nothing" in text
    assert (tmp_path / "fig2.jsonl.gz").read_bytes() == records.read_bytes()
    assert f"wrote {tmp_path / 'fig2.md'}" in capsys.readouterr().out


def test_table1_rebuild_names_itself(tmp_path):
    """Table 1 at smol (the README's main job) said `nox -s reproduce_table1` for a rebuild too,
    and nothing of the rebuild."""
    shutil.copy(ROOT / "reports/smol/table1.jsonl.gz", tmp_path)
    assert main(["reproduce", "table1", "--profile", "smol", "--rebuild", "--out",
                 str(tmp_path), "--quiet"]) == 0  # fmt: skip
    text = (tmp_path / "table1.md").read_text()
    assert (
        f"`longred-bench reproduce table1 --profile smol --rebuild --out {tmp_path}` (report "
        "rebuilt from the records in `table1.jsonl.gz`, computing nothing" in text
    )
    assert "nox -s reproduce_table1" not in text


def test_table1_names_the_readme_command_only_where_it_ran(tmp_path, monkeypatch):
    """``longred-bench reproduce table1`` typed by hand wrote "command: `nox -s
    reproduce_table1`" into its report: the nox session says it ran the call."""
    from longred_bench.reproduce.table1 import CALLED_AS, MAIN_JOB, SPEC
    from longred_bench.results import read_records

    records = read_records(ROOT / "reports/smol/table1.jsonl.gz")
    typed = "longred-bench reproduce table1 --profile smol"
    monkeypatch.delenv(CALLED_AS, raising=False)
    SPEC.build(records, tmp_path, profile="smol", command=typed)
    assert f"`{typed}`" in (tmp_path / "table1.md").read_text()
    monkeypatch.setenv(CALLED_AS, MAIN_JOB)
    SPEC.build(records, tmp_path, profile="smol", command=typed)
    text = (tmp_path / "table1.md").read_text()
    assert f"`{MAIN_JOB}`" in text and f"`{typed}`" not in text
    ran: dict[str, Any] = {}
    session = SimpleNamespace(posargs=[], install=lambda *a, **k: None,
                              create_tmp=lambda: str(tmp_path),
                              run=lambda *a, env=None: ran.update(env))  # fmt: skip
    load_noxfile().reproduce_table1.func(session)
    assert ran[CALLED_AS] == MAIN_JOB


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (b"hello\n", "Not a gzipped file"),  # e.g. a Git LFS pointer
        (gzip.compress(b'{"a":\n'), "Expecting value"),
        (gzip.compress("".join(f'{{"a": {i * i}}}\n' for i in range(2000)).encode())[:2000],
         "ended before the end-of-stream marker"),
    ],
    ids=["not-gzip", "not-json", "cut-short"],
)  # fmt: skip
def test_damaged_records_are_one_line_and_stay(tmp_path, capsys, content, why):
    """A records file cut short, not gzip or not JSON stopped with a Python traceback."""
    path = tmp_path / "table2.jsonl.gz"
    path.write_bytes(content)
    rc = main(["reproduce", "table2", "--profile", "tiny", "--rebuild", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith(f"error: {path} does not read as records") and why in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert path.read_bytes() == content and sorted(tmp_path.iterdir()) == [path]


def test_rebuild_refuses_records_of_another_profiles_model(tmp_path, capsys):
    """Smol's Figure 2 records rebuilt under fig2's default profile (tiny) were titled
    "(profile `tiny`)", with a call line that would not make them."""
    shutil.copy(ROOT / "reports/smol/fig2.jsonl.gz", tmp_path)
    assert main(["reproduce", "fig2", "--rebuild", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        "holds records of smollm2-135m, not of profile tiny's model tiny-base: give --profile smol"
    ) in err and len(err.splitlines()) == 1
    assert not (tmp_path / "fig2.md").exists()


def test_rebuild_reads_an_earlier_versions_uncompressed_records(tmp_path):
    """Earlier versions wrote ``TABLE.jsonl``, which the records reader reads; the rebuild
    looked for ``TABLE.jsonl.gz`` only."""
    (tmp_path / "fig2.jsonl").write_bytes(gzip.decompress(
        (ROOT / "reports/smol/fig2.jsonl.gz").read_bytes()))  # fmt: skip
    assert main(["reproduce", "fig2", "--profile", "smol", "--rebuild", "--out", str(tmp_path),
                 "--quiet"]) == 0  # fmt: skip
    committed = (ROOT / "reports/smol/fig2.md").read_text()
    assert _body((tmp_path / "fig2.md").read_text()) == _body(committed)


def test_pcd_rebuild_names_the_profiles_model_not_a_trained_checkpoint():
    """The PCD report's title names the profile's model, which a rebuild reads from the records:
    the model of a line that is the model as it is or extended zero-shot, not the folder of a
    trained checkpoint's line, whichever record comes first."""
    from longred_bench.reproduce.pcd import profile_model

    trained = {"line": "cpt abf:theta=4e5", "rope": "none", "model": "/runs/train-cpt/final"}
    plain = {"line": "abf:theta=4e5", "rope": "abf:theta=4e5", "model": "tiny-base"}
    original = {"line": "original", "rope": "none", "model": "smollm2-135m"}
    assert profile_model([trained, plain]) == "tiny-base"
    assert profile_model([trained, original]) == "smollm2-135m"
    assert profile_model([trained]) == "the profile's model"
    # The original's evaluation records say rope: null (its PSA records say "none").
    evaluated = {"line": "original", "rope": None, "model": "smollm2-135m"}
    assert profile_model([trained, evaluated]) == "smollm2-135m"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["table2"], "no records to rebuild table2 from"),
        (["tiny_base"], "tiny_base writes its own outputs"),
        (["table2", "--force"], "--force does something else"),
        (["table2", "--dry-run"], "--dry-run does something else"),
    ],
)
def test_rebuild_refuses_with_one_line(tmp_path, capsys, argv, message):
    out = ["--out", str(tmp_path)]
    rc = main(["reproduce", *argv, "--profile", "tiny", "--rebuild", *out])
    err = capsys.readouterr().err
    assert rc != 0 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())  # nothing written


def test_a_rebuild_names_the_rows_of_the_plan_its_records_lack(tmp_path, capsys) -> None:
    """Records missing a row (LongReD-C here) made a report without it, and without the verdict
    that needs it, and said nothing: the rebuild names the rows on stderr and in the report's
    call line."""
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.output import missing_rows, planned_rows, rebuild_outputs
    from longred_bench.results import write_table_records

    planned = planned_rows("table3", load_profile("smoke"), {})
    assert ("longred-c", "abf:theta=1e5") in planned and ("cpt", "abf:theta=1e5") in planned
    records = [{"kind": "eval", "row": row, "extension": ext, "model": "tiny-random"}
               for row, ext in sorted(planned, key=str) if row != "longred-c"]  # fmt: skip
    assert missing_rows(records, planned) == "longred-c at abf:theta=1e5"
    assert missing_rows([*records, {"row": "longred-c", "extension": "abf:theta=1e5"}],
                        planned) == ""  # fmt: skip
    write_table_records(tmp_path, "table3", records)
    notes: list[str] = []

    def build(records, out, **kwargs):
        notes.append(kwargs["wall_note"])
        return []

    rebuild_outputs("table3", build, tmp_path, profile="smoke", command="c",
                    planned=lambda: planned)  # fmt: skip
    assert notes[0].endswith("left out with the verdicts that need them: longred-c at "
                             "abf:theta=1e5")  # fmt: skip
    assert "lacks rows of the plan: longred-c at abf:theta=1e5" in capsys.readouterr().err


@pytest.mark.parametrize("rebuild", [[], ["--rebuild"]])
def test_another_profiles_report_folder_is_kept(tmp_path, capsys, monkeypatch, rebuild):
    """``--out`` a folder holding another profile's report (``reports/smol`` at a copy of smol)
    replaced that report and its records without a word; refused before anything runs."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "reports" / "pa"
    out.mkdir(parents=True)
    report = "# LongReD Table 1: drift before continued pre-training (profile `pa`)\n"
    (out / "table1.md").write_text(report)
    mine = tmp_path / "pb.yaml"
    mine.write_text("extends: smoke\n")
    argv = ["reproduce", "table1", "--profile", str(mine), "--out", str(out), "--quiet"]
    assert main([*argv, *rebuild]) == 2
    assert capsys.readouterr().err == (
        f"error: --out {out} holds table1's report of profile pa (and its records), which "
        "profile pb's would replace: give another --out\n"
    )
    assert (out / "table1.md").read_text() == report and sorted(out.iterdir()) == [
        out / "table1.md"
    ]
    # a built-in profile's report: that profile is named (``fig2 --rebuild --out reports/smol``
    # at fig2's default, tiny, was told to give another --out)
    (out / "table1.md").write_text(report.replace("`pa`", "`smol`"))
    assert main([*argv, *rebuild]) == 2
    assert capsys.readouterr().err.endswith(
        "which profile pb's would replace: give --profile smol for that report, or another --out\n"
    )


def test_the_rebuild_hint_gives_the_profile_as_given(tmp_path, capsys, monkeypatch):
    """It named the profile file by its stem (``--profile pa``), which does not resolve."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pa.yaml").write_text("extends: smoke\n")
    assert main(["reproduce", "table3", "--profile", "pa.yaml", "--rebuild"]) == 2
    err = capsys.readouterr().err
    assert f"(run `longred-bench reproduce table3 --profile {tmp_path / 'pa.yaml'}` first" in err
