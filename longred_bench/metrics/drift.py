"""Per-layer drift of extended models from their original (LongReD section 3, Table 1).

For each text batch the original model runs once; its hidden states and post-RoPE q/k of every
layer are kept. Each extended model then runs on the same batch, and inside its attention
capture (:mod:`longred_bench.models.capture`) the attention KL(original || extended) of that layer
is computed at once in linear memory, so only the original's q/k and one extended layer are alive
at a time. On CPU (``impl="auto"`` or ``"stats"``) the KL comes from fused attention statistics
(:func:`longred_bench.kernels.relation_kl_stats`), the original's side of it (its attention
entropy) computed once inside the original's capture, and the extended model's log-sum-exp
taken from its own attention call where that call is plain causal attention; otherwise from
:func:`longred_bench.kernels.relation_kl`. Hidden-state cosine comes from
``output_hidden_states``; no logits are computed beyond the last token (``logits_to_keep=1``).

Layer ``l`` (1-based) is decoder layer ``l``: its attention and its output hidden state; the last
layer's hidden state is the model's final normed output, as transformers returns it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import torch
from tqdm.auto import tqdm
from transformers import PreTrainedModel

from longred_bench.errors import UserError
from longred_bench.kernels import (
    TeacherTerms,
    attention_with_lse,
    relation_kl,
    relation_kl_stats,
    stats_supported,
    teacher_terms,
)
from longred_bench.metrics.similarity import masked_mean_cosine
from longred_bench.models.capture import capture_attention, capture_qk


@dataclass(frozen=True)
class LayerDrift:
    """Drift of one layer: mean token cosine of hidden states, mean attention KL per row."""

    layer: int
    hidden_cosine: float
    attention_kl: float


@dataclass(frozen=True)
class DriftResult:
    """Per-layer drift of one extended model over ``num_tokens`` tokens of ``num_texts`` texts."""

    layers: tuple[LayerDrift, ...]
    num_texts: int
    num_tokens: int

    @property
    def mean_hidden_cosine(self) -> float:
        """Hidden-state cosine averaged over layers."""
        return sum(x.hidden_cosine for x in self.layers) / len(self.layers)

    @property
    def mean_attention_kl(self) -> float:
        """Attention KL averaged over layers."""
        return sum(x.attention_kl for x in self.layers) / len(self.layers)

    @property
    def last_hidden_cosine(self) -> float:
        """Cosine of the final (normed) hidden state."""
        return self.layers[-1].hidden_cosine


def select_layers(attention_kl: Sequence[float], m: int) -> list[int]:
    """LongReD's distillation layers: the ``m`` layers with the largest attention KL plus the last.

    ``attention_kl[i]`` belongs to layer ``i + 1``; returns sorted 1-based layer numbers.
    Ties break towards the lower layer.
    """
    if m < 0:
        raise ValueError(f"m must be >= 0, got {m}")
    order = sorted(range(len(attention_kl)), key=lambda i: (-attention_kl[i], i))
    return sorted({i + 1 for i in order[:m]} | {len(attention_kl)})


class _Accumulator:
    """Running sums of hidden cosine and attention KL per layer for one extended model."""

    def __init__(self, num_layers: int) -> None:
        self.cos_sum = [0.0] * num_layers
        self.kl_sum = [0.0] * num_layers
        self.kl_rows = [0] * num_layers
        self.tokens = 0
        self.texts = 0

    def result(self) -> DriftResult:
        layers = tuple(
            LayerDrift(i + 1, self.cos_sum[i] / max(self.tokens, 1), self.kl_sum[i] / rows)
            for i, rows in enumerate(self.kl_rows)
        )
        return DriftResult(layers, self.texts, self.tokens)


@dataclass
class _TeacherSink:
    """Attention capture sink of the original: keeps each layer's q/k and scale, and with the
    ``stats`` KL also the layer's :class:`TeacherTerms` (its attention entropy)."""

    mask: torch.Tensor | None
    stats: bool
    layers: dict[int, tuple[torch.Tensor, torch.Tensor, float, TeacherTerms | None]] = field(
        default_factory=dict
    )

    def __call__(self, layer: int, q: torch.Tensor, k: torch.Tensor, scale: float) -> None:
        terms = teacher_terms(q, k, mask=self.mask, scale_t=scale) if self.stats else None
        self.layers[layer] = (q, k, scale, terms)


