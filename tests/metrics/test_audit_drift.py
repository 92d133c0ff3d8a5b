"""Drift sums saved to JSON and read back, drift summaries worked out by hand, and a measurement
on a small Llama built in-process: resumed from saved sums, reported batch by batch, refused when
the attention escapes the capture."""

import contextlib
import copy
import json
import math

import pytest
import torch
from transformers import LlamaConfig, LlamaForCausalLM

import longred_bench.metrics.drift as drift_module
from longred_bench.errors import UserError
from longred_bench.metrics.drift import TextSums, drift_result, measure_drift


def test_text_sums_survive_a_json_round_trip_with_cosine_and_kl_in_place() -> None:
    sums = TextSums(cosine=(0.9, 0.8, 0.7), kl=(0.01, 0.02, 0.03), tokens=5)
    back = TextSums.from_list(json.loads(json.dumps(sums.as_list())))
    assert back == sums
    assert back.cosine == (0.9, 0.8, 0.7) and back.kl == (0.01, 0.02, 0.03)


def test_drift_result_by_hand() -> None:
    """Two texts, two layers, two heads: per-token cosine, per row-and-head KL, per-text values
    averaged over layers."""
    a = TextSums(cosine=(3.0, 2.0), kl=(6.0, 12.0), tokens=3)
    b = TextSums(cosine=(1.0, 0.0), kl=(2.0, 4.0), tokens=1)
    result = drift_result([a, b], heads=2, layers=2)
    assert result.num_texts == 2 and result.num_tokens == 4
    assert [x.layer for x in result.layers] == [1, 2]
    assert result.layers[0].hidden_cosine == pytest.approx(4.0 / 4)
    assert result.layers[1].hidden_cosine == pytest.approx(2.0 / 4)
    assert result.layers[0].attention_kl == pytest.approx(8.0 / 8)
    assert result.layers[1].attention_kl == pytest.approx(16.0 / 8)
    assert result.layers[0].text_hidden_cosine == pytest.approx((1.0, 1.0))
    assert result.layers[1].text_attention_kl == pytest.approx((2.0, 2.0))
    assert result.texts[0].hidden_cosine == pytest.approx((1.0 + 2.0 / 3) / 2)
    assert result.texts[0].attention_kl == pytest.approx((1.0 + 2.0) / 2)
    assert result.texts[1].num_tokens == 1
    assert result.mean_hidden_cosine == pytest.approx(0.75)
    assert result.mean_attention_kl == pytest.approx(1.5)
    assert result.last_hidden_cosine == pytest.approx(0.5)


def test_a_text_without_tokens_reads_nan_and_does_not_move_the_layer_means() -> None:
    full = TextSums(cosine=(2.0,), kl=(4.0,), tokens=2)
    empty = TextSums(cosine=(0.0,), kl=(0.0,), tokens=0)
    result = drift_result([full, empty], heads=1, layers=1)
    assert result.layers[0].hidden_cosine == pytest.approx(1.0)
    assert result.layers[0].attention_kl == pytest.approx(2.0)
    assert math.isnan(result.texts[1].hidden_cosine) and math.isnan(result.texts[1].attention_kl)


def _models() -> tuple[LlamaForCausalLM, LlamaForCausalLM]:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
        num_attention_heads=2, num_key_value_heads=1, max_position_embeddings=64,
    )  # fmt: skip
    original = LlamaForCausalLM(config).eval()
    extended = copy.deepcopy(original)
    with torch.no_grad():
        for p in extended.parameters():
            p.add_(0.05 * torch.randn_like(p))
    return original, extended


def _batches() -> list[tuple[torch.Tensor, None]]:
    g = torch.Generator().manual_seed(1)
    return [(torch.randint(0, 32, (2, 12), generator=g), None) for _ in range(2)]


def test_a_measurement_resumed_from_saved_sums_equals_the_whole_one() -> None:
    original, extended = _models()
    batches = _batches()
    seen: list[int] = []
    whole = measure_drift(original, {"x": extended}, batches, progress=False,
                          on_batch=lambda sums: seen.append(len(sums["x"])))  # fmt: skip
    assert seen == [2, 4]
    first: list[list[TextSums]] = []
    measure_drift(original, {"x": extended}, batches[:1], progress=False,
                  on_batch=lambda sums: first.append(list(sums["x"])))  # fmt: skip
    resumed = measure_drift(original, {"x": extended}, batches[1:], progress=False,
                            done={"x": first[-1]})  # fmt: skip
    assert resumed["x"].num_texts == 4 and resumed["x"].num_tokens == 48
    for a, b in zip(whole["x"].layers, resumed["x"].layers, strict=True):
        assert a.hidden_cosine == pytest.approx(b.hidden_cosine, rel=1e-12)
        assert a.attention_kl == pytest.approx(b.attention_kl, rel=1e-9)
    assert whole["x"].mean_attention_kl > 0


def test_attention_that_escapes_the_capture_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    original, extended = _models()
    monkeypatch.setattr(drift_module, "capture_qk", lambda model, sink: contextlib.nullcontext())
    with pytest.raises(UserError, match="captured q/k of 0 of 2 layers"):
        measure_drift(original, {"x": extended}, _batches(), progress=False)
