"""``compare`` (:mod:`longred_bench.jobs.compare`): what each unit's config holds, so which
settings measure it again (a suite's own counts, the original's window for every model's short
suite, a PCD row's parameters, the files of a local model or texts), how a drift run and its
saved windows are named, which rows a comparison has and under which label and folder each
unit's records come back, and the closing line that counts the units reused and measured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from longred_bench.errors import UserError
from longred_bench.jobs import compare
from longred_bench.jobs.compare import Entry, _drift_units, _eval_unit, drift_run, entries
from longred_bench.jobs.configs import CompareConfig
from longred_bench.pcd.config import PcdConfig

BASE = {"batch_size": 1, "device": "cpu", "seed": 0}


def _cfg(**kwargs: Any) -> CompareConfig:
    return CompareConfig(**{"original": "tiny-random", "rope": ("pi:factor=4",), **kwargs})


def _folder(path: Path) -> str:
    """A local model folder (a config file is enough for its stamp)."""
    path.mkdir(parents=True)
    (path / "config.json").write_text("{}")
    return str(path)


def test_a_model_labelled_as_another_row_is_refused() -> None:
    """A checkpoint named ``original`` (or spelled as a listed extension) would share that row's
    label: one line naming every label."""
    with pytest.raises(UserError, match=r"a model is listed twice: original, original, pi:"):
        entries(_cfg(extended=("original",)))
    with pytest.raises(UserError, match="a model is listed twice"):
        entries(_cfg(extended=("pi:factor=4",)))


def test_a_short_unit_holds_the_originals_window_its_limit_and_tasks() -> None:
    """Every model's short suite is keyed by the suite chosen, its limit, its tasks and the
    original's window (the length each model is scored at)."""
    cfg = _cfg(short_suite="short_tiny", short_limit=3, short_tasks=("a", "b"), batch_size=2,
               seed=5)  # fmt: skip
    unit = _eval_unit(cfg, Entry("pi:factor=4", "tiny-random", "pi:factor=4"), "short", 256)
    assert unit == {"model": "tiny-random", "rope": "pi:factor=4", "suite": "short_tiny",
                    "batch_size": 2, "device": "cpu", "seed": 5, "limit": 3, "max_length": 256,
                    "tasks": ["a", "b"]}  # fmt: skip
    assert "tasks" not in _eval_unit(_cfg(), Entry("original", "tiny-random"), "short", 256)


def test_ruler_and_niah_units_hold_their_own_counts() -> None:
    cfg = _cfg(lengths=(1024, 2048), ruler_samples=3, niah_samples=2, niah_depths=(0, 50))
    entry = Entry("original", "tiny-random")
    assert _eval_unit(cfg, entry, "ruler", 256) == {
        "model": "tiny-random", "rope": None, "suite": "ruler", **BASE,
        "lengths": [1024, 2048], "samples": 3}  # fmt: skip
    assert _eval_unit(cfg, entry, "niah", 256) == {
        "model": "tiny-random", "rope": None, "suite": "niah", **BASE,
        "lengths": [1024, 2048], "samples": 2, "depths": [0, 50]}  # fmt: skip


def test_a_pcd_unit_holds_its_parameters_and_a_greedy_one_none() -> None:
    """Greedy units keep the keys they always had (their saved records stay reused); a PCD row's
    unit names its decoding and every PCD parameter, defaults too."""
    entry = Entry("original", "tiny-random")
    pcd = PcdConfig(alpha=2.0)
    cfg = _cfg(decoding=("greedy", "pcd"), pcd=pcd)
    greedy = _eval_unit(cfg, entry, "ruler", 256)
    assert "decoding" not in greedy and "pcd" not in greedy
    unit = _eval_unit(cfg, entry, "ruler", 256, "pcd")
    assert unit == {**greedy, "decoding": "pcd", "pcd": pcd.as_dict()}
    default = _eval_unit(_cfg(decoding=("pcd",)), entry, "ruler", 256, "pcd")
    assert default["pcd"] == PcdConfig().as_dict()


