"""Drift metrics on the tiny random Llama: exact zero for identical models, agreement with eager
attention maps, growth with the ABF base, LongReD's layer selection."""

import copy
import math

import pytest
import torch

import longred_bench.metrics.drift as drift_module
from longred_bench.errors import UserError
from longred_bench.kernels import attention_with_lse
from longred_bench.metrics.drift import measure_drift, select_layers
from longred_bench.metrics.similarity import masked_cosine_sums, masked_mean_cosine, token_cosine
from longred_bench.models.capture import capture_attention, capture_qk
from longred_bench.models.loading import extend, load

pytestmark = pytest.mark.integration


def _ids(n=40, batch=2, seed=0):
    return torch.randint(0, 256, (batch, n), generator=torch.Generator().manual_seed(seed))


def test_token_cosine_exact_one_and_zero_vector():
    a = torch.randn(5, 7, 33)
    assert torch.equal(token_cosine(a, a), torch.ones(5, 7, dtype=torch.float64))
    z = torch.zeros(3)
    assert token_cosine(z, torch.ones(3)).item() == 0.0
    b = torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 2.0]])
    assert token_cosine(*b).item() == 0.0


def test_token_cosine_nan_is_nan_and_a_zero_vector_has_a_finite_gradient():
    """A NaN hidden state reads NaN, not 0 (the largest drift); a zero vector's cosine (0) has
    a zero gradient, not NaN (sqrt's gradient at 0 reached it through the masked branch)."""
    a = torch.randn(4, 8)
    bad = a.clone()
    bad[1, 3] = float("nan")
    got = token_cosine(bad, a)
    assert got[1].isnan() and torch.equal(got[[0, 2, 3]], torch.ones(3, dtype=torch.float64))
    student = torch.randn(3, 8, requires_grad=True)
    teacher = torch.randn(3, 8)
    teacher[0] = 0.0
    token_cosine(student, teacher).sum().backward()
    assert torch.isfinite(student.grad).all() and torch.equal(student.grad[0], torch.zeros(8))


def test_masked_cosine_sums_refuses_a_mask_of_another_shape():
    """A [seq] mask was broadcast to every sequence, and the counts came back as a scalar."""
    a = torch.randn(2, 4, 8)
    with pytest.raises(ValueError, match=r"mask has shape \(4,\), expected \[batch, seq\]"):
        masked_cosine_sums(a, a, torch.ones(4, dtype=torch.bool))


def test_masked_mean_cosine_skips_padding():
    a = torch.randn(2, 4, 8)
    b = a.clone()
    b[0, 3] = -a[0, 3]
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    total, count = masked_mean_cosine(a, b, mask)
    assert count == 7
    assert total.item() == pytest.approx(7.0)


def test_drift_is_exactly_zero_for_the_original_itself():
    original = load("tiny-random").model
    res = measure_drift(original, {"same": original}, [(_ids(), None)], progress=False)["same"]
    assert [x.hidden_cosine for x in res.layers] == [1.0] * 4
    assert [x.attention_kl for x in res.layers] == [0.0] * 4
    assert res.num_tokens == 80


def test_attention_kl_matches_eager_attention_maps():
    original = load("tiny-random").model
    extended = extend(original, "abf:theta=1e6")
    ids = _ids(n=23, batch=1)
    res = measure_drift(original, {"abf": extended}, [(ids, None)], progress=False)["abf"]
    for model in (original, extended):
        model.set_attn_implementation("eager")
    with torch.no_grad():
        p = original(ids, output_attentions=True, output_hidden_states=True)
        q = extended(ids, output_attentions=True, output_hidden_states=True)
    for layer, (att_p, att_q) in enumerate(zip(p.attentions, q.attentions, strict=True)):
        att_p, att_q = att_p.double(), att_q.double()
        causal = torch.ones(23, 23, dtype=torch.bool).tril()
        terms = torch.where(
            causal, att_p * (att_p.clamp_min(1e-300).log() - att_q.clamp_min(1e-300).log()), 0.0
        )
        expected = terms.sum(-1).mean().item()
        assert res.layers[layer].attention_kl == pytest.approx(expected, rel=1e-3, abs=1e-7)
        cos = token_cosine(p.hidden_states[layer + 1], q.hidden_states[layer + 1]).mean().item()
        assert res.layers[layer].hidden_cosine == pytest.approx(cos, rel=1e-6)


