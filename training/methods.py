"""The loss terms of each recipe: small functions the training loop calls, knowing nothing of them.

A :class:`Method` says which streams it reads at a step (:meth:`Method.rows`) and turns their
batches into named loss terms with the total under ``"loss"`` (:meth:`Method.losses`).

- ``ce`` (``pretrain``, ``cpt``, ``mix-cpt``, ``control``): next-token cross-entropy of the
  student on every stream it reads, token-weighted over the streams ("CE on all of it").
- ``longred``: ``L_long + a1 * L_short + a2 * L_s2l`` exactly as the paper writes it: CE on the
  long stream; ``sum_l (1 - cos)`` of the selected layers' hidden states on the short stream,
  same positions for both models; ``1 - cos`` of the final normed hidden state on the s2l stream,
  the student given skipped position ids (:mod:`longred_bench.training.positions`), the teacher
  ``0..T-1``.
- ``pose``, ``rpes``: next-token CE on the long stream's rows, samples shorter than the extended
  window, with position ids stretched over that window
  (:mod:`longred_bench.training.position_transforms`: PoSE's two chunks, RPES's sorted random ids).
- ``longrecipe``: next-token CE on the long stream's rows (samples shorter than the extended
  window, from sentence-selected D1) at LongRecipe's sentence-gap position ids
  (:func:`~longred_bench.training.position_transforms.sentence_gap_position_ids`); after
  ``steps``, ``replay_steps`` steps of CE on the short stream at ordinary positions; at the end
  (:meth:`Method.finish`) the weights are merged with the original model's.
- ``linearard``: for each chosen layer and each of q, k, v (q and k after RoPE), KL(teacher ||
  student) of ``softmax(X X^T / sqrt(d))`` rows on the s2l stream (texts of the original window,
  where the teacher is valid), mean over heads and valid rows, summed over kinds and averaged
  over layers; first, if ``cpt_steps`` > 0, that many steps of long-text CE (the lightweight CPT
  stage that LinearARD's paper applies before distilling; it trains the same parameters). Teacher
  and student run their decoder stacks only up to the last layer compared.

The teacher runs under ``inference_mode`` (the few outputs a loss keeps are copied out of it) and
only on the streams that need it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import torch
import torch.distributed as dist

from longred_bench.models.capture import capture_qkv
from longred_bench.training.config import TrainConfig
from longred_bench.training.lm_loss import lm_loss, resolve_lm_loss
from longred_bench.training.objectives import hidden_cosine_loss, relation_kl_loss
from longred_bench.training.position_transforms import (
    pose_position_ids,
    rpes_position_ids,
    sentence_gap_position_ids,
    sentence_starts,
)
from longred_bench.training.positions import skipped_position_ids
from longred_bench.training.streams import Batch

# Hidden states only: the vocabulary projection runs on the last position alone (its logits are
# never read), so no [rows, tokens, vocab] tensor is made for a distillation term.
_HIDDEN = {"output_hidden_states": True, "logits_to_keep": 1}


@dataclass(frozen=True)
class Preparation:
    """What a recipe does before its first step: ``phases`` around the loop (pretraining's copy
    warm-up) and the anchor types it measured (LongRecipe)."""

    phases: tuple[Any, ...] = ()
    anchors: tuple[str, ...] | None = None


@dataclass
class Method(ABC):
    """Loss terms of one recipe over the student (and a frozen teacher where it needs one), and
    the recipe's own facts the loop and the builder ask it for (its hooks): whether it distils
    from a teacher (``TEACHER``), how its long rows sit against the windows (``LONG_ROWS``),
    whether the loss leaves parameters unused (``UNUSED_PARAMETERS``), how many optimizer steps
    it takes (:meth:`total_steps`), its streams' token shares (:meth:`stream_mix`), the work
    before its first step (:meth:`prepare`) and, for a recipe that trains nothing,
    :meth:`produce`."""

    TEACHER: ClassVar[bool] = False
    # "beyond": long rows longer than the original window, within the extended one; "within":
    # samples shorter than the extended window, stretched over it; "": no check.
    LONG_ROWS: ClassVar[str] = "beyond"
    UNUSED_PARAMETERS: ClassVar[bool] = False  # DDP must look for them (LinearARD: the LM head)
    TRAINS: ClassVar[bool] = True

    cfg: TrainConfig
    student: torch.nn.Module
    teacher: torch.nn.Module | None
    rows_per_step: dict[str, int]
    original_window: int
    layers: tuple[int, ...] = ()
    generator: torch.Generator = field(default_factory=torch.Generator)
    rank: int = 0
    world: int = 1
    target_window: int = 0  # the student's extended window (LongReD's Ls)

    def rows(self, step: int) -> dict[str, int]:
        """Rows of each stream read at optimizer step ``step`` (0-based)."""
        return self.rows_per_step

    @abstractmethod
    def losses(self, batches: dict[str, Batch], step: int) -> dict[str, torch.Tensor]:
        """Named loss terms of one micro-batch; ``"loss"`` is what is minimised."""

    def finish(self, weights: dict | None) -> dict | None:
        """The final weights to save, after the last step: ``weights`` are the student's full
        weights gathered under FSDP2 (an empty dict on processes other than the main one), else
        None (the student's own, which a recipe may change in place). Most recipes keep them."""
        return weights

    @classmethod
    def total_steps(cls, cfg: TrainConfig) -> int:
        """Optimizer steps of a run (LongRecipe's replay included)."""
        return cfg.steps + cfg.replay_steps

    @classmethod
    def stream_mix(cls, cfg: TrainConfig) -> dict[str, float]:
        """Each stream's share of a step's tokens."""
        return cfg.mix

    @classmethod
    def stream_phases(cls, streams: list[str]) -> list[list[str]]:
        """The streams read together at a step, per stage of the run."""
        return [list(streams)]

    @classmethod
    def stages(cls, cfg: TrainConfig) -> list[tuple[tuple[str, ...], int]]:
        """The run's stages in order: the streams of :meth:`stream_mix` read at a step of it,
        and its optimizer steps (a stage of no step left out). Most recipes: one, every
        stream at every step."""
        return [(tuple(cls.stream_mix(cfg)), cls.total_steps(cfg))]

    @classmethod
    def stream_steps(cls, cfg: TrainConfig) -> dict[str, int]:
        """Optimizer steps at which each stream is read (over :meth:`stages`)."""
        out: dict[str, int] = {}
        for streams, steps in cls.stages(cfg):
            for name in streams:
                out[name] = out.get(name, 0) + steps
        return out

    @classmethod
    def prepare(
        cls, cfg: TrainConfig, out: Path, *, train: Any, progress: bool, rank: int = 0,
        world: int = 1,
    ) -> Preparation:  # fmt: skip
        """The work before the first step (none); ``train`` trains a config into a folder (the
        loop's :func:`~longred_bench.training.loop.train`, run as process ``rank`` of ``world``),
        for a brief run of its own. Under ``torchrun`` every process calls it."""
        return Preparation()

    @classmethod
    def produce(cls, cfg: TrainConfig, out: Path, *, progress: bool) -> Path:
        """The final model of a recipe that trains nothing (:attr:`TRAINS` False)."""
        raise NotImplementedError(f"recipe {cfg.recipe} trains: the loop produces its model")

    def lm_loss(self, b: Batch, **kwargs) -> torch.Tensor:
        """Next-token CE of the student on ``b`` (at ``position_ids`` where given), computed as
        the config's ``lm_loss`` says (:mod:`~longred_bench.training.lm_loss`)."""
        impl = resolve_lm_loss(self.cfg.lm_loss, b.ids.device)
        return lm_loss(self.student, b.ids, b.mask, impl=impl, **kwargs)


class TwoStage(Method):
    """A method that reads stream ``STAGES[0]`` for ``steps`` steps, then ``STAGES[1]``."""

    STAGES: tuple[str, str] = ("long", "short")

    def rows(self, step: int) -> dict[str, int]:
        stream = self.STAGES[0] if step < self.cfg.steps else self.STAGES[1]
        return {stream: self.rows_per_step[stream]}

    @classmethod
    def stages(cls, cfg: TrainConfig) -> list[tuple[tuple[str, ...], int]]:
        first, second = cls.STAGES
        both = [((first,), cfg.steps), ((second,), cls.total_steps(cfg) - cfg.steps)]
        mix = cls.stream_mix(cfg)
        return [(names, n) for names, n in both if n > 0 and names[0] in mix]


class CrossEntropy(Method):
    """Next-token CE on every stream, weighted by real tokens."""

    def losses(self, batches: dict[str, Batch], step: int) -> dict[str, torch.Tensor]:
        terms: dict[str, torch.Tensor] = {}
        total, weight = 0.0, 0
        for name, batch in batches.items():
            terms[f"ce_{name}"] = self.lm_loss(batch)
            total = total + terms[f"ce_{name}"] * batch.tokens
            weight += batch.tokens
        terms["loss"] = total / weight
        return terms


class Pretrain(CrossEntropy):
    """Pretraining from scratch: next-token CE on the mix, after the copy warm-up where the
    config has one (:mod:`longred_bench.training.pretrain.induction`)."""

    LONG_ROWS = ""

    @classmethod
    def prepare(
        cls, cfg: TrainConfig, out: Path, *, train: Any, progress: bool, rank: int = 0,
        world: int = 1,
    ) -> Preparation:  # fmt: skip
        from longred_bench.training.pretrain.induction import pretrain_phases

        return Preparation(phases=pretrain_phases(cfg))


class OriginalWindowCE(CrossEntropy):
    """CE at the original RoPE and window (``control``): no long rows to check."""

    LONG_ROWS = ""


class Merge(CrossEntropy):
    """Model merging: ``merge_weight`` x a trained extended model + the rest x the original; no
    optimizer, no data (:mod:`longred_bench.training.merge`)."""

    LONG_ROWS = ""
    TRAINS = False

    @classmethod
    def total_steps(cls, cfg: TrainConfig) -> int:
        return 0

    @classmethod
    def produce(cls, cfg: TrainConfig, out: Path, *, progress: bool) -> Path:
        from longred_bench.training.merge import merge_run

        return merge_run(cfg, out, progress=progress)


class LongReD(Method):
    """``L_long + a1 L_short + a2 L_s2l`` (module docstring)."""

    TEACHER = True

    def losses(self, batches: dict[str, Batch], step: int) -> dict[str, torch.Tensor]:
        terms: dict[str, torch.Tensor] = {}
        loss = torch.zeros((), device=next(self.student.parameters()).device)
        if "long" in batches:
            terms["ce_long"] = self.lm_loss(batches["long"])
            loss = loss + terms["ce_long"]
        if "short" in batches:
            b = batches["short"]
            with torch.inference_mode():
                t = self.teacher(b.ids, attention_mask=b.mask, **_HIDDEN)
                reference = [t.hidden_states[i] for i in self.layers]
            reference = [r.clone() for r in reference]  # usable outside inference mode
            del t
            s = self.student(b.ids, attention_mask=b.mask, **_HIDDEN)
            picked = [s.hidden_states[i] for i in self.layers]
            terms["short"] = hidden_cosine_loss(picked, reference, b.mask)
            loss = loss + self.cfg.a1 * terms["short"]
        if "s2l" in batches:
            b = batches["s2l"]
            rows = b.ids.shape[0]
            # Drawn for the global batch on every process, so the run does not depend on it.
            positions = skipped_position_ids(
                self.original_window, self.target_window, rows * self.world,
                sampler=self.cfg.sampler, generator=self.generator,
                cream_sigma=self.cfg.cream_sigma,
            )[self.rank * rows : (self.rank + 1) * rows].to(b.ids.device)  # fmt: skip
            with torch.inference_mode():
                t = self.teacher(b.ids, attention_mask=b.mask, **_HIDDEN)
                final = t.hidden_states[-1]
            final = final.clone()  # usable outside inference mode
            del t
            # The attention mask is passed on purpose: without one, transformers reads
            # non-contiguous position ids as packed sequences and masks block-diagonally.
            s = self.student(b.ids, attention_mask=b.mask, position_ids=positions, **_HIDDEN)
            terms["s2l"] = hidden_cosine_loss([s.hidden_states[-1]], [final], b.mask)
            loss = loss + self.cfg.a2 * terms["s2l"]
        terms["loss"] = loss
        return terms


class PositionTransformCE(Method):
    """CE on short samples at position ids spread over the extended window (module docstring)."""

    LONG_ROWS = "within"

    def losses(self, batches: dict[str, Batch], step: int) -> dict[str, torch.Tensor]:
        b = batches["long"]
        rows, length = b.ids.shape
        sampler = {"pose": pose_position_ids, "rpes": rpes_position_ids}
        # Drawn for the global batch on every process, so the run does not depend on it.
        positions = sampler[self.cfg.recipe](
            length, self.target_window, rows * self.world, generator=self.generator
        )[self.rank * rows : (self.rank + 1) * rows].to(b.ids.device)
        # The attention mask is passed on purpose (see LongReD's s2l term).
        ce = self.lm_loss(b, position_ids=positions)
        return {"ce_long": ce, "loss": ce}


class SentenceGapCE(TwoStage):
    """LongRecipe: CE at sentence-gap positions, then replay, then the merge (module docstring).
    ``delimiters`` (the tokenizer's sentence-ending token ids) is set by the builder."""

    LONG_ROWS = "within"

    delimiters: torch.Tensor | None = None

    def losses(self, batches: dict[str, Batch], step: int) -> dict[str, torch.Tensor]:
        if "short" in batches:
            ce = self.lm_loss(batches["short"])
            return {"ce_replay": ce, "loss": ce}
        b = batches["long"]
        rows = b.ids.shape[0]
        # Drawn for the global batch on every process, so the run does not depend on it.
        starts = sentence_starts(_gather_rows(b.ids, self.world).cpu(), self.delimiters)
        mine = slice(self.rank * rows, (self.rank + 1) * rows)
        positions = sentence_gap_position_ids(starts, self.target_window, generator=self.generator)
        positions = positions[mine].to(b.ids.device)
        # The attention mask is passed on purpose (see LongReD's s2l term).
        ce = self.lm_loss(b, position_ids=positions)
        return {"ce_long": ce, "loss": ce}

    @classmethod
    def prepare(
        cls, cfg: TrainConfig, out: Path, *, train: Any, progress: bool, rank: int = 0,
        world: int = 1,
    ) -> Preparation:  # fmt: skip
        """With ``anchors: [measured]``, the anchor types measured for this run's model
        (:func:`longred_bench.training.anchors.measure_anchors`), kept in ``run.json``."""
        from longred_bench.training.impactful_tokens import MEASURED

        if MEASURED not in cfg.anchors:
            return Preparation()
        from longred_bench.training.anchors import ImpactInfo, measure_anchors

        impact = measure_anchors(cfg, out, train=train, progress=progress, rank=rank, world=world)
        return Preparation(phases=(ImpactInfo(impact),), anchors=tuple(impact["anchors"]))

    def finish(self, weights: dict | None) -> dict | None:
        """``merge_weight`` x the trained weights + the rest x the original model's."""
        if self.cfg.merge_weight >= 1 or weights == {}:  # {}: FSDP2, not the main process
            return weights
        from longred_bench.models.loading import load
        from longred_bench.training.merge import merge_weights

        original = load(self.cfg.model).model.state_dict()
        if weights is not None:  # FSDP2: the gathered weights, on the CPU
            return merge_weights(original, weights, self.cfg.merge_weight)
        model = getattr(self.student, "module", self.student)
        model.load_state_dict(merge_weights(original, model.state_dict(), self.cfg.merge_weight))
        return None


def _gather_rows(rows: torch.Tensor, world: int) -> torch.Tensor:
    """The global batch of ``rows`` (``[batch, ...]``, the same shape on every process): every
    process's rows in rank order (``rows`` itself where ``world`` is 1). Every process calls it."""
    if world == 1:
        return rows
    parts = [torch.empty_like(rows) for _ in range(world)]
    dist.all_gather(parts, rows)
    return torch.cat(parts)


def decoder_stack(model: torch.nn.Module) -> torch.nn.Module:
    """What LinearARD runs of a causal LM: its decoder stack without the vocabulary projection
    (relation KL reads only the layers' q, k and v; at tiny-base's size the LM head is about a
    third of a forward pass). A LoRA model's base is unwrapped; in a distributed run the model
    runs whole, so the wrapper's hooks (gradient sync, sharding) see every call."""
    if hasattr(model, "module") or (dist.is_available() and dist.is_initialized()):
        return model
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    get = getattr(base, "get_decoder", None)
    decoder = get() if callable(get) else None
    return decoder if isinstance(decoder, torch.nn.Module) and decoder is not base else model


class _LastLayerSeen(Exception):
    """Raised by a q/k/v sink once the last layer LinearARD compares is captured: nothing after
    it reaches the loss, so the rest of the forward pass is skipped."""


def _run_until(model: torch.nn.Module, sink, last: int, ids, mask) -> None:
    """Run ``model``'s decoder stack on ``ids`` with ``sink`` capturing q/k/v, stopping after
    layer ``last`` (0-based) where the model runs alone; a distributed wrapper runs it whole,
    since its hooks (gradient sync, sharding) expect every call to finish."""
    stack = decoder_stack(model)
    whole = hasattr(model, "module") or (dist.is_available() and dist.is_initialized())

    def until(layer: int, *qkv) -> None:
        sink(layer, *qkv)
        if layer == last and not whole:
            raise _LastLayerSeen

    with capture_qkv(getattr(model, "module", model), until), suppress(_LastLayerSeen):
        stack(ids, attention_mask=mask)


class LinearARD(TwoStage):
    """Optional long-text CE (``cpt_steps``), then relation-KL distillation of q/k/v (module
    docstring)."""

    STAGES = ("s2l", "long")
    TEACHER = True
    UNUSED_PARAMETERS = True

    def rows(self, step: int) -> dict[str, int]:
        stream = "long" if step < self.cfg.cpt_steps else "s2l"
        return {stream: self.rows_per_step[stream]}

    @classmethod
    def stages(cls, cfg: TrainConfig) -> list[tuple[tuple[str, ...], int]]:
        both = [(("long",), cfg.cpt_steps), (("s2l",), cfg.steps)]  # the long CE stage first
        return [(names, n) for names, n in both if n > 0]

    @classmethod
    def total_steps(cls, cfg: TrainConfig) -> int:
        return cfg.steps + cfg.cpt_steps + cfg.replay_steps

    @classmethod
    def stream_mix(cls, cfg: TrainConfig) -> dict[str, float]:
        return {"s2l": 1.0, **({"long": 1.0} if cfg.cpt_steps else {})}

    @classmethod
    def stream_phases(cls, streams: list[str]) -> list[list[str]]:
        return [["s2l"], ["long"]]

    def losses(self, batches: dict[str, Batch], step: int) -> dict[str, torch.Tensor]:
        if "long" in batches:
            ce = self.lm_loss(batches["long"])
            return {"ce_long": ce, "loss": ce}
        b = batches["s2l"]
        wanted = {i - 1 for i in self.layers}
        kinds = {"q": 0, "k": 1, "v": 2}
        teacher: dict[int, tuple[torch.Tensor, ...]] = {}

        def keep(layer: int, q, k, v, scale: float) -> None:
            if layer in wanted:  # copied out of inference mode: the relation KL keeps them
                with torch.inference_mode(False):
                    teacher[layer] = (q.clone(), k.clone(), v.clone())

        last = max(wanted)
        with torch.inference_mode():
            _run_until(self.teacher, keep, last, b.ids, b.mask)
        sums = {kind: torch.zeros((), device=b.ids.device) for kind in self.cfg.ard_kinds}
        student: dict[int, tuple[torch.Tensor, ...]] = {}

        def add(layer: int, qkv: tuple[torch.Tensor, ...]) -> None:
            kept = teacher.pop(layer)  # each layer's q/k/v freed once its KL holds what it needs
            for kind in self.cfg.ard_kinds:
                sums[kind] = sums[kind] + relation_kl_loss(
                    qkv[kinds[kind]], kept[kinds[kind]], b.mask, impl=self.cfg.impl
                )

        # With activation checkpointing the relation KL runs after the forward pass, outside the
        # decoder layers, so that a recomputed layer saves what it saved the first time; without
        # it, inside the pass as each layer is reached (the order the cached runs were made in:
        # the two agree to float rounding).
        after = self.cfg.activation_checkpointing

        def compare(layer: int, q, k, v, scale: float) -> None:
            if layer in wanted:
                if after:
                    student[layer] = (q, k, v)
                else:
                    add(layer, (q, k, v))

        _run_until(self.student, compare, last, b.ids, b.mask)
        for layer in sorted(student):
            add(layer, student.pop(layer))
        terms = {f"kl_{kind}": value / len(wanted) for kind, value in sums.items()}
        terms["loss"] = sum(terms.values())
        return terms


METHODS: dict[str, type[Method]] = {
    "pretrain": Pretrain,
    "cpt": CrossEntropy,
    "mix-cpt": CrossEntropy,
    "control": OriginalWindowCE,
    "merge": Merge,
    "longred": LongReD,
    "linearard": LinearARD,
    "pose": PositionTransformCE,
    "rpes": PositionTransformCE,
    "attention-only": CrossEntropy,
    "longrecipe": SentenceGapCE,
}
