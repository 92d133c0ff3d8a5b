"""The training config: one frozen dataclass, resolved from a recipe's YAML, a profile file, a
user YAML and ``--set KEY=VALUE`` overrides, in that order; unknown keys and bad values are
rejected.

A recipe YAML (``training/recipes/<recipe>.yaml``) holds the method's own defaults (loss weights,
data mix, optimiser). A profile (:mod:`longred_bench.profiles`) adds its model, its hardware and
its ``training.<recipe>`` keys (the budget: steps, tokens per step, lengths, learning rate). The
resolved config is written beside every run (``DIR/config.yaml``) and hashed to recognise it.

Data streams. A step draws ``tokens_per_step`` tokens split over up to three streams by the
``mix_*`` token fractions (LongReD's 4:3:1 is ``mix_long=4, mix_short=3, mix_s2l=1``):

- ``long``: ``long_data`` in windows of ``long_len`` tokens (D1, the student's extended window);
- ``short``: ``short_data`` in windows of ``short_len`` tokens (D2, short texts);
- ``s2l``: ``s2l_data`` in windows of the original window (D3).

A data source is ``corpus[+corpus...]`` (train splits of brown, austen, kjv), the same with a
``+retrieval`` member (plus retrieval examples built at the stream's length, as
``retrieval_fraction`` of the rows), ``pretrain`` (the tiny base's pretraining mix: prose plus
in-window retrieval examples) or ``random`` (seeded random ids, smoke runs only); members may
also be local data (``txt:PATH``, ``jsonl:PATH[:field=NAME]``, ``disk:PATH``) or hub datasets
(``hf:NAME[:split=S]...``) with an offline ``|FALLBACK`` (:mod:`longred_bench.data.corpus_spec`).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import asdict, dataclass, field, fields
from importlib import resources
from pathlib import Path
from typing import Any

from longred_bench.errors import UserError, reject_unknown_keys
from longred_bench.training.config_checks import (
    check_copy_warmup,
    check_longrecipe,
    check_merge,
    check_optimizer,
    check_snapshots,
    check_warmup,
    choice,
)
from longred_bench.training.method_groups import METHOD_GROUPS, flatten_groups

EXTENDING_RECIPES = ("cpt", "mix-cpt", "longred", "linearard", "pose", "rpes", "attention-only",
                     "longrecipe")  # fmt: skip
"""Recipes that train a RoPE-extended student (they need ``rope``)."""
RECIPES = ("pretrain", "cpt", "mix-cpt", "control", "longred", "linearard", "pose", "rpes",
           "attention-only", "merge", "longrecipe")  # fmt: skip
TRAINABLE = ("all", "attention")
ATTENTION_PROJECTIONS = ("q_proj", "k_proj", "v_proj", "o_proj")
# Fields added after runs were cached: left out of to_dict (so of every cache key) while they
# hold their default, so adding them rebuilt nothing.
_OMITTED_AT_DEFAULT = ("trainable", "merge_with", "merge_weight", "init", "anchors", "keep_other",
                       "replay_steps", "replay_lr", "impact_steps", "snapshot_steps", "lm_loss",
                       "mixed_precision", "compile", "activation_offload")  # fmt: skip
SCHEDULES = ("constant", "cosine", "linear")
SAMPLERS = ("uniform", "cream")
DISTRIBUTED = ("ddp", "fsdp")
TEACHER_PLACEMENT = ("replicate", "shard")
LM_LOSSES = ("auto", "plain", "chunked", "liger")
MIXED_PRECISION = ("autocast", "fsdp")
ARD_KINDS = ("q", "k", "v")


BOOKKEEPING = ("checkpoint_every", "keep_checkpoints")
"""Settings that change which checkpoints are kept, not what trains: a run resumes under
others (more frequent checkpoints, fewer kept)."""
LABEL_KEYS = ("profile",)
"""TrainConfig keys that name a run and decide nothing it trains (a profile's settings are
resolved into the config's other keys): two profiles that resolve a run alike share it."""


@dataclass(frozen=True)
class TrainConfig:
    """Every setting of a training run (see the module docstring for the data streams)."""

    recipe: str
    profile: str = "tiny"
    # Models: ``model`` is the starting checkpoint (student init and frozen teacher); ``rope`` the
    # student's RoPE extension. ``architecture`` (pretrain only) holds LlamaConfig keywords.
    model: str = "tiny-base"
    teacher: str | None = None  # distillation teacher; None: the starting model itself
    # The student's starting weights where they are not ``model`` extended by ``rope``: a trained
    # checkpoint at that extension (LinearARD after a light CPT run); the teacher, tokenizer and
    # original window stay ``model``'s. Checked to carry the RoPE ``rope`` gives ``model``.
    init: str | None = None
    rope: str | None = None
    architecture: dict[str, Any] = field(default_factory=dict)
    tokenizer: str = "bpe"  # pretrain: "bpe" (trained on the train splits) or "byte"
    vocab_size: int = 4096
    seed: int = 0
    # Optimisation.
    steps: int = 100
    tokens_per_step: int = 8192
    micro_tokens: int = 0  # tokens per micro-step; 0 = the whole step at once
    lr: float = 2e-5
    schedule: str = "constant"
    warmup_steps: int = 0
    min_lr_ratio: float = 0.1
    decay_steps: int = 0  # decay ends at this step, then min_lr_ratio stays; 0: at the last step
    betas: tuple[float, float] = (0.9, 0.95)
    weight_decay: float = 0.1
    grad_clip: float = 1.0
    dtype: str = "auto"  # auto: float32 on CPU, bfloat16 on CUDA
    device: str = "auto"
    checkpoint_every: int = 50
    keep_checkpoints: int = 2
    # Hugging Face model directories kept at these optimizer steps, ``DIR/steps/step-NNNNNN/``
    # (a learning curve from one run: LongReD Figure 3); empty: only ``final/``.
    snapshot_steps: tuple[int, ...] = ()
    # Data.
    long_data: str = "austen+kjv"
    long_len: int = 1024
    short_data: str = "brown"
    short_len: int = 128
    s2l_data: str = "brown"
    mix_long: float = 1.0
    mix_short: float = 0.0
    mix_s2l: float = 0.0
    retrieval_fraction: float = 0.3  # "pretrain", "...+retrieval": share of retrieval rows
    retrieval_phrasing: str = "train"  # their prompt strings: "train" family or RULER's "standard"
    copy_fraction: float = 0.0  # "pretrain" only: share of copy-episode rows (half digit strings)
    heldout_every: int = 0  # evaluate held-out loss every N steps (0: never)
    # Pretrain only: the copy warm-up before the mix (longred_bench.training.pretrain.induction).
    copy_warmup_steps: int = 0  # at most this many steps; 0: no warm-up
    copy_until: float = 0.9  # stop once held-out copy accuracy reaches this
    copy_min_len: int = 2  # shortest copied sequence, tokens
    copy_stages: tuple[int, ...] = (8,)  # longest copied sequence of each stage, in order
    copy_row_len: int = 64
    copy_batch: int = 64
    copy_eval_every: int = 50
    heldout_windows: int = 32
    # LongReD.
    a1: float = 5.0
    a2: float = 10.0
    layers: tuple[int, ...] = ()  # 1-based distillation layers; empty: attention-KL top_m + last
    top_m: int = 6
    sampler: str = "cream"
    cream_sigma: float = 3.0
    # LinearARD.
    ard_kinds: tuple[str, ...] = ARD_KINDS
    ard_layers: tuple[int, ...] = ()  # empty: every layer
    lora_rank: int = 0
    lora_alpha: float = 16.0
    impl: str = "auto"
    cpt_steps: int = 0  # optional long-CE stage before LinearARD, in optimizer steps
    # Which weights train: "all", or "attention" (the q/k/v/o projections only; LongReD Table 7's
    # parameter-efficient baseline, recipe attention-only).
    trainable: str = "all"
    # Recipe merge: merge_weight x the trained extended model merge_with + the rest x ``model``.
    merge_with: str | None = None
    merge_weight: float = 0.5
    # LongRecipe (recipe longrecipe): sentences of D1 that hold a word of an ``anchors`` type are
    # kept, each other one with probability ``keep_other`` (1: no selection); then
    # ``replay_steps`` steps on original-window text (D2) at ``replay_lr``; then the weights are
    # merged with the original's, ``merge_weight`` x trained.
    anchors: tuple[str, ...] = ()
    keep_other: float = 1.0
    replay_steps: int = 0
    replay_lr: float = 0.0
    # anchors=[measured]: the anchor types come from the logit change of a brief extension (a
    # cpt run of impact_steps steps at the extended window) over the original model.
    impact_steps: int = 8
    # Scale-out (torchrun).
    distributed: str = "ddp"
    activation_checkpointing: bool = False
    # activation_offload: what autograd keeps (with checkpointing, each decoder layer's input)
    # in pinned host memory until the backward pass (training/offload.py); CUDA only moves.
    activation_offload: bool = False
    teacher_placement: str = "replicate"
    # Fit and speed at scale (docs/training.md, "Training at scale").
    # lm_loss: how the next-token CE is computed: plain (whole logits), chunked (row chunks, never
    # the whole logits), liger (Liger-Kernel's fused kernel, CUDA), auto (plain on CPU; liger,
    # else chunked, on CUDA). All agree to float rounding.
    lm_loss: str = "auto"
    # mixed_precision: autocast (float32 weights under autocast to ``dtype``) or fsdp (FSDP2's
    # policy: parameters and compute in ``dtype``, gradients reduced and kept in float32 beside
    # float32 master weights; one process is wrapped the same way, for the same numerics).
    mixed_precision: str = "autocast"
    compile: bool = False  # torch.compile each decoder layer of the student

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Build from a mapping (e.g. YAML; method groups flattened, :data:`METHOD_GROUPS`),
        rejecting unknown keys and invalid values."""
        data = flatten_groups(data, data.get("recipe"))
        reject_unknown_keys(cls, data, "training")
        values = dict(data)
        if "recipe" not in values:
            raise UserError("training config needs a recipe")
        for f in fields(cls):
            if f.name not in values:
                continue
            raw = values[f.name]
            if _is_tuple(f) and raw is not None:
                raw = tuple(raw) if isinstance(raw, list | tuple) else (raw,)
            values[f.name] = _coerce(f, raw)
        cfg = cls(**values)
        cfg.validate()
        return cfg

    def to_dict(self) -> dict[str, Any]:
        """JSON/YAML-able form (tuples as lists; the fields of ``_OMITTED_AT_DEFAULT`` only when
        they differ from their default)."""
        defaults = {f.name: f.default for f in fields(self)}
        return {
            k: list(v) if isinstance(v, tuple) else v
            for k, v in asdict(self).items()
            if not (k in _OMITTED_AT_DEFAULT and v == defaults[k])
        }

    def trained_dict(self) -> dict[str, Any]:
        """:meth:`to_dict` without :data:`LABEL_KEYS` and :data:`BOOKKEEPING`: what decides the
        run's weights (its cache key, and what a resumed run must share with the run it
        continues); a run checkpointed every step and one checkpointed never end with the
        same weights."""
        return {k: v for k, v in self.to_dict().items() if k not in (*LABEL_KEYS, *BOOKKEEPING)}

    def replace(self, **changes: Any) -> TrainConfig:
        """A validated copy with ``changes`` applied."""
        return TrainConfig.from_dict({**self.to_dict(), **changes})

    @property
    def mix(self) -> dict[str, float]:
        """Token fractions of the streams in use (normalised to sum to 1)."""
        raw = {"long": self.mix_long, "short": self.mix_short, "s2l": self.mix_s2l}
        total = sum(raw.values())
        return {k: v / total for k, v in raw.items() if v > 0}

    def validate(self) -> None:
        """Raise :class:`UserError` naming the first invalid value."""
        choice("recipe", self.recipe, RECIPES)
        for f in fields(self):  # NaN passes every comparison below (lr=nan reached the optimizer)
            value = getattr(self, f.name)
            for item in value if isinstance(value, tuple) else (value,):  # betas=[0.9, nan] too
                if isinstance(item, float) and not math.isfinite(item):
                    raise UserError(f"config {f.name} must hold finite numbers (got {value})")
        if self.rope is not None:  # before anything is written (was refused at model load)
            from longred_bench.models.rope import parse_rope_spec

            parse_rope_spec(self.rope)
        if not self.profile or not isinstance(self.profile, str):
            raise UserError(f"config profile must name a profile, got {self.profile!r}")
        choice("schedule", self.schedule, SCHEDULES)
        choice("sampler", self.sampler, SAMPLERS)
        choice("distributed", self.distributed, DISTRIBUTED)
        choice("teacher_placement", self.teacher_placement, TEACHER_PLACEMENT)
        choice("lm_loss", self.lm_loss, LM_LOSSES)
        choice("mixed_precision", self.mixed_precision, MIXED_PRECISION)
        if self.mixed_precision == "fsdp" and self.distributed != "fsdp":
            raise UserError("config mixed_precision=fsdp needs distributed=fsdp (FSDP2's policy)")
        if self.activation_offload and not self.activation_checkpointing:
            raise UserError(
                "config activation_offload=true needs activation_checkpointing=true (it offloads "
                "the checkpointed layer inputs; without it every saved tensor would move)"
            )
        if self.compile and self.recipe == "linearard":  # a CheckpointError on an H200
            raise UserError("config compile=true does not work with linearard (its q/k/v "
                            "capture breaks checkpoint recomputation): leave it off")  # fmt: skip
        choice("tokenizer", self.tokenizer, ("bpe", "byte"))
        choice("impl", self.impl, ("auto", "naive", "chunked", "triton"))
        choice("trainable", self.trainable, TRAINABLE)
        if self.trainable != "all" and self.recipe == "linearard" and self.lora_rank:
            raise UserError(  # it unfroze the base weights of q/k/v under the adapters, and o's
                "config trainable=attention is for whole weights; linearard's LoRA (lora_rank "
                f"{self.lora_rank}) trains q/k/v adapters alone: drop it, or set lora_rank=0 to "
                "train the attention projections whole"
            )
        if self.trainable != "all" and self.recipe == "pretrain":
            raise UserError(
                "config trainable=attention is for tuning a pretrained model, not pretrain"
            )
        for kind in self.ard_kinds:
            choice("ard_kinds", kind, ARD_KINDS)
        for name in ("steps", "tokens_per_step", "long_len", "short_len", "checkpoint_every"):
            if getattr(self, name) < 1:
                raise UserError(f"config {name} must be >= 1 (got {getattr(self, name)})")
        if self.grad_clip <= 0:
            raise UserError(f"config grad_clip must be > 0 (got {self.grad_clip})")
        if self.keep_checkpoints < 1:
            raise UserError(f"config keep_checkpoints must be >= 1 (got {self.keep_checkpoints})")
        if self.lr <= 0:
            raise UserError(f"config lr must be > 0 (got {self.lr})")
        if not 0 <= self.min_lr_ratio <= 1:
            raise UserError(f"config min_lr_ratio must be in [0, 1] (got {self.min_lr_ratio})")
        check_optimizer(self)
        if min(self.mix_long, self.mix_short, self.mix_s2l) < 0 or not self.mix:
            raise UserError("config mix_long/mix_short/mix_s2l must be >= 0 and not all 0")
        from longred_bench.data.corpus_spec import parse_source

        for name in ("long_data", "short_data", "s2l_data"):
            parse_source(getattr(self, name))  # the syntax only: the data may live elsewhere
        if not 0 <= self.retrieval_fraction < 1:
            raise UserError("config retrieval_fraction must be in [0, 1)")
        if not 0 <= self.copy_fraction < 1 - self.retrieval_fraction:
            raise UserError(
                f"config copy_fraction must be in [0, 1 - retrieval_fraction) (got "
                f"{self.copy_fraction} with retrieval_fraction {self.retrieval_fraction})"
            )
        if self.copy_fraction and self.long_data != "pretrain":
            raise UserError(
                f"config copy_fraction is for the pretraining mix (long_data=pretrain), not "
                f"long_data={self.long_data!r}"
            )
        if self.retrieval_phrasing not in ("train", "standard"):
            raise UserError(
                f"config retrieval_phrasing must be train or standard, got "
                f"{self.retrieval_phrasing!r} (the held-out family is never trained on)"
            )
        if self.micro_tokens < 0 or self.warmup_steps < 0 or self.cpt_steps < 0:
            raise UserError("config micro_tokens, warmup_steps and cpt_steps must be >= 0")
        if self.decay_steps and (
            self.decay_steps <= self.warmup_steps or self.schedule == "constant"
        ):
            raise UserError(
                f"config decay_steps ({self.decay_steps}) must exceed warmup_steps "
                f"({self.warmup_steps}) and needs a decaying schedule (cosine or linear); "
                "0 decays over the whole run"
            )
        check_copy_warmup(self)
        check_warmup(self)
        check_snapshots(self)
        if not 0 <= self.merge_weight <= 1:
            raise UserError(f"config merge_weight must be in [0, 1] (got {self.merge_weight})")
        check_merge(self)
        check_longrecipe(self)
        if self.recipe == "control" and self.rope is not None:
            raise UserError("recipe control keeps the original RoPE: drop rope=... from its config")
        if self.recipe in EXTENDING_RECIPES and not self.rope:
            raise UserError(
                f"recipe {self.recipe} extends the window: set rope=SPEC (e.g. abf:theta=1.6e5)"
            )


_TYPES = {"int": int, "float": float, "str": str, "bool": bool, "tuple": tuple, "dict": dict}


def _coerce(f: dataclasses.Field, value: Any) -> Any:
    """``value`` as field ``f``'s type (whole floats become ints, ints floats), or a one-line
    error naming the key."""
    kind = str(f.type)
    if value is None and kind.endswith("| None"):
        return None
    want = _TYPES.get(kind.removesuffix(" | None").split("[")[0])
    if want is None:
        return value
    if want is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if want is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if value is None:  # `--set steps=` or `steps:` left empty in a file
        kind = {int: "an integer", float: "a number", bool: "true or false"}.get(want, "a value")
        raise UserError(f"config {f.name} has no value: give it {kind} "
                        f"({f.name}=VALUE), or leave the key out for its default")  # fmt: skip
    if not isinstance(value, want) or (want is not bool and isinstance(value, bool)):
        raise UserError(f"config {f.name}={value!r} must be of type {want.__name__}")
    return value


def _is_tuple(f: dataclasses.Field) -> bool:
    return str(f.type).startswith("tuple")


def recipe_file(recipe: str) -> Path:
    """The YAML of a built-in recipe."""
    if recipe not in RECIPES:
        raise UserError(f"unknown recipe {recipe!r}; recipes: {', '.join(RECIPES)}")
    return Path(str(resources.files("longred_bench.training") / "recipes" / f"{recipe}.yaml"))


def read_yaml(path: Path) -> dict[str, Any]:
    """A YAML mapping from ``path``; a one-line error if it is missing, not YAML or no mapping."""
    from longred_bench.profiles.loader import read_mapping

    if path.is_dir():
        raise UserError(f"config file {path} is a folder: give a YAML file (a run's config.yaml)")
    if not path.is_file():
        raise UserError(f"config file {path} does not exist")
    return read_mapping(path, what="config file")


def yaml_number(value: Any) -> Any:
    """YAML reads ``1e-4`` as a string; numbers written that way become floats."""
    if isinstance(value, list):
        return [yaml_number(v) for v in value]
    try:
        return float(value) if isinstance(value, str) else value
    except ValueError:
        return value


def check_training_sections(prof: Any) -> None:
    """Refuse in one line naming profile ``prof``'s file a ``training`` section that is no
    recipe or no mapping, a hardware key set per recipe, or a key that is no training key."""
    known = {f.name for f in fields(TrainConfig)}
    for name, section in prof.training.items():
        where = f"profile {prof.source}: training.{name}"
        if name not in RECIPES:
            raise UserError(f"{where} is not a recipe (recipes: {', '.join(RECIPES)})")
        if not isinstance(section, dict):
            raise UserError(f"{where} must be a mapping of training keys")
        for key in section:
            if key in HARDWARE_KEYS:
                raise UserError(f"{where}.{key}: set it under `hardware:`, not per recipe")
            if (key not in known and key not in METHOD_GROUPS) or key in ("recipe", "profile"):
                raise UserError(f"{where}.{key} is not a training key (see docs/training.md)")


def profile_keys(recipe: str, profile: str | Path) -> tuple[dict[str, Any], str]:
    """The training keys profile ``profile`` (a built-in name or a YAML path) gives ``recipe``:
    its model (except ``pretrain``, which builds one; the one
    :func:`~longred_bench.models.choice.choose_model` chooses), its hardware (except
    ``pretrain`` and ``merge``, which train no pretrained model) and its ``training.<recipe>``
    keys (:func:`check_training_sections`); and the profile's name."""
    from longred_bench.models.choice import choose_model
    from longred_bench.profiles import load_profile

    prof = choose_model(load_profile(profile))
    check_training_sections(prof)
    keys: dict[str, Any] = {}
    if recipe != "pretrain":
        keys["model"] = prof.model.name
    if recipe not in ("pretrain", "merge"):
        hw = prof.hardware
        keys.update(device=hw.device, dtype=hw.dtype, distributed="fsdp" if hw.fsdp else "ddp",
                    activation_checkpointing=hw.activation_checkpointing,
                    activation_offload=hw.activation_offload)  # fmt: skip
    return {**keys, **(prof.training.get(recipe) or {})}, prof.name


# TrainConfig keys that a profile's ``hardware:`` section sets.
HARDWARE_KEYS = ("device", "dtype", "distributed", "activation_checkpointing",
                 "activation_offload")  # fmt: skip


def resolve_config(
    recipe: str,
    *,
    profile: str | Path = "tiny",
    config_file: Path | None = None,
    overrides: dict[str, Any] | None = None,
) -> TrainConfig:
    """The recipe's defaults, then what profile ``profile`` gives it (:func:`profile_keys`),
    then ``config_file``, then ``overrides``; validated."""
    data = flatten_groups(read_yaml(recipe_file(recipe)), recipe)
    keys, name = profile_keys(recipe, profile)
    merged: dict[str, Any] = {**data, **flatten_groups(keys, recipe)}
    if config_file is not None:
        merged.update(flatten_groups(read_yaml(config_file), recipe))
    merged.update(flatten_groups(overrides or {}, recipe))
    merged["recipe"] = recipe
    merged["profile"] = name
    return TrainConfig.from_dict({k: yaml_number(v) for k, v in merged.items()})