@pytest.mark.parametrize("padded", [False, True])
def test_stats_kl_agrees_with_chunked_kl(padded):
    """On CPU ``impl="auto"`` takes the fused-statistics KL; it must give the chunked numbers.
    Layer KLs here are about 8e-5; both fp32 paths sit within 1e-8 of an fp64 run of the model."""
    original = load("tiny-random").model
    extended = {"abf": extend(original, "abf:theta=1e6"), "pi": extend(original, "pi:factor=4")}
    ids = _ids(n=48)
    mask = None
    if padded:
        mask = torch.ones(2, 48, dtype=torch.long)
        mask[0, :7] = 0
    batches = [(ids, mask)]
    stats = measure_drift(original, extended, batches, impl="stats", progress=False)
    chunked = measure_drift(original, extended, batches, impl="chunked", progress=False)
    auto = measure_drift(original, extended, batches, progress=False)
    for name in extended:
        assert auto[name] == stats[name]
        for a, b in zip(stats[name].layers, chunked[name].layers, strict=True):
            assert a.attention_kl == pytest.approx(b.attention_kl, rel=0, abs=3e-8)
            assert a.hidden_cosine == b.hidden_cosine


@pytest.mark.parametrize("low_side", ["original", "extended"])
@pytest.mark.parametrize("impl", ["chunked", "auto"])
def test_drift_of_models_in_different_dtypes(impl, low_side):
    """A bf16 original against an fp32 extended copy (as when a trainer keeps its teacher in
    bf16), or the other way round: q/k are compared at the wider dtype, and the numbers are the
    fp32 pair's within bf16 rounding. A bf16 extended model under ``auto`` got the fp32
    attention output of its widened q/k in its bf16 layer: a dtype error."""
    original = load("tiny-random").model
    extended = {"abf": extend(original, "abf:theta=1e6")}
    batches = [(_ids(n=48), None)]
    exact = measure_drift(original, extended, batches, impl=impl, progress=False)["abf"]
    if low_side == "original":
        low = copy.deepcopy(original).to(torch.bfloat16)
        mixed = measure_drift(low, extended, batches, impl=impl, progress=False)["abf"]
    else:
        low_ext = {"abf": copy.deepcopy(extended["abf"]).to(torch.bfloat16)}
        mixed = measure_drift(original, low_ext, batches, impl=impl, progress=False)["abf"]
    for a, b in zip(mixed.layers, exact.layers, strict=True):
        assert math.isfinite(a.attention_kl) and a.attention_kl > 0
        assert a.attention_kl == pytest.approx(b.attention_kl, rel=0.3)
        assert a.hidden_cosine == pytest.approx(b.hidden_cosine, abs=2e-2)


def test_padding_rows_do_not_count():
    original = load("tiny-random").model
    extended = extend(original, "pi:factor=4")
    ids = _ids(n=16, batch=1)
    full = measure_drift(original, {"e": extended}, [(ids, None)], progress=False)["e"]
    padded_ids = torch.cat([ids, torch.zeros(1, 5, dtype=torch.long)], dim=1)
    mask = torch.cat([torch.ones(1, 16), torch.zeros(1, 5)], dim=1).long()
    padded = measure_drift(original, {"e": extended}, [(padded_ids, mask)], progress=False)["e"]
    assert padded.num_tokens == 16
    for a, b in zip(full.layers, padded.layers, strict=True):
        # A KL of about 2e-5 nats, summed in fp32 over other matmul shapes: equal to about 1e-8
        # (a padded position counted would move it by far more).
        assert b.attention_kl == pytest.approx(a.attention_kl, rel=1e-3, abs=1e-8)
        assert b.hidden_cosine == pytest.approx(a.hidden_cosine, rel=1e-6)


