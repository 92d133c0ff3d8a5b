"""The dry-run says, before anything trains, how many epochs each training run's data takes: from
the run's own resolved config (the table's ``runs.overrides`` included, where a table's long data
goes), offline (a hub source is said to be read at training time, its offline fallback counted),
each data source counted once."""

from __future__ import annotations

from pathlib import Path

import pytest

from longred_bench.cli import main


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    """``tiny-random`` saved as a model folder: a known shape (its ``config.json``) and a local
    tokenizer (a byte tokenizer: a byte of ASCII text is a token)."""
    from longred_bench.models.loading import load

    loaded = load("tiny-random")
    folder = tmp_path / "model"
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    return folder


def _profile(tmp_path: Path, model: Path, long_data: str) -> Path:
    """A profile on ``model`` (window 256) whose Table 3 trains CPT only, at PI x4, with two
    seeds: smoke's budget, long rows of 512 and 2,048 tokens a step, for the 2 steps of smoke's
    ``runs.overrides`` (not its ``training.cpt``'s 3), reading ``long_data`` through the same
    overrides."""
    path = tmp_path / "short.yaml"
    path.write_text(
        f"extends: smoke\nmodel: {{name: {model}, window: 256, layers: 4}}\n"
        f'runs: {{extensions: ["pi:factor=4"], seeds: 2, '
        f'overrides: {{long_data: "{long_data}"}}}}\n'
        "tables: {table3: {rows: [cpt]}}\n"
    )
    return path


@pytest.mark.parametrize("answers", [True, False])
def test_a_short_long_corpus_shows_its_epochs_in_the_dry_run(
    tmp_path, monkeypatch, capsys, model_dir, answers
):
    """A dry run streams no hub rows; it asks the hub for the data's revision once (the side of
    the fallback rule the run reads is part of its key) and plans the side the hub's answer
    gives: the hub's rows, with the fallback's epochs beside them, or the fallback alone."""
    import huggingface_hub

    from longred_bench.data import hub_corpora

    def refuse(*args, **kwargs):
        raise AssertionError(f"the hub was streamed: {args} {kwargs}")

    asked = []

    def info(self, dataset, **kwargs):
        asked.append(dataset)
        if not answers:
            raise OSError("no connection")
        return type("Info", (), {"sha": "abc123"})()

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)  # a user's machine: the hub maybe there
    monkeypatch.setattr(huggingface_hub.HfApi, "dataset_info", info)
    monkeypatch.setattr(hub_corpora, "hub_entry", refuse)
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    book = tmp_path / "book.txt"
    book.write_text("a" * 1600)  # 1,600 byte tokens: 3 rows of 512
    spec = f"hf:org/no-such-data:docs=5|txt:{book}"
    profile = _profile(tmp_path, model_dir, spec)
    assert main(["reproduce", "table3", "--profile", str(profile), "--dry-run"]) == 0
    text = capsys.readouterr().out
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("data ")]
    epochs = ("gives 3 rows of 512 tokens (from 1 documents of at least 512 tokens), the budget "
              "reads 8 rows: 2.67 epochs (each row seen about 2.7 times) (2 runs, e.g. train cpt "
              "pi:factor=4 seed 0)")  # fmt: skip
    assert asked == ["org/no-such-data"]
    assert lines == (
        [f"data long: {spec} is read from the hub at training time; its epochs are said then "
         "(2 runs, e.g. train cpt pi:factor=4 seed 0)",
         f"data long offline (its fallback): txt:{book} {epochs}"]
        if answers else [f"data long: {spec} (fallback txt:{book}) {epochs}"]
    )  # fmt: skip
    assert text.index("Training data, from each run's own config") < text.index("In all: ")


def test_each_data_source_is_counted_once_for_every_run_that_reads_it(
    tmp_path, monkeypatch, model_dir
):
    import longred_bench.training.data as data
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.plan import planned_units
    from longred_bench.reproduce.plan_data import data_section
    from longred_bench.reproduce.registry import get_spec

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    book = tmp_path / "book.txt"
    book.write_text("a" * 1600)
    prof = load_profile(str(_profile(tmp_path, model_dir, f"txt:{book}")))
    counted = []
    real = data.stream_data
    monkeypatch.setattr(data, "stream_data", lambda *a, **k: counted.append(a[1]) or real(*a, **k))
    units = planned_units(get_spec("table3").resolve(prof, progress=False))
    lines = data_section([u for u in units if not u.cached], prof)
    assert counted == [f"txt:{book}"]  # two seeds, one count
    assert any("2.67 epochs" in line and "(2 runs, " in line for line in lines)


def test_a_plan_that_reads_no_training_code_says_the_epochs_are_not_counted(
    tmp_path, monkeypatch, capsys
):
    """smoke's plan imports no torch: the runs print their epochs as they start."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    assert main(["reproduce", "table3", "--profile", "smoke", "--dry-run"]) == 0
    assert "Training data: the epochs of each stream are not counted in this plan (profile " \
        "smoke's model, tiny-random, is one of the suite's own small models, so the plan reads " \
        "no training code)" in capsys.readouterr().out  # fmt: skip
