"""``compare --pairs`` (:mod:`longred_bench.jobs.pairs`): what a pairs file may say and the
one-line refusal of what it may not (the models' own keys in ``settings``, a window that is no
positive whole number, an empty model name, a pair or model with a key too many, a pair listed
twice); which lengths a pair is scored at; what the dry run counts and prints; and what a run
writes: one ``compare`` per pair in the pair's folder, with the file's keys in its messages, and
the index ``pairs.md`` linking them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from longred_bench.errors import UserError
from longred_bench.jobs import compare, pairs
from longred_bench.jobs.pairs import Pair, load_pairs, pair_config, pairs_plan

ONE = {"original": "m", "window": 4096, "extended": [{"model": "a", "window": 8192}]}


def _write(path: Path, data: dict) -> str:
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _refused(tmp_path: Path, data: dict, message: str) -> str:
    """The one-line refusal of pairs file ``data``, which names the file and holds ``message``."""
    spec = _write(tmp_path / "p.yaml", data)
    with pytest.raises(UserError) as exc:
        load_pairs(spec)
    text = str(exc.value)
    assert message in text and text.startswith(f"pairs {spec}") and "\n" not in text, text
    return text


@pytest.mark.parametrize("key", ["original", "extended", "rope"])
def test_settings_may_not_name_the_models(tmp_path: Path, key: str) -> None:
    """The models come from ``pairs``: ``settings.rope`` would add zero-shot extensions to every
    pair, ``settings.extended`` models to none; each is refused as no compare setting."""
    _refused(tmp_path, {"settings": {key: ["x"]}, "pairs": [ONE]},
             f"settings.{key} is not a compare setting")  # fmt: skip


def test_an_unknown_key_named_is_the_first_in_order(tmp_path: Path) -> None:
    """Of several unknown keys (top level, or settings) the first alphabetically is named."""
    _refused(tmp_path, {"zz": 1, "aa": 2, "pairs": [ONE]}, "unknown key aa (keys:")
    _refused(tmp_path, {"settings": {"zeta": 1, "alpha": 2}, "pairs": [ONE]},
             "settings.alpha is not a compare setting")  # fmt: skip


@pytest.mark.parametrize("window", [0, -4096, True, 4096.0, "4096"])
def test_a_window_is_a_positive_whole_number(tmp_path: Path, window: object) -> None:
    """The original's and each extended model's window: 0, negative, ``true`` (read as 1), a
    float or a string are refused, naming the key."""
    bad = {**ONE, "window": window}
    _refused(tmp_path, {"pairs": [bad]}, "pairs[0].window must be a positive whole number")
    bad = {**ONE, "extended": [{"model": "a", "window": window}]}
    _refused(tmp_path, {"pairs": [bad]},
             "pairs[0].extended[0] must be a positive whole number")  # fmt: skip


@pytest.mark.parametrize("model", ["", "  ", ["a"], {"a": 1}, 7])
def test_an_extended_model_is_one_name(tmp_path: Path, model: object) -> None:
    """An empty or blank name, a list, a mapping or a number as an extended model is refused
    (the original's is the CLI tests')."""
    bad = {**ONE, "extended": [{"model": model, "window": 8192}]}
    _refused(tmp_path, {"pairs": [bad]}, "pairs[0].extended[0].model must be one model")
    if isinstance(model, str):
        _refused(tmp_path, {"pairs": [{**ONE, "original": model}]},
                 "pairs[0].original must be one model")  # fmt: skip


def test_a_pair_or_model_with_a_key_too_many_is_refused(tmp_path: Path) -> None:
    """A misspelt or extra key in a pair or an extended model (``note:``) was not read."""
    _refused(tmp_path, {"pairs": [{**ONE, "note": "x"}]},
             "pairs[0] needs exactly original, window and extended")  # fmt: skip
    extra = {**ONE, "extended": [{"model": "a", "window": 8192, "note": "x"}]}
    _refused(tmp_path, {"pairs": [extra]}, "pairs[0].extended[0] needs exactly model and window")


def test_a_pair_without_extended_models_is_refused(tmp_path: Path) -> None:
    for empty in ([], None):
        _refused(tmp_path, {"pairs": [{**ONE, "extended": empty}]},
                 "pairs[0].extended lists no model")  # fmt: skip


def test_one_pair_listed_twice_word_for_word_is_refused(tmp_path: Path) -> None:
    """The same pair twice (identical in every key) would run twice into one folder."""
    _refused(tmp_path, {"pairs": [ONE, dict(ONE)]},
             "original m is listed twice; list its extensions once")  # fmt: skip


def test_a_folder_given_as_the_pairs_file_is_refused(tmp_path: Path) -> None:
    """A directory (say the folder holding the file) is no pairs file: one line, no
    traceback."""
    with pytest.raises(UserError, match="is neither a built-in pairs file"):
        load_pairs(str(tmp_path))


def test_the_builtin_name_reads_the_packaged_file(tmp_path: Path) -> None:
    """``compare`` is the packaged file, named by its path (the dry run's header, the index's
    title and the messages name it), even where a file ``compare`` lies in the working
    folder."""
    settings, found, source = load_pairs("compare")
    assert Path(source).is_file() and Path(source).name == "compare.yaml"
    assert found[0].original == "meta-llama/Llama-2-7b-hf" and settings["device"] == "cuda"
    spec = _write(tmp_path / "mine.yaml", {"pairs": [ONE]})
    assert load_pairs(spec)[2] == spec


def test_a_stated_window_unlike_the_config_is_said_for_the_original_and_from_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The original's stated window is checked as each extended model's is, and a folder named
    from the home folder (``~/ck``) is read there; a config whose window is no whole number is
    left to the model's own check, without a word here."""
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "ck").mkdir()
    config = tmp_path / "ck" / "config.json"
    config.write_text('{"max_position_embeddings": 512}')
    pairs.check_windows([Pair("~/ck", 4096, (("b", 8192),))], "p.yaml")
    assert capsys.readouterr().err == (
        "warning: pairs p.yaml: pairs[0].window is 4096, but ~/ck's config says 512; the "
        "stated 4096 is used (set pairs[0].window: 512 if that is a typo)\n"
    )
    config.write_text('{"max_position_embeddings": "512"}')
    pairs.check_windows([Pair("~/ck", 4096, (("~/ck", 8192),))], "p.yaml")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("key", ["lengths", "niah_depths"])