def test_drift_grows_with_abf_base():
    original = load("tiny-random").model
    bases = ["abf:theta=1e5", "abf:theta=1e6", "abf:theta=1e8"]
    models = {b: extend(original, b) for b in bases}
    res = measure_drift(original, models, [(_ids(n=64), None)], progress=False)
    kl = [res[b].mean_attention_kl for b in bases]
    cos = [res[b].mean_hidden_cosine for b in bases]
    assert 0 < kl[0] < kl[1] < kl[2]
    assert 1 > cos[0] > cos[1] > cos[2]


def test_capture_restores_attention_and_matches_sdpa_output():
    model = load("tiny-random").model
    ids = _ids(n=12, batch=1)
    with torch.no_grad():
        ref = model(ids).logits
        seen = []
        with capture_qk(model, lambda layer, q, k, s: seen.append((layer, q.shape, k.shape, s))):
            out = model(ids).logits
    assert torch.equal(ref, out)
    assert model.config._attn_implementation == "sdpa"
    assert [s[0] for s in seen] == [0, 1, 2, 3]
    assert seen[0][1:] == (torch.Size([1, 4, 12, 16]), torch.Size([1, 2, 12, 16]), 0.25)


def test_capture_attention_output_replaces_sdpa_only_on_plain_calls():
    model = load("tiny-random").model
    ids = _ids(n=12)
    mask = torch.ones(2, 12, dtype=torch.long)
    mask[0, :3] = 0
    plain_seen = []

    def attend(layer, q, k, v, scale, plain):
        plain_seen.append(plain)
        return attention_with_lse(q, k, v, scale)[0] if plain else None

    with torch.no_grad():
        for m in (None, mask):
            ref = model(ids, attention_mask=m).logits
            with capture_attention(model, attend):
                out = model(ids, attention_mask=m).logits
            assert torch.equal(ref, out)
    assert plain_seen == [True] * 4 + [False] * 4
    assert model.config._attn_implementation == "sdpa"


@pytest.mark.parametrize("padded", [False, True])
def test_drift_takes_the_extended_lse_from_its_own_attention_unless_padded(padded, monkeypatch):
    """Unpadded batches compute each extended layer's attention in the KL sink (one fused call
    fewer); padded ones leave attention to SDPA. Both give the chunked KL."""
    calls = []

    def counting(*args):
        calls.append(1)
        return attention_with_lse(*args)

    monkeypatch.setattr(drift_module, "attention_with_lse", counting)
    original = load("tiny-random").model
    extended = {"pi": extend(original, "pi:factor=4")}
    mask = torch.ones(2, 30, dtype=torch.long)
    mask[1, :4] = 0
    batches = [(_ids(n=30), mask if padded else None)]
    stats = measure_drift(original, extended, batches, progress=False)["pi"]
    assert len(calls) == (0 if padded else 4)
    chunked = measure_drift(original, extended, batches, impl="chunked", progress=False)["pi"]
    for a, b in zip(stats.layers, chunked.layers, strict=True):
        assert a.attention_kl == pytest.approx(b.attention_kl, rel=0, abs=3e-8)
        assert a.hidden_cosine == b.hidden_cosine


def test_select_layers_top_m_plus_last():
    kl = [0.1, 0.5, 0.3, 0.5, 0.05]
    assert select_layers(kl, 2) == [2, 4, 5]
    assert select_layers(kl, 0) == [5]
    assert select_layers(kl, 5) == [1, 2, 3, 4, 5]
    assert select_layers(kl, 1) == [2, 5]  # layers 2 and 4 tie: the lower one is taken
    with pytest.raises(ValueError):
        select_layers(kl, -1)


