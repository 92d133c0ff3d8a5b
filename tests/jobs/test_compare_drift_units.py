"""``compare``'s drift units: one unit per model, keyed by the files of its local models, with
the saved windows of interrupted runs kept while those files are unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest
from data_helpers import ensure_cached
from test_compare import _save_tiny

from longred_bench import cli
from longred_bench.errors import UserError
from longred_bench.jobs import compare
from longred_bench.jobs.configs import CompareConfig


@pytest.mark.integration
def test_a_checkpoint_trained_again_at_its_path_is_measured_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> None:
    """A unit of a local checkpoint is keyed by its files too: other weights saved at the same
    path are measured again (short suite and drift), and the original's units are kept."""
    import torch

    ensure_cached(request, "brown", "austen", "sotu")
    ext = _save_tiny(tmp_path / "ckpt")
    out = tmp_path / "cmp"
    argv = ["compare", "--original", "tiny-random", "--extended", str(ext)]
    argv += ["--suites", "short", "drift", "--short-suite", "short_tiny"]
    argv += ["--short-tasks", "longred_tiny_nextsent", "--short-limit", "3"]
    argv += ["--drift-num-texts", "2", "--drift-seq-len", "64", "--out", str(out), "--quiet"]
    assert cli.main(argv) == 0
    first = (out / "compare.md").read_text()

    from longred_bench.models.loading import load

    loaded = load(str(ext))  # "trained again": other weights, saved at the same path
    with torch.no_grad():
        for param in loaded.model.parameters():
            param.mul_(0.5)
    loaded.model.save_pretrained(ext)
    measured: list[str] = []
    from longred_bench.jobs import drift

    eval_unit, run_drift = compare.run_eval_unit, drift.run_drift

    def spy(unit, progress, **kwargs):
        measured.append(unit["model"])
        return eval_unit(unit, progress, **kwargs)

    def drift_spy(cfg, **kwargs):
        measured.append(f"drift {','.join(cfg.extended)}")
        return run_drift(cfg, **kwargs)

    monkeypatch.setattr(compare, "run_eval_unit", spy)
    monkeypatch.setattr(drift, "run_drift", drift_spy)
    stale = out / "runs" / "drift" / "checkpoints.partial.json"  # windows of the old weights
    stale.write_text('{"config": {}, "texts": {"x": [[0, 0]]}}')
    assert cli.main(argv) == 0
    # The checkpoint's short suite and its drift; the original's short suite is kept.
    assert measured == [str(ext), f"drift {ext}"]
    assert (out / "compare.md").read_text() != first
    assert not stale.exists()  # not counted as saved progress by an interrupted run
    measured.clear()
    assert cli.main(argv) == 0  # the same files again: every unit reused
    assert measured == []


@pytest.mark.integration
def test_an_interrupted_drift_of_other_models_or_settings_keeps_its_windows(tmp_path: Path) -> None:
    """Saved drift windows of another call, interrupted (other settings, or other models: a
    checkpoint added, then taken out again), are kept for it; those of weights no longer there go.
    Adding a checkpoint deleted the windows of the call before it."""
    import json
    from dataclasses import replace

    from longred_bench.jobs.configs import DriftConfig
    from longred_bench.jobs.unit_compute import own_config

    ckpt, same = _save_tiny(tmp_path / "ckpt"), _save_tiny(tmp_path / "same")
    cfg = CompareConfig(original="tiny-random", rope=("pi:factor=2",), suites=("drift",),
                        drift_texts="random", drift_num_texts=2, drift_seq_len=32)  # fmt: skip
    others = [replace(cfg, drift_num_texts=3), replace(cfg, rope=("pi:factor=2", "pi:factor=4")),
              replace(cfg, extended=(str(same),)), replace(cfg, extended=(str(ckpt),))]  # fmt: skip
    root = tmp_path / "runs" / "drift"
    root.mkdir(parents=True)

    def saved(c: CompareConfig) -> Path:
        labels = [*c.extended, *c.rope]
        config = DriftConfig.from_dict(own_config(compare.drift_run(c, labels))).to_dict()
        path = root / compare.partial_name(config)
        path.write_text(json.dumps({"config": config, "texts": {}}))
        return path

    *kept, _ = [saved(c) for c in others]  # the last: its checkpoint is retrained
    (ckpt / "config.json").write_text((ckpt / "config.json").read_text() + "\n")  # new files
    compare.run_compare(cfg, tmp_path, progress=False)
    left = sorted(p.name for p in root.glob("*.partial.json"))
    assert left == sorted(p.name for p in kept)  # its own: done; the retrained one's: gone


