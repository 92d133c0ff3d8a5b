"""Pinned behaviour of the drift job (:mod:`longred_bench.jobs.drift`): the dtype it accepts,
the checks before measuring (a comparison to make, a sequence length some model holds, the same
tokens), the RoPE each summary records, resuming from the per-text sums an interrupted run
saved (under another batch size, impl or device too), and telling whether the local files a
saved drift read have changed. Models are ``tiny-random`` and copies of it saved here; texts are
random token windows (no corpus)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
import torch
import yaml

from longred_bench.errors import UserError
from longred_bench.jobs import drift
from longred_bench.jobs.configs import DriftConfig
from longred_bench.models.loading import load

CFG = DriftConfig(original="tiny-random", rope=("pi:factor=2",), texts="random", num_texts=2,
                  seq_len=16, top_m=1)  # fmt: skip


@pytest.mark.parametrize("name", ["int64", "bool", "nn", "float_32", "float33"])
def test_a_dtype_must_be_a_floating_torch_dtype(name: str) -> None:
    """Only a floating torch dtype is accepted, by its torch name, when the config is made: a
    typo into a drift's own ``--out`` read as "another config (differs in dtype)"."""
    assert drift._dtype(replace(CFG, dtype="float64")) is torch.float64
    with pytest.raises(UserError, match=rf"dtype \(--dtype\) '{name}' is not one of float32, "):
        replace(CFG, dtype=name)


def test_a_drift_with_nothing_to_compare_is_refused() -> None:
    """Neither an extended checkpoint nor a RoPE spec: refused before loading."""
    with pytest.raises(UserError, match="drift needs an extended checkpoint or a RoPE spec"):
        drift.run_drift(replace(CFG, rope=()), progress=False)


def test_the_sequence_length_may_reach_the_longest_window_but_not_pass_it() -> None:
    """seq_len is checked against the longest window of the models compared (the extension's,
    512, past the original's 256): 512 is measured, 513 refused naming the most."""
    records, _ = drift.run_drift(replace(CFG, num_texts=1, seq_len=512), progress=False)
    summary = records[-1]
    assert summary["kind"] == "drift_summary" and summary["text_num_tokens"] == [512]
    with pytest.raises(UserError, match=r"seq_len 513 exceeds every model's window: .* most 512"):
        drift.run_drift(replace(CFG, num_texts=1, seq_len=513), progress=False)


def test_a_sequence_length_past_every_window_is_named_before_the_texts_are_cut(tmp_path) -> None:
    """A text too short for windows of that length said so first ("yields only 0 windows"),
    sending the user to longer texts before the length's own refusal."""
    text = tmp_path / "short.txt"
    text.write_text("A few words of text, far fewer than a window holds. " * 4)
    with pytest.raises(UserError, match=r"seq_len 4096 exceeds every model's window"):
        drift.run_drift(replace(CFG, num_texts=1, seq_len=4096, texts=str(text)), progress=False)


def test_a_summary_records_the_compared_models_rope_and_token_count() -> None:
    """Each summary names the RoPE and window of the model it compares, and how many tokens
    were measured (all windows' tokens)."""
    records, provenance = drift.run_drift(CFG, progress=False)
    summary = next(r for r in records if r["kind"] == "drift_summary")
    assert summary["max_position_embeddings"] == 512
    assert summary["rope_parameters"]["rope_type"] == "linear"
    assert summary["rope_parameters"]["factor"] == 2.0
    assert summary["num_tokens"] == sum(summary["text_num_tokens"]) == 32
    assert all(r["num_tokens"] == 32 for r in records)
    assert "local_files" not in provenance.config  # a zoo model and random texts: no files


def test_an_extended_model_with_other_tokens_is_refused(saved_tiny: Path) -> None:
    """An extended checkpoint whose tokenizer has another vocabulary is refused by name."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(saved_tiny)
    tokenizer.add_tokens(["<extra>"])
    tokenizer.save_pretrained(saved_tiny)
    cfg = replace(CFG, extended=(str(saved_tiny),), rope=())
    with pytest.raises(UserError, match=r"tokenizer of .* differs from that of 'tiny-random'"):
        drift.run_drift(cfg, progress=False)


def test_an_extended_checkpoint_loads_in_the_runs_dtype(saved_tiny: Path) -> None:
    """A checkpoint compared as it is is loaded in the run's dtype, as the original is; the
    run's config records the files it read."""
    cfg = replace(CFG, extended=(str(saved_tiny),), rope=(), dtype="float64")
    original = load("tiny-random", dtype=torch.float64)
    models = drift._load_extended(cfg, original)
    assert next(models[str(saved_tiny)].parameters()).dtype == torch.float64
    _, provenance = drift.run_drift(replace(cfg, dtype="float32"), progress=False)
    assert list(provenance.config["local_files"]) == [str(saved_tiny)]