def test_per_text_drift_averages_to_the_summary_and_ignores_batch_partners():
    """Each row of a batch is a text with its own drift (mean over its tokens, then layers); with
    equal-length texts their mean is the summary's mean over layers, and a text's values do not
    depend on the texts batched with it."""
    original = load("tiny-random").model
    extended = {"pi": extend(original, "pi:factor=4")}
    ids = _ids(n=40, batch=3)
    res = measure_drift(original, extended, [(ids[:2], None), (ids[2:], None)], progress=False)
    res = res["pi"]
    assert res.num_texts == len(res.texts) == 3
    assert [t.num_tokens for t in res.texts] == [40, 40, 40]
    hidden = [t.hidden_cosine for t in res.texts]
    kl = [t.attention_kl for t in res.texts]
    assert sum(hidden) / 3 == pytest.approx(res.mean_hidden_cosine, rel=1e-12)
    assert sum(kl) / 3 == pytest.approx(res.mean_attention_kl, rel=1e-9)
    assert len(set(kl)) == 3  # different texts drift differently
    alone = measure_drift(original, extended, [(ids[1:2], None)], progress=False)["pi"].texts[0]
    assert alone.hidden_cosine == pytest.approx(hidden[1], rel=1e-9)
    assert alone.attention_kl == pytest.approx(kl[1], rel=1e-5)


def test_per_text_drift_of_padded_and_empty_texts():
    """Padding does not count towards a text's drift; a text with no valid token is NaN."""
    original = load("tiny-random").model
    extended = {"e": extend(original, "abf:theta=1e6")}
    ids = _ids(n=20, batch=2)
    full = measure_drift(original, extended, [(ids, None)], progress=False)["e"].texts
    padded_ids = torch.cat([ids, torch.zeros(2, 6, dtype=torch.long)], dim=1)
    mask = torch.cat([torch.ones(2, 20), torch.zeros(2, 6)], dim=1).long()
    padded = measure_drift(original, extended, [(padded_ids, mask)], progress=False)["e"].texts
    for a, b in zip(full, padded, strict=True):
        assert b.num_tokens == 20
        assert b.hidden_cosine == pytest.approx(a.hidden_cosine, rel=1e-6)
        # A KL of about 2e-5 nats, summed in fp32 over other matmul shapes: equal to about 1e-8
        # (a padded position counted would move it by far more).
        assert b.attention_kl == pytest.approx(a.attention_kl, rel=1e-3, abs=1e-8)
    mask[1] = 0
    empty = measure_drift(original, extended, [(padded_ids, mask)], progress=False)["e"]
    assert empty.texts[1].num_tokens == 0
    assert math.isnan(empty.texts[1].hidden_cosine) and math.isnan(empty.texts[1].attention_kl)
    assert empty.texts[0].hidden_cosine == pytest.approx(full[0].hidden_cosine, rel=1e-6)
    assert empty.num_tokens == 20 and empty.mean_hidden_cosine == pytest.approx(
        full[0].hidden_cosine, rel=1e-6
    )


def test_per_text_drift_of_the_original_itself_is_exact():
    original = load("tiny-random").model
    res = measure_drift(original, {"same": original}, [(_ids(), None)], progress=False)["same"]
    assert [(t.hidden_cosine, t.attention_kl) for t in res.texts] == [(1.0, 0.0)] * 2


def test_masked_cosine_sums_per_sequence():
    a = torch.randn(2, 4, 8)
    b = a.clone()
    b[0, 3] = -a[0, 3]
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    sums, counts = masked_cosine_sums(a, b, mask)
    assert counts.tolist() == [3, 2] and sums.tolist() == pytest.approx([3.0, 2.0])
    sums, counts = masked_cosine_sums(a, b)
    assert counts.tolist() == [4, 4] and sums.tolist() == pytest.approx([2.0, 4.0])
    total, count = masked_mean_cosine(a, b, mask)
    assert float(total) == pytest.approx(5.0) and count == 5