def test_a_local_models_units_are_keyed_by_its_files(tmp_path: Path) -> None:
    """A checkpoint's evaluation and drift units name its files' stamp, and its drift unit the
    original's too where that is local; a zoo or hub name has none."""
    from longred_bench.jobs.resume import weights_stamp

    original, ckpt = _folder(tmp_path / "orig"), _folder(tmp_path / "ckpt")
    cfg = CompareConfig(original=original, extended=(ckpt,), rope=("pi:factor=4",))
    unit = _eval_unit(cfg, Entry(ckpt, ckpt), "ruler", 256)
    assert unit["weights"] == {ckpt: weights_stamp(ckpt)}
    drift = dict(_drift_units(cfg))
    assert drift[ckpt]["weights"] == {original: weights_stamp(original),
                                      ckpt: weights_stamp(ckpt)}  # fmt: skip
    assert drift["pi:factor=4"]["weights"] == {original: weights_stamp(original)}
    assert "weights" not in _eval_unit(_cfg(), Entry("original", "tiny-random"), "ruler", 256)


def test_each_drift_unit_holds_the_drift_settings_and_one_model(tmp_path: Path) -> None:
    """One unit per checkpoint and per extension, each with every drift setting (texts, their
    count and length, seed, device): a change to any measures drift again; a local texts file
    is keyed by its stamp."""
    texts = tmp_path / "texts.txt"
    texts.write_text("some words " * 50)
    cfg = _cfg(extended=("ck",), drift_texts=str(texts), drift_num_texts=3, drift_seq_len=64,
               seed=2)  # fmt: skip
    common = {"original": "tiny-random", "texts": str(texts), "num_texts": 3, "seq_len": 64,
              "seed": 2, "device": "cpu"}  # fmt: skip
    units = _drift_units(cfg)
    assert [label for label, _ in units] == ["ck", "pi:factor=4"]
    ck, rope = (dict(units)[label] for label in ("ck", "pi:factor=4"))
    assert {k: ck[k] for k in common} == common and ck["extended"] == ["ck"]
    assert {k: rope[k] for k in common} == common and rope["rope"] == ["pi:factor=4"]
    assert "rope" not in ck and "extended" not in rope
    assert set(ck["texts_files"]) == set(rope["texts_files"]) and ck["texts_files"]


def test_a_drift_run_measures_the_labels_asked_only(tmp_path: Path) -> None:
    """One run for the missing models: the checkpoints and extensions named, no other."""
    ckpt = _folder(tmp_path / "ck")
    cfg = _cfg(extended=(ckpt, "other"), rope=("pi:factor=2", "pi:factor=4"))
    run = drift_run(cfg, [ckpt, "pi:factor=4"])
    assert run["extended"] == [ckpt] and run["rope"] == ["pi:factor=4"]
    assert set(run["weights"]) == {ckpt}
    orig = _folder(tmp_path / "orig")
    run = drift_run(CompareConfig(original=orig, rope=("pi:factor=2",)), ["pi:factor=2"])
    assert run["extended"] == [] and set(run["weights"]) == {orig}


def test_saved_drift_windows_are_named_by_the_models_files(tmp_path: Path) -> None:
    """An interrupted drift run's windows file is named by its config (but for its batch size,
    impl and device) and the files of its models now: other weights at the same path name
    another file, which no longer resumes."""
    import json

    ckpt = _folder(tmp_path / "ck")
    config = {"original": "tiny-random", "extended": [ckpt], "rope": [], "texts": "random"}
    name = compare.partial_name(config)
    assert name.startswith("models-") and name.endswith(".partial.json")
    assert compare.partial_name({**config, "texts": "brown"}) != name
    # how its windows are computed names no other file: they resume under it
    how = {"batch_size": 4, "impl": "naive", "device": "cuda:1"}
    assert compare.partial_name({**config, **how}) == name
    saved = tmp_path / name
    saved.write_text(json.dumps({"config": config, "texts": {}}))
    assert compare._resumable(saved)
    (Path(ckpt) / "model.safetensors").write_bytes(b"new weights")
    assert compare.partial_name(config) != name and not compare._resumable(saved)
    (tmp_path / "bad.partial.json").write_text("{")
    assert not compare._resumable(tmp_path / "bad.partial.json")


def test_the_config_dict_is_json_with_lists() -> None:
    import json

    data = compare.config_dict(_cfg(lengths=(1024,)))
    assert data["rope"] == ["pi:factor=4"] and data["lengths"] == [1024]
    assert json.loads(json.dumps(data)) == data


