"""The extended model's attention sink of a drift measurement: on a plain causal call it hands
the layer the attention output it computed for the KL, on any other call it leaves the output to
the layer's own attention (a sink's output on such a call is refused by the capture); the KL
puts each model's own softmax scale on its own side."""

import torch
import torch.nn.functional as F

from longred_bench.metrics.drift import _KLSink, _TeacherSink


def _sink_and_inputs() -> tuple[_KLSink, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, h, 6, 8, generator=g) for h in (4, 2, 2))
    teacher = _TeacherSink(mask=None, stats=True)
    teacher(0, q + 0.1 * torch.randn(q.shape, generator=g), k, 0.5)
    return _KLSink(teacher, torch.zeros(1, 2, dtype=torch.float64), "stats"), q, k, v


def test_a_plain_call_gets_the_causal_attention_output_from_the_sink() -> None:
    """The sink's output is the layer's causal attention, so SDPA need not run a second time."""
    sink, q, k, v = _sink_and_inputs()
    out = sink(0, q, k, v, 0.5, True)
    assert out is not None
    want = F.scaled_dot_product_attention(
        q, k.repeat_interleave(2, dim=1), v.repeat_interleave(2, dim=1), is_causal=True, scale=0.5
    )
    assert torch.allclose(out, want, atol=1e-6)
    assert (sink.kl[0] > 0).all()


def test_a_call_that_is_not_plain_keeps_its_own_attention() -> None:
    """An unpadded call that is not plain causal attention (softcap, dropout, a cache) gets no
    output from the sink, and its KL is the same as a plain call's."""
    sink, q, k, v = _sink_and_inputs()
    assert sink(0, q, k, v, 0.5, False) is None
    kl_not_plain = sink.kl[0].clone()
    sink(0, q, k, v, 0.5, True)
    assert torch.allclose(sink.kl[0], kl_not_plain, rtol=1e-5)


def _causal_log_softmax(q: torch.Tensor, k: torch.Tensor, scale: float) -> torch.Tensor:
    scores = scale * q @ k.repeat_interleave(2, dim=1).transpose(-1, -2)
    causal = torch.ones(scores.shape[-2:], dtype=torch.bool).tril()
    return scores.masked_fill(~causal, float("-inf")).double().log_softmax(-1)


def test_the_kl_scales_each_side_by_its_own_models_scale() -> None:
    """Original at scale 0.5, extended at 0.25 on the same q/k: the per-text KL is
    KL(softmax(0.5 qk) || softmax(0.25 qk)) summed over rows and heads, not the reverse."""
    g = torch.Generator().manual_seed(1)
    q, k, v = (torch.randn(2, h, 6, 8, generator=g) for h in (4, 2, 2))
    log_t, log_s = _causal_log_softmax(q, k, 0.5), _causal_log_softmax(q, k, 0.25)
    want = (log_t.exp() * (log_t - log_s)).nan_to_num().sum(dim=(1, 2, 3))
    for stats in (True, False):
        teacher = _TeacherSink(mask=None, stats=stats)
        teacher(0, q, k, 0.5)
        sink = _KLSink(teacher, torch.zeros(1, 2, dtype=torch.float64), "chunked")
        sink(0, q, k, v, 0.25, False)
        assert torch.allclose(sink.kl[0], want, rtol=1e-4), stats