def test_capture_hands_the_sink_the_scale_the_layer_uses():
    """The layer's own softmax scale reaches the sink (a model with a query pre-attention
    scalar, as Gemma's, does not use head_dim ** -0.5)."""
    model = load("tiny-random").model
    for i, layer in enumerate(model.model.layers):
        layer.self_attn.scaling = 0.1 * (i + 1)
    seen = {}
    with torch.no_grad(), capture_qk(model, lambda layer, q, k, s: seen.setdefault(layer, s)):
        model(_ids(n=8, batch=1))
    assert seen == pytest.approx({0: 0.1, 1: 0.2, 2: 0.3, 3: 0.4})


def test_capture_qkv_hands_the_sink_the_values():
    """capture_qkv's third tensor is the layer's values (v_proj of the normed input, no RoPE)."""
    from longred_bench.models.capture import capture_qkv

    model = load("tiny-random").model
    ids = _ids(n=8, batch=1)
    seen = {}
    with torch.no_grad():
        with capture_qkv(model, lambda layer, q, k, v, s: seen.setdefault(layer, (k, v))):
            model(ids)
        attn = model.model.layers[0].self_attn
        hidden = model.model.layers[0].input_layernorm(model.model.embed_tokens(ids))
        expected = attn.v_proj(hidden).view(1, 8, -1, attn.head_dim).transpose(1, 2)
    k, v = seen[0]
    assert v.shape == k.shape == (1, 2, 8, 16)
    torch.testing.assert_close(v, expected)


def test_capture_restores_the_previous_implementation_and_its_sink_after_an_error():
    """The model gets back the implementation it had (eager here, not sdpa), and a capture left
    by an exception leaves no sink behind for the next forward."""
    model = load("tiny-random").model
    model.set_attn_implementation("eager")
    calls = []

    def failing(layer, q, k, scale):
        calls.append(layer)
        raise RuntimeError("sink failed")

    with torch.no_grad():
        with pytest.raises(RuntimeError, match="sink failed"), capture_qk(model, failing):
            model(_ids(n=8, batch=1))
        assert model.config._attn_implementation == "eager"
        with capture_qk(model, lambda layer, q, k, s: calls.append(("second", layer))):
            model(_ids(n=8, batch=1))
    assert calls == [0] + [("second", i) for i in range(4)]
    assert model.config._attn_implementation == "eager"


def test_nested_captures_feed_the_innermost_sink():
    """Within a nested capture the innermost sink gets the layers, the outer one is idle until
    the inner block ends."""
    model = load("tiny-random").model
    outer, inner = [], []
    with torch.no_grad(), capture_qk(model, lambda layer, q, k, s: outer.append(layer)):
        with capture_qk(model, lambda layer, q, k, s: inner.append(layer)):
            model(_ids(n=8, batch=1))
        assert (outer, inner) == ([], [0, 1, 2, 3])
        model(_ids(n=8, batch=1))
    assert outer == [0, 1, 2, 3]


def test_a_sink_may_not_replace_the_output_of_a_padded_call():
    """Only plain causal calls may take the sink's attention output: a masked call that gets one
    is an error, not attention computed without the mask."""
    model = load("tiny-random").model
    mask = torch.ones(2, 12, dtype=torch.long)
    mask[0, :3] = 0

    def always(layer, q, k, v, scale, plain):
        return attention_with_lse(q, k, v, scale)[0]

    refused = pytest.raises(RuntimeError, match="non-plain call")
    with torch.no_grad(), capture_attention(model, always), refused:
        model(_ids(n=12), attention_mask=mask)


@pytest.mark.parametrize(
    ("q_len", "k_len", "kwargs", "plain"),
    [
        (6, 6, {}, True),
        (6, 6, {"dropout": 0.1}, False),
        (6, 9, {}, False),  # more keys than queries (a cache)
        (6, 6, {"softcap": 30.0}, False),
        (6, 6, {"sinks": torch.zeros(4)}, False),
        (6, 6, {"is_causal": False}, False),
    ],
)
def test_plain_causal_calls(q_len, k_len, kwargs, plain):
    """Which attention calls a sink may compute itself: causal self-attention with no mask, no
    dropout, as many keys as queries and none of softcap, position bias, sinks or a cache."""
    from longred_bench.models.capture import _plain_causal

    module = torch.nn.Module()
    module.is_causal = True
    q, k = torch.zeros(1, 4, q_len, 16), torch.zeros(1, 2, k_len, 16)
    assert _plain_causal(module, q, k, None, kwargs) is plain
    assert (
        _plain_causal(module, q, k, torch.ones(1, 1, q_len, k_len, dtype=torch.bool), {}) is False
    )


