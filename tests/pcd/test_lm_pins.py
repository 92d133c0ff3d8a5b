"""The ``longred-pcd`` lm-eval model's arguments and model calls at their edges: how a model
spec is loaded (extended, in the dtype asked for), the arguments refused, the arguments handed
on to lm-eval's ``HFLM``, the scores written to the response cache, the passes run at strength
0, and the stop check on special tokens.

Everything runs on the built-in ``tiny-random`` model (fixtures in ``conftest.py``).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch

from longred_bench.errors import UserError
from longred_bench.pcd.lm import PcdLM, _dtype


def test_a_dtype_is_taken_as_given_and_a_torch_name_that_is_none_is_refused() -> None:
    assert _dtype(torch.float16) is torch.float16 and _dtype("float16") is torch.float16
    for name in ("nn", "cuda", "tensor"):
        with pytest.raises(UserError, match=f"unknown dtype '{name}'"):
            _dtype(name)


def test_a_model_spec_is_loaded_extended_by_its_rope() -> None:
    """``pretrained=tiny-random,rope=pi:factor=4``: the model PCD runs is the extended one, in
    eval mode."""
    lm = PcdLM(pretrained="tiny-random", rope="pi:factor=4", alpha=1.5)
    model = lm.pcd.model
    assert lm.model is model and not model.training
    rope = model.config.rope_parameters
    assert (rope["rope_type"], rope["factor"]) == ("linear", 4.0)


def test_a_model_spec_is_loaded_on_the_device_in_the_dtype_asked_for(tiny, monkeypatch) -> None:
    from longred_bench.models import loading

    asked = []

    def load(spec, **kwargs):
        asked.append((spec, kwargs))
        return SimpleNamespace(model=tiny.model, tokenizer=tiny.tokenizer)

    monkeypatch.setattr(loading, "load", load)
    PcdLM(pretrained="my-model", device="cpu", dtype="bfloat16", trust_remote_code=1)
    assert asked == [("my-model", {"device": "cpu", "dtype": torch.bfloat16,
                                   "trust_remote_code": True})]  # fmt: skip


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"pretrained": "tiny-random", "tokenizer": "x"}, "tokenizer= is only for an already"),
        ({"rope": "pi:factor=2"}, "a loaded model needs tokenizer= and takes no rope="),
        ({"tokenizer": None}, "a loaded model needs tokenizer= and takes no rope="),
        ({"pretrained": " ", "tokenizer": None}, "pretrained= is empty"),
    ],
)
def test_a_tokenizer_goes_with_a_loaded_model_and_a_rope_with_a_spec(tiny, kwargs, message):
    """A loaded model is taken as it is (its tokenizer given, no extension to add); a spec is
    loaded with its own tokenizer."""
    args = {"pretrained": tiny.model, "tokenizer": tiny.tokenizer, **kwargs}
    with pytest.raises(UserError, match=message):
        PcdLM(**args)


def test_an_encoder_decoder_model_is_refused(tiny, monkeypatch) -> None:
    """PCD decodes a decoder-only model: one lm-eval takes for an encoder-decoder (seq2seq)
    model is refused."""
    from lm_eval.models.huggingface import HFLM

    monkeypatch.setattr(
        HFLM, "_get_backend", lambda self, **kw: setattr(self, "backend", "seq2seq")
    )
    with pytest.raises(UserError, match="is for decoder-only models, not seq2seq"):
        PcdLM(pretrained=tiny.model, tokenizer=tiny.tokenizer)


def test_batching_and_length_arguments_reach_lm_eval(tiny) -> None:
    lm = PcdLM(pretrained=tiny.model, tokenizer=tiny.tokenizer, max_length=100, batch_size=3,
               max_batch_size=5, add_bos_token=True)  # fmt: skip
    assert (lm.max_length, lm.batch_size, lm.max_batch_size) == (100, 3, 5)
    assert lm.add_bos_token is True


def _recording_hook():
    from lm_eval.api.model import CacheHook

    class Recording(CacheHook):
        def __init__(self) -> None:
            self.dbdict, self.writes = {}, []

        def add_partial(self, attr, req, res) -> None:
            self.writes.append(req)
            super().add_partial(attr, req, res)

    return Recording()


def test_a_request_without_a_cache_key_is_scored_and_not_cached(tiny) -> None:
    strong = PcdLM(alpha=1.5, pretrained=tiny.model, tokenizer=tiny.tokenizer)
    strong.cache_hook = hook = _recording_hook()
    got = strong._loglikelihood_tokens(
        [(None, [65] * 4, [66] * 2), (("ab", "c"), [65] * 3, [67])], disable_tqdm=True
    )
    assert len(got) == 2 and hook.writes == [("ab", "c")]


def test_strength_zero_scores_with_one_pass(tiny, monkeypatch) -> None:
    """At alpha 0 the scores are the standard pass's and no local pass runs."""
    zero = PcdLM(alpha=0, pretrained=tiny.model, tokenizer=tiny.tokenizer)
    entered = []
    monkeypatch.setattr(zero.pcd, "local", lambda base: entered.append(base))
    zero._loglikelihood_tokens([(None, [65] * 10, [66] * 3)], disable_tqdm=True)
    assert entered == []


