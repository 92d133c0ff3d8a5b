"""A dry-run's note on a ``training.<recipe>`` key of the user's file that an override replaces:
none where the override sets the same value, and the table's own override named where it sets
one beside ``runs.overrides``."""

from __future__ import annotations

from longred_bench.cli import main


def _dry(capsys, profile) -> str:
    assert main(["reproduce", "table3", "--profile", str(profile), "--dry-run"]) == 0
    return capsys.readouterr().out


def test_an_override_of_the_same_value_gets_no_note(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    mine = tmp_path / "same.yaml"
    mine.write_text("extends: smoke\ntraining: {cpt: {steps: 2}}\n")  # smoke's override: 2
    assert "the table's runs take" not in _dry(capsys, mine)


def test_the_tables_own_override_wins_and_is_named(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    mine = tmp_path / "own.yaml"
    mine.write_text("extends: smoke\ntraining: {cpt: {steps: 10}}\n"
                    "tables: {table3: {overrides: {steps: 3}}}\n")  # fmt: skip
    assert ("steps: the table's runs take `tables.table3.overrides.steps` (3), not "
            "`training.cpt.steps` (10)") in _dry(capsys, mine)  # fmt: skip


def test_a_tables_own_settings_equal_to_the_grids_get_no_note(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    mine = tmp_path / "same-seeds.yaml"
    mine.write_text("extends: smoke\nruns: {seeds: 2}\ntables: {fig3: {seeds: 2}}\n")
    assert main(["reproduce", "fig3", "--profile", str(mine), "--dry-run"]) == 0
    assert "seeds: `tables" not in capsys.readouterr().out
    mine.write_text('extends: smoke\nruns: {extensions: ["pi:factor=4"]}\n'
                    'tables: {table4: {extensions: ["pi:factor=4"]}}\n')  # fmt: skip
    assert main(["reproduce", "table4", "--profile", str(mine), "--dry-run"]) == 0
    assert "`tables.table4.extensions`, not" not in capsys.readouterr().out