def test_the_closing_line_says_why_units_were_measured_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A unit measured where its folder held other records is said even without progress, and
    the closing line counts the damaged ones apart from those of other settings or code."""
    from longred_bench.jobs.compare_units import DAMAGED, OTHER_SETTINGS

    state = compare._Progress(total=4)
    state.announce("a: ruler", tmp_path / "a", False, None, OTHER_SETTINGS)
    assert capsys.readouterr().out == "" and state.again_why() == ""
    state.announce("b: ruler", tmp_path / "b", True, None, OTHER_SETTINGS)
    assert capsys.readouterr().out == "[compare] b: ruler\n"
    state.announce("c: ruler", tmp_path / "c", False, tmp_path / "c.1", DAMAGED)
    assert capsys.readouterr().out == (
        f"[compare] c: ruler: measured again; {tmp_path / 'c'} held {DAMAGED}, set aside as c.1\n"
    )
    assert state.again_why() == " (1 again: 1 damaged)"
    state.announce("d: ruler", tmp_path / "d", False, tmp_path / "d.1", OTHER_SETTINGS)
    assert state.measured == 4
    assert state.again_why() == " (2 again: 1 damaged; their settings or their code changed)"


def _fake_units(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, Any]]:
    """Evaluations and drift answered at once, each call recorded: (suite or ``drift``, the
    unit's model and decoding, or the drift run's models)."""
    from longred_bench.jobs import drift

    calls: list[tuple[str, Any]] = []

    def evaluate(unit, progress, **kwargs):
        calls.append((unit["suite"], (unit["model"], unit["rope"], unit.get("decoding"))))
        cache = kwargs["request_cache"]  # a response kept as the unit is measured
        cache.parent.mkdir(parents=True, exist_ok=True)
        Path(f"{cache}_rank0.db").write_bytes(b"")
        return [{"kind": "eval", "suite": unit["suite"], "task": "t", "metric": "acc",
                 "value": 0.5}]  # fmt: skip

    def measure(config, **kwargs):
        labels = [*config.extended, *config.rope]
        calls.append(("drift", labels))
        return [{"kind": "drift_summary", "extension": label} for label in labels], None

    monkeypatch.setattr(compare, "run_eval_unit", evaluate)
    monkeypatch.setattr(drift, "run_drift", measure)
    return calls


def test_every_row_and_suite_is_one_unit_saved_in_its_folder_and_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each row (a model, once per decoding) gets each suite in the order short, RULER, NIAH,
    whatever order the suites are given in, then one drift unit per extension; each record
    comes back labelled with its row; the responses a unit kept go once it is saved; a second
    call reuses every unit and says so."""
    calls = _fake_units(monkeypatch)
    cfg = _cfg(rope=("pi:factor=2", "pi:factor=4"), suites=("drift", "niah", "short"),
               short_suite="short_tiny", lengths=(1024,),
               decoding=("greedy", "pcd"))  # fmt: skip
    runs = tmp_path / "runs"
    records = compare.run_compare(cfg, tmp_path, progress=False)
    rows = ["original", "original +pcd", "pi:factor=2", "pi:factor=2 +pcd", "pi:factor=4",
            "pi:factor=4 +pcd"]  # fmt: skip
    assert [suite for suite, _ in calls] == [*["short_tiny"] * 6, *["niah"] * 6, "drift"]
    assert calls[-1] == ("drift", ["pi:factor=2", "pi:factor=4"])  # the missing ones, one run
    assert [(r["suite"], r["label"]) for r in records if r["kind"] == "eval"] == [
        *(("short_tiny", row) for row in rows), *(("niah", row) for row in rows)]  # fmt: skip
    assert [r["label"] for r in records if r["kind"] != "eval"] == ["pi:factor=2", "pi:factor=4"]
    for folder in ("original", "original_pcd", "pi_factor=2", "pi_factor=4_pcd"):
        assert (runs / folder / "niah" / "eval.jsonl").is_file(), folder
    assert (runs / "drift" / "pi_factor=2" / "drift.jsonl").is_file()
    assert not list((runs / "requests").glob("*.db"))  # each unit's responses go once saved
    said = capsys.readouterr().out  # 6 rows x 2 suites, and 2 drift units
    assert said == f"[compare] 0 of 14 unit(s) reused from {runs}, 14 measured\n"

    calls.clear()
    assert compare.run_compare(cfg, tmp_path, progress=False) == records
    assert calls == []
    said = capsys.readouterr().out
    assert said == f"[compare] 14 of 14 unit(s) reused from {runs}, 0 measured\n"


