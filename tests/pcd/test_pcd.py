"""Positional Contrastive Decoding: parameters, the contrast and its plausibility cut, the
local-aware RoPE variant and greedy decoding. The lm-eval model and the command lines are in
``test_pcd_lm.py``.

Everything runs on the built-in ``tiny-random`` model (head size 16, RoPE base 1e4, window 256).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from longred_bench import cli
from longred_bench.errors import UserError
from longred_bench.models.loading import extend
from longred_bench.pcd.model import (
    PcdConfig,
    PcdModel,
    contrast,
    longest_wavelength,
    pcd_logits,
    plausible,
    with_base,
)

HEAD_DIM, WINDOW, BASE = 16, 256, 1e4
# tiny-random's local base for W' = 256: longest wavelength 2 pi B'^((d-2)/d) = 256 tokens.
TINY_LOCAL_BASE = (WINDOW / (2 * math.pi)) ** (HEAD_DIM / (HEAD_DIM - 2))  # 69.194...


def _prompts(tokenizer, texts=("The pass key is 71234. Remember", "x")):
    return tokenizer(list(texts), return_tensors="pt", padding=True, padding_side="left")


def _inv_freq(base: float, pairs: range) -> torch.Tensor:
    return torch.tensor([base ** (-2 * j / HEAD_DIM) for j in pairs], dtype=torch.float64)


# --- parameters -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"alpha": -0.5}, "alpha must be a finite number >= 0"),
        ({"alpha": float("nan")}, "alpha must be a finite number >= 0"),
        ({"alpha": "strong"}, "alpha must be a number"),
        ({"alpha": True}, "alpha must be a number"),
        ({"top_k": 0}, "top_k must be at least 1"),
        ({"top_k": 2.5}, "top_k must be a whole number"),
        ({"local_base": 1.0}, "local_base must be a finite RoPE base > 1"),
        ({"local_window": 4}, "local_window must be at least 7"),
        ({"local_base": 100.0, "local_window": 64}, "not local_window and local_base"),
        ({"local_fraction": 0.5, "local_window": 64}, "not local_fraction and local_window"),
        ({"local_fraction": 0.0}, "local_fraction must be in \\(0, 1\\]"),
        ({"local_fraction": 1.5}, "local_fraction must be in \\(0, 1\\]"),
        ({"first_pair": -1}, "first_pair must be >= 0"),
        ({"plausibility": "nucleus"}, "plausibility must be one of adaptive, topk"),
        ({"beta": 0.0}, "beta must be in \\(0, 1\\]"),
        ({"beta": 1.5}, "beta must be in \\(0, 1\\]"),
    ],
)
def test_bad_parameters_are_one_line_user_errors(kwargs, message) -> None:
    with pytest.raises(UserError, match=message) as exc:
        PcdConfig(**kwargs)
    assert "\n" not in str(exc.value)


def test_config_from_dict_rejects_unknown_keys_and_coerces_numbers() -> None:
    with pytest.raises(UserError, match="unknown PCD config key"):
        PcdConfig.from_dict({"alpha": 1.0, "gamma": 2.0})
    cfg = PcdConfig.from_dict({"alpha": 1, "top_k": 100.0, "local_window": "512"})
    assert (cfg.alpha, cfg.top_k, cfg.local_window) == (1.0, 100, 512)
    assert type(cfg.top_k) is int and PcdConfig.from_dict(cfg.as_dict()) == cfg


def test_model_dependent_errors(tiny) -> None:
    with pytest.raises(UserError, match="not below the model's RoPE base 10000"):
        PcdModel(tiny.model, PcdConfig(local_base=2e4))
    with pytest.raises(UserError, match="first_pair 8 is past the model's last RoPE pair \\(7\\)"):
        PcdModel(tiny.model, PcdConfig(first_pair=8))
    with pytest.raises(UserError, match="frequencies are fixed: the model's is 'dynamic'"):
        PcdModel(extend(tiny.model, "dynamic:factor=2"), PcdConfig(first_pair=2))


@pytest.mark.parametrize("cfg", [PcdConfig(), PcdConfig(local_base=5000.0)])
def test_pcd_refuses_a_rope_whose_frequencies_move_with_the_length(tiny, cfg) -> None:
    """Under dynamic NTK the base B' solved for W' = 256 at build time was rescaled at a
    1,024-token prompt: the local pass ran with a 1,280-token wavelength while the record said
    256. Every path (eval, lm-eval's longred-pcd, a reproduce unit) builds a PcdModel: refused
    there, at any setting."""
    with pytest.raises(UserError, match="frequencies are fixed: the model's is 'dynamic'"):
        PcdModel(extend(tiny.model, "dynamic:factor=4"), cfg)
    PcdModel(extend(tiny.model, "yarn:factor=4"), cfg)  # fixed frequencies: built


@pytest.mark.parametrize(
    "argv",
    [
        ["--suite", "ruler", "--pcd-alpha", "1"],
        ["--suite", "ruler", "--decoding", "pcd", "--pcd-top-k", "0"],
        ["--suite", "ruler", "--decoding", "pcd", "--pcd-beta", "2"],
        ["--suite", "ppl", "--decoding", "pcd"],
        ["--suite", "ruler", "--decoding", "pcd", "--backend", "vllm"],
    ],
)
def test_eval_cli_refuses_bad_pcd_use_in_one_line(tmp_path, capsys, argv) -> None:
    assert cli.main(["eval", "--model", "tiny-random", *argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


# --- the contrast (pure) --------------------------------------------------------------------------


def test_contrast_and_top_k_restriction_hand_example() -> None:
    logits = torch.tensor([[3.0, 2.0, 0.0, -1.0]])
    local = torch.tensor([[3.0, 0.0, 1.0, -9.0]])
    # (1 + 1) * L - 1 * L_local = [3, 4, -1, 7]: unrestricted, the token L ranks last would win.
    assert contrast(logits, local, 1.0).tolist() == [[3.0, 4.0, -1.0, 7.0]]
    top2 = PcdConfig(alpha=1.0, plausibility="topk", top_k=2)
    kept = pcd_logits(logits, local, top2)  # only L's top 2 (tokens 0 and 1) stay
    assert kept.tolist() == [[3.0, 4.0, -math.inf, -math.inf]] and kept.argmax(-1).item() == 1
    all_kept = plausible(logits, PcdConfig(plausibility="topk", top_k=10))  # k > vocab
    assert all_kept.all()


def test_adaptive_cut_keeps_exactly_the_tokens_above_beta_times_the_top() -> None:
    probs = torch.tensor([[0.5, 0.3, 0.04, 0.16], [0.9, 0.05, 0.03, 0.02]])
    # beta 0.3: p >= 0.15 in row 0 (tokens 0, 1, 3), p >= 0.27 in row 1 (token 0 only: a
    # confident step keeps one token, so the contrast cannot change it).
    mask = plausible(probs.log() + 7.0, PcdConfig(beta=0.3))  # logits: any shift
    assert mask.tolist() == [[True, True, False, True], [True, False, False, False]]
    gen = torch.Generator().manual_seed(0)
    logits = torch.randn(64, 500, generator=gen) * 3
    p = logits.softmax(-1)
    for beta in (0.01, 0.1, 0.5):
        expected = p >= beta * p.amax(-1, keepdim=True)
        assert torch.equal(plausible(logits, PcdConfig(beta=beta)), expected)
    chosen = pcd_logits(logits, torch.randn(64, 500, generator=gen), PcdConfig(alpha=3.0))
    assert bool(plausible(logits, PcdConfig()).gather(-1, chosen.argmax(-1, keepdim=True)).all())
    # beta 1, the largest allowed: the top token alone, so PCD decodes the greedy token
    top = torch.tensor([[1.0, 3.0, 2.0]])
    assert plausible(top, PcdConfig(beta=1.0)).tolist() == [[False, True, False]]
    calibrated = pcd_logits(top, torch.tensor([[0.0, 5.0, -5.0]]), PcdConfig(beta=1.0))
    assert calibrated.argmax(-1).tolist() == [1] and torch.isfinite(calibrated[0, 1])


def test_local_window_rule_by_hand() -> None:
    quarter = PcdConfig()  # the default rule: a quarter of the prompt rounded up to 64 tokens
    assert quarter.window_rule() == "fraction 0.25"
    assert [quarter.window_for(n) for n in (1, 64, 65, 1000, 1024)] == [16, 16, 32, 256, 256]
    assert PcdConfig(local_fraction=0.05).window_for(40) == 7  # never below 7 tokens
    assert PcdConfig(local_window=96).window_for(5000) == 96
    assert PcdConfig(local_base=50.0).window_for(5000) is None


# --- the local-aware variant ----------------------------------------------------------------------


def test_local_variant_changes_only_the_rope_frequencies(tiny) -> None:
    model = tiny.model
    rotary = model.model.rotary_emb
    params_before = {k: (v.data_ptr(), v.clone()) for k, v in model.state_dict().items()}
    rope_before = dict(model.config.rope_parameters)
    pcd = PcdModel(model, PcdConfig())
    # A 1,000-token prompt: W' = 256 (a quarter of 1,024), B' = (256 / 2 pi)^(16/14) by hand.
    local_base = pcd.base_for(1000)
    (local,) = pcd.local_rotaries(local_base)
    assert local_base == pytest.approx(TINY_LOCAL_BASE, rel=1e-6)
    assert pcd.resolved()["local"] == [{"window": WINDOW, "base": local_base}]
    assert 2 * math.pi / local.inv_freq.min().item() == pytest.approx(WINDOW, rel=1e-5)
    # theta'_j = B'^(-2j/d) for every pair; each pair j >= 1 rotates faster than under B = 1e4,
    # pair 0 (frequency 1 under any base) is the same.
    expected = _inv_freq(local_base, range(HEAD_DIM // 2))
    torch.testing.assert_close(local.inv_freq.double(), expected, rtol=1e-6, atol=0)
    torch.testing.assert_close(
        rotary.inv_freq.double(), _inv_freq(BASE, range(8)), rtol=1e-6, atol=0
    )
    assert local.inv_freq[0] == rotary.inv_freq[0] == 1.0
    assert bool((local.inv_freq[1:] > rotary.inv_freq[1:]).all())
    assert type(local) is type(rotary) and local.attention_scaling == rotary.attention_scaling
    # Nothing else changes: same weights (not copied), same config, the base rotary restored.
    with pcd.local(local_base):
        assert model.model.rotary_emb is local
        assert sum(1 for _ in model.parameters()) == len(list(model.parameters()))
    assert model.model.rotary_emb is rotary
    assert dict(model.config.rope_parameters) == rope_before
    for key, value in model.state_dict().items():
        ptr, before = params_before[key]
        assert value.data_ptr() == ptr and torch.equal(value, before)


def test_kept_windows_are_written_as_used_and_read_back(tiny, tmp_path: Path) -> None:
    """A run's windows are kept under its key as each is first used and read back by a resumed
    call of the same run; another run sharing the responses lists only its own."""
    path = tmp_path / "requests" / "key" / "pcd-windows.json"
    first = PcdModel(tiny.model, PcdConfig())
    first.keep_windows(path, run="a")
    local_base = first.base_for(1000)
    assert json.loads(path.read_text()) == {"a": [WINDOW]}
    second = PcdModel(tiny.model, PcdConfig())  # a resumed run: nothing computed yet
    second.keep_windows(path, run="a")
    assert second.resolved()["local"] == [{"window": WINDOW, "base": local_base}]
    other = PcdModel(tiny.model, PcdConfig())  # other lengths, the same responses
    other.keep_windows(path, run="b")
    assert other.resolved()["local"] == []
    other.base_for(200)  # W' 64 for its own prompts
    assert json.loads(path.read_text()) == {"a": [WINDOW], "b": [64]}
    path.write_text("[128,")
    with pytest.raises(UserError, match=r"pcd-windows.json .* is unreadable .*: delete it"):
        PcdModel(tiny.model, PcdConfig()).keep_windows(path, run="a")


def test_first_pair_keeps_the_pairs_below_it(tiny) -> None:
    pcd = PcdModel(tiny.model, PcdConfig(local_base=100.0, first_pair=3))
    assert pcd.base_for(5000) == 100.0
    (local,) = pcd.local_rotaries(100.0)
    base = tiny.model.model.rotary_emb.inv_freq
    assert torch.equal(local.inv_freq[:3], base[:3])
    torch.testing.assert_close(local.inv_freq[3:].double(), _inv_freq(100.0, range(3, 8)))
    wave = 2 * math.pi * 100.0 ** (14 / 16)  # B' = 100's longest wavelength, as if all changed
    assert pcd.resolved()["local"] == [{"window": round(wave, 1), "base": 100.0}]


def test_local_variant_is_the_model_built_from_its_config(tiny) -> None:
    """The variant's logits are those of the same weights loaded under ``rope_theta = B'``."""
    pcd = PcdModel(tiny.model, PcdConfig(local_window=16))
    rebuilt = type(tiny.model)(with_base(tiny.model.config, pcd.base_for(1))).eval()
    rebuilt.load_state_dict(tiny.model.state_dict())
    ids = _prompts(tiny.tokenizer, ("a local-aware pass over these bytes",)).input_ids
    base, local = pcd.logits_pair(ids)
    with torch.no_grad():
        assert torch.equal(local, rebuilt(ids).logits)
        assert torch.equal(base, tiny.model(ids).logits)
    assert not torch.equal(base, local)


def test_local_base_follows_the_rope_type(tiny) -> None:
    pi = extend(tiny.model, "pi:factor=4")  # frequencies / 4: the base drops until 256 again
    pcd = PcdModel(pi, PcdConfig(local_window=WINDOW))
    local_base = pcd.base_for(1)
    (local,) = pcd.local_rotaries(local_base)
    assert local_base < TINY_LOCAL_BASE
    assert 2 * math.pi / local.inv_freq.min().item() == pytest.approx(WINDOW, rel=1e-5)
    rotary_cls = type(pi.model.rotary_emb)
    assert longest_wavelength(rotary_cls, pi.config, local_base) >= WINDOW
    abf = extend(tiny.model, "abf:theta=1e6")  # the same B' as the original model
    assert PcdModel(abf, PcdConfig(local_window=WINDOW)).base_for(1) == pytest.approx(
        TINY_LOCAL_BASE, rel=1e-6
    )
    # A window past the model's longest wavelength (2 pi 1e4^(14/16) = 19,869): no variant.
    far = PcdModel(tiny.model, PcdConfig(local_window=100_000))
    assert far.base_for(1) is None
    ids = _prompts(tiny.tokenizer, ("x y",)).input_ids
    base, local_logits = far.logits_pair(ids)
    assert local_logits is base


# --- strength 0 is the base model, exactly --------------------------------------------------------


def test_strength_zero_logits_equal_the_base_model(tiny) -> None:
    cfg = PcdConfig(alpha=0.0, plausibility="topk", top_k=5)
    pcd = PcdModel(tiny.model, cfg)
    ids = _prompts(tiny.tokenizer).input_ids
    base, local = pcd.logits_pair(ids)
    kept = pcd_logits(base, local, cfg)
    top = base.topk(5, dim=-1).indices
    assert torch.equal(kept.gather(-1, top), base.gather(-1, top))
    assert int(torch.isfinite(kept).sum(-1).max()) == 5
    adaptive = pcd_logits(base, local, PcdConfig(alpha=0.0))
    assert torch.equal(adaptive.argmax(-1), base.argmax(-1))


def test_strength_zero_generation_equals_greedy(tiny) -> None:
    enc = _prompts(tiny.tokenizer)
    pad = tiny.tokenizer.pad_token_id
    pcd = PcdModel(tiny.model, PcdConfig(alpha=0.0))
    out = pcd.generate(enc.input_ids, enc.attention_mask, max_new_tokens=24, pad_token_id=pad)
    with torch.no_grad():
        ref = tiny.model.generate(
            input_ids=enc.input_ids, attention_mask=enc.attention_mask, max_new_tokens=24,
            do_sample=False, pad_token_id=pad,
        )  # fmt: skip
    assert out.shape == ref.shape == (2, enc.input_ids.shape[1] + 24)
    assert torch.equal(out, ref)


def test_generation_hands_the_cache_over_under_the_name_the_model_takes(tiny) -> None:
    """transformers 5.24 renamed forward's ``past_key_values`` to ``cache`` (the old name warns,
    to be removed in 5.40); before it ``cache`` is no argument and would be swallowed by
    ``**kwargs``. Generation passes the name the model lists and warns of nothing (that it reads
    the cache it passes: the greedy equality above)."""
    import warnings

    from longred_bench.pcd.model import cache_argument

    class Old(torch.nn.Module):
        def forward(self, input_ids=None, past_key_values=None, use_cache=None, **kwargs):
            return input_ids

    class New(torch.nn.Module):
        def forward(self, input_ids=None, cache=None, use_cache=None, **kwargs):
            return input_ids

    assert (cache_argument(Old()), cache_argument(New())) == ("past_key_values", "cache")
    enc = _prompts(tiny.tokenizer)
    pcd = PcdModel(tiny.model, PcdConfig(alpha=1.5))
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        pcd.generate(enc.input_ids, enc.attention_mask, max_new_tokens=3,
                     pad_token_id=tiny.tokenizer.pad_token_id)  # fmt: skip


def test_rows_with_different_local_bases_decode_as_alone(tiny) -> None:
    """Under the fraction rule a 10-byte and a 100-byte prompt get different B' (W' 16 and 32);
    decoded in one batch, each row's tokens are those it gets decoded alone."""
    texts = ("short one.", "a much longer prompt " * 5)
    enc = _prompts(tiny.tokenizer, texts)
    pad = tiny.tokenizer.pad_token_id
    pcd = PcdModel(tiny.model, PcdConfig(alpha=1.5, beta=0.01))
    lengths = enc.attention_mask.sum(-1).tolist()
    assert len({pcd.base_for(n) for n in lengths}) == 2
    both = pcd.generate(enc.input_ids, enc.attention_mask, max_new_tokens=8, pad_token_id=pad)
    for row, text in enumerate(texts):
        one = _prompts(tiny.tokenizer, (text,))
        alone = pcd.generate(one.input_ids, one.attention_mask, max_new_tokens=8,
                             pad_token_id=pad)  # fmt: skip
        assert both[row, -8:].tolist() == alone[0, -8:].tolist()
    assert len(pcd.resolved()["local"]) == 2


def test_generation_stops_per_row_and_pads(tiny) -> None:
    enc = _prompts(tiny.tokenizer)
    pad, width = tiny.tokenizer.pad_token_id, enc.input_ids.shape[1]
    pcd = PcdModel(tiny.model, PcdConfig(alpha=1.5))
    free = pcd.generate(enc.input_ids, enc.attention_mask, max_new_tokens=6, pad_token_id=pad)
    first = free[0, width].item()
    assert free[1, width].item() != first  # the rule below stops row 0 only at its first token

    def is_done(ids: list[int]) -> bool:
        return ids[0] == first or len(ids) >= 3

    out = pcd.generate(
        enc.input_ids, enc.attention_mask, max_new_tokens=6, pad_token_id=pad, is_done=is_done
    )
    assert out.shape[1] == width + 3
    assert out[0, width:].tolist() == [first, pad, pad]
    assert torch.equal(out[1], free[1, : width + 3])
