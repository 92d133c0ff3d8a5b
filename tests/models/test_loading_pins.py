"""Pinned behaviour of model loading (:mod:`longred_bench.models.loading`): which configs have
one RoPE to extend and how the others are refused, how rotary modules are found and rebuilt,
where a spec is read from, the loader's errors in one line, and the state of a loaded model."""

from __future__ import annotations

import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from transformers import Gemma3TextConfig, GPT2Config, GPT2LMHeadModel, LlamaConfig

from longred_bench.errors import UserError
from longred_bench.models import loading
from longred_bench.models.loading import (
    extend,
    load,
    original_rope,
    rotary_config,
    rotary_modules,
)


def test_an_empty_rope_parameters_means_no_rope() -> None:
    """A config whose ``rope_parameters`` is empty has no RoPE to extend, said as such."""
    config = SimpleNamespace(rope_parameters={}, model_type="x", max_position_embeddings=8)
    with pytest.raises(UserError, match="model type 'x' has no rotary position embedding"):
        original_rope(config)


def test_a_rope_per_layer_kind_is_refused_naming_the_kinds() -> None:
    """A RoPE per layer kind (Gemma 3) is refused naming the kinds; the advice to pass a spec
    per kind to transformers is given for an extension only."""
    pattern = r"uses a different RoPE per layer kind \(full_attention, sliding_attention\)"
    with pytest.raises(UserError, match=pattern) as got:
        original_rope(Gemma3TextConfig())
    assert str(got.value).endswith("(or pass a JSON rope spec per kind to transformers yourself)")
    with pytest.raises(UserError, match=pattern) as got:
        original_rope(Gemma3TextConfig(), "PCD's local RoPE variant")
    assert str(got.value).endswith("use a model with one RoPE")


def test_the_refusal_of_a_scaled_rope_names_its_kind_factor_and_window() -> None:
    """Extending an extended model names the scaling it already has."""
    once = extend(load("tiny-random").model, "pi:factor=4")
    with pytest.raises(UserError, match=r"already scaled \(linear, factor 4, window 1024\)"):
        extend(once, "abf:theta=1e6")


def test_a_dynamic_config_without_a_recorded_window_is_built_as_it_is() -> None:
    """A dynamic-NTK config that records no original window (one saved elsewhere) builds its
    rotary module from itself, at its own window."""
    config = LlamaConfig(max_position_embeddings=64)
    config.rope_parameters = {"rope_type": "dynamic", "rope_theta": 1e4, "factor": 2.0}
    assert rotary_config(config) is config
    recorded = LlamaConfig(max_position_embeddings=64)
    recorded.rope_parameters = {**config.rope_parameters, "original_max_position_embeddings": 16}
    built = rotary_config(recorded)
    assert built is not recorded and built.max_position_embeddings == 16
    assert recorded.max_position_embeddings == 64


def test_rotary_modules_are_rebuilt_on_the_device_of_the_weights() -> None:
    """An extended copy's rotary modules sit on the device its weights are on."""
    model = load("tiny-random").model.to("meta")
    extended = extend(model, "pi:factor=2")
    assert [m.inv_freq.device.type for _, _, m in rotary_modules(extended)] == ["meta"]


def test_a_module_with_inv_freq_but_no_rope_type_is_not_rotary() -> None:
    """Only modules with both an ``inv_freq`` buffer and a ``rope_type`` are rotary modules."""
    model = load("tiny-random").model
    holder = torch.nn.Module()
    holder.register_buffer("inv_freq", torch.ones(2))
    model.model.other = holder
    found = rotary_modules(model)
    assert [(parent, attr) for parent, attr, _ in found] == [(model.model, "rotary_emb")]


def test_a_model_without_a_rotary_module_is_refused() -> None:
    """A model with no rotary module is refused by name, not skipped."""
    model = GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=8, n_head=2, vocab_size=16))
    with pytest.raises(UserError, match="found no rotary embedding module in GPT2LMHeadModel"):
        rotary_modules(model)


