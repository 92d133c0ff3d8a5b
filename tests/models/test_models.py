"""Model loading, RoPE extension through config only, and the errors for unsupported models."""

import re

import pytest
import torch
from transformers import Gemma3TextConfig, GPT2Config, LlamaConfig, LlamaForCausalLM

from longred_bench.errors import UserError
from longred_bench.models.loading import extend, load, original_rope


def test_extend_changes_config_and_shares_nothing():
    original = load("tiny-random").model
    extended = extend(original, "pi:factor=4")
    assert original.config.rope_parameters == {"rope_type": "default", "rope_theta": 10000.0}
    assert original.config.max_position_embeddings == 256
    assert extended.config.rope_parameters["rope_type"] == "linear"
    assert extended.config.max_position_embeddings == 1024
    inv_o = original.model.rotary_emb.inv_freq
    inv_e = extended.model.rotary_emb.inv_freq
    torch.testing.assert_close(inv_e, inv_o / 4)
    for (name, p_o), (_, p_e) in zip(
        original.named_parameters(), extended.named_parameters(), strict=True
    ):
        assert p_o.data_ptr() != p_e.data_ptr(), name
        torch.testing.assert_close(p_o, p_e)
    with torch.no_grad():
        extended.lm_head.weight.add_(1.0)
    assert not torch.equal(original.lm_head.weight, extended.lm_head.weight)


def test_pi_equals_scaled_positions():
    """Linear interpolation by 4 is the original model fed positions / 4."""
    original = load("tiny-random").model
    extended = extend(original, "pi:factor=4")
    ids = torch.randint(0, 256, (1, 24), generator=torch.Generator().manual_seed(1))
    pos = torch.arange(24)[None]
    with torch.no_grad():
        a = extended(ids, position_ids=pos).logits
        b = original(ids, position_ids=pos.float() / 4).logits
    torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)


def _logits(model, ids):
    with torch.no_grad():
        return model(ids).logits


def test_dynamic_scales_from_the_original_window(tmp_path):
    """dynamic:factor=4 is transformers' dynamic NTK on the model's own window: the original
    model up to 256 tokens, the NTK base past it (built at the 1,024-token target, it was the
    original model up to 1,024). The same after a save and a load."""
    import copy

    loaded = load("tiny-random")
    original = loaded.model
    extended = extend(original, "dynamic:factor=4")
    assert extended.config.max_position_embeddings == 1024
    reference = copy.deepcopy(original)  # the standard use: dynamic at the trained window
    reference.config.rope_parameters = {"rope_type": "dynamic", "rope_theta": 10000.0,
                                        "factor": 4.0}  # fmt: skip
    reference.model.rotary_emb = type(reference.model.rotary_emb)(config=reference.config)
    gen = torch.Generator().manual_seed(2)
    short, long = (torch.randint(0, 256, (1, n), generator=gen) for n in (200, 600))
    torch.testing.assert_close(_logits(extended, short), _logits(original, short))
    torch.testing.assert_close(_logits(extended, long), _logits(reference, long))
    assert not torch.allclose(_logits(extended, long), _logits(original, long), atol=1e-3)
    extended.save_pretrained(tmp_path)
    loaded.tokenizer.save_pretrained(tmp_path)
    again = load(str(tmp_path)).model
    torch.testing.assert_close(_logits(again, long), _logits(reference, long))


@pytest.mark.parametrize("first", ["pi:factor=4", "dynamic:factor=2", "llama3:factor=2"])
def test_extending_scaled_rope_again_is_refused(first):
    """A second extension would replace the first one's scaling (a llama3 model's, too), not
    add to it: refused, where pi x4 then pi x2 silently became pi x2."""
    once = extend(load("tiny-random").model, first)
    with pytest.raises(UserError, match="RoPE is already scaled"):
        extend(once, "pi:factor=2")


def test_tiny_random_is_deterministic():
    a, b = load("tiny-random").model, load("tiny-random").model
    torch.testing.assert_close(a.lm_head.weight, b.lm_head.weight)


def test_model_without_rope_is_rejected():
    with pytest.raises(UserError, match="no rotary position embedding") as got:
        original_rope(GPT2Config())
    assert str(got.value).endswith("context extension by RoPE scaling does not apply to it")
    # PCD changes no window: its refusal names PCD, not an extension.
    from longred_bench.pcd.model import base_for_window

    rotary = type(load("tiny-random").model.model.rotary_emb)
    with pytest.raises(UserError, match=r"PCD's local RoPE variant .* does not apply to it"):
        base_for_window(rotary, GPT2Config(), 256)


