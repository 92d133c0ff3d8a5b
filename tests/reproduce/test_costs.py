"""The dry-run's GPU estimates: a training unit's FLOPs and GPU-hours against a hand computation,
its memory from the memory model, and the plan printing them with each unit's command."""

from __future__ import annotations

import json

import pytest

from longred_bench.cli import main
from longred_bench.evaluation.paper_suite import BY_TASK, task_names
from longred_bench.reproduce import costs
from longred_bench.reproduce.costs import eval_flops, model_shape, unit_cost
from longred_bench.reproduce.registry import get_spec

ONE = {"docs": 10, "requests": 20, "prompt_tokens": 2000, "generated_tokens": 0}


def _step(ctx, label: str):
    return next(s for s in get_spec(ctx.table).steps(ctx) if s.label == label)


@pytest.fixture
def use_counts(monkeypatch, tmp_path):
    """``use(tasks)``: the estimates read these counts instead of the committed ones."""
    path = tmp_path / "short_tokens.json"

    def use(tasks: dict) -> None:
        path.write_text(json.dumps({"tasks": tasks}))
        monkeypatch.setattr(costs, "SHORT_TOKENS", path)
        costs._short_tokens.cache_clear()

    yield use
    costs._short_tokens.cache_clear()


def _members_counted() -> dict:
    """Every ``paper_short`` member counted as ``ONE``, at its own few-shot count."""
    return {costs.counted_key(t, BY_TASK[t].num_fewshot): ONE for t in task_names()}


def test_a_paper_cpt_run_costs_what_a_hand_computation_gives(tmp_path, monkeypatch):
    from profile_helpers import ctx_of

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    ctx = ctx_of("table3", "paper")
    cost = unit_cost(_step(ctx, "train cpt abf:theta=2e7 seed 0"), ctx.profile)
    # Llama-3-8B: 32 layers of hidden 4096, MLP 14336, 32 query / 8 key-value heads of 128;
    # 128,256 tokens; 512 steps of 2,097,152 tokens, all long rows of 32,768 tokens.
    layer = 4096 * (2 * 4096 + 2 * 1024) + 3 * 4096 * 14336
    forward = 2 * (32 * layer + 128256 * 4096) + 32 * 4 * 4096 * (32768 + 1) / 2
    rows = 2097152 // 32768  # 64 rows of 32,768 tokens a step
    flops = 512 * rows * 32768 * 3 * forward
    assert cost.flops == pytest.approx(flops, rel=1e-9)
    assert cost.gpu_hours == pytest.approx(flops / (989e12 * 0.35) / 3600, rel=1e-9)
    assert 55 < cost.gpu_hours < 65  # about 61 hours of one H100 at 35% MFU
    from longred_bench.training.config import TrainConfig
    from longred_bench.training.memory_model import estimate_train_memory

    cfg = TrainConfig.from_dict(_step(ctx, "train cpt abf:theta=2e7 seed 0").unit.config)
    peak = estimate_train_memory(model_shape("llama3-8b"), cfg, 8, window=8192).peak
    assert cost.gib_per_gpu == pytest.approx(peak / 2**30)


def test_longred_costs_more_than_cpt_by_its_teacher_and_distillation_rows(tmp_path, monkeypatch):
    from profile_helpers import ctx_of

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    ctx = ctx_of("table3", "paper")
    cpt = unit_cost(_step(ctx, "train cpt abf:theta=2e7 seed 0"), ctx.profile)
    longred = unit_cost(_step(ctx, "train longred-c abf:theta=2e7 seed 0"), ctx.profile)
    # half the tokens are short and s2l rows: cheaper attention, but a teacher forward pass
    assert longred.flops != cpt.flops and 0.5 < longred.flops / cpt.flops < 1.5


def test_ruler_flops_count_tasks_samples_and_lengths():
    s = model_shape("smollm2-135m")
    one = eval_flops(s, {"suite": "ruler", "tasks": ["vt"], "samples": 1, "lengths": [4096]},
                     "eval")  # fmt: skip
    both = eval_flops(s, {"suite": "ruler", "tasks": ["vt", "cwe"], "samples": 3,
                          "lengths": [4096, 8192]}, "eval")  # fmt: skip
    assert one == pytest.approx((4096 + 128) * s.forward_flops_per_token(4096))
    assert both == pytest.approx(6 * (one + (8192 + 128) * s.forward_flops_per_token(8192)))
    assert eval_flops(s, {"suite": "paper_short"}, "eval") is None  # stock tasks: not counted