def test_a_setting_of_one_suite_measures_that_suites_units_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another count of NIAH samples measures the NIAH units, and only those, again; the
    closing line says why."""
    from dataclasses import replace

    calls = _fake_units(monkeypatch)
    cfg = _cfg(suites=("ruler", "niah"), lengths=(1024,))
    compare.run_compare(cfg, tmp_path, progress=False)
    calls.clear()
    capsys.readouterr()
    compare.run_compare(replace(cfg, niah_samples=2), tmp_path, progress=False)
    assert [suite for suite, _ in calls] == ["niah", "niah"]
    closing = capsys.readouterr().out.splitlines()[-1]
    assert closing == (f"[compare] 2 of 4 unit(s) reused from {tmp_path / 'runs'}, 2 measured "
                       "(2 again: their settings or their code changed)")  # fmt: skip


def test_a_name_of_eighty_characters_keeps_its_folder() -> None:
    """Up to 80 characters a folder is the name itself (earlier comparisons stay reused); one
    more and it is cut and ended by a hash."""
    assert compare.slug("m" * 80) == "m" * 80
    longer = compare.slug("m" * 81)
    assert len(longer) == 80 and longer.startswith("m" * 71 + "-")


def test_drift_windows_as_long_as_the_longest_model_window_are_taken() -> None:
    """Windows of exactly the longest compared window run; one token more is refused."""
    from longred_bench.models.loading import load_config

    config = load_config("tiny-random")  # 256 tokens; PI x2 holds 512
    compare.check_drift_window(_cfg(rope=("pi:factor=2",), drift_seq_len=512), config, "KEY")
    with pytest.raises(UserError, match="set KEY to at most 512"):
        compare.check_drift_window(_cfg(rope=("pi:factor=2",), drift_seq_len=513), config, "KEY")


def test_a_checkpoint_of_another_tokenizer_is_refused_before_any_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run_compare`` itself (a pair of a pairs file, a caller of the module) checks the
    tokenizers before it measures anything."""
    from test_compare import _save_tiny

    calls = _fake_units(monkeypatch)
    other = str(_save_tiny(tmp_path / "other", extra_token="<needle>"))
    with pytest.raises(UserError, match="tokenizer mismatch"):
        compare.run_compare(_cfg(extended=(other,), suites=("ruler",)), tmp_path / "cmp")
    assert calls == [] and not (tmp_path / "cmp" / "runs").exists()


def test_the_quiet_progress_line_counts_every_unit_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Under ``--quiet`` the progress line counts the units done, measured or reused, drift's
    too: all of them once the comparison ends, again when every unit is reused."""
    import contextlib

    _fake_units(monkeypatch)
    lines: list[Any] = []

    def heartbeat(line, *, enabled: bool):
        lines.append((line, enabled))
        return contextlib.nullcontext()

    monkeypatch.setattr(compare, "heartbeat", heartbeat)
    cfg = _cfg(suites=("ruler", "drift"), lengths=(1024,))
    for _ in range(2):
        compare.run_compare(cfg, tmp_path, progress=False)
        line, enabled = lines.pop()
        assert enabled and line() == "[compare] 3 of 3 unit(s) done; now checking saved units"


def test_the_progress_line_counts_the_drift_windows_saved(tmp_path: Path) -> None:
    """While drift is measured, the ``--quiet`` line says how many windows its saved file
    holds (those every text has)."""
    import json

    saved = tmp_path / "models-x.partial.json"
    saved.write_text(json.dumps({"config": {}, "texts": {"a": [[0, 0]] * 3, "b": [[0, 0]] * 2}}))
    state = compare._Progress(total=2)
    state.start("drift: pi:factor=4", partial=saved)
    assert state.line() == (
        "[compare] 0 of 2 unit(s) done; now drift: pi:factor=4, 2 window(s) measured"
    )


def test_saved_windows_of_another_call_are_kept_while_they_can_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Measuring drift keeps another interrupted call's saved windows where their models' files
    are unchanged (that call resumes from them), and deletes those that can no longer
    resume."""
    import json

    _fake_units(monkeypatch)
    root = tmp_path / "runs" / "drift"
    root.mkdir(parents=True)
    other = {"original": "tiny-random", "extended": [], "rope": ["pi:factor=8"],
             "texts": "random"}  # fmt: skip
    kept, stale = root / compare.partial_name(other), root / "models-0123.partial.json"
    for path in (kept, stale):
        path.write_text(json.dumps({"config": other, "texts": {}}))
    compare.run_compare(_cfg(suites=("drift",)), tmp_path, progress=False)
    assert kept.is_file() and not stale.exists()


