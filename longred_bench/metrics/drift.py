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

Besides the per-layer means over all tokens, each text (one row of a batch) gets its own drift
(:class:`TextDrift`): its hidden cosine and attention KL averaged over its own tokens, then over
layers, so reports can bootstrap over texts; each layer also keeps every text's own value at that
layer (per-layer intervals). When every text has the same number of valid tokens (the drift job's
windows) the mean over texts of a per-text value equals the summary's mean over layers. A text
with no valid token has NaN values. Everything is computed from per-text sums
(:class:`TextSums`), so a measurement interrupted after some batches resumes from the sums of the
texts it finished.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import torch
from tqdm.auto import tqdm
from transformers import PreTrainedModel

from longred_bench.errors import UserError
from longred_bench.kernels import (
    TeacherTerms,
    at_common_dtype,
    attention_with_lse,
    relation_kl,
    relation_kl_stats,
    stats_supported,
    teacher_terms,
)
from longred_bench.metrics.similarity import masked_cosine_sums
from longred_bench.models.capture import capture_attention, capture_qk


@dataclass(frozen=True)
class LayerDrift:
    """Drift of one layer: mean token cosine of hidden states, mean attention KL per row, and
    each text's own values at this layer (``text_*``, in input order; NaN for a text with no
    valid token), for intervals over texts."""

    layer: int
    hidden_cosine: float
    attention_kl: float
    text_hidden_cosine: tuple[float, ...] = ()
    text_attention_kl: tuple[float, ...] = ()


@dataclass(frozen=True)
class TextDrift:
    """Drift of one text: hidden cosine (mean over its tokens) and attention KL (mean over its
    query rows and heads), each averaged over layers; ``num_tokens`` valid tokens."""

    hidden_cosine: float
    attention_kl: float
    num_tokens: int


@dataclass(frozen=True)
class TextSums:
    """What one text adds to a drift measurement: per layer, the sum over its valid tokens of the
    hidden cosine and the sum over its query rows and heads of the attention KL, and its number
    of valid tokens. A measurement is a function of these alone, so one interrupted after some
    texts resumes from them (:func:`measure_drift`'s ``done``); JSON-able as a list."""

    cosine: tuple[float, ...]
    kl: tuple[float, ...]
    tokens: int

    def as_list(self) -> list:
        return [list(self.cosine), list(self.kl), self.tokens]

    @classmethod
    def from_list(cls, data: Sequence) -> TextSums:
        cosine, kl, tokens = data
        return cls(tuple(map(float, cosine)), tuple(map(float, kl)), int(tokens))


@dataclass(frozen=True)
class DriftResult:
    """Per-layer drift of one extended model over ``num_tokens`` tokens of ``num_texts`` texts,
    and (``texts``) each text's own drift, in input order."""

    layers: tuple[LayerDrift, ...]
    num_texts: int
    num_tokens: int
    texts: tuple[TextDrift, ...] = ()

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


def _per_token(total: float, count: float) -> float:
    return total / count if count else math.nan


def drift_result(texts: Sequence[TextSums], heads: int, layers: int) -> DriftResult:
    """The :class:`DriftResult` of the texts' sums (``heads``: query heads per layer); a mean
    over no token is NaN, as each text's is."""
    tokens = sum(t.tokens for t in texts)
    per_layer = []
    for i in range(layers):
        cos = tuple(_per_token(t.cosine[i], t.tokens) for t in texts)
        kl = tuple(_per_token(t.kl[i], t.tokens * heads) for t in texts)
        cos_sum, kl_sum = sum(t.cosine[i] for t in texts), sum(t.kl[i] for t in texts)
        per_layer.append(
            LayerDrift(
                i + 1, _per_token(cos_sum, tokens), _per_token(kl_sum, tokens * heads), cos, kl
            )
        )
    per_text = tuple(
        TextDrift(
            sum(layer.text_hidden_cosine[j] for layer in per_layer) / max(layers, 1),
            sum(layer.text_attention_kl[j] for layer in per_layer) / max(layers, 1),
            t.tokens,
        )
        for j, t in enumerate(texts)
    )
    return DriftResult(tuple(per_layer), len(texts), tokens, per_text)