@dataclass
class _KLSink:
    """Attention capture sink of an extended model: adds each layer's KL(original || extended)
    against the original's q/k of the same batch. With the ``stats`` KL on a plain causal call
    (no padding) it computes the layer's attention itself, so the KL takes the extended
    model's log-sum-exp from that call instead of a fused call of its own."""

    teacher: _TeacherSink
    acc: _Accumulator
    rows: int
    impl: str

    def __call__(
        self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
        plain: bool,
    ) -> torch.Tensor | None:  # fmt: skip
        q_t, k_t, scale_t, terms = self.teacher.layers[layer]
        kwargs = dict(mask=self.teacher.mask, scale_s=scale, scale_t=scale_t, reduction="sum")
        out = None
        if terms is None:
            kl = relation_kl(q, k, q_t, k_t, impl=self.impl, **kwargs)
        elif plain and self.teacher.mask is None and q.dtype == terms.queries.dtype:
            out, lse = attention_with_lse(q, k, v, scale)
            kl = relation_kl_stats(q, k, q_t, k_t, teacher=terms, student_lse=lse, **kwargs)
        else:
            kl = relation_kl_stats(q, k, q_t, k_t, teacher=terms, **kwargs)
        self.acc.kl_sum[layer] += float(kl)
        self.acc.kl_rows[layer] += self.rows
        return out


def _resolve_impl(impl: str, device: torch.device) -> str:
    """``auto`` is the fused-statistics KL where it runs (CPU), ``relation_kl``'s auto elsewhere."""
    if impl == "auto" and stats_supported(device):
        return "stats"
    return impl


def _check_compatible(original: PreTrainedModel, extended: Mapping[str, PreTrainedModel]) -> int:
    num_layers = original.config.num_hidden_layers
    for name, model in extended.items():
        if model.config.num_hidden_layers != num_layers:
            raise UserError(
                f"extended model {name!r} has {model.config.num_hidden_layers} layers, "
                f"the original has {num_layers}: drift compares matching layers"
            )
        if model.config.vocab_size != original.config.vocab_size:
            raise UserError(f"extended model {name!r} has a different vocabulary size")
    return num_layers


@torch.no_grad()
def measure_drift(
    original: PreTrainedModel,
    extended: Mapping[str, PreTrainedModel],
    batches: Iterable[tuple[torch.Tensor, torch.Tensor | None]],
    *,
    impl: str = "auto",
    progress: bool = True,
    total: int | None = None,
) -> dict[str, DriftResult]:
    """Drift of each model in ``extended`` from ``original`` over ``batches``.

    ``batches`` yields ``(input_ids [batch, seq], attention_mask [batch, seq] or None)``;
    positions are ``0..seq-1`` for every model. Returns one :class:`DriftResult` per name.
    """
    num_layers = _check_compatible(original, extended)
    acc = {name: _Accumulator(num_layers) for name in extended}
    device = next(original.parameters()).device
    impl = _resolve_impl(impl, device)
    bar = tqdm(batches, total=total, desc="drift", unit="batch", disable=not progress)
    for input_ids, attention_mask in bar:
        input_ids = input_ids.to(device)
        mask = None if attention_mask is None else attention_mask.to(device).bool()
        teacher = _TeacherSink(mask, stats=impl == "stats")
        with capture_qk(original, teacher):
            ref = _hidden_states(original, input_ids, mask)
        if len(teacher.layers) != num_layers:
            raise UserError(
                f"captured q/k of {len(teacher.layers)} of {num_layers} layers: the model's "
                "attention does not go through transformers' attention interface"
            )
        tokens = int(mask.sum()) if mask is not None else input_ids.numel()
        rows = tokens * original.config.num_attention_heads
        for name, model in extended.items():
            with capture_attention(model, _KLSink(teacher, acc[name], rows, impl)):
                out = _hidden_states(model, input_ids, mask)
            for i in range(num_layers):
                total_cos, _ = masked_mean_cosine(ref[i + 1], out[i + 1], mask)
                acc[name].cos_sum[i] += float(total_cos)
            acc[name].tokens += tokens
            acc[name].texts += input_ids.shape[0]
    return {name: a.result() for name, a in acc.items()}


def _hidden_states(
    model: PreTrainedModel, input_ids: torch.Tensor, mask: torch.Tensor | None
) -> tuple[torch.Tensor, ...]:
    """Hidden states of every layer (embeddings first); logits only for the last token."""
    out = model(input_ids, attention_mask=mask, output_hidden_states=True, logits_to_keep=1)
    return out.hidden_states
