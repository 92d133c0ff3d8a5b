"""An evaluation's saved responses (``--out``'s ``requests/``) are keyed by a local model's
files too: weights replaced at the same path are evaluated anew, not answered from the old
responses; the same files keep the key, and a name that is no path keys as before."""

from __future__ import annotations

import os

from longred_bench.evaluation.config import EvalConfig
from longred_bench.jobs.resume import request_cache, weights_stamp


def test_replaced_weights_at_one_path_get_a_new_response_cache(tmp_path) -> None:
    model = tmp_path / "final"
    model.mkdir()
    (model / "config.json").write_text("{}")
    weights = model / "model.safetensors"
    weights.write_bytes(b"a" * 64)
    cfg = EvalConfig(model=str(model), suite="short_tiny")
    first = request_cache(tmp_path / "out", cfg)
    assert request_cache(tmp_path / "out", cfg) == first  # the same files: the same key
    weights.write_bytes(b"b" * 65)  # another model trained into the same folder
    assert request_cache(tmp_path / "out", cfg) != first
    stamp = weights_stamp(str(model))
    os.utime(weights, ns=(1, 1))  # same size, another modification time
    assert weights_stamp(str(model)) != stamp
    assert weights_stamp("someorg/some-model") is None and weights_stamp("tiny-random") is None