def test_a_model_added_to_a_comparison_is_the_only_drift_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Drift is one unit per model: adding a checkpoint measured every checkpoint's drift again
    (they were one unit); now only the new one is measured, in one run with any other missing
    model, and each model's drift is what it was measured alone. Dropping one measures nothing."""
    from dataclasses import replace

    from longred_bench.jobs import drift

    first, second = _save_tiny(tmp_path / "a"), _save_tiny(tmp_path / "b")
    cfg = CompareConfig(original="tiny-random", extended=(str(first),), rope=("pi:factor=2",),
                        suites=("drift",), drift_texts="random", drift_num_texts=2,
                        drift_seq_len=32)  # fmt: skip
    runs: list[tuple[list[str], list[str]]] = []
    run_drift = drift.run_drift

    def spy(config, **kwargs):
        runs.append((list(config.extended), list(config.rope)))
        return run_drift(config, **kwargs)

    def summaries(records: list[dict]) -> dict[str, float]:
        return {r["label"]: r["mean_attention_kl"] for r in records
                if r["kind"] == "drift_summary"}  # fmt: skip

    monkeypatch.setattr(drift, "run_drift", spy)
    alone = summaries(compare.run_compare(cfg, tmp_path / "cmp", progress=False))
    assert runs == [([str(first)], ["pi:factor=2"])]  # the missing models, in one run
    more = replace(cfg, extended=(str(first), str(second)))
    both = summaries(compare.run_compare(more, tmp_path / "cmp", progress=False))
    assert runs[1:] == [([str(second)], [])]
    assert both[str(first)] == alone[str(first)] and both["pi:factor=2"] == alone["pi:factor=2"]
    assert both[str(second)] == pytest.approx(alone[str(first)])  # the same weights, measured
    fewer = replace(cfg, extended=(str(second),), rope=())
    assert summaries(compare.run_compare(fewer, tmp_path / "cmp", progress=False)) == {
        str(second): both[str(second)]
    }
    assert len(runs) == 2  # nothing measured again
    assert not list((tmp_path / "cmp" / "runs" / "drift").glob("*.partial.json"))


def test_drift_windows_no_model_holds_are_refused_before_any_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Drift runs last: windows longer than every compared model's were refused once every
    other unit had been measured, naming drift's own ``--seq-len``. Refused before any unit,
    naming compare's flag (a pairs file's key); windows an extension holds still run."""
    ckpt = _save_tiny(tmp_path / "ck")  # a 256-token window, as the original's
    measured: list[str] = []
    monkeypatch.setattr(compare, "run_eval_unit", lambda unit, *a, **k: measured.append(unit))
    cfg = CompareConfig(original="tiny-random", extended=(str(ckpt),),
                        suites=("short", "drift"), drift_seq_len=300)  # fmt: skip
    with pytest.raises(UserError) as exc:
        compare.run_compare(cfg, tmp_path / "cmp", progress=False, seq_len_key="KEY")
    assert str(exc.value) == ("compare: drift's 300-token windows exceed every compared "
                              "model's window: set KEY to at most 256")  # fmt: skip
    assert measured == [] and not (tmp_path / "cmp" / "runs").exists()
    held = CompareConfig(original="tiny-random", rope=("pi:factor=2",), suites=("drift",),
                         drift_seq_len=300)  # fmt: skip
    from longred_bench.models.loading import load_config

    compare.check_drift_window(held, load_config("tiny-random"), "KEY")  # PI x2 holds 512