def test_the_report_is_titled_by_the_original_and_has_a_row_per_decoding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report's title names the original as the reports name a model (a zoo name with
    the weights it stands for), its rows are every model once per decoding, and it quotes the
    command."""
    from longred_bench.reports import compare_report

    built: dict[str, Any] = {}

    def build(records, labels, out, *, title, command):
        built.update(records=records, labels=labels, out=out, title=title, command=command)
        return [out / "compare.md"]

    monkeypatch.setattr(compare, "run_compare", lambda cfg, out, **kwargs: [{"r": 1}])
    monkeypatch.setattr(compare_report, "build_compare_report", build)
    monkeypatch.setattr("longred_bench.data.sources.zoo_weights", lambda name: f"{name} weights")
    cfg = _cfg(decoding=("greedy", "pcd"))
    paths = compare.compare_command(cfg, tmp_path, command="CMD", progress=False)
    assert paths == [tmp_path / "compare.md"]
    assert built == {"records": [{"r": 1}], "out": tmp_path, "command": "CMD",
                     "labels": ["original", "original +pcd", "pi:factor=4", "pi:factor=4 +pcd"],
                     "title": "`tiny-random` (tiny-random weights) and its extensions"}  # fmt: skip


def test_two_models_of_one_folder_name_keep_apart_drift_units(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Checkpoints ``a/b`` and ``a_b`` (one folder name, ``a_b``) each keep their own drift
    unit, as their evaluations do: one folder held both, each measured over the other's."""
    _fake_units(monkeypatch)
    cfg = _cfg(extended=("a/b", "a_b"), rope=(), suites=("drift",))
    root = tmp_path / "drift"
    state = compare._Progress(total=2)
    records = compare._drift(cfg, _drift_units(cfg), root, False, state)
    assert [r["label"] for r in records] == ["a/b", "a_b"]
    folders = sorted(p.name for p in root.iterdir() if p.is_dir())
    assert len(folders) == 2 and all(name.startswith("a_b-") for name in folders)
    again = compare._drift(cfg, _drift_units(cfg), root, False, compare._Progress(total=2))
    assert again == records


def test_a_zoo_model_and_its_folder_in_the_cache_are_one_model(tmp_path, monkeypatch) -> None:
    """``--extended $(longred-bench models --path smollm2-135m)`` beside ``--original
    smollm2-135m`` measured the model against itself (cosine 1, KL 0); another folder, and a
    zoo model without a folder, are other models."""
    from longred_bench.jobs import limits

    mine, other = tmp_path / "smollm2", tmp_path / "other"
    mine.mkdir(), other.mkdir()
    folders = {"smollm2-135m": mine}

    def model_folder(name: str) -> Path:
        if name not in folders:
            raise UserError(f"{name} has no folder")
        return folders[name]

    monkeypatch.setattr(limits, "model_folder", model_folder)
    with pytest.raises(UserError, match=f"the original and {mine} are one model"):
        compare.check_listed_once("smollm2-135m", [str(mine)], [])
    with pytest.raises(UserError, match=f"{mine} and smollm2-135m are one model"):
        compare.check_listed_once("tiny-random", [str(mine), "smollm2-135m"], [])
    compare.check_listed_once("smollm2-135m", [str(other)], ["pi:factor=2"])
    compare.check_listed_once("tiny-random", [str(mine)], [])


def test_a_report_of_another_comparison_in_out_is_said_to_be_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """``compare`` into an ``--out`` holding another comparison's report replaced it (and its
    figures) without a word; the same comparison again (``--quiet``, another spelling of the
    folder) says nothing."""
    from longred_bench.reports import compare_report

    monkeypatch.setattr(compare, "run_compare", lambda *args, **kwargs: [])
    monkeypatch.setattr(compare_report, "build_compare_report", lambda *args, **kwargs: [])
    old = "longred-bench compare --original tiny-random --rope pi:factor=4 --out out"
    (tmp_path / "compare.md").write_text(f"# title\n\nCommand: `{old}`\n\nDevice: CPU.\n")
    for again in (f"{old} --quiet", old.replace("--out out", f"--out {tmp_path}")):
        compare.compare_command(_cfg(), tmp_path, command=again, progress=False)
        assert capsys.readouterr().out == ""
    new = old.replace("pi:factor=4", "yarn:factor=4")
    compare.compare_command(_cfg(), tmp_path, command=new, progress=False)
    assert capsys.readouterr().out == (
        f"[compare] {tmp_path / 'compare.md'} is the report of another comparison (`{old}`): "
        f"this one replaces it; that comparison's units stay under {tmp_path / 'runs'}, and its "
        "command writes its report again from them\n"
    )