def test_drift_refuses_models_that_do_not_match_the_original():
    """Drift compares matching layers of models over one vocabulary: another depth or vocabulary
    is a UserError naming the model, before any forward."""
    from transformers import LlamaForCausalLM

    original = load("tiny-random").model
    for change, message in [({"num_hidden_layers": 2}, "has 2 layers, the original has 4"),
                            ({"vocab_size": 300}, "has a different vocabulary size")]:  # fmt: skip
        config = copy.deepcopy(original.config)
        for key, value in change.items():
            setattr(config, key, value)
        other = LlamaForCausalLM(config)
        with pytest.raises(UserError, match=f"'other' {message}"):
            measure_drift(original, {"other": other}, [(_ids(), None)], progress=False)


def test_layers_are_numbered_from_1_and_the_last_is_the_final_normed_state():
    """LayerDrift.layer is 1-based, and last_hidden_cosine is the cosine of the model's final
    (normed) hidden state, the last layer's."""
    original = load("tiny-random").model
    extended = extend(original, "pi:factor=4")
    ids = _ids(n=20, batch=1)
    res = measure_drift(original, {"pi": extended}, [(ids, None)], progress=False)["pi"]
    assert [x.layer for x in res.layers] == [1, 2, 3, 4]
    with torch.no_grad():
        a = original(ids, output_hidden_states=True).hidden_states[-1]
        b = extended(ids, output_hidden_states=True).hidden_states[-1]
    assert res.last_hidden_cosine == res.layers[-1].hidden_cosine
    assert res.last_hidden_cosine == pytest.approx(token_cosine(a, b).mean().item(), rel=1e-9)
    assert res.layers[0].hidden_cosine != pytest.approx(res.last_hidden_cosine, rel=1e-9)


def test_the_chunked_kl_is_used_when_asked_for(monkeypatch):
    """impl="chunked" computes every layer's KL with relation_kl (no fused statistics), and the
    default on CPU takes the statistics instead."""
    calls = []
    real = drift_module.relation_kl

    def counting(*args, **kwargs):
        calls.append(kwargs["impl"])
        return real(*args, **kwargs)

    monkeypatch.setattr(drift_module, "relation_kl", counting)
    original = load("tiny-random").model
    extended = {"pi": extend(original, "pi:factor=4")}
    measure_drift(original, extended, [(_ids(n=16), None)], impl="chunked", progress=False)
    assert calls == ["chunked"] * 4
    calls.clear()
    measure_drift(original, extended, [(_ids(n=16), None)], progress=False)
    assert calls == []


def test_drift_of_no_token_is_refused_not_zero():
    """Every token padded (or no batch): the layer means were 0.0, a cosine that reads as the
    largest drift there is; each text's was NaN. Refused in one line; a mean over no token in
    ``drift_result`` is NaN."""
    from longred_bench.metrics.drift import TextSums, drift_result

    original = load("tiny-random").model
    extended = {"pi": extend(original, "pi:factor=4")}
    padded = [(_ids(n=8, batch=1), torch.zeros(1, 8, dtype=torch.long))]
    for batches in (padded, []):
        with pytest.raises(UserError, match="drift measured no token"):
            measure_drift(original, extended, batches, progress=False)
    empty = drift_result([TextSums((0.0,), (0.0,), 0)], heads=4, layers=1)
    assert math.isnan(empty.layers[0].hidden_cosine) and math.isnan(empty.layers[0].attention_kl)
