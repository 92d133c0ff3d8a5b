"""Everything a run needs before its first step, built from a config, with bad input caught first.

:func:`build_run` loads (or, for ``pretrain``, creates) the student, the frozen teacher where the
recipe needs one, the tokenizer and the data streams, picks LongReD's distillation layers, and
returns the recipe's :class:`~longred_bench.training.methods.Method`. The checks that can fail on
bad input (recipe, layers, lengths, teacher/student mismatch, data too short) run before any
training compute.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import torch

from longred_bench.errors import UserError
from longred_bench.training.config import ATTENTION_PROJECTIONS, TrainConfig
from longred_bench.training.data import corpus_windows, stream_data
from longred_bench.training.devices import resolve_device
from longred_bench.training.impactful_tokens import MEASURED
from longred_bench.training.methods import METHODS, Method, SentenceGapCE
from longred_bench.training.model_plan import ARCHITECTURE_DEFAULTS
from longred_bench.training.plan import (
    check_lengths,
    check_row_split,
    epochs_line,
    micro_rows,
    micro_steps,
    stream_lengths,
    stream_reads,
)
from longred_bench.training.position_transforms import sentence_delimiter_ids
from longred_bench.training.streams import WindowStream


@dataclass
class Run:
    """A built run: the method (student, teacher), tokenizer, streams and held-out sets;
    ``data``: each stream's data record (:class:`~longred_bench.training.data.StreamData`, with
    the rows the run reads and the epochs that is), kept in ``run.json``; ``notes``: the lines
    to say before the first step (a stream that repeats its data)."""

    method: Method
    tokenizer: Any
    streams: dict[str, WindowStream]
    heldout: dict[str, torch.Tensor]
    micro_steps: int
    device: torch.device
    dtype: torch.dtype
    data: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def tokens_per_step(self) -> int:
        """Tokens one optimizer step reads (all streams, all micro-steps, all processes; the
        first stage's, for a recipe of two: LinearARD's CPT stage, LongRecipe's long stage).
        ``rows`` are one process's: under ``torchrun`` it said one process's share."""
        rows = self.method.rows(0)
        per_process = sum(r * self.streams[n].length for n, r in rows.items())
        return self.micro_steps * per_process * self.method.world


def _pretrain_models(cfg: TrainConfig) -> tuple[torch.nn.Module, Any]:
    from transformers import LlamaConfig, LlamaForCausalLM

    from longred_bench.training.pretrain.tokenizer import tokenizer_for_pretraining

    tokenizer = tokenizer_for_pretraining(cfg.tokenizer, cfg.vocab_size)
    arch = {**ARCHITECTURE_DEFAULTS, **cfg.architecture}
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        **arch,
    )
    torch.manual_seed(cfg.seed)
    return LlamaForCausalLM(config), tokenizer


def _check_pair(cfg: TrainConfig, student: Any, teacher: Any) -> None:
    from longred_bench.models.loading import load_tokenizer

    keys = ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads")
    a = {k: getattr(student.config, k, None) for k in keys}
    b = {k: getattr(teacher.config, k, None) for k in keys}
    if a != b:
        raise UserError(
            f"teacher {cfg.teacher!r} and student {cfg.model!r} differ in architecture ({b} vs "
            f"{a}): distillation compares matching layers"
        )
    if load_tokenizer(cfg.teacher).get_vocab() != load_tokenizer(cfg.model).get_vocab():
        raise UserError(
            f"teacher {cfg.teacher!r} and student {cfg.model!r} have different tokenizers: "
            "distillation needs the same tokens"
        )


def check_init(cfg: TrainConfig, student: Any, model: Any) -> None:
    """A student loaded from ``init`` (its config ``student``) must be ``model``'s architecture
    (its config ``model``) at the RoPE and window ``rope`` gives ``model`` (else the
    distillation would compare another extension); from the configs alone, so a dry run and a
    run before any weights load check it too."""
    from longred_bench.models.loading import extended_config

    def plain(value: Any) -> Any:  # numbers as floats: a saved config may write 2e6 as an int
        if isinstance(value, dict):
            return {k: plain(v) for k, v in sorted(value.items()) if v is not None}
        return (
            float(value)
            if isinstance(value, int | float) and not isinstance(value, bool)
            else value
        )

    want = extended_config(model, cfg.rope)
    keys = ("num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads",
            "max_position_embeddings", "rope_parameters")  # fmt: skip
    got = {k: plain(getattr(student, k, None)) for k in keys}
    expected = {k: plain(getattr(want, k, None)) for k in keys}
    if got != expected:
        diff = {k: (got[k], expected[k]) for k in keys if got[k] != expected[k]}
        raise UserError(f"init {cfg.init!r} is not {cfg.model!r} at rope={cfg.rope} (found vs "
                        f"expected: {diff}): train it at that extension first")  # fmt: skip


def _models(cfg: TrainConfig) -> tuple[torch.nn.Module, torch.nn.Module | None, Any, int]:
    """(student, teacher or None, tokenizer, original window)."""
    from longred_bench.models.loading import extend, load

    if cfg.recipe == "pretrain":
        student, tokenizer = _pretrain_models(cfg)
        return student, None, tokenizer, int(student.config.max_position_embeddings)
    loaded = load(cfg.model)
    window = int(loaded.model.config.max_position_embeddings)
    teacher = None
    if METHODS[cfg.recipe].TEACHER:
        teacher = loaded.model
        if cfg.teacher not in (None, cfg.model):
            teacher = load(cfg.teacher).model
            _check_pair(cfg, loaded.model, teacher)
        teacher.requires_grad_(False).eval()
    if cfg.init:
        student = load(cfg.init).model  # its own tensors: nothing shared with the teacher
        check_init(cfg, student.config, loaded.model.config)
    else:
        # extend() returns an independent copy: the student never shares a tensor with the teacher.
        student = extend(loaded.model, cfg.rope) if cfg.rope else loaded.model
    student.requires_grad_(True)
    return student, teacher, loaded.tokenizer, window


def _check_layers(name: str, layers: tuple[int, ...], num_layers: int) -> None:
    bad = [i for i in layers if not 1 <= i <= num_layers]
    if bad:
        raise UserError(
            f"config {name}={list(layers)}: layer(s) {bad} out of range; the model has layers "
            f"1..{num_layers}"
        )


def _kl_layers(cfg: TrainConfig, student: Any, teacher: Any, s2l: WindowStream) -> tuple[int, ...]:
    """LongReD's rule: the top-M attention-KL layers between teacher and student, plus the last."""
    from longred_bench.metrics.drift import measure_drift, select_layers

    ids = s2l.ids[: min(4, len(s2l))]
    result = measure_drift(teacher, {"student": student}, [(ids, None)], progress=False)
    kl = [layer.attention_kl for layer in result["student"].layers]
    return tuple(select_layers(kl, min(cfg.top_m, len(kl))))


def build_run(
    cfg: TrainConfig, *, rank: int = 0, world: int = 1, anchors: tuple[str, ...] | None = None
) -> Run:
    """Build the run of ``cfg`` (see the module docstring); raises UserError on bad input.
    ``anchors``: LongRecipe's measured anchor types (needed when the config asks for
    ``measured``)."""
    if MEASURED in cfg.anchors and anchors is None:
        raise UserError(
            "anchors=[measured] needs the measurement first: train with `longred-bench train` "
            "(longred_bench.jobs.train.run_training)"
        )
    anchors = cfg.anchors if anchors is None else anchors
    device, dtype = resolve_device(cfg)
    torch.manual_seed(cfg.seed)  # anything drawn from the global generator (LoRA init)
    student, teacher, tokenizer, window = _models(cfg)
    num_layers = int(student.config.num_hidden_layers)
    _check_layers("layers", cfg.layers, num_layers)
    _check_layers("ard_layers", cfg.ard_layers, num_layers)
    check_lengths(cfg, int(student.config.max_position_embeddings), window)
    lengths = stream_lengths(cfg, window)
    sources = {"long": cfg.long_data, "short": cfg.short_data, "s2l": cfg.s2l_data}
    micro = micro_steps(cfg)
    rows = micro_rows(cfg, window)
    check_row_split(rows, world)
    streams, data, notes = {}, {}, []
    select = cfg.recipe == "longrecipe" and (cfg.anchors or cfg.keep_other < 1)
    reads = stream_reads(cfg, window)
    for i, name in enumerate(rows):
        got = stream_data(
            tokenizer, sources[name], lengths[name], seed=cfg.seed + 101 * i,
            retrieval_fraction=cfg.retrieval_fraction,
            retrieval_phrasing=cfg.retrieval_phrasing, copy_fraction=cfg.copy_fraction,
            selection=(anchors, cfg.keep_other) if select and name == "long" else None,
        )  # fmt: skip
        streams[name] = WindowStream(name, got.ids, got.mask, seed=cfg.seed + 101 * i)
        data[name] = {**got.record, "rows_read": reads[name],
                      "epochs": round(reads[name] / len(got.ids), 4)}  # fmt: skip
        line = epochs_line(name, got.record, len(got.ids), reads[name])
        notes += [line] if line else []
    heldout = {}
    if cfg.heldout_every:
        for corpus in ("brown", "austen+kjv"):
            windows = corpus_windows(tokenizer, corpus, lengths["long"], split="validation")
            heldout[corpus] = windows[: cfg.heldout_windows]
    student.to(device)
    if teacher is not None:
        teacher.to(device=device, dtype=dtype)
    layers: tuple[int, ...] = ()
    if cfg.recipe == "longred":
        probe = streams.get("s2l") or streams.get("short") or next(iter(streams.values()))
        layers = cfg.layers or _kl_layers(cfg, student, teacher, probe)
    elif cfg.recipe == "linearard":
        layers = cfg.ard_layers or tuple(range(1, num_layers + 1))
    student = adapt_student(student, cfg)
    student.to(device).train()
    generator = torch.Generator().manual_seed(cfg.seed + 7)
    per_process = {k: r // world for k, r in rows.items()}
    target = int(student.config.max_position_embeddings)
    method = METHODS[cfg.recipe](
        cfg, student, teacher, per_process, window, layers, generator, rank, world, target
    )
    if isinstance(method, SentenceGapCE):
        method.delimiters = sentence_delimiter_ids(tokenizer)
    return Run(method, tokenizer, streams, heldout, micro, device, dtype, data, notes)


def adapt_student(student: torch.nn.Module, cfg: TrainConfig) -> torch.nn.Module:
    """The student with what ``cfg`` trains: LinearARD's LoRA adapters on q/k/v
    (``lora_rank``), or only the attention projections (``trainable: attention``); else as is."""
    if cfg.recipe == "linearard" and cfg.lora_rank:
        from peft import LoraConfig, get_peft_model

        lora = LoraConfig(
            r=cfg.lora_rank, lora_alpha=cfg.lora_alpha,
            target_modules=["q_proj", "k_proj", "v_proj"], lora_dropout=0.0,
        )  # fmt: skip
        with warnings.catch_warnings():  # PEFT reads transformers' deprecated alias
            warnings.filterwarnings("ignore", "`is_gradient_checkpointing` is deprecated",
                                    FutureWarning)  # fmt: skip
            student = get_peft_model(student, lora)
    if cfg.trainable == "attention":
        freeze_all_but_attention(student)
    return student


def merged_lora_weights(model: torch.nn.Module, weights: dict) -> dict:
    """The full ``weights`` of a LoRA model (gathered under FSDP2, named as the PEFT model names
    them), each adapter merged into its base weight (``W + scaling * B @ A``, in float32), named
    as the base model's: what ``merge_and_unload`` gives a model whose weights are not sharded."""
    from peft.tuners.lora import LoraLayer

    out = dict(weights)
    for name, module in model.named_modules():
        if not isinstance(module, LoraLayer):
            continue
        base = f"{name}.base_layer.weight"
        for adapter in module.active_adapters:
            a = out.pop(f"{name}.lora_A.{adapter}.weight").float()
            b = out.pop(f"{name}.lora_B.{adapter}.weight").float()
            delta = (b @ a) * module.scaling[adapter]
            out[base] = (out[base].float() + delta).to(out[base].dtype)
    return {k.removeprefix("base_model.model.").replace(".base_layer.", "."): v
            for k, v in out.items()}  # fmt: skip


def freeze_all_but_attention(model: torch.nn.Module) -> int:
    """Leave only the attention projections (:data:`ATTENTION_PROJECTIONS` of every layer)
    trainable; returns how many parameter tensors stay trainable (a UserError if none, e.g. a
    model that names them otherwise)."""
    kept = 0
    for name, param in model.named_parameters():
        train = any(f"self_attn.{p}." in name for p in ATTENTION_PROJECTIONS)
        param.requires_grad_(train)
        kept += train
    if not kept:
        raise UserError("trainable=attention found no q/k/v/o_proj weights under self_attn")
    return kept


def schedule_factor(cfg: TrainConfig, step: int, total: int) -> float:
    """Learning-rate multiplier at ``step`` (0-based) of ``total``: linear warm-up, then
    constant, cosine or linear decay toward ``min_lr_ratio``, reached at step ``total`` (one
    after the last) or, with ``decay_steps``, at that 0-based step and held after it (a constant
    tail: a longer run with the same config is this run continued at the tail's rate).
    LongRecipe's replay steps (after ``steps``) run at ``replay_lr``."""
    if cfg.replay_steps and step >= cfg.steps:
        return cfg.replay_lr / cfg.lr
    if cfg.warmup_steps and step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    if cfg.schedule == "constant":
        return 1.0
    span = max(1, (cfg.decay_steps or total) - cfg.warmup_steps)
    progress = min(1.0, (step - cfg.warmup_steps) / span)
    shape = 0.5 * (1 + math.cos(math.pi * progress)) if cfg.schedule == "cosine" else 1 - progress
    return cfg.min_lr_ratio + (1 - cfg.min_lr_ratio) * shape
