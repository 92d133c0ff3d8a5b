"""A command's folder holding results of another config of it (an interrupted drift's windows,
finished eval, drift or PSA results, files it cannot read) is refused before anything loads, not
replaced; the same config resumes or runs again there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from data_helpers import ensure_cached

from longred_bench.cli import main
from longred_bench.cli.outputs import check_out_dir
from longred_bench.errors import UserError


def _refused_as_another_psa(capsys, out: Path, kept: bytes) -> None:
    err = capsys.readouterr().err.strip()
    assert err == (f"error: --out {out} holds the results of a psa of another config (differs "
                   "in ropes, tasks): give another --out, or delete psa.jsonl there to give "
                   "them up")  # fmt: skip
    assert (out / "psa.jsonl").read_bytes() == kept


def test_drift_keeps_another_configs_saved_windows_and_results(tmp_path):
    """An interrupted drift's windows, or a finished drift's results, of another config are
    refused, not discarded; the same config resumes; an empty partial holds nothing to keep."""
    import yaml

    from longred_bench.cli.outputs import check_drift_out
    from longred_bench.jobs.configs import DriftConfig
    from longred_bench.jobs.drift import PARTIAL

    def check_out_config(out, cfg):
        check_drift_out(out, cfg.to_dict())

    mine = DriftConfig(original="tiny-random", rope=("pi:factor=2",), seq_len=64, num_texts=2)
    other = DriftConfig(original="tiny-random", rope=("pi:factor=4",), seq_len=64, num_texts=2)
    saved = {"config": other.to_dict(), "texts": {"pi:factor=4": [[0.0]] * 3}}
    (tmp_path / PARTIAL).write_text(json.dumps(saved))
    with pytest.raises(UserError, match=r"saved windows of an interrupted drift of another "
                       r"config \(differs in rope\)"):  # fmt: skip
        check_out_config(tmp_path, mine)
    check_out_config(tmp_path, other)  # its own config resumes
    (tmp_path / PARTIAL).write_text(json.dumps({**saved, "texts": {}}))
    check_out_config(tmp_path, mine)  # no window saved: nothing to keep
    (tmp_path / PARTIAL).unlink()
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({**other.to_dict(), "seconds": 1.0}))
    with pytest.raises(UserError, match=r"holds the results of a drift of another config"):
        check_out_config(tmp_path, mine)
    check_out_config(tmp_path, other)


def test_eval_keeps_another_configs_results(tmp_path):
    """An eval of another config into a folder holding one's results is refused (it replaced
    eval.jsonl and left the other run's lm_eval_results.json beside it); the same config, or one
    that differs only in how it runs (batch size, device, logged samples), runs there again."""
    from longred_bench.cli.outputs import check_eval_out
    from longred_bench.evaluation.config import EvalConfig

    def saved(cfg):
        record = {"kind": "ppl", "provenance": {"config": {"command": "eval", **cfg.to_dict()}}}
        (tmp_path / "eval.jsonl").write_text(json.dumps(record) + "\n")

    short = EvalConfig(model="tiny-random", suite="short_tiny")
    saved(short)
    with pytest.raises(UserError, match=r"holds the results of an eval of another config "
                       r"\(differs in suite\)"):  # fmt: skip
        check_eval_out(tmp_path, EvalConfig(model="tiny-random", suite="ppl").to_dict())
    with pytest.raises(UserError, match=r"\(differs in rope\)"):
        check_eval_out(tmp_path, EvalConfig(model="tiny-random", suite="short_tiny",
                                            rope="pi:factor=2").to_dict())  # fmt: skip
    check_eval_out(tmp_path, short.to_dict())
    saved(EvalConfig(model="tiny-random", suite="short_tiny", rope="pi:factor=4",
                     tasks=("longred_tiny_cloze", "longred_tiny_nextsent")))  # fmt: skip
    check_eval_out(tmp_path, EvalConfig(model="tiny-random", suite="short_tiny",
                                        rope="pi:factor=4.0", tasks=("longred_tiny_nextsent",
                                        "longred_tiny_cloze")).to_dict())  # fmt: skip
    saved(short)
    check_eval_out(tmp_path, EvalConfig(model="tiny-random", suite="short_tiny",
                                        batch_size=4, log_samples=True).to_dict())  # fmt: skip
    (tmp_path / "eval.jsonl").write_text("")  # nothing to keep
    check_eval_out(tmp_path, EvalConfig(model="tiny-random", suite="ppl").to_dict())
    # lengths in another order measure the same (a RULER run at 1024 512 was refused)
    saved(EvalConfig(model="tiny-random", suite="ruler", lengths=(512, 1024)))
    check_eval_out(tmp_path, EvalConfig(model="tiny-random", suite="ruler",
                                        lengths=(1024, 512)).to_dict())  # fmt: skip
    with pytest.raises(UserError, match=r"\(differs in lengths\)"):
        check_eval_out(tmp_path, EvalConfig(model="tiny-random", suite="ruler",
                                            lengths=(512,)).to_dict())  # fmt: skip
    # NIAH depths too: each cell is made on its own (0 50 after 50 0 was refused)
    saved(EvalConfig(model="tiny-random", suite="niah", lengths=(512,), depths=(50.0, 0.0)))
    check_eval_out(tmp_path, EvalConfig(model="tiny-random", suite="niah", lengths=(512,),
                                        depths=(0.0, 50.0)).to_dict())  # fmt: skip
    with pytest.raises(UserError, match=r"\(differs in depths\)"):
        check_eval_out(tmp_path, EvalConfig(model="tiny-random", suite="niah", lengths=(512,),
                                            depths=(0.0,)).to_dict())  # fmt: skip


@pytest.mark.parametrize("text", ["{not json\n", '{"kind": "foo", "value": 1}\n', "[1, 2]\n"])
@pytest.mark.parametrize(("name", "command"), [("eval.jsonl", "eval"), ("psa.jsonl", "psa")])
def test_results_that_cannot_be_read_are_kept_not_replaced(tmp_path, capsys, text, name, command):
    """An eval.jsonl or psa.jsonl cut short, or written by another tool (no provenance), was
    replaced without a word: what it holds is not known, so it is kept and the run refused."""
    out = tmp_path / "o"
    out.mkdir()
    (out / name).write_text(text)
    argv = {
        "eval": ["eval", "--model", "tiny-random", "--suite", "short_tiny", "--limit", "1"],
        "psa": ["psa", "--model", "tiny-random", "--lengths", "256", "--samples", "1"],
    }
    assert main([*argv[command], "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"error: --out {out} holds {name}, which is not readable as results with "
                   "their provenance (cut short? another tool's?): give another --out, or "
                   f"delete {name} there to give it up")  # fmt: skip
    assert (out / name).read_text() == text


@pytest.mark.parametrize("compressed", [False, True])
def test_results_cut_short_after_whole_records_are_kept_not_replaced(tmp_path, compressed):
    """A results file cut short inside a later record (its first whole, of this very config)
    was read as this config's results and replaced by the run; whole, it runs there again."""
    import gzip

    from longred_bench.cli.outputs import check_results_config

    mine = {"model": "tiny-random", "suite": "ppl"}
    line = json.dumps({"kind": "ppl", "value": 1.5, "provenance": {"config": mine}}) + "\n"
    name = "eval.jsonl"
    for text, whole in ((line * 3, True), ((line * 3)[:-5], False), (line * 3 + '{"kind', False)):
        data = text.encode()
        path = tmp_path / (f"{name}.gz" if compressed else name)
        path.write_bytes(gzip.compress(data) if compressed else data)
        if whole:
            check_results_config(tmp_path, name, "an eval", mine)
        else:
            with pytest.raises(UserError, match=r"not readable as results .*\(cut short\?"):
                check_results_config(tmp_path, name, "an eval", mine)
    if compressed:  # the compressed stream itself cut short
        path.write_bytes(gzip.compress((line * 3).encode())[:-12])
        with pytest.raises(UserError, match=r"not readable as results .*\(cut short\?"):
            check_results_config(tmp_path, name, "an eval", mine)


