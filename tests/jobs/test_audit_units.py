"""A training run's cache key holds every setting its weights depend on, and a checkpoint it
starts from or merges by what that checkpoint is: a merge's source by its run and that run's
records (a source trained again makes another merge), a student's ``init`` in the run cache by
its run's name (where the cache lies does not matter). And what a unit keeps: a damaged finished
run resumes only from whole metrics; a PSA unit's records name its own seed; a unit's recorded
time is read only where it is a number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from longred_bench.cache import cache_dir
from longred_bench.jobs.units import train_key
from longred_bench.training.config import resolve_config

CHANGES = [
    ("seed", 1),
    ("steps", 7),
    ("lr", 1e-4),
    ("rope", "pi:factor=4"),
    ("long_len", 256),
    ("tokens_per_step", 1024),
    ("long_data", "brown"),
    ("weight_decay", 0.0),
    ("grad_clip", 0.5),
    ("schedule", "cosine"),
    ("betas", [0.9, 0.99]),
    ("micro_tokens", 512),
    ("teacher", "tiny-random"),
    ("dtype", "float32"),
    ("trainable", "attention"),
]


@pytest.mark.parametrize(("key", "value"), CHANGES, ids=[k for k, _ in CHANGES])
def test_a_setting_the_weights_depend_on_changes_a_runs_key(key, value) -> None:
    cfg = resolve_config("cpt", profile="smoke")
    assert getattr(cfg, key) != (tuple(value) if isinstance(value, list) else value)
    assert train_key(cfg.replace(**{key: value})) != train_key(cfg)


def test_the_profiles_name_alone_does_not_change_a_runs_key() -> None:
    cfg = resolve_config("cpt", profile="smoke")
    assert train_key(cfg.replace(profile="another")) == train_key(cfg)


def _trained(root: Path, name: str, tokens: int) -> Path:
    """A finished run's folder as the run cache keeps it (``final/`` and ``run.json``)."""
    run = root / "runs" / name
    (run / "final").mkdir(parents=True, exist_ok=True)
    (run / "final" / "config.json").write_text("{}")
    (run / "run.json").write_text(json.dumps({"tokens": tokens, "seconds": 1.0}))
    return run / "final"


