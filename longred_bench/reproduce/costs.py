"""What a unit costs on GPUs, for the dry-run of a profile that runs on them: FLOPs, GPU-hours and
peak memory per GPU, from the model's shape (:mod:`longred_bench.training.shapes`) and the unit's
own config; pure arithmetic, nothing is loaded.

- **FLOPs.** A training run: per stream of its mix (``long``, ``short``, ``s2l``, at their row
  lengths), the student's forward and backward passes (3x the forward FLOPs, attention at the
  row's length; the vocabulary projection only where the stream's loss is cross-entropy), the
  frozen teacher's forward pass on the streams it is distilled from (LongReD: ``short`` and
  ``s2l``; LinearARD: ``s2l``) and LinearARD's relation logits (``q q^T``, ``k k^T``,
  ``v v^T`` of teacher and student, and the student's backward through them: 4 attention-sized
  products per kind); LongRecipe's ``anchors: [measured]`` adds its brief ``cpt`` run at the
  full extended window and both models' forward passes over the anchor windows. An
  evaluation: the forward passes of its prompts (RULER: tasks x samples at each length;
  perplexity: windows x length; drift: texts x length through the original and
  each extension; a short suite: its tasks' prompt tokens, and the tokens a generation may
  add, as ``benchmarks/short_task_tokens.py`` counted them with SmolLM2's tokenizer
  (:data:`SHORT_TOKENS`; ``limit`` scales them; a generation counts its whole token cap, an
  upper bound; a task it has not counted leaves the unit unestimated). A ``paper_short``
  member is counted as ``TASK@N``, the stock lm-eval task at the member's own few-shot count,
  which needs the hub: ``python benchmarks/short_task_tokens.py --suite paper_short`` where it
  is reachable; until then those units are unestimated.
- **GPU-hours.** FLOPs / (``hardware.gpu_tflops`` x ``hardware.mfu``): the model-FLOPs
  utilisation a profile states. It is an assumption until measured on the user's GPUs (the
  built-in profiles say 0.35; ``benchmarks/g4_train_real_shapes.sh`` measures it).
- **Memory per GPU.** Training: :func:`~longred_bench.training.memory_model.estimate_train_memory`
  over ``nproc_per_node`` processes, LongRecipe's the largest of its run, its brief run and its
  anchor measurement (:func:`measure_memory`) (none
  where a micro-step's rows do not split over them: the run would stop at startup).
  Evaluation: the weights in bf16, the KV cache of a batch at
  the longest length, and the larger of the prefill's MLP activations and the last positions'
  fp32 logits.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from longred_bench.evaluation import paper_suite
from longred_bench.evaluation.config import LONG_SUITES
from longred_bench.training.shapes import SHAPES, ModelShape

GIB = 2**30
# The models the built-in profiles name, by their hub ids and zoo names (``compare``'s published
# extensions have the shape of the model they extend).
SHAPE_OF: dict[str, str] = {
    "smollm2-135m": "smollm2-135m",
    "HuggingFaceTB/SmolLM2-135M": "smollm2-135m",
    "HuggingFaceTB/SmolLM2-135M-Instruct": "smollm2-135m",
    "meta-llama/Meta-Llama-3-8B": "llama3-8b",
    "meta-llama/Meta-Llama-3-8B-Instruct": "llama3-8b",
    "mistralai/Mistral-7B-v0.3": "mistral-7b-v0.3",
    "meta-llama/Llama-2-7b-hf": "llama2-7b",
    "NousResearch/Yarn-Llama-2-7b-128k": "llama2-7b",
    "togethercomputer/LLaMA-2-7B-32K": "llama2-7b",
    "princeton-nlp/Llama-3-8B-ProLong-512k-Instruct": "llama3-8b",
    "gradientai/Llama-3-8B-Instruct-Gradient-1048k": "llama3-8b",
}
SHORT_TOKENS = Path(__file__).with_name("short_tokens.json")
"""Per offline short task: documents, requests, prompt and generated tokens (SmolLM2's)."""
SHORT_SUITE_TASKS = {"short": ("longred_mmlu", "longred_lambada_openai", "longred_triviaqa",
                               "longred_squad", "longred_boolq", "longred_piqa",
                               "longred_hellaswag", "longred_winogrande", "longred_arc_easy",
                               "longred_arc_challenge")}  # fmt: skip
"""The tasks of a short suite run without ``tasks`` (``tasks/_longred_short.yaml``'s groups)."""
RULER_DEFAULT_TASKS = 13  # RULER's task list (taskdata/ruler/registry.TASKS)
EVAL_GENERATION = 128  # tokens a RULER answer may take


@dataclass(frozen=True)
class UnitCost:
    """One unit's estimate: model FLOPs, GPU-hours, peak GiB per GPU (None: not estimated) and
    the pinned host GiB per GPU of activation offload (0: none)."""

    flops: float | None
    gpu_hours: float | None
    gib_per_gpu: float | None
    host_gib_per_gpu: float = 0.0


def model_shape(name: str) -> ModelShape | None:
    """The shape of model ``name`` (a zoo name, a hub id of :data:`SHAPE_OF`, or a local folder
    with a ``config.json``); None when it is none of these."""
    if name in SHAPE_OF or name in SHAPES:
        return SHAPES[SHAPE_OF.get(name, name)]
    config = Path(name).expanduser() / "config.json"
    if config.is_file():
        data = json.loads(config.read_text(encoding="utf-8"))
        if "rope_theta" in data and "rope_parameters" not in data:
            data["rope_parameters"] = {"rope_theta": data["rope_theta"]}
        try:
            return ModelShape.from_config(SimpleNamespace(**data), name=Path(name).name)
        except (AttributeError, TypeError, ValueError):
            return None
    return None


def stream_tokens(cfg: Any, window: int) -> dict[str, tuple[int, int]]:
    """Per stream, (tokens over the whole run, row length): the rows it hands out
    (:func:`~longred_bench.training.plan.stream_reads`) times its row length."""
    from longred_bench.training.plan import stream_lengths, stream_reads

    lengths = stream_lengths(cfg, window)
    return {n: (rows * lengths[n], lengths[n]) for n, rows in stream_reads(cfg, window).items()}


def measured_brief(cfg: Any, window: int, world: int = 1) -> Any:
    """The config of LongRecipe's brief run before its training (``anchors: [measured]``,
    :func:`~longred_bench.training.anchors.brief_config`) over ``world`` processes; None for a
    run without one."""
    from longred_bench.training.impactful_tokens import MEASURED

    if cfg.recipe != "longrecipe" or MEASURED not in cfg.anchors or not cfg.rope:
        return None
    from longred_bench.models.rope import target_window
    from longred_bench.training.anchors import brief_config

    return brief_config(cfg, target_window(cfg.rope, window), world)


def train_flops(s: ModelShape, cfg: Any, window: int, world: int = 1) -> float:
    """Model FLOPs of a training run (module docstring), LongRecipe's brief run and anchor
    measurement included."""
    from longred_bench.training.anchors import IMPACT_WINDOWS

    brief = measured_brief(cfg, window, world)
    total = 0.0
    if brief is not None:  # a cpt run at the full window, then both models over the windows
        total += train_flops(s, brief, window)
        total += 2 * IMPACT_WINDOWS * brief.long_len * s.forward_flops_per_token(brief.long_len)
    head_streams = {"longred": ("long",), "linearard": ("long",)}.get(cfg.recipe)
    teacher_streams = {"longred": ("short", "s2l"), "linearard": ("s2l",)}.get(cfg.recipe, ())
    for name, (tokens, length) in stream_tokens(cfg, window).items():
        head = head_streams is None or name in head_streams
        total += tokens * 3 * s.forward_flops_per_token(length, head=head)
        if name in teacher_streams:
            total += tokens * s.forward_flops_per_token(length, head=False)
        if cfg.recipe == "linearard" and name == "s2l":
            kinds = len(cfg.ard_kinds)
            layers = len(cfg.ard_layers) or s.layers
            attention = 2 * 2 * s.heads * s.head_dim * (length + 1) / 2
            total += tokens * layers * kinds * 4 * attention
    return total


def eval_flops(s: ModelShape, config: dict[str, Any], kind: str) -> float | None:
    """Model FLOPs of an evaluation or measurement unit; None where it is not estimated."""
    if kind == "drift":
        models = 1 + len(config.get("rope") or []) + len(config.get("extended") or [])
        tokens = int(config["num_texts"]) * int(config["seq_len"])
        return models * tokens * s.forward_flops_per_token(int(config["seq_len"]))
    suite = config.get("suite")
    if suite in LONG_SUITES or kind == "psa":
        tasks = len(config.get("tasks") or ()) or RULER_DEFAULT_TASKS
        samples = int(config.get("samples") or 1)
        lengths = [int(n) for n in config.get("lengths") or ()]
        return sum(tasks * samples * (n + EVAL_GENERATION) * s.forward_flops_per_token(n)
                   for n in lengths)  # fmt: skip
    if suite == "ppl" or kind == "ppl":
        lengths = [int(n) for n in config.get("lengths") or ()]
        windows = int(config.get("samples") or config.get("windows") or 1)
        return sum(windows * n * s.forward_flops_per_token(n) for n in lengths)
    if suite in SHORT_SUITE_TASKS:
        return short_flops(s, config.get("tasks") or SHORT_SUITE_TASKS[suite], config.get("limit"))
    if suite == paper_suite.SUITE:
        keys = paper_short_keys(config.get("tasks"))
        return None if keys is None else short_flops(s, keys, config.get("limit"))
    return None


def paper_short_keys(tasks: Any) -> list[str] | None:
    """The count keys (:func:`counted_key`) of ``paper_short``'s members ``tasks`` (None or
    empty: all 17); None where a name is no member."""
    members = [paper_suite.BY_TASK.get(t) for t in tasks or paper_suite.task_names()]
    if None in members:
        return None
    return [counted_key(m.task, m.num_fewshot) for m in members]


def uncounted(keys: Any) -> list[str]:
    """Those of ``keys`` that :data:`SHORT_TOKENS` does not count."""
    return [k for k in keys if k not in _short_tokens()]


def counted_key(task: str, num_fewshot: int) -> str:
    """The key of ``task``'s counts in :data:`SHORT_TOKENS` at ``num_fewshot`` shots
    (``TASK@N``: how ``paper_short``'s members are counted; an offline task's key is its name)."""
    return f"{task}@{num_fewshot}"


@cache
def _short_tokens() -> dict[str, dict[str, int]]:
    return json.loads(SHORT_TOKENS.read_text(encoding="utf-8"))["tasks"]


def short_flops(s: ModelShape, tasks: Any, limit: int | None) -> float | None:
    """Forward FLOPs of a short-suite evaluation of ``tasks`` (``limit`` documents each, None:
    all): each request's tokens at the task's mean request length, each generated token at the
    end of its prompt; None when a task was not counted."""
    counted = _short_tokens()
    total = 0.0
    for task in tasks:
        c = counted.get(task)
        if c is None:
            return None
        share = 1.0 if limit is None else min(1.0, int(limit) / c["docs"])
        mean = max(1, c["prompt_tokens"] // c["requests"])
        tokens = c["prompt_tokens"] + c["generated_tokens"]
        total += share * tokens * s.forward_flops_per_token(mean)
    return total


def eval_memory(s: ModelShape, length: int, batch: int) -> int:
    """Peak bytes of one GPU evaluating ``batch`` prompts of ``length`` tokens in bf16."""
    weights = 2 * s.params
    kv = batch * length * s.layers * 2 * s.kv_heads * s.head_dim * 2
    prefill = batch * length * 2 * s.intermediate * 2
    logits = batch * s.vocab * 4 * 2
    return weights + kv + max(prefill, logits)


def measure_memory(s: ModelShape, length: int) -> int:
    """Peak bytes of LongRecipe's anchor measurement on one GPU: the original and the briefly
    extended model in bf16, one window's whole logits and its prefill's MLP activations."""
    return 2 * 2 * s.params + length * s.vocab * 2 + length * 2 * s.intermediate * 2


def unit_cost(step: Any, profile: Any) -> UnitCost:
    """The estimate of one unit (a :class:`~longred_bench.reproduce.spec.Step`) at ``profile``."""
    unit, config, hw = step.unit, step.unit.config, profile.hardware
    name = str(config.get("model") or config.get("original") or profile.model.name)
    from longred_bench.models.zoo import ZOO

    s = model_shape(name)
    if s is None and name not in ZOO:  # a trained model (a run folder, not yet written) has
        s = model_shape(profile.model.name)  # its base model's shape
    if s is None:  # the suite's own small models (tiny-base) and unknown shapes: no estimate
        return UnitCost(None, None, None)
    rate = hw.gpu_tflops * 1e12 * hw.mfu
    if unit.kind == "train":
        from longred_bench.training.config import TrainConfig
        from longred_bench.training.memory_model import estimate_train_memory

        if config.get("recipe") == "merge":
            return UnitCost(0.0, 0.0, None)
        cfg = TrainConfig.from_dict(config)
        window, world = profile.model.window, hw.nproc_per_node
        flops = train_flops(s, cfg, window, world)
        brief = measured_brief(cfg, window, world)  # its rows are 3x longer than the run's
        memory = [estimate_train_memory(s, c, world, device="cuda", window=window)
                  for c in (cfg, brief) if c is not None]  # fmt: skip
        if any(m.unsplit for m in memory):  # the run stops at startup (the plan says why)
            return UnitCost(flops, flops / rate / 3600, None)
        peak = max(memory, key=lambda m: m.peak)
        gib = max(peak.peak, measure_memory(s, brief.long_len) if brief else 0) / GIB
        return UnitCost(flops, flops / rate / 3600, gib, peak.host / GIB)
    flops = eval_flops(s, config, unit.kind)
    lengths = [int(n) for n in config.get("lengths") or ()] or [
        int(config.get("seq_len") or config.get("max_length") or profile.model.window)
    ]
    batch = int(config.get("batch_size") or 1)
    peak = eval_memory(s, max(lengths) + EVAL_GENERATION, batch) / GIB
    return UnitCost(flops, None if flops is None else flops / rate / 3600, peak)


def auto_on_cuda(profile: Any) -> bool:
    """Whether ``hardware.device: auto`` trains on CUDA at ``profile``: where the profile
    evaluates on CUDA (a GPU profile); elsewhere (``smoke``, ``tiny``) on the CPU."""
    return str(profile.evaluation.device).startswith("cuda")


def on_cpu(step: Any, profile: Any) -> bool:
    """Whether ``profile`` runs ``step``'s unit on the CPU (its config's ``device``, a PSA
    unit's under ``psa``; ``auto`` where the profile evaluates on the CPU, as its cluster jobs
    ask no GPU then), where a GPU estimate means nothing and a cluster job needs no GPU."""
    config = step.unit.config
    device = str(config.get("device") or (config.get("psa") or {}).get("device") or "")
    return device == "cpu" or (device == "auto" and not auto_on_cuda(profile))


def shows_costs(profile: Any) -> bool:
    """Whether a dry-run at ``profile`` prints GPU costs and commands: its model has a known
    shape (the suite's own small models have none; their runs are timed from the cache)."""
    return model_shape(profile.model.name) is not None


def reads_training_code(profile: Any) -> bool:
    """Whether a dry-run at ``profile`` asks the training code (torch): where it prints GPU
    estimates, or where a run's rows are split over several processes (the startup checks);
    the plans of the suite's own small models on one process import no torch."""
    return shows_costs(profile) or profile.hardware.nproc_per_node > 1
