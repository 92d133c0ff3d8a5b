"""Positional Contrastive Decoding: parameters, the local-aware RoPE variant, the contrast, greedy
decoding, the ``longred-pcd`` lm-eval model, and ``eval`` / ``compare`` with ``--decoding pcd``.

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
from longred_bench.jobs import compare
from longred_bench.models.loading import extend, load
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


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    """One intra-op thread: on a shared 2-core machine two OpenMP threads make each of the tiny
    model's small matmuls wait for a busy core (milliseconds instead of microseconds)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def tiny():
    return load("tiny-random")


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
    with pytest.raises(UserError, match="fixed frequencies"):
        PcdModel(extend(tiny.model, "dynamic:factor=2"), PcdConfig(first_pair=2))


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


# --- the lm-eval model ----------------------------------------------------------------------------


def _instance(kind: str, args: tuple, idx: int = 0):
    from lm_eval.api.instance import Instance

    return Instance(request_type=kind, doc={}, arguments=args, idx=idx)


def test_lm_eval_model_strength_zero_matches_hflm(tiny) -> None:
    from lm_eval.models.huggingface import HFLM

    from longred_bench.pcd.lm import PcdLM

    common = {"pretrained": tiny.model, "tokenizer": tiny.tokenizer, "batch_size": 2}
    hf, zero = HFLM(**common), PcdLM(alpha=0, **common)
    strong = PcdLM(alpha=1.5, **common)
    ll = [
        _instance("loglikelihood", ("The sky is", " blue")),
        _instance("loglikelihood", ("One, two,", " three"), 1),
    ]
    assert zero.loglikelihood(ll) == hf.loglikelihood(ll)
    # Each choice scores (1 + alpha) log p - alpha log p_local of its own tokens; both prompts
    # are under 64 tokens, so both get W' = 16.
    with strong.pcd.local(strong.pcd.base_for(1)):
        local = hf.loglikelihood(ll)
    pairs = zip(hf.loglikelihood(ll), local, strict=True)
    expected = [2.5 * s - 1.5 * ls for (s, _), (ls, _) in pairs]
    got = strong.loglikelihood(ll)
    assert [s for s, _ in got] == pytest.approx(expected, rel=1e-6)
    assert [g for _, g in got] == [g for _, g in hf.loglikelihood(ll)]
    assert got != hf.loglikelihood(ll)
    rolling = strong.loglikelihood_rolling([_instance("loglikelihood_rolling", ("any text",))])
    assert len(rolling) == 1 and math.isnan(rolling[0])
    gen = [
        _instance("generate_until", ("Key: 4417. Key:", {"until": ["."], "max_gen_toks": 12})),
        _instance("generate_until", ("abc", {"until": ["\n"], "max_gen_toks": 12}), 1),
    ]
    assert zero.generate_until(gen) == hf.generate_until(gen)
    sampling = _instance("generate_until", ("x", {"do_sample": True, "max_gen_toks": 4}))
    with pytest.raises(UserError, match="decodes greedily"):
        strong.generate_until([sampling])
    with pytest.raises(UserError, match="unknown model argument\\(s\\) gamma"):
        PcdLM(gamma=1.0, **common)


def _toy_task(tmp_path) -> dict:
    """A three-document multiple-choice task (loglikelihood requests) from a local JSONL file."""
    rows = [
        {"q": f"Item {i}: the sky is", "choices": [" blue", " red"], "gold": i % 2}
        for i in range(3)
    ]
    data = tmp_path / "toy.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return {
        "task": "pcd_toy_choice", "dataset_path": "json", "test_split": "test",
        "dataset_kwargs": {"data_files": {"test": str(data)}}, "output_type": "multiple_choice",
        "doc_to_text": "{{q}}", "doc_to_choice": "{{choices}}", "doc_to_target": "{{gold}}",
        "metric_list": [{"metric": "acc"}],
    }  # fmt: skip


