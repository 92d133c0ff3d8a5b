"""The GPU estimate's arithmetic against hand computations: an evaluation's memory per GPU (bf16
weights, the KV cache of the batch, the larger of the prefill's MLP activations and the fp32
logits), LongRecipe's anchor measurement's memory, and the FLOPs of RULER, PSA, perplexity and
short-suite units; and which units a plan runs on the CPU."""

from __future__ import annotations

import json
from types import SimpleNamespace as NS

import pytest

from longred_bench.reproduce import costs
from longred_bench.reproduce.costs import EVAL_GENERATION, eval_flops, model_shape
from longred_bench.reproduce.registry import get_spec

S = model_shape("llama3-8b")


def test_an_evaluations_memory_is_weights_kv_cache_and_the_larger_activation() -> None:
    # Llama 3 8B: 32 layers, 8 KV heads of 128, MLP 14336, vocabulary 128256
    weights = 2 * S.params
    kv = 4 * 1000 * 32 * 2 * 8 * 128 * 2
    prefill = 4 * 1000 * 2 * 14336 * 2
    assert (S.layers, S.kv_heads, S.head_dim, S.intermediate, S.vocab) == (
        32, 8, 128, 14336, 128256)  # fmt: skip
    assert costs.eval_memory(S, 1000, 4) == weights + kv + prefill
    # one token's prompt: the last positions' fp32 logits outweigh the MLP activations
    logits = 4 * 128256 * 4 * 2
    assert costs.eval_memory(S, 1, 4) == weights + 4 * 32 * 2 * 8 * 128 * 2 + logits


def test_the_anchor_measurement_holds_two_models_and_one_windows_logits() -> None:
    assert costs.measure_memory(S, 1000) == (
        4 * S.params + 1000 * 128256 * 2 + 1000 * 2 * 14336 * 2
    )


def test_ruler_and_psa_flops_count_every_task_sample_and_the_answer() -> None:
    """RULER without ``tasks`` runs its 13; each sample reads its prompt and up to 128 answer
    tokens; a PSA unit is costed as RULER is."""
    per = S.forward_flops_per_token
    config = {"suite": "ruler", "samples": 3, "lengths": [1024, 2048]}
    want = sum(13 * 3 * (n + EVAL_GENERATION) * per(n) for n in (1024, 2048))
    assert eval_flops(S, config, "eval") == pytest.approx(want)
    assert eval_flops(S, {**config, "tasks": ["a", "b"]}, "eval") == pytest.approx(want * 2 / 13)
    psa = {"samples": 3, "lengths": [1024, 2048]}
    assert eval_flops(S, psa, "psa") == pytest.approx(want)


def test_perplexity_sums_its_lengths_and_reads_its_windows_as_samples() -> None:
    per = S.forward_flops_per_token
    config = {"suite": "ppl", "lengths": [1024, 4096], "samples": 2, "windows": 8}
    assert eval_flops(S, config, "ppl") == pytest.approx(2 * (1024 * per(1024) + 4096 * per(4096)))
    del config["samples"]
    assert eval_flops(S, config, "ppl") == pytest.approx(8 * (1024 * per(1024) + 4096 * per(4096)))


@pytest.fixture
def counts(monkeypatch, tmp_path):
    path = tmp_path / "short_tokens.json"
    task = {"docs": 10, "requests": 40, "prompt_tokens": 4000, "generated_tokens": 1000}
    path.write_text(json.dumps({"tasks": {"t": task, "longred_mmlu": task}}))
    monkeypatch.setattr(costs, "SHORT_TOKENS", path)
    costs._short_tokens.cache_clear()
    yield
    costs._short_tokens.cache_clear()


def test_a_short_task_costs_its_share_of_prompt_and_generated_tokens(counts) -> None:
    """``limit`` 5 of 10 documents: half of the 4000 prompt and 1000 generated tokens, each at
    the mean request's length (4000 / 40 requests)."""
    want = 0.5 * 5000 * S.forward_flops_per_token(100)
    config = {"suite": "short", "tasks": ["t"], "limit": 5}
    assert eval_flops(S, config, "eval") == pytest.approx(want)
    assert eval_flops(S, {**config, "limit": None}, "eval") == pytest.approx(2 * want)


def test_a_suites_own_task_list_takes_its_limit(counts, monkeypatch) -> None:
    """Without ``tasks`` the short suite's own ten are counted (one counted here: the others
    leave it unestimated), at the unit's ``limit``."""
    assert eval_flops(S, {"suite": "short", "limit": 5}, "eval") is None
    monkeypatch.setattr(costs, "SHORT_SUITE_TASKS", {"short": ("longred_mmlu",)})
    assert eval_flops(S, {"suite": "short", "limit": 5}, "eval") == pytest.approx(
        0.5 * 5000 * S.forward_flops_per_token(100))  # fmt: skip


