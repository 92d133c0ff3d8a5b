"""Two steps of every training recipe on SmolLM2-135M's real weights on a CPU, through the unit
commands users run: ``reproduce T --profile FILE --list-units``, then ``--unit ID`` for each
training unit and for one evaluation unit (``slow``; fetches SmolLM2 and the data first where
``--run-network`` allows, else skips).

The recipes that extend the window refuse a long stream inside the original one, and SmolLM2
declares 8,192 positions: two steps at that length take minutes per recipe on two cores. So
the model here is SmolLM2's real weights and tokenizer (symlinked from the cache) under a
config that declares a 128-token window, extended to 256 and more; the weights, the RoPE base
and every layer are the real ones. Each training run's checkpoints and, at the end, the run
cache are deleted (SmolLM2's weights take about 0.5 GB per run folder, 1.6 GB per checkpoint).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from data_helpers import ensure_cached

from longred_bench.cache import cache_dir

pytestmark = pytest.mark.slow

WINDOW = 128
TRAINED = {"control", "cpt", "mix-cpt", "longred", "linearard", "attention-only", "pose", "rpes",
           "longrecipe"}  # fmt: skip
TABLES = ("table3", "table7", "longrecipe")  # every recipe above trains in one of them
EVAL_UNIT = ("table3", "eval_cpt_abf:theta=4e5_seed_0_ruler")
PROFILE = f"""\
extends: smol
model: {{name: MODEL, window: {WINDOW}, layers: 30}}
hardware: {{device: cpu, dtype: float32}}
training:
  cpt: &budget
    rope: "abf:theta=4e5"
    long_len: {2 * WINDOW}
    short_len: 64
    steps: 2
    tokens_per_step: {2 * WINDOW}
    micro_tokens: {2 * WINDOW}
    top_m: 1
  # 4:3:1 long/short/s2l tokens in whole rows of 256, 64 and 128 tokens: 1,024 a step at least
  mix-cpt: &mix {{<<: *budget, tokens_per_step: {8 * WINDOW}, micro_tokens: {8 * WINDOW}}}
  longred: *mix
  attention-only: *budget
  linearard: {{<<: *budget, rope: "pi:factor=4"}}
  control: {{<<: *budget, rope: null, long_len: {WINDOW}}}
  pose: &samples
    rope: "pi:factor=4"
    long_len: {2 * WINDOW}
    short_len: 64
    steps: 2
    tokens_per_step: {2 * WINDOW}
    micro_tokens: {2 * WINDOW}
  rpes: *samples
  # The table runs it at twice the step's tokens, half long rows (512) and half short; its
  # measured anchors come from a brief CPT run of impact_steps steps (8 by default: minutes).
  longrecipe:
    <<: *samples
    tokens_per_step: {4 * WINDOW}
    micro_tokens: {8 * WINDOW}
    impact_steps: 1
evaluation:
  batch_size: 1
  device: cpu
  short: {{limit: 2, tasks: [longred_arc_easy]}}
  ruler: {{lengths: [{2 * WINDOW}], samples: 1, tasks: [longred_ruler_niah_single_1]}}
runs:
  extensions: ["abf:theta=4e5"]
  seeds: 1
tables:
  table3: {{rows: [control, cpt, mix-cpt, longred-c, longred-u, linearard]}}
  table7: {{rows: [attention-only], extensions: ["abf:theta=4e5"]}}
  longrecipe: {{rows: [rpes, pose, longrecipe], extensions: ["abf:theta=4e5"]}}