def test_mixed_rope_model_is_rejected():
    with pytest.raises(UserError, match="ambiguous"):
        original_rope(Gemma3TextConfig())


def test_local_dir_round_trip(tmp_path):
    loaded = load("tiny-random")
    loaded.model.save_pretrained(tmp_path)
    loaded.tokenizer.save_pretrained(tmp_path)
    again = load(str(tmp_path), rope="abf:theta=1e6")
    assert again.model.config.rope_parameters["rope_theta"] == 1e6
    assert again.model.config.max_position_embeddings == 1024


def test_a_config_naming_more_layers_than_the_weights_hold_is_refused(tmp_path):
    """transformers starts the layers the weight files lack at random and goes on: every score
    would be a partly random model's, with exit status 0."""
    import json

    loaded = load("tiny-random")
    loaded.model.save_pretrained(tmp_path)
    loaded.tokenizer.save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    layers = config["num_hidden_layers"]
    config["num_hidden_layers"] = layers + 3
    (tmp_path / "config.json").write_text(json.dumps(config))
    pattern = rf"lack \d+ tensor\(s\) its config\.json names \(model\.layers\.{layers}\."
    pattern += ".*: transformers would start them at random"
    with pytest.raises(UserError, match=pattern):
        load(str(tmp_path))


def test_a_model_folder_without_tokenizer_files_is_named_so(tmp_path):
    """Weights saved without their tokenizer: transformers' refusal spoke of converting a slow
    tokenizer and installing sentencepiece; the error names the missing files, for the model
    and for its tokenizer alone, and the tokenizer saved beside the weights loads."""
    from longred_bench.models.loading import load_tokenizer

    loaded = load("tiny-random")
    loaded.model.save_pretrained(tmp_path)
    for read in (load, load_tokenizer):
        with pytest.raises(UserError, match=r"holds no tokenizer files \(tokenizer\.json, "):
            read(str(tmp_path))
    loaded.tokenizer.save_pretrained(tmp_path)
    assert load(str(tmp_path)).tokenizer("ab").input_ids == loaded.tokenizer("ab").input_ids


def test_missing_model_is_a_clear_error(tmp_path):
    (tmp_path / "notamodel").mkdir()
    with pytest.raises(UserError, match=r"no config\.json"):
        load(str(tmp_path / "notamodel"))
    with pytest.raises(UserError, match="does not exist"):
        load(str(tmp_path / "x.gguf"))


def test_extend_random_llama_keeps_dtype():
    cfg = LlamaConfig(
        vocab_size=32,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        max_position_embeddings=64,
    )
    model = LlamaForCausalLM(cfg).to(torch.float64)
    ext = extend(model, "yarn:factor=2")
    assert next(ext.parameters()).dtype == torch.float64
    assert ext.model.rotary_emb.attention_scaling > 1.0


def test_load_tokenizer_matches_the_loaded_models_tokenizer(tmp_path):
    from longred_bench.models.loading import load_tokenizer

    loaded = load("tiny-random")
    alone = load_tokenizer("tiny-random")
    text = "Needle 42 in a haystack."
    assert alone(text)["input_ids"] == loaded.tokenizer(text)["input_ids"]
    loaded.model.save_pretrained(tmp_path)
    loaded.tokenizer.save_pretrained(tmp_path)
    assert load_tokenizer(str(tmp_path))(text)["input_ids"] == alone(text)["input_ids"]


def test_load_tokenizer_of_a_folder_without_config_is_a_user_error(tmp_path):
    from longred_bench.models.loading import load_tokenizer

    with pytest.raises(UserError, match=r"no config\.json"):
        load_tokenizer(str(tmp_path))


def test_unknown_model_name_fails_at_once_when_the_hub_is_offline(monkeypatch) -> None:

    from longred_bench.errors import UserError
    from longred_bench.models.loading import load_config, resolve_spec

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(UserError, match=r"not a local path or a zoo name .*HF_HUB_OFFLINE is set"):
        load_config("no-such-org/no-such-model")
    monkeypatch.delenv("HF_HUB_OFFLINE")
    monkeypatch.setenv("HF_ENDPOINT", "https://hub.invalid")
    with pytest.raises(UserError, match=r"hub\.invalid is unreachable"):
        resolve_spec("no-such-org/no-such-model")


