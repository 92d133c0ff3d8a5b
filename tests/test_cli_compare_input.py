"""Bad input to ``compare`` ends in one line before anything loads: its own flags, a pairs
file's settings, models, seed and device (at the dry run as at the run), and a flag given beside
``--pairs``."""

from __future__ import annotations

import pytest
from cli_helpers import one_line_error as _one_line_error

from longred_bench.cli import main


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--ruler-samples", "0"], "ruler_samples (--ruler-samples) must be a whole number"),
        (["--niah-samples", "0"], "niah_samples (--niah-samples) must be"),
        (["--short-limit", "0"], "short_limit (--short-limit) must be"),
        (["--niah-depths", "150"], "niah_depths (--niah-depths) must be percents from 0 to 100"),
        (
            ["--suites", "drift", "--decoding", "pcd", "--pcd-alpha", "2"],
            "compare: --decoding pcd decodes nothing in --suites drift",
        ),
    ],
)
def test_compare_names_its_own_flags(tmp_path, capsys, flags, message) -> None:
    argv = ["compare", "--original", "tiny-random", "--rope", "pi:factor=2", *flags]
    _one_line_error(capsys, [*argv, "--out", str(tmp_path / "o")], message)


def test_a_pairs_file_setting_of_the_wrong_type_is_refused_at_the_dry_run(tmp_path, capsys):
    pairs = tmp_path / "p.yaml"
    pairs.write_text("settings: {ruler_samples: many, lengths: [256]}\npairs:\n"
                     "  - {original: tiny-random, window: 256, extended: "
                     "[{model: tiny-random, window: 256}]}\n")  # fmt: skip
    argv = ["compare", "--pairs", str(pairs), "--dry-run"]
    _one_line_error(capsys, argv, "ruler_samples (--ruler-samples) must be a whole number of at "
                    "least 1, not 'many'")  # fmt: skip


PAIR = "  - {original: ORIG, window: 256, extended: [{model: tiny-random, window: 256}]}\n"


@pytest.mark.parametrize(
    ("settings", "original", "message"),
    [
        ("{device: gpu}", "tiny-random", "settings.device 'gpu' is not a device torch knows"),
        ("{seed: -1}", "tiny-random", "settings.seed must be a whole number from 0 to 4294967295"),
        (
            "{suites: [drift], decoding: [pcd]}",
            "tiny-random",
            "settings.decoding pcd decodes nothing in suites [drift]",
        ),
        ("{seed: 4294967296}", "tiny-random", "settings.seed must be a whole number from 0"),
        (
            "{short_tasks: [niah_single_2]}",
            "tiny-random",
            "settings.short_tasks niah_single_2 is lm-eval's RULER task, built at lengths",
        ),
        (
            "{short_tasks: [longred_ruler_cwe]}",
            "tiny-random",
            "settings.short_tasks longred_ruler_cwe is a long-context task",
        ),
        ("{}", "[tiny-random]", "pairs[0].original must be one model (a name or a path)"),
        ("{}", "./no-such-model", "model './no-such-model': no such folder"),
    ],
)
def test_a_pairs_file_is_checked_at_the_dry_run_as_its_flags_are(
    tmp_path, capsys, settings, original, message
) -> None:
    """A pairs file's device, seed and models were planned at the dry run, then a torch, numpy or
    loader error ended the run; each is one line before anything loads, the plan included."""
    pairs = tmp_path / "p.yaml"
    pairs.write_text(f"settings: {settings}\npairs:\n" + PAIR.replace("ORIG", original))
    _one_line_error(capsys, ["compare", "--pairs", str(pairs), "--dry-run"], message)
    _one_line_error(capsys, ["compare", "--pairs", str(pairs), "--out", str(tmp_path / "o")],
                    message)  # fmt: skip
    assert not (tmp_path / "o").exists()


def test_a_pairs_file_hub_model_is_asked_for_when_its_pair_runs(tmp_path, capsys) -> None:
    """Only local paths are checked before the pairs run: a hub id (offline, or a name the hub
    lacks) stops its own pair when it loads, keeping the others, as docs/compare.md says."""
    pairs = tmp_path / "p.yaml"
    pairs.write_text("settings: {suites: [drift]}\npairs:\n" +
                     PAIR.replace("ORIG", "some-org/not-a-model"))  # fmt: skip
    assert main(["compare", "--pairs", str(pairs), "--dry-run"]) == 0
    capsys.readouterr()
    _one_line_error(capsys, ["compare", "--pairs", str(pairs)], "compare --pairs needs --out DIR")


def test_a_pairs_file_device_this_machine_lacks_is_planned_and_refused_at_the_run(
    tmp_path, capsys
) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    pairs = tmp_path / "p.yaml"
    pairs.write_text("settings: {device: cuda, suites: [drift]}\npairs:\n" +
                     PAIR.replace("ORIG", "tiny-random"))  # fmt: skip
    assert main(["compare", "--pairs", str(pairs), "--dry-run"]) == 0  # a plan for a GPU machine
    capsys.readouterr()
    _one_line_error(capsys, ["compare", "--pairs", str(pairs), "--out", str(tmp_path / "o")],
                    "settings.device cuda: torch")  # fmt: skip


def test_compare_dry_run_without_a_pairs_file_says_so(tmp_path, capsys) -> None:
    argv = ["compare", "--original", "tiny-random", "--rope", "pi:factor=2", "--dry-run"]
    _one_line_error(capsys, argv, "compare --dry-run estimates a pairs file's runs: give --pairs")
    _one_line_error(capsys, ["compare", "--rope", "pi:factor=2", "--out", str(tmp_path / "o")],
                    "compare needs --original and --out")  # fmt: skip


@pytest.mark.parametrize("flags", [["--lengths", "512"], ["--decoding", "pcd"], ["--seed", "3"]])
def test_compare_pairs_refuses_a_setting_it_would_drop(capsys, flags) -> None:
    """The file's settings are the run's: a compare flag beside --pairs was dropped silently."""
    argv = ["compare", "--pairs", "compare", "--dry-run", *flags]
    _one_line_error(capsys, argv, f"--pairs takes its settings from the file's `settings:`: "
                    f"drop {flags[0]}")  # fmt: skip