def test_a_merge_is_keyed_by_its_sources_run_and_records(tmp_path, monkeypatch) -> None:
    """The merged model is another where its source was trained again (its ``run.json``
    differs), and the same where the cache holding the source moved."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "one"))
    source = _trained(cache_dir(), "train-cpt-0123456789abcdef", tokens=100)
    cfg = resolve_config("merge", profile="smoke", overrides={"merge_with": str(source)})
    first = train_key(cfg)
    assert train_key(cfg) == first
    _trained(cache_dir(), "train-cpt-0123456789abcdef", tokens=200)  # trained again
    again = train_key(cfg)
    assert again != first
    other = _trained(cache_dir(), "train-cpt-fedcba9876543210", tokens=200)  # another source
    assert train_key(cfg.replace(merge_with=str(other))) not in (first, again)


def test_an_init_in_the_run_cache_is_keyed_by_its_run_not_its_path(tmp_path, monkeypatch) -> None:
    """A student starting from a trained checkpoint keeps its key where the cache is read from
    another folder; a checkpoint of another run is another key."""
    keys = []
    for where in ("one", "two"):
        monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / where))
        init = _trained(cache_dir(), "train-cpt-0123456789abcdef", tokens=100)
        cfg = resolve_config(
            "linearard", profile="smoke", overrides={"init": str(init), "rope": "pi:factor=4"}
        )
        keys.append(train_key(cfg))
    assert keys[0] == keys[1]
    other = _trained(cache_dir(), "train-cpt-fedcba9876543210", tokens=100)
    assert train_key(cfg.replace(init=str(other))) != keys[0]


def test_a_model_in_the_run_cache_keeps_its_runs_key_where_the_cache_moved(
    tmp_path, monkeypatch
) -> None:
    """A run distilling from a trained checkpoint named by its path in the cache: the same key
    where the cache (which recorded the root it was keyed at) is copied to another folder."""
    import shutil

    from longred_bench.jobs.key_root import record_key_root

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "one"))
    final = _trained(cache_dir(), "train-cpt-0123456789abcdef", tokens=100)
    record_key_root()
    cfg = resolve_config("cpt", profile="smoke", overrides={"teacher": str(final)})
    first = train_key(cfg)
    shutil.copytree(tmp_path / "one", tmp_path / "two")
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "two"))
    moved = str(cache_dir() / "runs" / "train-cpt-0123456789abcdef" / "final")
    assert train_key(cfg.replace(teacher=moved)) == first
    other = _trained(cache_dir(), "train-cpt-fedcba9876543210", tokens=100)
    assert train_key(cfg.replace(teacher=str(other))) != first


def test_a_run_from_tiny_base_is_keyed_by_its_build(monkeypatch) -> None:
    """tiny-base rebuilt under another config is another starting model: its runs train anew."""
    import longred_bench.jobs.tiny_base as tiny_base

    cfg = resolve_config("cpt", profile="smoke").replace(model="tiny-base")
    monkeypatch.setattr(tiny_base, "tiny_base_run_dir", lambda: Path("/x/tiny-base-0001"))
    first = train_key(cfg)
    monkeypatch.setattr(tiny_base, "tiny_base_run_dir", lambda: Path("/x/tiny-base-0002"))
    assert train_key(cfg) != first


def test_a_finished_run_with_damaged_records_resumes_only_where_each_metrics_line_is_a_step(
    tmp_path,
) -> None:
    """A finished run whose ``run.json`` is damaged resumes from its checkpoint where every line
    of its metrics is a step's record (its ``run.json`` set aside); a metrics line that parses
    but is no step's (an edited or mixed-up file) cannot be given back by a resume, so the run
    is trained again."""
    from longred_bench.jobs.units import resumable

    run = _trained(tmp_path, "train-cpt-0123456789abcdef", tokens=1).parent
    (run / "run.json").write_text('{"tokens": 1')
    (run / "metrics.jsonl").write_text('{"step": 1}\n{"loss": 2.0}\n')
    assert not resumable(run, first=True)
    assert (run / "run.json").is_file()
    (run / "metrics.jsonl").write_text('{"step": 1}\n{"step": 2}\n')
    assert resumable(run, first=True)
    assert (run / "run.json.damaged").is_file() and not (run / "run.json").exists()
    assert resumable(run, first=True)  # no run.json: an interrupted run, which resumes


def test_a_psa_units_records_name_its_own_seed(tmp_path, monkeypatch) -> None:
    """A PSA unit keeps its seed in its ``psa`` section: its records' provenance names it, not
    the default of a config without one."""
    from longred_bench.jobs import unit_compute
    from longred_bench.jobs.units import CachedUnit

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(unit_compute, "compute", lambda *a: [{"score": 1.0}])
    config = {"psa": {"models": ["tiny-random"], "seed": 7, "device": "cpu"}}
    got = CachedUnit("psa", "runs/psa-test/one", config).run(progress=False)
    assert got[0]["provenance"]["seed"] == 7


@pytest.mark.parametrize(
    ("text", "seconds"),
    [('{"seconds": 12.5}', 12.5), ('{"seconds": 3}', 3.0), ('{"seconds": "soon"}', None),
     ('{"seconds": "12"}', None), ("[1]", None), ("{", None)],
)  # fmt: skip
def test_a_units_recorded_time_is_a_number_or_none(tmp_path, text, seconds) -> None:
    from longred_bench.jobs.units import TIMING, unit_seconds

    (tmp_path / TIMING).write_text(text)
    assert unit_seconds(tmp_path) == seconds
