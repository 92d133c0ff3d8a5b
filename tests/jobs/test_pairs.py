"""``compare --pairs``: the pairs file is checked in one line per mistake, each pair's lengths stop
at its extended models' largest window, the dry-run plans the built-in published pairs offline,
and a pairs file of local folders runs end to end into one report per pair and an index."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from data_helpers import ensure_cached

from longred_bench import cli
from longred_bench.errors import UserError
from longred_bench.jobs.pairs import Pair, load_pairs, pair_config


def _write(path: Path, data: dict) -> str:
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_the_builtin_pairs_plan_offline(capsys) -> None:
    assert cli.main(["compare", "--pairs", "compare", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "meta-llama/Llama-2-7b-hf (window 4096)" in out
    assert "NousResearch/Yarn-Llama-2-7b-128k (window 131072, 32x)" in out
    assert "gradientai/Llama-3-8B-Instruct-Gradient-1048k (window 1048576, 128x)" in out
    # 3 models x 2 suites + one drift unit per extended model (it counted one), twice
    assert "In all: 2 pairs, 16 units." in out
    assert cli.main(["compare", "--pairs", "compare", "--original", "m", "--dry-run"]) == 2
    assert "--pairs takes its models from the file" in capsys.readouterr().err


def test_a_pairs_lengths_stop_at_its_largest_extended_window() -> None:
    pair = Pair("m", 4096, (("a", 16384), ("b", 8192)))
    cfg = pair_config({"lengths": [4096, 8192, 16384, 32768], "suites": ["ruler"]}, pair)
    assert cfg.lengths == (4096, 8192, 16384) and cfg.extended == ("a", "b")
    with pytest.raises(UserError, match=r"no length of settings\.lengths"):
        pair_config({"lengths": [32768]}, pair)
    # Suites that read no length (drift, short): the lengths do not refuse the pair.
    cfg = pair_config({"lengths": [32768], "suites": ["drift", "short"]}, pair)
    assert cfg.suites == ("drift", "short")
    with pytest.raises(UserError, match=r"no length of settings\.lengths"):
        pair_config({"lengths": [32768], "suites": ["drift", "niah"]}, pair)


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"pairs": []}, "lists no pair"),
        ({"pairs": [{"original": "m", "extended": [{"model": "a", "window": 8}]}]},
         "needs exactly original, window and extended"),
        ({"pairs": [{"original": "m", "window": 4, "extended": [{"model": "a"}]}]},
         r"extended\[0\] needs exactly model and window"),
        ({"pairs": [{"original": "m", "window": "4K", "extended": [{"model": "a", "window": 8}]}]},
         "window must be a positive whole number"),
        ({"settings": {"original": "x"}, "pairs": []},
         r"settings\.original is not a compare setting"),
        ({"pairz": []}, "unknown key pairz"),
        # each a traceback, or a string read letter by letter (suites d, r, i, f, t)
        ({"settings": 5, "pairs": []}, "settings must be a mapping"),
        ({"settings": {"lengths": 512}, "pairs": []},
         r"settings\.lengths must be a list, e\.g\. \[512\]; got 512"),
        # a word was offered back as a list of itself: "e.g. [abc]"
        ({"settings": {"lengths": "abc"}, "pairs": []},
         r"settings\.lengths must be a list, e\.g\. \[\d+(, \d+)*\]; got 'abc'"),
        ({"settings": {"lengths": ["abc"]}, "pairs": []},
         r"settings\.lengths must list whole numbers"),
        ({"settings": {"suites": "drift"}, "pairs": []}, r"settings\.suites must be a list"),
        ({"pairs": 5}, "pairs must be a list of pairs"),
        ({"pairs": [{"original": "m", "window": 4, "extended": 5}]},
         r"pairs\[0\]\.extended must be a list"),
        # two originals of one folder name were "an original listed twice"
        ({"pairs": [{"original": "a/b", "window": 4, "extended": [{"model": "x", "window": 8}]},
                    {"original": "a_b", "window": 4, "extended": [{"model": "y", "window": 8}]}]},
         "originals a/b and a_b would share the folder a_b: name one otherwise"),
        ({"pairs": [{"original": "m", "window": 4, "extended": [{"model": "x", "window": 8}]},
                    {"original": "m", "window": 4, "extended": [{"model": "y", "window": 8}]}]},
         "original m is listed twice; list its extensions once"),
    ],
)  # fmt: skip
def test_a_bad_pairs_file_is_one_line_naming_the_key(tmp_path, data, message) -> None:
    with pytest.raises(UserError, match=message) as exc:
        load_pairs(_write(tmp_path / "p.yaml", data))
    assert "\n" not in str(exc.value) and "p.yaml" in str(exc.value)
    with pytest.raises(UserError, match="neither a built-in pairs file"):
        load_pairs(str(tmp_path / "none.yaml"))


@pytest.mark.integration
def test_pairs_of_local_folders_run_end_to_end(tmp_path, request) -> None:
    from longred_bench.models.loading import load

    ensure_cached(request, "brown", "austen", "sotu")
    folders = []
    for name in ("long-a", "long-b"):
        loaded = load("tiny-random")
        loaded.model.save_pretrained(tmp_path / name)
        loaded.tokenizer.save_pretrained(tmp_path / name)
        folders.append(str(tmp_path / name))
    settings = {"suites": ["short", "drift"], "short_suite": "short_tiny",
                "short_tasks": ["longred_tiny_nextsent"], "short_limit": 3, "lengths": [1024],
                "drift_num_texts": 2, "drift_seq_len": 64}  # fmt: skip
    pairs = [{"original": "tiny-random", "window": 256,
              "extended": [{"model": folders[0], "window": 1024}]},
             {"original": folders[1], "window": 256,
              "extended": [{"model": folders[0], "window": 1024}]}]  # fmt: skip
    spec = _write(tmp_path / "mine.yaml", {"settings": settings, "pairs": pairs})
    out = tmp_path / "out"
    assert cli.main(["compare", "--pairs", spec, "--out", str(out), "--quiet"]) == 0
    index = (out / "pairs.md").read_text()
    assert index.startswith("# Extended models against their originals (mine.yaml)")  # not
    first, second = "tiny-random", Pair(folders[1], 256, ()).slug  # "published": a user's own
    for slug in (first, second):
        md = (out / slug / "compare.md").read_text()
        assert "| original |" in md and f"[{slug}/compare.md]({slug}/compare.md)" in index
    assert (out / first / "runs" / "original" / "short_tiny" / "eval.jsonl").is_file()


def test_a_pairs_file_giving_a_key_twice_or_not_utf8_is_refused(tmp_path) -> None:
    """A duplicate key kept its last value without a word; binary bytes were a traceback."""
    from longred_bench.errors import UserError
    from longred_bench.jobs.pairs import load_pairs

    twice = tmp_path / "twice.yaml"
    twice.write_text("settings: {}\nsettings: {}\npairs: []\n")
    with pytest.raises(UserError, match=r"not valid YAML \(key 'settings' is given twice\)"):
        load_pairs(str(twice))
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(UserError, match="not UTF-8 text"):
        load_pairs(str(binary))


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"suites": ["nia"]}, r"unknown suite\(s\) nia"),
        ({"pcd": {"alpah": 2}, "decoding": ["greedy", "pcd"]}, "alpah"),
    ],
)
def test_settings_compare_refuses_are_named_with_the_file(tmp_path, settings, message) -> None:
    """What compare itself refuses in a pairs file's settings: the line named neither the file
    nor the key."""
    from longred_bench.cli.named import check_pairs_file

    one = {"original": "tiny-random", "window": 256,
           "extended": [{"model": "tiny-random", "window": 1024}]}  # fmt: skip
    path = _write(tmp_path / "p.yaml", {"settings": settings, "pairs": [one]})
    with pytest.raises(UserError, match=message) as exc:
        check_pairs_file(path, here=False)
    assert str(exc.value).startswith(f"pairs {path}: ")


def test_a_stated_window_unlike_the_local_config_is_said(tmp_path, capsys) -> None:
    """``{model: run/final, window: 4096}`` for a 512-token checkpoint was taken without a word
    (the stated windows decide the lengths each model is scored at): it is said, in one line
    naming the key and the config's value; the stated window is still the one used."""
    import json

    from longred_bench.cli.named import check_pairs_file

    folder = tmp_path / "final"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "llama",
                                                    "max_position_embeddings": 512}))  # fmt: skip
    for window, said in ((4096, True), (512, False)):
        one = {"original": "tiny-random", "window": 256,
               "extended": [{"model": str(folder), "window": window}]}  # fmt: skip
        path = _write(tmp_path / "p.yaml", {"settings": {}, "pairs": [one]})
        check_pairs_file(path, here=False)
        err = capsys.readouterr().err
        assert (
            (
                err == f"warning: pairs {path}: pairs[0].extended[0].window is 4096, but "
                f"{folder}'s config says 512; the stated 4096 is used (set "
                "pairs[0].extended[0].window: 512 if that is a typo)\n"
            )
            if said
            else err == ""
        )