@pytest.mark.parametrize("value", [["50"], [True, 100], [1.5]])
def test_lengths_and_depths_must_be_whole_numbers(tmp_path: Path, key: str, value: list) -> None:
    """``niah_depths: [true, 100]`` was read as depths 1 and 100; a string or a fraction among
    the lengths or depths is refused naming the key, before any pair is read."""
    _refused(tmp_path, {"settings": {key: value}, "pairs": [ONE]},
             f"settings.{key} must list whole numbers")  # fmt: skip


def test_lengths_stop_at_the_extended_window_even_below_the_originals() -> None:
    """A pair's lengths end at its extended models' largest window, whatever the original's."""
    pair = Pair("m", 16384, (("a", 4096),))
    cfg = pair_config({"lengths": [2048, 4096, 8192, 16384], "suites": ["ruler"]}, pair)
    assert cfg.lengths == (2048, 4096)


def _plan(tmp_path: Path, settings: dict, extended: list[dict] | None = None) -> str:
    one = {"original": "tiny-random", "window": 4096,
           "extended": extended or [{"model": "a", "window": 8192}]}  # fmt: skip
    return pairs_plan(_write(tmp_path / "p.yaml", {"settings": settings, "pairs": [one]}))


def test_the_plan_counts_one_unit_per_decoding_and_per_suite(tmp_path: Path) -> None:
    """Each model's suite is one unit per decoding (a PCD row is measured apart); drift one per
    extended model, whatever the decodings."""
    pcd = {"suites": ["short", "drift"], "decoding": ["greedy", "pcd"]}
    assert "In all: 1 pairs, 5 units." in _plan(tmp_path, pcd)  # 2 models x 2 + 1 drift
    assert "In all: 1 pairs, 3 units." in _plan(tmp_path, {"suites": ["short", "drift"]})


def test_the_plan_names_an_extensions_factor_as_it_is(tmp_path: Path) -> None:
    """A window 1.5 times the original's is ``1.5x``, not rounded to a whole factor."""
    out = _plan(tmp_path, {"suites": ["drift"]}, [{"model": "a", "window": 6144}])
    assert "  a (window 6144, 1.5x)" in out.splitlines()


def test_a_niah_plan_names_its_lengths_but_no_ruler_samples(tmp_path: Path) -> None:
    out = _plan(tmp_path, {"suites": ["niah"], "lengths": [1024, 2048]})
    assert "  suites niah; lengths 1024, 2048; device cpu" in out.splitlines()
    assert "RULER" not in out
    out = _plan(tmp_path, {"suites": ["ruler"], "lengths": [1024], "ruler_samples": 7})
    assert "  suites ruler; lengths 1024; 7 RULER samples per task and length; device cpu" in (
        out.splitlines()
    )


def _run_pairs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spec: str
) -> tuple[list[tuple], list[Path]]:
    """``compare_pairs`` of ``spec`` with each pair's comparison recorded, not run, and its
    tokenizers not compared: (the calls, the paths written)."""
    calls: list[tuple] = []

    def fake(cfg, out, **kwargs):
        calls.append((cfg, out, kwargs))
        return [out / "compare.md"]

    monkeypatch.setattr(compare, "compare_command", fake)
    monkeypatch.setattr(pairs, "_check_tokenizers", lambda configs: None)
    (tmp_path / "out").mkdir()  # as the command line makes it
    written = pairs.compare_pairs(spec, tmp_path / "out", command="CMD", progress=False)
    return calls, written


