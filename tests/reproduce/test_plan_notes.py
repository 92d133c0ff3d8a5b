"""What a dry run says about settings a table takes from elsewhere than where a profile file set
them: a ``training.<recipe>`` key of the user's own file replaced in the table's runs by an
override (``null`` there gives the override up), and a table's own seeds beside ``runs.seeds``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from longred_bench.cli import main


def _dry(capsys, profile, table: str = "table3") -> str:
    assert main(["reproduce", table, "--profile", str(profile), "--dry-run"]) == 0
    return capsys.readouterr().out


def _units(capsys, profile) -> list[dict]:
    assert main(["reproduce", "table3", "--profile", str(profile), "--list-units"]) == 0
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_a_training_key_an_override_replaces_is_named(tmp_path, monkeypatch, capsys) -> None:
    """smoke's runs.overrides.steps (2) won over the file's training.cpt.steps (10) without a
    word; the built-in profile's own sections (steps 3 for `train --profile smoke`) are its
    design and get no note."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    mine = tmp_path / "mine.yaml"
    mine.write_text("extends: smoke\ntraining: {cpt: {steps: 10}, pose: {steps: 9}}\n")
    out = _dry(capsys, mine)
    assert ("steps: the table's runs take `runs.overrides.steps` (2), not `training.cpt.steps` "
            "(10); set `runs.overrides.steps: null`") in out  # fmt: skip
    assert out.count("the table's runs take") == 1  # not pose's: Table 3 trains no pose run
    mine.write_text("extends: smoke\ntraining: {cpt: {steps: 10}, longred: {steps: 7}}\n")
    out = _dry(capsys, mine)  # one note a key, naming every section it replaces (was one each)
    assert (
        "steps: the table's runs take `runs.overrides.steps` (2), not `training.cpt.steps` "
        "(10), `training.longred.steps` (7); set `runs.overrides.steps: null`"
    ) in out
    assert out.count("the table's runs take") == 1
    mine.write_text("extends: smoke\ntraining: {cpt: {steps: 10}}\n")
    assert "the table's runs take" not in _dry(capsys, "smoke")
    # null gives the inherited override up: each recipe's own steps, the file's 10 for cpt
    before = {u["id"]: u["folder"] for u in _units(capsys, mine)}
    mine.write_text("extends: smoke\ntraining: {cpt: {steps: 10}}\n"
                    "runs: {overrides: {steps: null}}\n")  # fmt: skip
    assert "the table's runs take" not in _dry(capsys, mine)
    after = {u["id"]: u["folder"] for u in _units(capsys, mine)}
    cpt = next(uid for uid in after if uid.startswith("train_cpt"))
    assert after[cpt] != before[cpt]  # another run: 10 steps


def test_a_long_len_override_names_the_extension_windows_cap(tmp_path, monkeypatch, capsys):
    """A long_len override above an extension's window trained at that window while the note
    stated the override alone (``train --set long_len`` refuses such a value outright)."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    mine = tmp_path / "mine.yaml"
    mine.write_text("extends: smoke\ntraining: {cpt: {long_len: 512}}\n"
                    "runs: {overrides: {long_len: 2048}}\n")  # fmt: skip
    assert ("long_len: the table's runs take `runs.overrides.long_len` (2048) (a run beyond the "
            "original window trains at most its extension's window), not "
            "`training.cpt.long_len` (512)") in _dry(capsys, mine)  # fmt: skip


def test_a_tables_own_seeds_are_named_beside_the_grids(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    mine = tmp_path / "seeded.yaml"
    mine.write_text("extends: smoke\nruns: {seeds: 2}\ntables: {fig3: {seeds: 1}}\n")
    out = _dry(capsys, mine, "fig3")
    assert "seeds: `tables.fig3.seeds` (1), not `runs.seeds` (2)" in out
    assert "seeds: `tables" not in _dry(capsys, mine, "table3")


def test_the_plans_last_line_says_why_there_is_no_estimate(tmp_path, monkeypatch, capsys) -> None:
    """It said "nothing cached, nothing to estimate from" whatever the cache held (every unit
    cached included)."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    last = _dry(capsys, "smoke").strip().splitlines()[-1]
    assert last.startswith("In all: 13 distinct units, 0 cached, 13 to run")
    assert last.endswith("else a third of a CPT run of its model; nothing is cached to estimate "
                         "from.")  # fmt: skip