def test_a_stop_string_is_found_in_the_special_tokens_generated() -> None:
    """Stop strings are matched in the generated text with its special tokens kept, so a stop
    such as ``<|im_end|>`` (not the end-of-text token) ends the generation."""

    def decode(ids: list[int], skip_special_tokens: bool = True) -> str:
        return "".join("" if skip_special_tokens and i == 9 else f"<{i}>" for i in ids)

    lm = SimpleNamespace(eot_token_id=0, tok_decode=decode)
    assert PcdLM._stop_check(lm, ["<9>"])([3, 9])
    assert not PcdLM._stop_check(lm, ["<9>"])([3, 4])


def test_generation_reads_the_padding_of_a_batch(tiny) -> None:
    """lm-eval hands a left-padded batch with its attention mask: each row continues as it
    does alone, its padding neither attended to nor counted in its positions."""
    lm = PcdLM(alpha=1.5, pretrained=tiny.model, tokenizer=tiny.tokenizer)
    texts = ["The pass key is 71234. Remember", "x"]
    enc = tiny.tokenizer(texts, return_tensors="pt", padding=True, padding_side="left")
    width = enc.input_ids.shape[1]
    both = lm._model_generate(enc.input_ids, width + 4, [], attention_mask=enc.attention_mask)
    for row, text in enumerate(texts):
        one = tiny.tokenizer([text], return_tensors="pt")
        alone = lm._model_generate(one.input_ids, one.input_ids.shape[1] + 4, [],
                                   attention_mask=one.attention_mask)  # fmt: skip
        assert both[row, width:].tolist() == alone[0, -4:].tolist()


def test_generation_pads_stopped_rows_with_the_tokenizers_pad_token(tiny, monkeypatch) -> None:
    lm = PcdLM(alpha=1.5, pretrained=tiny.model, tokenizer=tiny.tokenizer)
    asked = {}
    monkeypatch.setattr(lm.pcd, "generate", lambda ids, mask, **kwargs: asked.update(kwargs))
    lm._model_generate(torch.tensor([[65, 66, 67]]), 10, ["."])
    assert (asked["pad_token_id"], asked["max_new_tokens"]) == (tiny.tokenizer.pad_token_id, 7)
    assert asked["pad_token_id"] != tiny.tokenizer.eos_token_id
    assert asked["is_done"]([lm.eot_token_id]) and not asked["is_done"]([65])


def test_model_info_is_lm_evals_with_the_pcd_parameters_added(tiny) -> None:
    from lm_eval.models.huggingface import HFLM

    common = {"pretrained": tiny.model, "tokenizer": tiny.tokenizer}
    info, plain = PcdLM(alpha=1.5, **common).get_model_info(), HFLM(**common).get_model_info()
    assert plain and {k: info[k] for k in plain} == plain and info["pcd"]["alpha"] == 1.5


def test_a_request_longer_than_max_length_takes_the_local_window_of_what_is_scored(
    tiny, monkeypatch
) -> None:
    """lm-eval cuts a request to its last max_length + 1 tokens: the local base follows that
    length, as a request of that length would, not the untruncated one."""
    lm = PcdLM(alpha=1.5, pretrained=tiny.model, tokenizer=tiny.tokenizer, max_length=64)
    asked = []
    real = lm.pcd.rows_by_base
    monkeypatch.setattr(lm.pcd, "rows_by_base", lambda n: asked.append(n) or real(n))
    long = lm._loglikelihood_tokens([(None, [65] * 200, [66] * 2)], disable_tqdm=True)
    cut = lm._loglikelihood_tokens([(None, [65] * 63, [66] * 2)], disable_tqdm=True)
    assert asked == [[65], [65]]
    assert long[0][0] == pytest.approx(cut[0][0], rel=1e-5, abs=1e-5)