def test_a_window_with_no_valid_token_is_null() -> None:
    """JSON has no NaN: a window with no valid token is written as null."""
    assert drift._finite([float("nan"), 0.5]) == [None, 0.5]


def test_an_interrupted_run_resumes_from_the_windows_every_line_finished(tmp_path, capsys):
    """Saved sums of 2 windows for one line and 1 for the other: the run resumes after 1 (the
    fewest), says so under --quiet too, and gives the uninterrupted run's numbers."""
    cfg = replace(CFG, rope=("pi:factor=2", "abf:theta=1e5"), num_texts=3, batch_size=1)
    partial = tmp_path / drift.PARTIAL
    whole, _ = drift.run_drift(cfg, progress=False, partial=partial)
    saved = json.loads(partial.read_text())
    assert [len(rows) for rows in saved["texts"].values()] == [3, 3]
    saved["texts"] = {"pi:factor=2": saved["texts"]["pi:factor=2"][:2],
                      "abf:theta=1e5": saved["texts"]["abf:theta=1e5"][:1]}  # fmt: skip
    partial.write_text(json.dumps(saved))
    assert drift.partial_windows(partial) == 1
    capsys.readouterr()
    again, _ = drift.run_drift(cfg, progress=False, partial=partial)
    assert capsys.readouterr().out == f"[drift] resuming after 1 of 3 windows ({partial})\n"
    for a, b in zip(whole, again, strict=True):
        assert a["text_hidden_cosine"] == pytest.approx(b["text_hidden_cosine"], rel=1e-6)


def test_saved_sums_of_another_config_or_other_files_are_not_resumed(tmp_path) -> None:
    """Sums saved by another config, for other files, or unreadable are not read; absent ones
    neither."""
    partial = tmp_path / drift.PARTIAL
    assert drift._read_partial(partial, CFG) == {}
    drift.run_drift(CFG, progress=False, partial=partial)
    assert [len(v) for v in drift._read_partial(partial, CFG).values()] == [2]
    assert drift._read_partial(partial, replace(CFG, seed=1)) == {}
    saved = json.loads(partial.read_text())
    partial.write_text(json.dumps({**saved, "files": {"/m": "x"}}))
    assert drift._read_partial(partial, CFG) == {}
    for broken in ("{", json.dumps({"texts": saved["texts"]}), json.dumps([saved])):
        partial.write_text(broken)
        assert drift._read_partial(partial, CFG) == {}
    partial.write_text(json.dumps({"texts": {"a": 1}}))
    assert drift.partial_windows(partial) == 0


@pytest.mark.parametrize("texts", [None, [[1.0]]])
def test_saved_sums_whose_texts_are_not_a_map_are_not_resumed(tmp_path, texts) -> None:
    """An edited file whose ``texts`` is null or a list was an AttributeError traceback: now,
    like any unreadable file, nothing saved."""
    partial = tmp_path / drift.PARTIAL
    drift.run_drift(CFG, progress=False, partial=partial)
    saved = json.loads(partial.read_text())
    partial.write_text(json.dumps({**saved, "texts": texts}))
    assert drift._read_partial(partial, CFG) == {}
    assert drift.partial_windows(partial) == 0


def test_changed_local_files_are_those_whose_stamps_differ_either_way(tmp_path) -> None:
    """A model folder read now but not recorded then (or recorded as null) counts as changed,
    as does one recorded then and not read now; results saved before stamps were recorded, or
    with no saved config, count as unchanged."""
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    cfg = replace(CFG, extended=(str(folder),))
    out = tmp_path / "out"
    assert drift.files_changed(out, cfg) == ""
    out.mkdir()
    for saved, changed in (({"local_files": {}}, str(folder)),
                           ({"local_files": None}, str(folder)),
                           ({"local_files": {"/gone": "x", **drift.files_of(cfg)}}, "/gone"),
                           ({"seed": 0}, "")):  # fmt: skip
        (out / "config.yaml").write_text(yaml.safe_dump(saved))
        assert drift.files_changed(out, cfg) == changed, saved


