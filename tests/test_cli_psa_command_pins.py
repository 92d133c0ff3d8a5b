"""What ``longred-bench psa`` hands its measurement once its checks pass, pinned with the
measurement itself stood in for: a local model by its absolute path, ``--top-k`` and the command
line as typed; results of the same config on another device, or of greedy decoding alone, taken
as this config's; ``--rope none`` under PCD checked as the model's own RoPE. Beside another
config's records, a bad value or a ``--corpus`` typo is named for itself."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from cli_helpers import one_line_error

from longred_bench.cli import main

ARGV = ["psa", "--model", "tiny-random", "--tasks", "niah_single_1", "--lengths", "512",
        "--samples", "1", "--quiet"]  # fmt: skip


@pytest.fixture
def measured(monkeypatch: pytest.MonkeyPatch) -> list[dict]:
    """The calls psa's measurement gets (it measures nothing, writes nothing)."""
    from longred_bench.jobs import psa

    calls: list[dict] = []

    def record(cfg, out, **kwargs):
        calls.append({"cfg": cfg, "out": out, **kwargs})
        return []

    monkeypatch.setattr(psa, "psa_command", record)
    return calls


def _kept_results(out: Path, config: dict) -> None:
    """``out`` holding psa's records of ``config`` and both of their report files."""
    out.mkdir()
    record = {"provenance": {"config": config}}
    (out / "psa.jsonl").write_text(json.dumps(record) + "\n")
    (out / "psa.md").write_text("kept\n")
    (out / "psa.png").write_bytes(b"\x89PNG")


def test_psa_measures_a_local_model_by_its_path_with_its_top_k_and_command(
    monkeypatch, measured, saved_tiny
) -> None:
    """A model folder named relative to the working folder is measured by its absolute path;
    ``--top-k`` and the command line reach the measurement."""
    monkeypatch.chdir(saved_tiny.parent)
    argv = ["psa", "--model", saved_tiny.name, *ARGV[3:], "--top-k", "3", "--out", "o"]
    assert main(argv) == 0
    (call,) = measured
    assert call["cfg"].models == (str(saved_tiny.resolve()),)
    assert call["top_k"] == 3
    assert call["command"] == "longred-bench " + shlex.join(argv)


def test_results_of_this_config_on_another_device_are_this_configs(
    tmp_path, measured, monkeypatch, capsys
) -> None:
    """Records of the same psa on another device (no PCD, greedy decoding) are this config's:
    not refused as another config, nothing measured again, the report written from them."""
    from longred_bench.reports import psa_report

    written = []

    def from_records(out: Path, top_k: int, command: str | None) -> list[Path]:
        written.append(out)
        return [out / "psa.md"]

    monkeypatch.setattr(psa_report, "write_psa_report_from_records", from_records)
    out = tmp_path / "o"
    _kept_results(out, {"models": ["tiny-random"], "tasks": ["niah_single_1"], "device": "cuda",
                        "decoding": ["greedy"], "pcd": None})  # fmt: skip
    assert main([*ARGV, "--out", str(out)]) == 0
    assert measured == [] and written == [out]
    assert "holds this psa, measured: nothing to measure" in capsys.readouterr().out


def test_rope_none_under_pcd_is_the_models_own_rope(tmp_path, measured) -> None:
    """``--rope none`` beside an extension, decoded with PCD, is checked as the model as it is
    and measured."""
    argv = [*ARGV, "--rope", "none", "pi:factor=2", "--decoding", "pcd", "--pcd-first-pair", "2",
            "--out", str(tmp_path / "o")]  # fmt: skip
    assert main(argv) == 0
    (call,) = measured
    assert call["cfg"].ropes == ("none", "pi:factor=2") and call["decodings"] == ("pcd",)


def test_a_bad_value_is_named_before_another_configs_results_are(tmp_path, capsys) -> None:
    """``--samples 0`` beside another psa's records is refused for itself, not as another
    config, and nothing is measured."""
    out = tmp_path / "o"
    _kept_results(out, {"models": ["tiny-random"], "tasks": ["niah_single_2"]})
    argv = [*ARGV, "--out", str(out)]
    argv[argv.index("--samples") + 1] = "0"
    one_line_error(capsys, argv, "psa: lengths and --samples must be >= 1 (got [512], 0)")


def test_a_corpus_typo_beside_another_configs_results_is_named_as_a_typo(tmp_path, capsys) -> None:
    """A ``--corpus`` that names nothing, into a folder of another psa's records, is refused as
    the typo it is, not as another config whose results are to be deleted."""
    out = tmp_path / "o"
    _kept_results(out, {"models": ["tiny-random"], "corpus": "brown"})
    argv = [*ARGV, "--corpus", "austn", "--out", str(out)]
    one_line_error(capsys, argv, "--corpus 'austn' is neither a corpus (")