@pytest.mark.parametrize(
    "spec", ["/no/such/folder", "./no-such-folder", "~/no-such-folder", "out/no-such/folder"]
)  # a relative path of two slashes or more is no hub id (owner/name) either
def test_a_path_that_does_not_exist_is_said_so_without_the_hub(monkeypatch, spec) -> None:
    from longred_bench.errors import UserError
    from longred_bench.models.loading import resolve_spec

    monkeypatch.setenv("HF_ENDPOINT", "https://hub.invalid")  # asking it would say unreachable
    with pytest.raises(UserError, match=rf"^model '{re.escape(spec)}': no such folder; give a zoo"):
        resolve_spec(spec)


def test_the_layer_that_builds_tiny_base_registers_it_in_the_zoo() -> None:
    """tiny-base is registered by the jobs package that builds it (models never import it); a
    builder registered later is found by the next lookup."""
    import subprocess
    import sys

    code = (
        "from longred_bench.models.zoo import ZOO\n"
        "assert 'tiny-base' not in ZOO and 'tiny-random' in ZOO\n"
        "import longred_bench.jobs\n"
        "from longred_bench.jobs.tiny_base import tiny_base_dir\n"
        "from longred_bench.models.builders import BUILDERS\n"
        "assert 'tiny-base' in ZOO and BUILDERS['tiny-base'] is tiny_base_dir\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("kind", ["phi", "stablelm"])
def test_extend_keeps_a_partial_rotary_factor(kind):
    """Phi and StableLM rotate part of each head: the factor was dropped, and the extended
    model's forward failed on mismatched sizes."""
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = AutoConfig.for_model(kind, vocab_size=64, hidden_size=64, intermediate_size=128,
                               num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=4,
                               max_position_embeddings=64)  # fmt: skip
    model = AutoModelForCausalLM.from_config(cfg)
    factor = cfg.rope_parameters["partial_rotary_factor"]
    for spec in ("pi:factor=2", "dynamic:factor=2", "abf:theta=1e5"):
        ext = extend(model, spec)
        assert ext.config.rope_parameters["partial_rotary_factor"] == factor
        with torch.no_grad():
            assert torch.isfinite(ext(torch.randint(0, 64, (1, 12))).logits).all()


def test_a_model_mixing_attention_kinds_under_one_rope_is_rejected():
    """One rope_parameters but sliding-window and full layers (Qwen2 with a sliding window):
    which layers an extension changes is ambiguous, refused by name."""
    from transformers import Qwen2Config

    config = Qwen2Config(use_sliding_window=True, max_window_layers=1, num_hidden_layers=2)
    assert "rope_theta" in config.rope_parameters  # not the per-kind check's case
    with pytest.raises(UserError, match="mixes attention kinds"):
        original_rope(config)


def test_a_gguf_file_resolves_to_its_folder_and_file_name(tmp_path):
    """transformers reads a .gguf as (its folder, gguf_file=its name), not as a folder."""
    from longred_bench.models.loading import resolve_spec

    gguf = tmp_path / "model.Q4_K_M.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve_spec(str(gguf)) == (str(tmp_path), {"gguf_file": "model.Q4_K_M.gguf"})


def test_a_damaged_built_zoo_model_names_how_to_rebuild_it(tmp_path, monkeypatch) -> None:
    # a registered builder's folder that fails its manifest is refused before it loads
    from longred_bench.cache import write_manifest
    from longred_bench.models import builders, zoo

    folder = tmp_path / "built"
    folder.mkdir()
    (folder / "config.json").write_text("{}")
    write_manifest(folder, {"kind": "model"})
    (folder / "config.json").write_text("{} ")  # its size no longer its record's
    monkeypatch.setitem(builders.BUILDERS, "tiny-built", lambda: folder)
    corrupt = f"cache entry {re.escape(str(folder))} is corrupt: "
    with pytest.raises(UserError, match=corrupt) as got:
        zoo.zoo_dir("tiny-built")
    assert str(got.value).endswith(f"; delete {folder} and load tiny-built again to rebuild it")


def test_unreadable_model_files_are_named_by_the_errors_first_line(tmp_path) -> None:
    from longred_bench.models.zoo import model_file_error

    error = model_file_error(tmp_path, ValueError("bad header\nat byte 8"), "fix it")
    assert str(error) == f"model files in {tmp_path} are unreadable (bad header); fix it"
    error = model_file_error(tmp_path, ValueError(""), "fix it")
    assert str(error) == f"model files in {tmp_path} are unreadable (ValueError); fix it"