@pytest.mark.integration
def test_simple_evaluate_runs_longred_pcd_by_name(tmp_path, monkeypatch) -> None:
    """``lm_eval.simple_evaluate(model="longred-pcd")``: a generation task (RULER vt, no corpus
    needed) and a loglikelihood task, with lm-eval's own models still registered."""
    import lm_eval
    from lm_eval.api.registry import get_model

    from longred_bench.evaluation.harness import task_manager
    from longred_bench.pcd.lm import PcdLM

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    toy = _toy_task(tmp_path)
    manager = task_manager({"tokenizer": "tiny-random", "lengths": [512], "ruler_samples": 2})
    out = lm_eval.simple_evaluate(
        model="longred-pcd",
        model_args="pretrained=tiny-random,rope=pi:factor=4,alpha=1.5,plausibility=topk,top_k=20",
        tasks=["longred_ruler_vt", toy],
        task_manager=manager,
        log_samples=True,
        verbosity="ERROR",
    )
    assert get_model("longred-pcd") is PcdLM
    assert get_model("hf").__name__ == "HFLM"
    assert "vllm" in lm_eval.api.registry.model_registry
    assert out["results"]["longred_ruler_vt"]["512,none"] >= 0
    assert out["results"]["pcd_toy_choice"]["acc,none"] in (0.0, 1 / 3, 2 / 3, 1.0)
    gens = [s["resps"][0][0] for s in out["samples"]["longred_ruler_vt"]]
    assert len(gens) == 2 and all(isinstance(g, str) for g in gens)
    lls = [r[0][0] for s in out["samples"]["pcd_toy_choice"] for r in s["resps"]]
    assert len(lls) == 6 and all(math.isfinite(v) for v in lls)


@pytest.mark.integration
def test_lm_eval_command_line_runs_longred_pcd(tmp_path) -> None:
    """lm-eval's own command line through the ``longred-lm-eval`` console script."""
    import os
    import subprocess
    import sys

    import yaml

    task = tmp_path / "pcd_toy.yaml"
    task.write_text(yaml.safe_dump(_toy_task(tmp_path)))
    script = Path(sys.executable).with_name("longred-lm-eval")
    argv = [str(script), "--model", "longred-pcd"]
    argv += ["--model_args", "pretrained=tiny-random,alpha=1.5,top_k=20", "--tasks", str(task)]
    argv += ["--device", "cpu", "--output_path", str(tmp_path / "results")]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "|pcd_toy_choice|" in run.stdout and "longred-pcd" in run.stdout
    (results,) = (tmp_path / "results").rglob("results_*.json")
    assert json.loads(results.read_text())["results"]["pcd_toy_choice"]["acc,none"] >= 0