def test_a_table_measuring_table3s_runs_says_why_table3_is_named(
    tmp_path, monkeypatch, capsys
) -> None:
    """Table 1 (smoke's after_cpt) stopped with "table3 cannot run ...", a table the user had
    not asked for."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    mid = tmp_path / "mid.yaml"
    mid.write_text('extends: smoke\nruns: {extensions: ["pi:factor=2"]}\n')
    assert main(["reproduce", "table1", "--profile", str(mid), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: table1 measures runs of Table 3's grid, which cannot run at "
                          "this profile: table3 cannot run at profile mid")  # fmt: skip


def test_a_data_variant_that_changes_no_run_is_refused(tmp_path, monkeypatch, capsys) -> None:
    """--d1 prose drops the long-data keys of the runs' overrides; at smoke (none set) it gave
    the default's own units under a report folder named for prose data."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    argv = ["reproduce", "table3", "--d1", "prose", "--dry-run", "--profile"]
    assert main([*argv, "smoke"]) == 2
    assert "--d1 prose: at profile smoke Table 3's runs already train on each recipe's own " in (
        capsys.readouterr().err
    )
    assert main([*argv, "tiny"]) == 0  # tiny's overrides set its retrieval long data


def test_the_default_data_variant_named_plans_the_default_table(tmp_path, monkeypatch, capsys):
    """``--d1 retrieval`` names Table 3's default data: at smoke (no long-data overrides) it
    plans the table as a call without ``--d1`` does, not refused as a variant that changes no
    run."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    argv = ["reproduce", "table3", "--profile", "smoke", "--dry-run"]
    assert main(argv) == 0
    plain = capsys.readouterr().out
    assert main([*argv, "--d1", "retrieval"]) == 0
    assert capsys.readouterr().out == plain


def test_a_data_variant_over_overrides_set_to_null_is_refused(tmp_path, monkeypatch, capsys):
    """Long-data keys of the overrides set to null set nothing (each recipe's own data trains):
    ``--d1 prose`` changes no run there either, and is refused as at smoke."""
    from longred_bench.cli import main

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    mine = tmp_path / "mine.yaml"
    mine.write_text("extends: tiny\nruns: {overrides: {long_data: null, retrieval_fraction: "
                    "null}}\n")  # fmt: skip
    assert main(["reproduce", "table3", "--d1", "prose", "--dry-run", "--profile", str(mine)]) == 2
    assert "Table 3's runs already train on each recipe's own" in capsys.readouterr().err


def test_a_wrong_model_window_is_named_before_the_tables_are_planned(
    tmp_path, monkeypatch, capsys
) -> None:
    """model.window 512 on a 256-token model read "no length fits abf:theta=4e6's 2048-token
    window" (the plan built on the wrong window) before the window itself was named."""
    from longred_bench.models.loading import load

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    model = tmp_path / "model"
    load("tiny-random").model.config.save_pretrained(model)
    mine = tmp_path / "w.yaml"
    mine.write_text(f"extends: smol\nmodel: {{name: '{model}', window: 512, layers: 4}}\n")
    assert main(["reproduce", "table3", "--profile", str(mine), "--dry-run"]) == 2
    assert (
        capsys.readouterr()
        .err.strip()
        .endswith(f"model.window is 512, but {model}'s config says 256: set model.window: 256")
    )


def test_a_plan_at_tiny_says_tiny_base_is_built_first(tmp_path, monkeypatch, capsys):
    """``reproduce table3 --profile tiny --dry-run`` (and ``train --dry-run``) on a cache
    without tiny-base said nothing of the 15-minute build before the first unit."""
    from longred_bench.cli import main

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    line = ("Before anything runs: tiny-base, {}, is built (about 15 min on 2 CPU cores; not "
            "counted above): not built in this cache yet.")  # fmt: skip
    for table in ("table3", "all"):  # all: tiny_base's own note, 13th, was the only word
        assert main(["reproduce", table, "--profile", "tiny", "--dry-run"]) == 0
        assert capsys.readouterr().out.rstrip().endswith(line.format("the profile's model"))
    assert main(["train", "--recipe", "cpt", "--profile", "tiny", "--dry-run"]) == 0
    assert capsys.readouterr().out.rstrip().endswith(line.format("the run's model"))
    assert main(["reproduce", "table3", "--profile", "smoke", "--dry-run"]) == 0
    assert "tiny-base" not in capsys.readouterr().out
    for profile in ("tiny", "smoke"):  # pretrain is the build: it said tiny-base came first
        assert main(["train", "--recipe", "pretrain", "--profile", profile, "--dry-run"]) == 0
        assert "Before anything runs" not in capsys.readouterr().out


def test_a_run_builds_tiny_base_first_with_its_own_progress(monkeypatch) -> None:
    """``reproduce ... --quiet`` drew the tiny-base build's bars: the first unit to load it
    built it, with the builder's default progress. The call builds it first, as its plan
    says, with the call's progress; not where nothing is to compute or it is built."""
    from types import SimpleNamespace

    import longred_bench.jobs.limits as limits
    import longred_bench.jobs.tiny_base as tiny_base
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.engine import build_tiny_base_first

    calls = []
    monkeypatch.setattr(tiny_base, "tiny_base_dir", lambda **kw: calls.append(kw))
    built = {"now": False}
    monkeypatch.setattr(limits, "tiny_base_built", lambda: built["now"])

    def step(cached):
        return SimpleNamespace(unit=SimpleNamespace(cached=lambda: cached, kind="eval"))

    tiny, smoke = load_profile("tiny"), load_profile("smoke")
    build_tiny_base_first(tiny, [step(None)], force=False, progress=False)
    assert calls == [{"progress": False}]
    build_tiny_base_first(tiny, [step("cached")], force=False, progress=False)  # nothing to do
    build_tiny_base_first(smoke, [step(None)], force=False, progress=False)  # not its model
    built["now"] = True
    build_tiny_base_first(tiny, [step(None)], force=False, progress=True)  # already built
    assert calls == [{"progress": False}]


@pytest.mark.parametrize("plan", ["--dry-run", "--list-units"])
def test_tiny_base_s_stated_shape_is_checked_by_a_plan_without_torch(tmp_path, plan) -> None:
    """A profile of tiny-base stating a 512-token window (or 6 layers) was planned without a
    word by a dry run and a unit listing (only a local folder's config was read); tiny-base's
    comes from its recipe, without torch."""
    for stated, said in (("window: 512, layers: 4", "model.window is 512, but tiny-base's "
                          "config says 256: set model.window: 256"),
                         ("window: 256, layers: 6", "model.layers is 6, but tiny-base has 4: "
                          "set model.layers: 4")):  # fmt: skip
        mine = tmp_path / "w.yaml"
        mine.write_text(f"extends: tiny\nmodel: {{name: tiny-base, {stated}}}\n")
        code = ("import json, sys\nfrom longred_bench.cli import main\n"
                f"rc = main(['reproduce', 'table3', '--profile', {str(mine)!r}, {plan!r}])\n"
                "print(json.dumps([rc, 'torch' in sys.modules]))\n")  # fmt: skip
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={**os.environ, "LONGRED_CACHE": str(tmp_path / "c")})  # fmt: skip
        assert json.loads(done.stdout.splitlines()[-1]) == [2, False], done.stderr
        assert done.stderr.strip().endswith(said), done.stderr


def test_a_tables_own_evaluation_keys_are_named_beside_the_profiles(
    tmp_path, monkeypatch, capsys
) -> None:
    """A file's ``evaluation.short.limit`` was taken by every table but one whose own section
    kept another (``smol``'s Figure 2 keeps 40), without a word."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    mine = tmp_path / "mine.yaml"
    mine.write_text("extends: smoke\nevaluation: {short: {limit: 5}}\n"
                    "tables: {fig2: {evaluation: {short: {limit: 40}}}}\n")  # fmt: skip
    out = _dry(capsys, mine, "fig2")
    assert ("  evaluation: `tables.fig2.evaluation.short.limit` (40), not "
            "`evaluation.short.limit` (5); set the table's own to change it") in out  # fmt: skip
    mine.write_text("extends: smoke\nevaluation: {short: {limit: 5}}\n"
                    "tables: {fig2: {evaluation: {short: {limit: 5}}}}\n")  # fmt: skip
    assert "evaluation.short.limit" not in _dry(capsys, mine, "fig2")  # the same value: no note