def _step(config: dict) -> NS:
    return NS(unit=NS(config=config))


def test_auto_runs_on_the_cpu_where_the_profile_evaluates_on_the_cpu() -> None:
    cpu, gpu = NS(evaluation=NS(device="cpu")), NS(evaluation=NS(device="cuda:1"))
    assert costs.on_cpu(_step({"device": "auto"}), cpu)
    assert not costs.on_cpu(_step({"device": "auto"}), gpu)
    assert costs.on_cpu(_step({"psa": {"device": "cpu"}}), gpu)
    assert not costs.on_cpu(_step({}), cpu)


def test_a_small_models_plan_on_one_process_reads_no_training_code() -> None:
    def prof(name: str, nproc: int) -> NS:
        return NS(model=NS(name=name), hardware=NS(nproc_per_node=nproc))

    assert not costs.reads_training_code(prof("tiny-base", 1))
    assert costs.reads_training_code(prof("tiny-base", 2))
    assert costs.reads_training_code(prof("smollm2-135m", 1))


def _unit(kind: str, config: dict) -> NS:
    return NS(unit=NS(kind=kind, config=config))


def test_an_evaluations_memory_is_its_batch_at_its_longest_length_and_answer() -> None:
    from longred_bench.profiles import load_profile

    paper = load_profile("paper")
    config = {"suite": "ruler", "lengths": [4096, 1024], "samples": 1, "batch_size": 2}
    cost = costs.unit_cost(_unit("eval", config), paper)
    assert cost.gib_per_gpu == pytest.approx(costs.eval_memory(S, 4096 + 128, 2) / 2**30)


def test_a_drift_unit_has_the_shape_of_its_original_model_and_zoo_models_none() -> None:
    """A drift unit of SmolLM2 at a Llama profile is costed as SmolLM2; a model of the suite's
    own zoo (tiny-random) is not estimated, not taken for the profile's."""
    from longred_bench.profiles import load_profile

    paper = load_profile("paper")
    small = model_shape("smollm2-135m")
    drift = {"original": "smollm2-135m", "num_texts": 2, "seq_len": 1024}
    cost = costs.unit_cost(_unit("drift", drift), paper)
    assert cost.gib_per_gpu == pytest.approx(costs.eval_memory(small, 1024 + 128, 1) / 2**30)
    tiny = {"model": "tiny-random", "suite": "ruler", "lengths": [1024]}
    assert costs.unit_cost(_unit("eval", tiny), paper) == costs.UnitCost(None, None, None)


def test_a_run_that_stops_at_startup_keeps_its_gpu_hours(tmp_path, monkeypatch) -> None:
    """64 rows a micro-step do not split over 3 processes: the run would stop at startup, so it
    has no memory estimate, but its GPU-hours are those of the run as configured."""
    from profile_helpers import ctx_of

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    mine = tmp_path / "three.yaml"
    mine.write_text("extends: paper\nhardware: {nproc_per_node: 3}\n")
    label = "train cpt abf:theta=2e7 seed 0"
    costs_at = {}
    for name in ("paper", str(mine)):
        ctx = ctx_of("table3", name)
        step = next(s for s in get_spec("table3").steps(ctx) if s.label == label)
        costs_at[name] = costs.unit_cost(step, ctx.profile)
    three = costs_at[str(mine)]
    assert three.gib_per_gpu is None and costs_at["paper"].gib_per_gpu is not None
    assert three.gpu_hours == pytest.approx(costs_at["paper"].gpu_hours, rel=1e-9)


def test_longrecipes_brief_run_reads_whole_rows_for_every_process(tmp_path, monkeypatch) -> None:
    """The brief run's rows a step are rounded up to a multiple of the processes: ``paper``'s
    96 rows of the extended window are 100 over 5 processes, 4 rows more a step than over one."""
    from profile_helpers import ctx_of

    from longred_bench.training.config import TrainConfig

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    ctx = ctx_of("longrecipe", "paper")
    label = "train longrecipe abf:theta=2e7 seed 0"
    step = next(s for s in get_spec("longrecipe").steps(ctx) if s.label == label)
    window = ctx.profile.model.window
    cfg = TrainConfig.from_dict(step.unit.config)
    brief = costs.measured_brief(cfg, window, 1)
    target = brief.long_len
    assert brief.tokens_per_step == 96 * target
    extra = cfg.impact_steps * 4 * target * 3 * S.forward_flops_per_token(target)
    one, five = (costs.train_flops(S, cfg, window, w) for w in (1, 5))
    assert five - one == pytest.approx(extra, rel=1e-6)