"""


def _short_window_smollm2(real_model: Path, folder: Path) -> Path:
    """SmolLM2-135M's files linked into ``folder`` under a config declaring ``WINDOW``
    positions (no manifest: the folder is checked by its config alone)."""
    folder.mkdir()
    for item in real_model.iterdir():
        if item.name not in ("config.json", "manifest.json"):
            (folder / item.name).symlink_to(item)
    config = json.loads((real_model / "config.json").read_text())
    config["max_position_embeddings"] = WINDOW
    (folder / "config.json").write_text(json.dumps(config, indent=2))
    return folder


@pytest.fixture
def smol_run(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[Path, dict]]:
    """(profile file, environment): a fresh run cache under ``tmp_path`` linking the real
    cache's corpora, benchmarks and SmolLM2 (fetched first where allowed), nothing downloaded."""
    ensure_cached(request, "smollm2", "brown", "austen", "kjv", "benchmarks")
    from longred_bench.data.corpora import model_dir

    real = cache_dir()
    model = _short_window_smollm2(model_dir("smollm2-135m", cache=real), tmp_path / "smol")
    cache = tmp_path / "cache"
    cache.mkdir()
    for folder in ("corpora", "benchmarks"):
        (cache / folder).symlink_to(real / folder)
    profile = tmp_path / "smol-cpu.yaml"
    profile.write_text(PROFILE.replace("MODEL", str(model)))
    env = {**os.environ, "LONGRED_CACHE": str(cache), "HF_HUB_OFFLINE": "1"}
    yield profile, env
    shutil.rmtree(cache / "runs", ignore_errors=True)


def _cli(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "longred_bench", *args], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def _units(env: dict[str, str], table: str, profile: Path) -> list[dict]:
    out = _cli(env, "reproduce", table, "--profile", str(profile), "--list-units")
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def _recipe(run: Path) -> str:
    for line in (run / "config.yaml").read_text().splitlines():
        if line.startswith("recipe:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no recipe in {run / 'config.yaml'}")


# Measured with --run-slow on a 2-core AMD EPYC machine shared with other work: 270 s at a load
# average of about 2, 839 s at about 4, for the ten training units (LongReD twice: -c and -u)
# and the RULER evaluation.
def test_every_recipe_trains_two_steps_on_real_smollm2_weights(smol_run) -> None:
    profile, env = smol_run
    cache = Path(env["LONGRED_CACHE"])
    trained: dict[str, Path] = {}
    for table in TABLES:
        for unit in (u for u in _units(env, table, profile) if u["kind"] == "train"):
            assert not unit["cached"]
            out = _cli(env, "reproduce", table, "--profile", str(profile), "--unit", unit["id"],
                       "--quiet")  # fmt: skip
            assert f"{unit['id']}: computed" in out
            run = cache / unit["folder"]
            steps = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
            steps = [s for s in steps if "loss" in s]
            light = unit["id"].startswith("train_cpt-light")  # a quarter of CPT's steps: one
            assert [s["step"] for s in steps] == ([1] if light else [1, 2]), unit["id"]
            assert all(math.isfinite(s["loss"]) and s["loss"] > 0 for s in steps), steps
            assert (run / "final" / "config.json").is_file()
            recipe = _recipe(run)
            trained.setdefault(recipe, run)
            shutil.rmtree(run / "checkpoints", ignore_errors=True)
    assert set(trained) == TRAINED  # none skipped
    # Listed again, the units are cached; the evaluation that waits for cpt can now run.
    table, unit_id = EVAL_UNIT
    listed = {u["id"]: u for u in _units(env, table, profile)}
    assert all(u["cached"] for u in listed.values() if u["kind"] == "train")
    assert not listed[unit_id]["cached"] and listed[unit_id]["after"]
    out = _cli(env, "reproduce", table, "--profile", str(profile), "--unit", unit_id, "--quiet")
    assert f"{unit_id}: computed" in out
    from longred_bench.results import read_records

    records = read_records(cache / listed[unit_id]["folder"] / "eval.jsonl")
    scores = {(r["kind"], r["length"]): r for r in records if r["task"].endswith("niah_single_1")}
    assert 0.0 <= scores[("eval", 2 * WINDOW)]["value"] <= 100.0
    assert scores[("eval", 2 * WINDOW)]["n_samples"] == 1
    assert scores[("eval", 2 * WINDOW)]["model"] == str(trained["cpt"] / "final")
    listed = {u["id"]: u for u in _units(env, table, profile)}
    assert listed[unit_id]["cached"]