@pytest.fixture
def built_zoo_name(saved_tiny: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A zoo name registered as a builder whose folder is ``saved_tiny``."""
    from longred_bench.models import builders

    monkeypatch.setitem(builders.BUILDERS, "tiny-saved", lambda: saved_tiny)
    return "tiny-saved"


def test_a_builder_zoo_name_is_read_from_its_folder(built_zoo_name, saved_tiny) -> None:
    """A directory-backed zoo name resolves to its folder, and its config and tokenizer are
    read there."""
    from longred_bench.models.loading import load_config, load_tokenizer, resolve_spec

    assert resolve_spec(built_zoo_name) == (str(saved_tiny), {})
    assert load_config(built_zoo_name).max_position_embeddings == 256
    assert (
        load_tokenizer(built_zoo_name)("ab")["input_ids"]
        == load_tokenizer("tiny-random")("ab")["input_ids"]
    )


def test_a_load_error_is_the_first_line_of_the_loaders_error(tmp_path) -> None:
    """The loader's error is said by its first line (its class name when it has none), with
    advice for a name that is no folder."""
    spec = str(tmp_path / "gone")
    error = loading._load_error(spec, OSError("first line\nsecond line"))
    assert str(error).startswith(f"could not load model {spec!r}: first line (offline? zoo")
    error = loading._load_error(spec, FileNotFoundError())
    assert str(error).startswith(f"could not load model {spec!r}: FileNotFoundError (offline?")
    error = loading._load_error(str(tmp_path), OSError("x"))
    assert str(error).endswith("(is the folder whole: config.json, weights and tokenizer files?)")


def test_transformers_refusal_is_one_line_without_a_doubled_stop() -> None:
    """transformers' refusal is joined onto one line, its final stop dropped, with advice on the
    folder only where the folder is no model transformers reads."""
    with pytest.raises(UserError) as got, loading._unreadable("m", "its config"):
        raise ValueError("a field\n  has the wrong type.\n")
    assert (
        str(got.value)
        == "model 'm': transformers cannot read its config: a field has the wrong type"
    )
    with pytest.raises(UserError) as got, loading._unreadable("m", "its config"):
        raise ValueError("Transformers does not recognize this architecture.")
    assert str(got.value).endswith(
        "does not recognize this architecture; give a Hugging Face model folder (config.json, "
        "weights and tokenizer files) or hub id"
    )


def test_weights_lacking_tensors_are_refused_naming_the_first_two() -> None:
    """One tensor missing is enough to refuse; the message names the first two missing, marks
    more with "...", and names a tensor the files hold that matches nothing."""
    with pytest.raises(UserError, match=r"lack 1 tensor\(s\) its config\.json names \(a\): "):
        loading.check_weights_cover("m", {"missing_keys": ["a"], "unexpected_keys": []})
    with pytest.raises(UserError) as got:
        loading.check_weights_cover("m", {"missing_keys": ["c", "a", "b"],
                                          "unexpected_keys": ["y", "x"]})  # fmt: skip
    said = str(got.value)
    assert "lack 3 tensor(s) its config.json names (a, b, ...); 2 tensor(s) in the files" in said
    assert "match nothing in it (x): transformers would start them at random" in said
    with pytest.raises(UserError) as got:
        loading.check_weights_cover("m", {"missing_keys": ["b", "a"]})
    assert "names (a, b): transformers" in str(got.value)
    loading.check_weights_cover("m", {"missing_keys": [], "unexpected_keys": ["x"]})


def test_a_local_folder_failing_its_manifest_is_refused(saved_tiny: Path) -> None:
    """A model folder with a manifest whose files no longer match it is refused before loading,
    with how to repair it."""
    from longred_bench.cache import write_manifest

    write_manifest(saved_tiny, {"kind": "model"})
    config = saved_tiny / "config.json"
    config.write_text(config.read_text() + " ")
    with pytest.raises(UserError, match=rf"cache entry .*{saved_tiny.name} is corrupt: ") as got:
        load(str(saved_tiny))
    assert str(got.value).endswith("; replace the damaged files (a cached copy: delete the "
                                   "folder and run again)")  # fmt: skip


def test_a_quantized_model_is_loaded_as_a_plain_one(saved_tiny, monkeypatch) -> None:
    """A model transformers loads with a quantizer comes back without it (nor the config's
    quantization_config), so that it moves to the dtype asked for."""
    from transformers import AutoModelForCausalLM

    real = AutoModelForCausalLM.from_pretrained

    def quantized(*args, **kwargs):
        model, info = real(*args, **kwargs)
        model.hf_quantizer = object()
        model.config.quantization_config = {"quant_method": "gguf"}
        return model, info

    monkeypatch.setattr(AutoModelForCausalLM, "from_pretrained", quantized)
    model = load(str(saved_tiny), dtype=torch.float64).model
    assert model.hf_quantizer is None and model.config.quantization_config is None
    assert next(model.parameters()).dtype == torch.float64


def test_only_the_recorded_window_warning_is_kept_off() -> None:
    """transformers' warning on the original window a dynamic config records is kept off its
    log; any other unrecognized key is still said."""
    logger = logging.getLogger("transformers.modeling_rope_utils")
    (kept_off,) = [f for f in logger.filters if isinstance(f, loading._RecordedWindow)]

    def said(message: str) -> bool:
        record = logging.LogRecord(logger.name, logging.WARNING, "", 0, message, None, None)
        return kept_off.filter(record)

    assert not said(loading._RECORDED_WINDOW)
    assert said(loading._RECORDED_WINDOW.replace("original_max_position_embeddings", "x"))


def test_a_config_transformers_refuses_is_one_line_for_the_config_alone(tmp_path) -> None:
    """load_config says transformers' refusal of a config.json in one line naming the model,
    with advice on the folder for an architecture it does not know."""
    from longred_bench.models.loading import load_config

    (tmp_path / "config.json").write_text('{"model_type": "no-such-architecture"}')
    with pytest.raises(UserError) as got:
        load_config(str(tmp_path))
    said = str(got.value)
    assert said.startswith(f"model {str(tmp_path)!r}: transformers cannot read its config: ")
    assert said.endswith("; give a Hugging Face model folder (config.json, weights and tokenizer "
                         "files) or hub id") and "\n" not in said  # fmt: skip


def test_a_tokenizer_the_loader_cannot_read_is_one_line(saved_tiny, monkeypatch) -> None:
    """The tokenizer loader's OSError is said in one line naming the model, for the tokenizer
    alone as for the whole model."""
    from transformers import AutoTokenizer

    def unreadable(*args, **kwargs):
        raise OSError("cannot read tokenizer.json\ndetails")

    monkeypatch.setattr(AutoTokenizer, "from_pretrained", unreadable)
    said = f"could not load model {str(saved_tiny)!r}: cannot read tokenizer.json (is the folder"
    for read in (loading.load_tokenizer, load):
        with pytest.raises(UserError) as got:
            read(str(saved_tiny))
        assert str(got.value).startswith(said)


def test_a_loaded_model_is_in_eval_mode_in_the_dtype_asked_for() -> None:
    """A loaded model (a zoo model built in-process too, extended or not) is in eval mode, in
    the dtype asked for, and names the spec and extension it was loaded with."""
    plain = load("tiny-random", dtype=torch.float64)
    assert not plain.model.training and next(plain.model.parameters()).dtype == torch.float64
    assert (plain.spec, plain.rope) == ("tiny-random", None)
    extended = load("tiny-random", rope="pi:factor=2")
    assert not extended.model.training
    assert not any(module.training for module in extended.model.modules())
    assert (extended.spec, extended.rope) == ("tiny-random", "pi:factor=2")


def test_a_rope_spec_that_does_not_parse_is_refused_before_any_weights_are_read(
    monkeypatch,
) -> None:
    """``load(spec, rope="pi:factr=4")`` read the model's weights first, then refused the spec."""

    def read(*args, **kwargs):
        raise AssertionError("weights were read")

    monkeypatch.setattr(loading, "load_zoo", read)
    monkeypatch.setattr(loading, "_load_pretrained", read)
    with pytest.raises(UserError, match="factr"):
        load("tiny-random", rope="pi:factr=4")