def test_psa_refuses_another_configs_results_before_loading(tmp_path, capsys):
    """The refusal comes before any corpus or model loads (this machine may cache none); the
    results file is left as it was. Only settings present in both configs are compared."""
    from longred_bench.cli.outputs import check_results_config

    out = tmp_path / "psa"
    out.mkdir()
    record = {"provenance": {"config": {"models": ["tiny-random"], "ropes": ["none"],
                                        "tasks": ["niah_single_1"], "device": "cpu"}}}  # fmt: skip
    (out / "psa.jsonl").write_text(json.dumps(record) + "\n")
    kept = (out / "psa.jsonl").read_bytes()
    argv = ["psa", "--model", "tiny-random", "--tasks", "niah_single_2", "--lengths", "512",
            "--samples", "1", "--rope", "pi:factor=2", "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 2
    _refused_as_another_psa(capsys, out, kept)
    # the same config on another device, with settings the file does not name, is that config
    same = {
        "models": ["tiny-random"],
        "ropes": ["none"],
        "tasks": ["niah_single_1"],
        "device": "cuda",
        "lengths": [512],
    }
    check_results_config(out, "psa.jsonl", "a psa", same, free=("device",))


def test_psa_keeps_another_configs_results(tmp_path, capsys, request):
    """A psa of other tasks or extensions into a folder holding one's psa.jsonl replaced it
    without a word; the same config runs there again."""
    ensure_cached(request, "brown")
    out = tmp_path / "psa"
    argv = ["psa", "--model", "tiny-random", "--tasks", "niah_single_1", "--lengths", "512",
            "--samples", "1", "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    kept = (out / "psa.jsonl").read_bytes()
    other = [*argv[:4], "niah_single_2", *argv[5:], "--rope", "pi:factor=2"]
    assert main(other) == 2
    _refused_as_another_psa(capsys, out, kept)
    assert main(argv) == 0  # its own config runs there again


def test_psa_lines_in_another_order_are_the_same_config(tmp_path) -> None:
    """psa's --rope lines (and models, lengths, decodings) are measured each on its own: in
    another order they were refused as another config."""
    from longred_bench.cli.outputs import check_results_config

    record = {"provenance": {"config": {"ropes": ["none", "pi:factor=4"], "lengths": [512, 1024],
                                        "depths": [10.0, 90.0]}}}  # fmt: skip
    (tmp_path / "psa.jsonl").write_text(json.dumps(record) + "\n")
    check_results_config(tmp_path, "psa.jsonl", "a psa", {"ropes": ["pi:factor=4.0", "none"],
                                                          "lengths": [1024, 512]})  # fmt: skip
    with pytest.raises(UserError, match=r"differs in depths"):  # sample i's depth: order counts
        check_results_config(tmp_path, "psa.jsonl", "a psa", {"depths": [90.0, 10.0]})


def test_psa_refuses_another_configs_compressed_results(tmp_path, capsys):
    """A report folder keeps psa's records compressed (``psa.jsonl.gz``, as reports/smol does):
    a psa of another config there replaced its psa.md and psa.png; it is refused as for
    ``psa.jsonl``, and ``reproduce`` still writes its tables beside psa's files."""
    import gzip

    out = tmp_path / "smol"
    out.mkdir()
    record = {"provenance": {"config": {"models": ["smollm2-135m"], "ropes": ["none"],
                                        "tasks": ["niah_single_2"]}}}  # fmt: skip
    with gzip.open(out / "psa.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(json.dumps(record) + "\n")
    (out / "psa.md").write_text("kept")
    argv = ["psa", "--model", "tiny-random", "--tasks", "niah_single_1", "--lengths", "512",
            "--samples", "1", "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "holds the results of a psa of another config (differs in models, tasks)" in err
    assert "delete psa.jsonl.gz there" in err and (out / "psa.md").read_text() == "kept"
    (out / "psa.jsonl").write_text(json.dumps(record) + "\n")  # as psa writes it

    check_out_dir(out, "reproduce")  # no refusal: the two commands' files have other names


def test_a_finished_drift_is_kept_after_its_config_yaml_is_deleted(tmp_path, capsys):
    """Told to "delete config.yaml to give its work up", a user who did so had a drift of
    another config replace the finished results in drift.jsonl without a word: the refusal
    names both files, and drift.jsonl's own provenance is checked where config.yaml is gone."""
    from longred_bench.cli import main

    out = tmp_path / "d"
    argv = ["drift", "--original", "tiny-random", "--texts", "random", "--num-texts", "2",
            "--seq-len", "32", "--out", str(out), "--quiet"]  # fmt: skip
    assert main([*argv, "--rope", "abf:theta=1e5", "pi:factor=4"]) == 0
    kept = (out / "drift.jsonl").read_text()
    capsys.readouterr()
    assert main([*argv, "--rope", "pi:factor=4"]) == 2
    assert "(delete config.yaml and drift.jsonl to give its work up)" in capsys.readouterr().err
    (out / "config.yaml").unlink()
    assert main([*argv, "--rope", "pi:factor=4"]) == 2
    err = capsys.readouterr().err
    assert "holds the results of a drift of another config (differs in rope)" in err
    assert "delete drift.jsonl there to give them up" in err
    assert (out / "drift.jsonl").read_text() == kept


def test_a_finished_drift_without_config_yaml_takes_its_models_in_any_order(tmp_path) -> None:
    """Read from drift.jsonl alone, the same drift with its checkpoints in another order was
    refused as another config (differs in extended); the saved order is any order's."""
    from longred_bench.cli.outputs import check_drift_out
    from longred_bench.jobs.configs import DriftConfig

    saved = DriftConfig(original="tiny-random", extended=("/m/a", "/m/b"), seq_len=64)
    line = {"kind": "drift_summary", "provenance": {"config": saved.to_dict()}}
    (tmp_path / "drift.jsonl").write_text(json.dumps(line) + "\n")
    check_drift_out(tmp_path, DriftConfig(original="tiny-random", extended=("/m/b", "/m/a"),
                                          seq_len=64).to_dict())  # fmt: skip
    with pytest.raises(UserError, match=r"differs in extended"):
        check_drift_out(tmp_path, DriftConfig(original="tiny-random", extended=("/m/a",),
                                              seq_len=64).to_dict())  # fmt: skip


def test_a_drift_with_its_extensions_spelled_otherwise_is_the_saved_drift(tmp_path) -> None:
    """``--rope PI:factor=4.0`` beside a drift saved with ``pi:factor=4`` was refused as
    another config (differs in rope), though the command takes the two as one extension; it
    takes the saved spelling (and order), and a saved spec that no longer parses is no match."""
    import yaml

    from longred_bench.cli.outputs import check_drift_out, saved_drift_order
    from longred_bench.jobs.configs import DriftConfig

    saved = DriftConfig(original="tiny-random", rope=("pi:factor=4", "abf:theta=1e5"), seq_len=64)
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(saved.to_dict()))
    mine = DriftConfig(original="tiny-random", rope=("abf:theta=100000", "PI:factor=4.0"),
                       seq_len=64)  # fmt: skip
    assert saved_drift_order(tmp_path, mine.to_dict()) == {"rope": saved.rope, "extended": ()}
    check_drift_out(tmp_path, {**mine.to_dict(), "rope": list(saved.rope)})
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({**saved.to_dict(), "rope": ["x:y"]}))
    assert saved_drift_order(tmp_path, mine.to_dict()) == {}


def test_a_drift_stopped_before_its_report_writes_it_when_run_again(tmp_path, capsys) -> None:
    """A drift stopped (Ctrl-C, SIGTERM, kill -9) once its records were saved, before
    ``drift.md`` and ``drift.png``: the same command said the folder held the drift, measured
    nothing, and wrote no report either."""
    out = tmp_path / "d"
    argv = ["drift", "--original", "tiny-random", "--texts", "random", "--num-texts", "2",
            "--seq-len", "32", "--rope", "pi:factor=4", "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    report = (out / "drift.md").read_text()
    for name in ("drift.md", "drift.png"):
        (out / name).unlink()
    capsys.readouterr()
    assert main(argv) == 0
    said = capsys.readouterr().out
    assert "nothing to measure" in said
    assert said.rstrip().endswith("; wrote its missing drift.md; wrote its missing drift.png")
    assert (out / "drift.md").read_text() == report and (out / "drift.png").is_file()
    (out / "drift.png").unlink()  # one missing: it alone is written, and said; the other kept
    (out / "drift.md").write_text("the report, with its own command line")
    assert main(argv) == 0
    said = capsys.readouterr().out
    assert said.rstrip().endswith("nothing to measure (delete drift.jsonl there to measure it "
                                  "again); wrote its missing drift.png")  # fmt: skip
    assert (out / "drift.md").read_text() == "the report, with its own command line"
    assert (out / "drift.png").is_file()