def test_each_pair_runs_in_its_folder_and_the_index_links_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each pair is compared into ``<out>/<its slug>/`` (a path-safe name), its short tasks and
    drift windows named by the file's keys; ``pairs.md`` gives each pair's original, window and
    extended models with a link to its report, under a title that says the file is the user's."""
    data = {"settings": {"suites": ["drift"]},
            "pairs": [{"original": "org/model-a", "window": 256,
                       "extended": [{"model": "x", "window": 1024}, {"model": "y", "window": 512}]},
                      {"original": "b", "window": 512,
                       "extended": [{"model": "z", "window": 2048}]}]}  # fmt: skip
    spec = _write(tmp_path / "mine.yaml", data)
    calls, written = _run_pairs(tmp_path, monkeypatch, spec)
    out = tmp_path / "out"
    assert [(cfg.original, cfg.extended, where) for cfg, where, _ in calls] == [
        ("org/model-a", ("x", "y"), out / "org_model-a"), ("b", ("z",), out / "b")]  # fmt: skip
    assert calls[0][2] == {"command": "CMD", "progress": False,
                           "tasks_key": f"settings.short_tasks in {spec}",
                           "seq_len_key": f"settings.drift_seq_len in {spec}"}  # fmt: skip
    assert written == [out / "org_model-a" / "compare.md", out / "b" / "compare.md",
                       out / "pairs.md"]  # fmt: skip
    assert (out / "pairs.md").read_text().splitlines() == [
        "# Extended models against their originals (mine.yaml)", "", "Command: `CMD`.", "",
        "| original | window | extended (window) | report |", "|---|---:|---|---|",
        "| `org/model-a` | 256 | `x` (1024), `y` (512) | "
        "[org_model-a/compare.md](org_model-a/compare.md) |",
        "| `b` | 512 | `z` (2048) | [b/compare.md](b/compare.md) |"]  # fmt: skip


def test_the_builtin_pairs_index_is_titled_as_published_releases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls, _ = _run_pairs(tmp_path, monkeypatch, "compare")
    head = (tmp_path / "out" / "pairs.md").read_text().splitlines()[0]
    assert head == "# Published extensions against their originals (compare.yaml)"
    assert calls[0][2]["seq_len_key"].endswith("compare.yaml")


def test_a_pair_whose_model_does_not_load_stops_only_when_its_turn_comes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tokenizer check before the pairs run leaves a model it cannot load (here: missing
    folders) to its own pair: the pairs before it run first."""
    ran: list[str] = []

    def fake(cfg, out, **kwargs):
        ran.append(cfg.original)
        if cfg.original == "b":
            raise UserError("b does not load")
        return []

    monkeypatch.setattr(compare, "compare_command", fake)
    gone, none = str(tmp_path / "gone"), str(tmp_path / "none")
    data = {"settings": {"suites": ["drift"]},
            "pairs": [{"original": "tiny-random", "window": 256,
                       "extended": [{"model": gone, "window": 1024}]},
                      {"original": "b", "window": 256,
                       "extended": [{"model": none, "window": 1024}]}]}  # fmt: skip
    with pytest.raises(UserError, match="b does not load"):
        pairs.compare_pairs(_write(tmp_path / "p.yaml", data), tmp_path / "out", command="c")
    assert ran == ["tiny-random", "b"]


def test_the_check_before_the_pairs_run_notes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A checkpoint that encodes texts otherwise than its original is noted when its pair runs,
    not also by the check of every pair before the first runs."""
    from test_same_tokens import _with_bos

    bos = str(_with_bos(tmp_path / "bos"))
    data = {"settings": {"suites": ["drift"]},
            "pairs": [{"original": "tiny-random", "window": 256,
                       "extended": [{"model": bos, "window": 256}]}]}  # fmt: skip
    monkeypatch.setattr(compare, "compare_command", lambda cfg, out, **kwargs: [])
    (tmp_path / "out").mkdir()
    capsys.readouterr()
    pairs.compare_pairs(_write(tmp_path / "p.yaml", data), tmp_path / "out", command="c")
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("key", ["lengths", "suites", "decoding", "niah_depths", "short_tasks"])
def test_a_list_setting_left_empty_is_refused_in_one_line(tmp_path: Path, key: str) -> None:
    """``lengths:`` with no value (YAML's ``null``) was a TypeError traceback at the dry run (a
    ``null`` short task list one on a GPU's estimate); refused as any other non-list."""
    text = _refused(tmp_path, {"settings": {key: None}, "pairs": [ONE]},
                    f"settings.{key} must be a list, e.g. [")  # fmt: skip
    assert text.endswith("; got None")


def test_a_list_setting_given_as_true_shows_the_default_list_as_its_example(tmp_path: Path) -> None:
    """``niah_depths: true`` is not a number in a list: the example is the default list, not
    ``[True]``; a bare number's example is that number in a list."""
    expected = "settings.niah_depths must be a list, e.g. [0, 25, 50, 75, 100]; got True"
    text = _refused(tmp_path, {"settings": {"niah_depths": True}, "pairs": [ONE]}, expected)
    assert "[True]" not in text
    _refused(tmp_path, {"settings": {"niah_depths": 50}, "pairs": [ONE]},
             "settings.niah_depths must be a list, e.g. [50]; got 50")  # fmt: skip