def test_a_saved_run_writes_its_resolved_config(tmp_path) -> None:
    """save_run writes the run's resolved config beside its records."""
    records, provenance = drift.run_drift(CFG, progress=False)
    jsonl = drift.save_run(tmp_path, records, provenance)
    assert jsonl == tmp_path / "drift.jsonl"
    assert yaml.safe_load((tmp_path / "config.yaml").read_text())["rope"] == ["pi:factor=2"]


def test_saved_windows_resume_under_another_batch_size_impl_or_device(tmp_path, capsys) -> None:
    """A drift out of memory at one batch size was refused at a smaller one ("another config
    (differs in batch_size)"), its windows given up: they resume, and the line says how they
    were measured; the results are the uninterrupted run's."""
    from longred_bench.cli.outputs import check_drift_out, saved_drift_order

    cfg = replace(CFG, rope=("pi:factor=2", "abf:theta=1e5"), num_texts=3, batch_size=1)
    partial = tmp_path / drift.PARTIAL
    whole, _ = drift.run_drift(cfg, progress=False, partial=partial)
    saved = json.loads(partial.read_text())
    saved["texts"] = {name: rows[:2] for name, rows in saved["texts"].items()}
    partial.write_text(json.dumps(saved))
    now = replace(cfg, batch_size=2, impl="naive", rope=tuple(reversed(cfg.rope)))
    assert saved_drift_order(tmp_path, now.to_dict()) == {"rope": cfg.rope, "extended": ()}
    now = replace(now, rope=cfg.rope)
    check_drift_out(tmp_path, now.to_dict())  # not refused
    capsys.readouterr()
    again, _ = drift.run_drift(now, progress=False, partial=partial)
    said = capsys.readouterr().out
    assert said == (f"[drift] resuming after 2 of 3 windows ({partial}); measured at "
                    "batch_size 1 (now 2), impl auto (now naive)\n")  # fmt: skip
    for a, b in zip(whole, again, strict=True):
        assert a["text_hidden_cosine"] == pytest.approx(b["text_hidden_cosine"], rel=1e-5)
    with pytest.raises(UserError, match=r"another config \(differs in seq_len\)"):
        check_drift_out(tmp_path, replace(now, seq_len=8).to_dict())  # what is measured
    partial.unlink()  # a finished drift's results: another batch size is another run
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg.to_dict()))
    with pytest.raises(UserError, match=r"results of a drift of another config \(differs in "):
        check_drift_out(tmp_path, now.to_dict())


def test_saved_windows_of_changed_files_are_said_to_be_measured_again(tmp_path, capsys) -> None:
    """Windows saved before a local file changed (a ``touch`` too) were dropped in silence
    right after the interrupted line said to run the same command again."""
    partial = tmp_path / drift.PARTIAL
    drift.run_drift(CFG, progress=False, partial=partial)
    saved = json.loads(partial.read_text())
    partial.write_text(json.dumps({**saved, "files": {"/m": "x"}}))
    capsys.readouterr()
    assert drift._read_partial(partial, CFG) == {}
    said = capsys.readouterr().out
    assert said == (f"[drift] the files of /m changed since 2 window(s) were saved in {partial}: "
                    "every window is measured again\n")  # fmt: skip
    partial.write_text(json.dumps({**saved, "files": {"/m": "x"}, "texts": {}}))
    assert drift._read_partial(partial, CFG) == {}
    assert capsys.readouterr().out == ""  # no window saved: nothing given up


def test_a_resumed_drifts_seconds_count_the_saved_windows_time(tmp_path) -> None:
    """A drift resumed after an interruption recorded in its config only the seconds of the
    windows measured after it; the saved windows' time counts now, and no other run's."""
    cfg = replace(CFG, num_texts=3, batch_size=1)
    partial = tmp_path / drift.PARTIAL
    drift.run_drift(cfg, progress=False, partial=partial)
    saved = json.loads(partial.read_text())
    assert 0 <= saved["seconds"] < 1000
    saved["texts"] = {name: rows[:2] for name, rows in saved["texts"].items()}
    partial.write_text(json.dumps({**saved, "seconds": 1000.0}))
    _, provenance = drift.run_drift(cfg, progress=False, partial=partial)
    assert 1000 < provenance.config["seconds"] < 1100
    partial.write_text(json.dumps({**saved, "seconds": 1000.0}))
    _, provenance = drift.run_drift(replace(cfg, seed=1), progress=False, partial=partial)
    assert provenance.config["seconds"] < 1000  # another config's windows: not resumed