@pytest.mark.integration
def test_eval_cli_with_pcd_records_the_parameters_as_run(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    argv = ["eval", "--model", "tiny-random", "--rope", "pi:factor=4", "--suite", "ruler"]
    argv += ["--tasks", "longred_ruler_vt", "--lengths", "512", "--samples", "1"]
    argv += ["--decoding", "pcd", "--pcd-alpha", "2", "--out", str(tmp_path / "out"), "--quiet"]
    assert cli.main(argv) == 0
    lines = (tmp_path / "out" / "eval.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines if '"kind": "eval"' in line]
    assert records and all(r["decoding"] == "pcd" for r in records)
    pcd = records[0]["pcd"]
    # The default rule: a quarter of the prompt (about 500 tokens: W' = 128) for every line.
    assert (pcd["alpha"], pcd["plausibility"], pcd["window_rule"]) == (
        2.0,
        "adaptive",
        "fraction 0.25",
    )
    assert [w["window"] for w in pcd["local"]] == [128]
    assert "with PCD" in (tmp_path / "out" / "eval.md").read_text()


def test_psa_cli_with_and_without_pcd(tmp_path, request) -> None:
    from data_helpers import ensure_cached

    ensure_cached(request, "brown")
    out = tmp_path / "psa"
    argv = ["psa", "--model", "tiny-random", "--tasks", "niah_single_1", "--lengths", "512"]
    argv += ["--samples", "1", "--decoding", "greedy", "pcd", "--pcd-plausibility", "topk"]
    argv += ["--pcd-top-k", "5"]
    assert cli.main([*argv, "--out", str(out), "--quiet"]) == 0
    lines = (out / "psa.jsonl").read_text().splitlines()
    samples = [json.loads(x) for x in lines if '"kind": "psa_sample"' in x]
    by_line = {r["extension"]: r for r in samples}
    assert set(by_line) == {"tiny-random", "tiny-random +pcd"}
    # Under PCD the rank is in the top-5 set: at most 6 (outside it: rank k + 1, probability 0).
    pcd = by_line["tiny-random +pcd"]
    assert pcd["rank"] <= 6 and (pcd["rank"] < 6 or pcd["probability"] == 0.0)
    assert "| tiny-random +pcd | 512 |" in (out / "psa.md").read_text()
    assert cli.main([*argv[:-7], "--pcd-alpha", "1", "--out", str(out)]) == 2  # greedy only


# --- compare --------------------------------------------------------------------------------------


def test_compare_config_decodings() -> None:
    cfg = compare.CompareConfig.from_dict(
        {"original": "m", "rope": ["pi:factor=2"], "decoding": ["greedy", "pcd"],
         "pcd": {"alpha": 2.0}}
    )  # fmt: skip
    assert cfg.pcd == PcdConfig(alpha=2.0)
    assert [(label, e.label, d) for label, e, d in compare.rows(cfg)] == [
        ("original", "original", "greedy"),
        ("original +pcd", "original", "pcd"),
        ("pi:factor=2", "pi:factor=2", "greedy"),
        ("pi:factor=2 +pcd", "pi:factor=2", "pcd"),
    ]
    with pytest.raises(UserError, match="decoding must list"):
        compare.CompareConfig(original="m", rope=("pi:factor=2",), decoding=("beam",))
    with pytest.raises(UserError, match="without pcd in --decoding"):
        compare.CompareConfig(original="m", rope=("pi:factor=2",), pcd=PcdConfig())
    with pytest.raises(UserError, match="unknown PCD config key"):
        compare.CompareConfig.from_dict({"original": "m", "rope": ["x"], "pcd": {"gamma": 1}})


def test_compare_adds_one_pcd_row_per_model(tmp_path, monkeypatch) -> None:
    """``compare --decoding greedy pcd``: every model is evaluated twice, greedy units keep their
    keys (their caches stay valid), and the report lists the PCD rows."""
    seen = []

    def fake_eval(unit, progress):
        seen.append(unit)
        value = 50.0 if unit.get("decoding") == "pcd" else 40.0
        return [{"kind": "eval", "suite": "ruler", "task": "longred_ruler", "metric": "score",
                 "length": length, "value": value} for length in (None, 512)]  # fmt: skip

    monkeypatch.setattr(compare, "run_eval_unit", fake_eval)
    out = tmp_path / "cmp"
    argv = ["compare", "--original", "tiny-random", "--rope", "pi:factor=4", "--suites", "ruler"]
    argv += ["--lengths", "512", "--decoding", "greedy", "pcd", "--pcd-alpha", "1"]
    assert cli.main([*argv, "--out", str(out), "--quiet"]) == 0
    assert len(seen) == 4
    greedy = [u for u in seen if "decoding" not in u]
    pcd = [u for u in seen if u.get("decoding") == "pcd"]
    assert len(greedy) == len(pcd) == 2 and all("pcd" not in u for u in greedy)
    assert all(u["pcd"] == PcdConfig(alpha=1.0).as_dict() for u in pcd)
    report = (out / "compare.md").read_text()
    assert "| original +pcd | " in report and "| pi:factor=4 +pcd | " in report
    assert cli.main([*argv, "--out", str(out), "--quiet"]) == 0 and len(seen) == 4  # cached


def test_pcd_model_is_declared_for_lm_eval_plugin_discovery() -> None:
    from importlib.metadata import entry_points

    from longred_bench.pcd.lm import PcdLM

    (entry,) = [e for e in entry_points(group="lm_eval.models") if e.name == "longred-pcd"]
    assert entry.load() is PcdLM


def test_perplexities_under_pcd_are_not_defined() -> None:
    from longred_bench.evaluation.harness import _undefined_under_pcd
    from longred_bench.reports.pcd_report import _perplexities

    records = [
        {"kind": "eval", "task": "cloze", "metric": "perplexity", "value": 84.1, "stderr": 2.0},
        {"kind": "eval", "task": "cloze", "metric": "acc", "value": 0.1, "stderr": 0.01},
        {"kind": "eval", "task": "wiki", "metric": "word_perplexity,none", "value": 9.0},
    ]
    _undefined_under_pcd(records)
    assert [r["value"] for r in records] == [None, 0.1, None]
    assert records[0]["not_defined"] and "not_defined" not in records[1]
    # The report never shows a PCD perplexity, even from records that still carry one.
    shown = [
        {"part": "short", "kind": "eval", "line": "abf", "task": "cloze", "metric": "perplexity",
         "decoding": d, "value": v}
        for d, v in (("greedy", 1772.2), ("pcd", 84.1))
    ]  # fmt: skip
    assert _perplexities(shown) == ["| abf | cloze | 1772.2 | not defined |"]