def _text_sums(cos: torch.Tensor, kl: torch.Tensor, tokens: torch.Tensor) -> list[TextSums]:
    """One batch's :class:`TextSums`: ``cos`` and ``kl`` are fp64 ``[layers, batch]`` per-text
    sums over valid tokens (query rows and heads for ``kl``), ``tokens`` the ``[batch]`` counts."""
    return [
        TextSums(tuple(cos[:, j].tolist()), tuple(kl[:, j].tolist()), int(tokens[j]))
        for j in range(cos.shape[1])
    ]


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
    """Attention capture sink of an extended model: keeps each layer's KL(original || extended)
    against the original's q/k of the same batch, summed per text (``kl``: fp64 ``[layers,
    batch]``). With the ``stats`` KL on a plain causal call (no padding) it computes the layer's
    attention itself, so the KL takes the extended model's log-sum-exp from that call instead of
    a fused call of its own."""

    teacher: _TeacherSink
    kl: torch.Tensor
    impl: str

    def __call__(
        self, layer: int, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float,
        plain: bool,
    ) -> torch.Tensor | None:  # fmt: skip
        q_t, k_t, scale_t, terms = self.teacher.layers[layer]
        own = q.dtype  # the layer's: an output the sink returns goes on in it
        q, k, q_t, k_t = at_common_dtype(q, k, q_t, k_t)  # e.g. a bf16 original, fp32 extended
        kwargs = dict(mask=self.teacher.mask, scale_s=scale, scale_t=scale_t, reduction="none")
        out = None
        if terms is None:
            kl = relation_kl(q, k, q_t, k_t, impl=self.impl, **kwargs)
        elif plain and self.teacher.mask is None and own == v.dtype == terms.queries.dtype:
            out, lse = attention_with_lse(q, k, v, scale)
            kl = relation_kl_stats(q, k, q_t, k_t, teacher=terms, student_lse=lse, **kwargs)
        else:
            kl = relation_kl_stats(q, k, q_t, k_t, teacher=terms, **kwargs)
        self.kl[layer] = kl.double().sum(dim=(1, 2)).to(self.kl.device)
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
    done: Mapping[str, Sequence[TextSums]] | None = None,
    on_batch: Callable[[dict[str, list[TextSums]]], None] | None = None,
) -> dict[str, DriftResult]:
    """Drift of each model in ``extended`` from ``original`` over ``batches``.

    ``batches`` yields ``(input_ids [batch, seq], attention_mask [batch, seq] or None)``;
    positions are ``0..seq-1`` for every model. Returns one :class:`DriftResult` per name, its
    ``texts`` one per batch row in the order given. ``done`` holds each model's sums of texts
    measured before (an interrupted run's), which come first; ``on_batch``, after each batch,
    gets every model's sums so far (to save them).
    """
    num_layers = _check_compatible(original, extended)
    sums = {name: list((done or {}).get(name, ())) for name in extended}
    device = next(original.parameters()).device
    impl = _resolve_impl(impl, device)
    heads = original.config.num_attention_heads
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
        for name, model in extended.items():
            sink = _KLSink(
                teacher, torch.zeros(num_layers, input_ids.shape[0], dtype=torch.float64), impl
            )
            with capture_attention(model, sink):
                out = _hidden_states(model, input_ids, mask)
            pairs = [masked_cosine_sums(ref[i + 1], out[i + 1], mask) for i in range(num_layers)]
            cos = torch.stack([s.cpu() for s, _ in pairs]).double()
            sums[name] += _text_sums(cos, sink.kl, pairs[0][1].cpu())
        if on_batch is not None:
            on_batch(sums)
    if not any(t.tokens for texts in sums.values() for t in texts):  # means of nothing
        raise UserError("drift measured no token: no batch came, or every token was padding; "
                        "give texts with at least one unpadded token")  # fmt: skip
    return {name: drift_result(texts, heads, num_layers) for name, texts in sums.items()}


def _hidden_states(
    model: PreTrainedModel, input_ids: torch.Tensor, mask: torch.Tensor | None
) -> tuple[torch.Tensor, ...]:
    """Hidden states of every layer (embeddings first); logits only for the last token."""
    out = model(input_ids, attention_mask=mask, output_hidden_states=True, logits_to_keep=1)
    return out.hidden_states
