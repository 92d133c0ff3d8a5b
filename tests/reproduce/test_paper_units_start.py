"""Every training unit of every built-in profile starts: its config passes the checks the run
makes before its first step (the rows of a micro-step split over the profile's processes, the
long rows against the original and extended windows), asked of the training code itself
(:func:`~longred_bench.reproduce.plan.startup_error`) without loading a model. A unit that would
stop is listed by the dry-run with the run's own error, and the memory model says so rather than
estimate a split the run refuses. No profile trains one recipe twice at the same RoPE under two
spellings, and each paper profile's training tables run at its own extensions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from longred_bench.cli import main
from longred_bench.profiles import BUILTIN
from longred_bench.reproduce.plan import PAPER_PROFILES


@pytest.fixture(scope="module")
def units_of(tmp_path_factory: pytest.TempPathFactory):
    """``units_of(profile)``: (label, key, config) of every training unit of every table at
    built-in ``profile``, each unit once; listed offline against an empty run cache."""
    cache = tmp_path_factory.mktemp("cache")
    found: dict[str, list[tuple[str, str, dict[str, Any]]]] = {}

    def units(profile: str) -> list[tuple[str, str, dict[str, Any]]]:
        if profile not in found:
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("LONGRED_CACHE", str(cache))
                mp.setenv("HF_HUB_OFFLINE", "1")
                found[profile] = _training_units(profile)
        return found[profile]

    return units


def _profile(name: str) -> Any:
    from longred_bench.models.choice import choose_model
    from longred_bench.profiles import load_profile

    return choose_model(load_profile(name))  # as `reproduce` does


def _training_units(name: str) -> list[tuple[str, str, dict[str, Any]]]:
    from longred_bench.reproduce.registry import get_spec, table_names

    prof, seen, out = _profile(name), set(), []
    for table in table_names():
        spec = get_spec(table)
        for step in spec.steps(spec.resolve(prof, progress=False)):
            if step.unit.kind == "train" and step.key not in seen:
                seen.add(step.key)
                out.append((f"{table}: {step.label}", step.key, dict(step.unit.config)))
    return out


@pytest.mark.parametrize("profile", BUILTIN)
def test_every_training_unit_passes_the_startup_checks(profile, units_of):
    """At the profile's ``nproc_per_node`` processes (8 at the paper profiles) and its model's
    window: e.g. paper's 32K mixed rows were 4 long rows a micro-step over 8 GPUs, paper-mistral's
    LinearARD kept a long_len of 32768 (not above Mistral's 32K window) and paper-linearard's
    control a long_len of 8192 (above LLaMA-2's 4K window)."""
    from longred_bench.reproduce.plan import startup_error

    prof = _profile(profile)
    units = units_of(profile)
    assert units, profile
    stopped = {label: error for label, _, cfg in units if (error := startup_error(cfg, prof))}
    assert not stopped, f"{len(stopped)} unit(s) of {profile} cannot start: {stopped}"


def _effective_rope(rope: str | None, window: int) -> Any:
    """What ``rope`` does to a model of ``window`` tokens, whatever its spelling: ABF's theta
    and target window (its factor only sets the target), the other methods' keys with factor
    and target."""
    from longred_bench.models.rope import parse_rope_spec, target_window

    if rope is None:
        return None
    spec = parse_rope_spec(rope)
    params = dict(spec.params)
    target = target_window(spec, window)
    params.pop("max_len", None)
    if spec.method == "abf":
        params.pop("factor", None)
    else:
        params.setdefault("factor", target / window)
    return [spec.method, sorted(params.items()), target]


@pytest.mark.parametrize("profile", BUILTIN)
def test_no_recipe_is_trained_twice_at_one_rope_under_two_spellings(profile, units_of):
    """paper-mistral's Tables 4-7 and LongRecipe used to inherit paper's ``abf:theta=2e7``:
    on Mistral that is Table 3's ``abf:theta=2e7,factor=4`` (theta 2e7, a 128K window) under
    another cache key, so CPT and LongReD-C were trained twice."""
    window = _profile(profile).model.window
    runs: dict[str, dict[str, str]] = {}  # what a run does -> {its key: its label}
    for label, key, cfg in units_of(profile):
        # the folders of the runs a unit starts from or merges name the RoPE's spelling too
        same = {**cfg, "rope": _effective_rope(cfg.get("rope"), window), "init": None,
                "merge_with": None}  # fmt: skip
        runs.setdefault(json.dumps(same, sort_keys=True, default=str), {})[key] = label
    twice = [sorted(labels.values()) for labels in runs.values() if len(labels) > 1]
    assert not twice, f"{profile} trains the same run under different keys: {twice}"


@pytest.mark.parametrize("profile", PAPER_PROFILES)
def test_each_paper_profiles_training_tables_run_at_its_own_extensions(profile):
    """A child profile that does not restate ``tables.<t>.extensions`` inherits paper.yaml's
    (Llama-3-8B's ``abf:theta=2e7``): paper-linearard's ablations ran ABF to 16K on LLaMA-2
    instead of its PI x8 to 32K."""
    from longred_bench.reproduce.registry import get_spec, table_names

    prof = _profile(profile)
    for table in table_names():
        spec = get_spec(table)
        if spec.grid is not None:
            grid = spec.grid(spec.resolve(prof, progress=False))
            assert set(grid.extensions) <= set(prof.runs.extensions), (profile, table)


def _split_profile(tmp_path) -> str:
    """paper with its old 262,144-token micro-steps for the mixed rows: 4 long rows of 32K a
    micro-step over 8 GPUs."""
    path = tmp_path / "split.yaml"
    path.write_text("extends: paper\ntraining:\n  mix-cpt: {micro_tokens: 262144}\n")
    return str(path)


def test_the_dry_run_names_each_unit_that_cannot_start(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    argv = ["reproduce", "table3", "--profile", _split_profile(tmp_path), "--dry-run"]
    assert main(argv) == 0
    text = capsys.readouterr().out
    error = (
        "4 rows of stream 'long' per micro-step do not split over 8 processes: set "
        "tokens_per_step, micro_tokens or the mix so that they do"
    )
    lines = [line for line in text.splitlines() if "cannot start" in line and "  to run" in line]
    assert [line.split("  ")[2] for line in lines] == [
        "train mix-cpt abf:theta=2e7 seed 0",
        "train mix-cpt pi:factor=4 seed 0",
    ]
    assert all(f"(cannot start: {error}; " in line and "GiB" not in line for line in lines)
    total = next(line for line in text.splitlines() if line.startswith("In all: "))
    assert f"2 of which cannot start as configured (e.g. train mix-cpt abf:theta=2e7 seed 0: " \
        f"{error})" in total  # fmt: skip


def test_the_memory_model_says_when_rows_do_not_split(tmp_path, monkeypatch):
    """The busiest process's rows are counted, never fewer than configured: 12 long rows over 8
    GPUs are 2 on some of them (the old figure counted 1)."""
    from profile_helpers import ctx_of

    from longred_bench.reproduce.costs import unit_cost
    from longred_bench.reproduce.registry import get_spec
    from longred_bench.training.config import TrainConfig
    from longred_bench.training.memory_model import estimate_train_memory
    from longred_bench.training.shapes import shape

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    ctx = ctx_of("table3", _split_profile(tmp_path))
    steps = {s.label: s for s in get_spec("table3").steps(ctx) if s.unit.kind == "train"}
    split = steps["train mix-cpt abf:theta=2e7 seed 0"]
    fine = steps["train cpt abf:theta=2e7 seed 0"]
    assert unit_cost(split, ctx.profile).gib_per_gpu is None
    assert unit_cost(split, ctx.profile).gpu_hours > 0
    assert unit_cost(fine, ctx.profile).gib_per_gpu > 0
    s = shape("llama3-8b")
    est = estimate_train_memory(s, TrainConfig.from_dict(split.unit.config), 8, window=8192)
    assert est.unsplit == (
        "4 rows of stream 'long' per micro-step do not split over 8 processes: "
        "set tokens_per_step, micro_tokens or the mix so that they do"
    )
    cpt = TrainConfig.from_dict(fine.unit.config)
    assert estimate_train_memory(s, cpt, 8, window=8192).unsplit == ""
    twelve = estimate_train_memory(s, cpt.replace(tokens_per_step=12 * 32768, micro_tokens=0), 8)
    eight = estimate_train_memory(s, cpt.replace(tokens_per_step=8 * 32768, micro_tokens=0), 8)
    assert twelve.unsplit and not eight.unsplit
    assert twelve.activations == 2 * eight.activations


def test_linearards_lite_rows_read_a_64th_of_the_tokens_in_rows_every_gpu_gets():
    """Mistral's LinearARD rows are of its 32K window: a sixteenth of a step was 4 rows for 8
    GPUs. The lite rows take 8 a step and half the steps (still 1/64 of the tokens); where the
    rows split already (paper: 16 rows of 8K), a quarter of the steps at a sixteenth of the
    tokens as before."""
    from profile_helpers import grid_of

    from longred_bench.reproduce.grid import TrainedRow

    for profile, window, want in (("paper-mistral", 32768, (64, 262144)),
                                  ("paper", 8192, (128, 131072))):  # fmt: skip
        grid = grid_of("linearard", profile)
        ext = grid.extensions[0]
        full = TrainedRow("linearard", ext, 0).config(grid)
        lite = TrainedRow("linearard-lite", ext, 0).config(grid)
        assert (lite.steps, lite.tokens_per_step) == want, profile
        assert full.steps * full.tokens_per_step == 64 * lite.steps * lite.tokens_per_step
        assert lite.tokens_per_step // window % 8 == 0


def test_the_lite_budget_splits_each_micro_step_not_only_each_step():
    """A lite step of 40 rows of 64 tokens splits over 8 processes, but with micro-steps of 16
    rows it runs 2 micro-steps of 20 rows, which do not: the lite budget takes the next row
    count whose micro-steps split (48 rows: 3 micro-steps of 16), at fewer steps."""
    from longred_bench.reproduce.grid import lite_budget
    from longred_bench.reproduce.rows import LITE_STEPS, LITE_TOKENS
    from longred_bench.training.config import TrainConfig
    from longred_bench.training.plan import check_row_split, micro_rows

    window = 64
    cfg = TrainConfig.from_dict({"recipe": "linearard", "rope": "pi:factor=4",
                                 "steps": 24 * LITE_STEPS,
                                 "tokens_per_step": 40 * window * LITE_TOKENS,
                                 "micro_tokens": 16 * window})  # fmt: skip
    assert micro_rows(cfg.replace(steps=24, tokens_per_step=40 * window), window) == {"s2l": 20}
    lite = lite_budget(cfg, window, 8)
    assert micro_rows(lite, window) == {"s2l": 16}
    check_row_split(micro_rows(lite, window), 8)
    assert (lite.steps, lite.tokens_per_step) == (24 * 40 // 48, 48 * window)
    one = lite_budget(cfg, window, 1)  # one process: a quarter of the steps, a 16th of the tokens
    assert (one.steps, one.tokens_per_step) == (24, 40 * window)