def test_a_short_suite_no_window_holds_names_the_pairs_key(tmp_path, monkeypatch, capsys) -> None:
    """Inside ``--pairs``, a short suite the original's window cannot hold said to leave tasks
    out with ``--short-tasks``, a flag ``--pairs`` refuses; it names the file's key."""
    from longred_bench.evaluation.harness import WindowTooSmall
    from longred_bench.jobs import compare

    def too_small(unit, progress, **kwargs):
        raise WindowTooSmall("no document of longred_tiny_passkey fits 256 tokens",
                             tasks=["longred_tiny_passkey"], window=256, needed=600)  # fmt: skip

    monkeypatch.setattr(compare, "run_eval_unit", too_small)
    from longred_bench.models.zoo import tiny_random

    model, tokenizer = tiny_random()  # a checkpoint other than the original (not measured)
    model.save_pretrained(tmp_path / "ck")
    tokenizer.save_pretrained(tmp_path / "ck")
    settings = {"suites": ["short"], "short_suite": "short_tiny"}
    pairs = [{"original": "tiny-random", "window": 256,
              "extended": [{"model": str(tmp_path / "ck"), "window": 256}]}]  # fmt: skip
    spec = _write(tmp_path / "mine.yaml", {"settings": settings, "pairs": pairs})
    assert cli.main(["compare", "--pairs", spec, "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"leave longred_tiny_passkey out with settings.short_tasks in {spec}" in err
    assert "--short-tasks" not in err


def test_an_empty_lengths_list_is_one_line(tmp_path, capsys) -> None:
    """``settings.lengths: []`` with no suite that reads lengths was a ValueError traceback."""
    pairs = [{"original": "tiny-random", "window": 256,
              "extended": [{"model": "tiny-random", "window": 256}]}]  # fmt: skip
    spec = _write(tmp_path / "p.yaml", {"settings": {"suites": ["drift"], "lengths": []},
                                        "pairs": pairs})  # fmt: skip
    assert cli.main(["compare", "--pairs", spec, "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: pair tiny-random: no length of settings.lengths []")
    assert len(err.splitlines()) == 1


def test_a_drift_only_pairs_plan_names_no_lengths_or_ruler_samples(tmp_path, capsys) -> None:
    """``--dry-run`` printed the lengths and RULER's samples per length for suites that read
    neither (a drift-only file, say)."""
    extended = [{"model": "a", "window": 512}, {"model": "b", "window": 512}]
    pairs = [{"original": "tiny-random", "window": 256, "extended": extended}]
    spec = _write(tmp_path / "p.yaml", {"settings": {"suites": ["drift"]}, "pairs": pairs})
    assert cli.main(["compare", "--pairs", spec, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "  suites drift; device cpu" in out.splitlines()
    assert "RULER" not in out and "lengths" not in out
    assert "In all: 1 pairs, 2 units." in out