def test_a_local_model_folder_has_its_configs_shape(tmp_path):
    config = {"vocab_size": 1000, "hidden_size": 64, "intermediate_size": 128,
              "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 2,
              "max_position_embeddings": 2048, "rope_theta": 5e5,
              "model_type": "llama"}  # fmt: skip
    (tmp_path / "config.json").write_text(json.dumps(config))
    s = model_shape(str(tmp_path))
    assert (s.layers, s.kv_heads, s.window, s.rope_theta) == (3, 2, 2048, 5e5)
    assert model_shape("tiny-base") is None and model_shape(str(tmp_path / "none")) is None


def test_the_paper_plan_prints_commands_gpu_hours_and_memory(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    assert main(["reproduce", "table3", "--profile", "paper", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "$ torchrun --standalone --nproc-per-node 8 -m longred_bench reproduce table3 " \
        "--profile paper --unit train_cpt_abf:theta=2e7_seed_0" in text  # fmt: skip
    assert "$ longred-bench reproduce table3 --profile paper --unit eval_original_ruler" in text
    line = next(x for x in text.splitlines() if "train cpt abf:theta=2e7 seed 0  (" in x)
    assert "GPU-h, " in line and "GiB per GPU" in line
    assert "In all: " in text and "MFU 0.35" in text
    assert "h on a node of 8 GPUs with the one-GPU units 8 at a time, " in text


def test_the_tiny_plan_has_no_gpu_estimates(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    assert main(["reproduce", "table7", "--profile", "tiny", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "GPU-h" not in text and "$ " not in text


def test_a_short_suite_costs_its_counted_tokens(use_counts):
    """Hand case: a task of 10 documents, 20 requests of 100 tokens and a 50-token generation
    cap each, half its documents (limit 5), on SmolLM2's shape; an uncounted task: no estimate."""
    use_counts({"t": {**ONE, "generated_tokens": 1000}})
    s = model_shape("smollm2-135m")
    config = {"suite": "short", "tasks": ["t"], "limit": 5}
    assert eval_flops(s, config, "eval") == pytest.approx(
        0.5 * 3000 * s.forward_flops_per_token(100)
    )
    assert eval_flops(s, {**config, "limit": None}, "eval") == pytest.approx(
        3000 * s.forward_flops_per_token(100)
    )
    assert eval_flops(s, {**config, "tasks": ["t", "other"]}, "eval") is None


def test_every_task_of_the_short_suite_is_counted():
    """The committed counts cover the ``short`` suite's tasks as its group files list them."""
    from pathlib import Path

    import yaml

    from longred_bench.reproduce.costs import SHORT_SUITE_TASKS, SHORT_TOKENS

    tasks_dir = Path(__file__).resolve().parents[2] / "tasks"
    members = []
    for group in yaml.safe_load((tasks_dir / "_longred_short.yaml").read_text())["task"]:
        members += yaml.safe_load((tasks_dir / f"_{group}.yaml").read_text())["task"]
    assert sorted(members) == sorted(SHORT_SUITE_TASKS["short"])
    counted = json.loads(SHORT_TOKENS.read_text())["tasks"]
    assert set(members) <= set(counted)
    assert all(c["docs"] > 0 and c["prompt_tokens"] >= c["requests"] > 0 for c in counted.values())


def test_the_suites_own_small_models_are_not_costed_as_the_profiles_model(tmp_path, monkeypatch):
    from profile_helpers import ctx_of

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    ctx = ctx_of("tiny_base", "paper-mistral")
    steps = get_spec("tiny_base").steps(ctx)
    assert steps and all(unit_cost(s, ctx.profile).gib_per_gpu is None for s in steps)
    ctx = ctx_of("table3", "paper-mistral")  # a run folder not yet written: its base's shape
    step = next(s for s in get_spec("table3").steps(ctx) if s.label.startswith("eval cpt "))
    assert unit_cost(step, ctx.profile).gib_per_gpu > 14  # Mistral-7B's bf16 weights alone


def test_paper_short_members_cost_their_counts_at_their_own_shots(use_counts):
    """``paper_short`` reads each member's counts as ``TASK@N`` (N: the member's few-shot count),
    never the same task counted at another count; a member not counted (the counts need the hub)
    or a name that is no member leaves the unit unestimated."""
    counts = {**_members_counted(), "mmlu": {**ONE, "prompt_tokens": 9}}

    def flops(tasks):
        use_counts(counts)
        return eval_flops(s, {"suite": "paper_short", "tasks": tasks}, "eval")

    s = model_shape("llama3-8b")
    assert costs.counted_key("mmlu", 5) == "mmlu@5"
    mmlu = flops(["mmlu"])
    assert mmlu == pytest.approx(2000 * s.forward_flops_per_token(100))
    assert flops(None) == pytest.approx(17 * mmlu)  # no selection: all 17 members
    assert flops(["mmlu", "not_a_member"]) is None
    del counts["gsm8k@5"]
    assert flops(None) is None and flops(["mmlu"]) == pytest.approx(mmlu)


def test_the_paper_plan_estimates_paper_short_once_its_members_are_counted(
    tmp_path, monkeypatch, capsys, use_counts
):
    """The committed counts hold no ``paper_short`` member (counting them needs the hub): the
    plan says how many are not counted and the command that counts them; with every member
    counted, its ``paper_short`` units carry GPU-hours."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))

    def plan() -> tuple[str, str]:
        costs._short_tokens.cache_clear()
        assert main(["reproduce", "table2", "--profile", "paper", "--dry-run"]) == 0
        text = capsys.readouterr().out
        unit = next(x for x in text.splitlines() if "eval original paper_short" in x)
        return text, unit

    text, unit = plan()
    assert "17 of its members' tokens are not counted" in text
    assert "short_task_tokens.py --suite paper_short" in text
    assert "GPU-hours not estimated" in unit
    use_counts(_members_counted())
    text, unit = plan()
    assert "GPU-hours from their counted tokens" in text and "GPU-h, " in unit


def test_longrecipe_costs_its_brief_run_and_anchor_measurement(tmp_path, monkeypatch):
    """``anchors: [measured]`` trains a brief cpt run at the full extended window and runs both
    models over 32 windows before the run: its FLOPs and the brief run's memory (rows 3x the
    run's length) count, which ``anchors: [digit]`` does not have."""
    import dataclasses

    from profile_helpers import ctx_of

    from longred_bench.training.config import TrainConfig
    from longred_bench.training.memory_model import estimate_train_memory

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    ctx = ctx_of("longrecipe", "smol")
    step = _step(ctx, "train longrecipe abf:theta=4e6 seed 0")
    digit = {**step.unit.config, "anchors": ["digit"]}
    fixed = dataclasses.replace(step, unit=dataclasses.replace(step.unit, config=digit))
    measured, plain = unit_cost(step, ctx.profile), unit_cost(fixed, ctx.profile)
    cfg = TrainConfig.from_dict(step.unit.config)
    s, window = model_shape(ctx.profile.model.name), ctx.profile.model.window
    target = 4 * window  # abf's default factor: SmolLM2's 8,192 to 32,768
    rows = round(cfg.tokens_per_step * cfg.mix["long"] / target)
    brief = cfg.impact_steps * rows * target * 3 * s.forward_flops_per_token(target)
    measure = 2 * 32 * target * s.forward_flops_per_token(target)
    assert measured.flops - plain.flops == pytest.approx(brief + measure, rel=1e-9)
    brief_cfg = costs.measured_brief(cfg, window)
    assert brief_cfg.long_len == target and brief_cfg.recipe == "cpt"
    assert brief_cfg.micro_tokens == target  # a micro-step of one full row a process
    peaks = [estimate_train_memory(s, c, 1, window=window).peak for c in (cfg, brief_cfg)]
    assert measured.gib_per_gpu == pytest.approx(max(peaks) / 2**30)
    # at paper, the run's micro-steps (3 rows of 32K a GPU for the brief run: 89.5 GiB) are not
    # the brief run's: it fits where the run does
    ctx = ctx_of("longrecipe", "paper")
    step = _step(ctx, "train longrecipe abf:theta=2e7 seed 0")
    brief_cfg = costs.measured_brief(TrainConfig.from_dict(step.unit.config), 8192, 8)
    assert brief_cfg.micro_tokens == 8 * 32768
    digit = {**step.unit.config, "anchors": ["digit"]}
    fixed = dataclasses.replace(step, unit=dataclasses.replace(step.unit, config=digit))
    assert unit_cost(step, ctx.profile).gib_per_gpu <= unit_cost(fixed, ctx.profile).gib_per_gpu


def test_longrecipe_counts_its_anchor_measurements_memory(tmp_path, monkeypatch):
    """Both models and one window's whole logits on one GPU: where that is the most the unit
    holds, it is the unit's memory."""
    from profile_helpers import ctx_of

    s = model_shape("llama3-8b")
    assert costs.measure_memory(s, 32768) == (
        2 * 2 * s.params + 32768 * 128256 * 2 + 32768 * 2 * 14336 * 2
    )
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    ctx = ctx_of("longrecipe", "paper")
    step = _step(ctx, "train longrecipe abf:theta=2e7 seed 0")
    before = unit_cost(step, ctx.profile).gib_per_gpu
    assert costs.measure_memory(s, 32768) / 2**30 < before  # 42 GiB: the run's 74.8 holds more
    monkeypatch.setattr(costs, "measure_memory", lambda shape, length: 100 * 2**30)
    assert unit_cost(step, ctx.profile).gib_per_gpu == pytest.approx(100.0)


def test_a_psa_unit_runs_where_its_psa_config_says() -> None:
    """PCD's PSA units keep their device under ``psa``: read as no device, they were listed
    ``"device": "gpu"`` on smoke's CPU (``--list-units``) and given a GPU estimate."""
    from types import SimpleNamespace

    from longred_bench.profiles import load_profile

    def step(config: dict) -> SimpleNamespace:
        return SimpleNamespace(unit=SimpleNamespace(config=config))

    smoke, smol = load_profile("smoke"), load_profile("smol")
    assert costs.on_cpu(step({"psa": {"device": "cpu"}, "pcd": None}), smoke)
    assert not costs.on_cpu(step({"psa": {"device": "cuda"}, "pcd": None}), smoke)
    assert costs.on_cpu(step({"device": "cpu"}), smol)
    assert not costs.on_cpu(step({"psa": {"device": "auto"}}), load_profile("paper"))


def test_drift_flops_count_the_original_and_every_extension_and_extended_model():
    """A drift unit runs its texts through the original model and each model it compares:
    every ``rope`` extension and every ``extended`` (trained) model."""
    s = model_shape("smollm2-135m")
    one = 4 * 1024 * s.forward_flops_per_token(1024)  # 4 texts of 1,024 tokens, one model
    base = {"original": "smollm2-135m", "num_texts": 4, "seq_len": 1024}
    assert eval_flops(s, base, "drift") == pytest.approx(one)
    both = {**base, "rope": ["pi:factor=2"], "extended": ["/runs/a", "/runs/b"]}
    assert eval_flops(s, both, "drift") == pytest.approx(4 * one)


def test_a_short_suite_limit_above_a_tasks_documents_costs_the_whole_task(use_counts):
    """``limit`` 100 of a task of 10 documents scores its 10: the whole task's tokens, not ten
    times them."""
    use_counts({"t": ONE})
    s = model_shape("smollm2-135m")
    config = {"suite": "short", "tasks": ["t"]}
    whole = eval_flops(s, {**config, "limit": None}, "eval")
    assert eval_flops(s, {**config, "limit": 100}, "eval") == pytest.approx(whole)


def test_an_evaluations_gpu_hours_are_its_flops_at_the_profiles_rate(tmp_path, monkeypatch):
    """An evaluation's GPU-hours are its FLOPs over ``gpu_tflops`` x ``mfu``, in hours, as a
    training run's are."""
    from profile_helpers import ctx_of

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    ctx = ctx_of("table2", "paper")
    cost = unit_cost(_step(ctx, "eval original ruler"), ctx.profile)
    hw = ctx.profile.hardware
    assert cost.flops and cost.gpu_hours == pytest.approx(
        cost.flops / (hw.gpu_tflops * 1e12 * hw.mfu) / 3600, rel=1e-9
    )


def test_perplexity_flops_count_its_windows_at_each_length():
    """A perplexity unit states its windows as ``samples`` (the grid's ``ppl.windows``): each
    one a forward pass at the length."""
    s = model_shape("smollm2-135m")
    config = {"suite": "ppl", "lengths": [1024], "samples": 4}
    assert eval_flops(s, config, "ppl") == pytest.approx(4 * 1024 * s.forward_flops_per_token(1024))


def test_linearards_relation_logits_cost_four_attention_products_per_kind(tmp_path, monkeypatch):
    """LinearARD's relation KL adds, per ``s2l`` token, layer and kind (q, k, v), 4 products
    of the attention's size (2 x 2 x heads x head_dim x its mean causal length) over what the
    same run without kinds costs."""
    from dataclasses import replace

    from profile_helpers import ctx_of

    from longred_bench.training.config import TrainConfig

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    ctx = ctx_of("table3", "paper")
    step = _step(ctx, "train linearard abf:theta=2e7 seed 0")
    cfg, window = TrainConfig.from_dict(step.unit.config), ctx.profile.model.window
    s = model_shape("llama3-8b")
    tokens, length = costs.stream_tokens(cfg, window)["s2l"]
    relation = tokens * s.layers * 3 * 4 * (2 * 2 * s.heads * s.head_dim * (length + 1) / 2)
    assert cfg.ard_kinds == ("q", "k", "v") and not cfg.ard_layers
    without = costs.train_flops(s, replace(cfg, ard_kinds=()), window)
    assert costs.train_flops(s, cfg, window) - without == pytest.approx(relation, rel=1e-9)


def test_longred_projects_to_the_vocabulary_on_long_rows_and_distils_the_others(
    tmp_path, monkeypatch
):
    """LongReD's ``short`` and ``s2l`` rows are distilled from the frozen teacher's hidden
    states: the student's vocabulary projection runs on its ``long`` rows only, and the
    teacher's forward pass (no projection) on the ``short`` and ``s2l`` rows, never on the
    ``long`` ones."""
    from profile_helpers import ctx_of

    from longred_bench.training.config import TrainConfig

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    ctx = ctx_of("table3", "paper")
    step = _step(ctx, "train longred-c abf:theta=2e7 seed 0")
    cfg, window = TrainConfig.from_dict(step.unit.config), ctx.profile.model.window
    s = model_shape("llama3-8b")
    streams = costs.stream_tokens(cfg, window)
    assert set(streams) == {"long", "short", "s2l"}
    forward = s.forward_flops_per_token
    hand = sum(tokens * 3 * forward(length, head=name == "long")
               + (0 if name == "long" else tokens * forward(length, head=False))
               for name, (tokens, length) in streams.items())  # fmt: skip
    assert costs.train_flops(s, cfg, window) == pytest.approx(hand, rel=1e-9)


def test_a_drift_units_memory_is_at_its_texts_length(tmp_path, monkeypatch):
    """A drift measurement holds a batch of its texts (``drift.seq_len`` tokens), not of the
    model's window: its memory per GPU is an evaluation's at that length."""
    from profile_helpers import ctx_of

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    mine = tmp_path / "short-texts.yaml"
    mine.write_text("extends: paper\ndrift: {seq_len: 2048}\n")
    ctx = ctx_of("table1", str(mine))
    prof, step = ctx.profile, _step(ctx, "drift zero-shot")
    assert step.unit.config["seq_len"] == 2048 and prof.model.window == 8192
    want = costs.eval_memory(model_shape("llama3-8b"), 2048 + costs.EVAL_GENERATION, 1)
    assert unit_cost(step, prof).gib_per_gpu == pytest.approx(want / 2**30)


def test_an_evaluations_memory_holds_its_whole_batch(tmp_path, monkeypatch):
    """``evaluation.batch_size`` prompts are held at once: the memory per GPU of an evaluation
    is of that batch at its longest length, more than one prompt's."""
    from profile_helpers import ctx_of

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    mine = tmp_path / "batch4.yaml"
    mine.write_text("extends: paper\nevaluation: {batch_size: 4}\n")
    ctx = ctx_of("table2", str(mine))
    prof, step = ctx.profile, _step(ctx, "eval original ruler")
    assert step.unit.config["batch_size"] == 4
    s, longest = model_shape("llama3-8b"), max(step.unit.config["lengths"])
    want = costs.eval_memory(s, longest + costs.EVAL_GENERATION, 4)
    assert want > costs.eval_memory(s, longest + costs.EVAL_GENERATION, 1)
    assert unit_cost(step, prof).gib_per_gpu == pytest.approx(want / 2**30)


def test_a_merge_costs_no_gpu_time(tmp_path, monkeypatch):
    """A merge interpolates two models' weights: no GPU-hours and no memory estimate, however
    many steps the run it merges trained."""
    from profile_helpers import ctx_of

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    ctx = ctx_of("table7", "paper")
    step = _step(ctx, "train merge abf:theta=2e7 seed 0")
    assert unit_cost(step, ctx.profile) == costs.UnitCost(0.0, 0.0, None)
