"""Drift sums saved to JSON and read back, and drift summaries worked out by hand."""

import json
import math

import pytest

from longred_bench.metrics.drift import TextSums, drift_result


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
