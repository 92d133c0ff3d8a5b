"""``compare --pairs ... --dry-run`` estimates each model's GPU-hours and its memory on one GPU at
its longest length, and marks a model one GPU cannot hold with the longest length that fits: the
built-in Llama-2-7B pair at 131,072 tokens (no GQA) is over 80 GiB."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from longred_bench import cli
from longred_bench.profiles.schema import Hardware
from longred_bench.reproduce.pair_costs import pairs_plan_with_costs

GIB = 2**30


def _llama2_eval_gib(tokens: int) -> float:
    """Llama-2-7B evaluating one prompt of ``tokens`` in bf16, by hand: 6.74e9 weights, a KV cache
    of 32 layers x (K, V) x 32 heads x 128 dims, the prefill's 11,008-wide MLP activations."""
    params = 32_000 * 4096 * 2 + 32 * (4 * 4096 * 4096 + 3 * 4096 * 11_008 + 2 * 4096) + 4096
    return (2 * params + tokens * 32 * 2 * 32 * 128 * 2 + tokens * 2 * 11_008 * 2) / GIB


def _line(out: str, model: str, pair: int) -> str:
    return [line for line in out.splitlines() if line.startswith(f"  {model}:")][pair]


def test_the_builtin_pairs_are_estimated_and_the_llama2_pair_flagged(capsys) -> None:
    assert cli.main(["compare", "--pairs", "compare", "--dry-run"]) == 0
    out = capsys.readouterr().out
    llama2 = _line(out, "NousResearch/Yarn-Llama-2-7b-128k", 0)
    assert f"{_llama2_eval_gib(131_072 + 128):.1f} GiB on one GPU at 131,072 tokens" in llama2
    assert _llama2_eval_gib(131_072 + 128) > 80 > _llama2_eval_gib(65_536 + 128)
    assert "OVER 80 GiB" in llama2 and "the longest length that fits: 65,536" in llama2
    llama3 = _line(out, "princeton-nlp/Llama-3-8B-ProLong-512k-Instruct", 0)
    assert "GiB on one GPU at 131,072 tokens" in llama3 and "OVER" not in llama3
    assert "3 model(s) over 80 GiB" in out
    assert out.count("GPU-hours;") == 6 and out.count("  drift: ") == 2


def test_the_hours_follow_the_hardware_and_an_unknown_shape_is_said(tmp_path: Path) -> None:
    path = tmp_path / "pairs.yaml"
    path.write_text(yaml.safe_dump({
        "settings": {"suites": ["ruler"], "lengths": [4096, 8192], "ruler_samples": 500,
                     "device": "cuda"},
        "pairs": [{"original": "meta-llama/Llama-2-7b-hf", "window": 4096,
                   "extended": [{"model": "/nowhere/model", "window": 8192}]}],
    }))  # fmt: skip

    def hours(text: str) -> float:
        return float(text.split("Estimated: ")[1].split(" GPU-hours")[0])

    slow, fast = (pairs_plan_with_costs(str(path), Hardware(mfu=m)) for m in (0.05, 0.1))
    assert hours(slow) > 0 and abs(hours(slow) / hours(fast) - 2) < 0.05
    assert "/nowhere/model: not estimated (no known shape" in slow
    roomy = pairs_plan_with_costs(str(path), Hardware(gpu_memory_gib=141))
    assert "OVER" not in roomy and "OVER" not in slow  # 8,192 tokens fit either GPU
    small = pairs_plan_with_costs(str(path), Hardware(gpu_memory_gib=13))  # not the weights
    assert "OVER 13 GiB at every length" in small
    path.write_text(path.read_text().replace("device: cuda", "device: cpu"))
    cpu = pairs_plan_with_costs(str(path))
    assert "on the CPU (settings.device): no GPU estimate" in cpu
    assert "Estimated: no GPU estimate: the pairs run on the CPU" in cpu  # no GPU figures
    assert "GPU-hours" not in cpu and "one GPU of" not in cpu


def test_each_decoding_evaluates_every_model_again(tmp_path: Path) -> None:
    """``settings.decoding: [greedy, pcd]`` scores each model's suites once per decoding: twice
    the GPU-hours of greedy alone, the drift (which reads weights) counted once."""
    from longred_bench.jobs.pairs import load_pairs, pair_config
    from longred_bench.reproduce.pair_costs import pair_estimate

    path = tmp_path / "pairs.yaml"

    def hours(decoding: list[str], suites: list[str]) -> float:
        path.write_text(yaml.safe_dump({
            "settings": {"suites": suites, "lengths": [4096], "ruler_samples": 50,
                         "device": "cuda", "decoding": decoding},
            "pairs": [{"original": "meta-llama/Llama-2-7b-hf", "window": 4096,
                       "extended": [{"model": "togethercomputer/LLaMA-2-7B-32K",
                                     "window": 32768}]}],
        }))  # fmt: skip
        settings, (pair,), _ = load_pairs(str(path))
        return pair_estimate(pair, pair_config(settings, pair), Hardware())[1]

    greedy, both = hours(["greedy"], ["ruler"]), hours(["greedy", "pcd"], ["ruler"])
    assert greedy > 0 and both == pytest.approx(2 * greedy, rel=1e-9)
    drift = hours(["greedy"], ["ruler", "drift"]) - greedy
    assert drift > 0
    assert hours(["greedy", "pcd"], ["ruler", "drift"]) == pytest.approx(both + drift, rel=1e-9)


def test_a_pair_scored_by_no_long_suite_has_no_memory_at_its_lengths(tmp_path: Path) -> None:
    """``settings.lengths`` are RULER's and NIAH's: a pair scored by the short suite alone was
    said to need the memory of its longest length (131,072 tokens, over 80 GiB) it never runs."""
    path = tmp_path / "pairs.yaml"
    path.write_text(yaml.safe_dump({
        "settings": {"suites": ["short"], "lengths": [131072], "device": "cuda"},
        "pairs": [{"original": "meta-llama/Llama-2-7b-hf", "window": 4096,
                   "extended": [{"model": "NousResearch/Yarn-Llama-2-7b-128k",
                                 "window": 131072}]}],
    }))  # fmt: skip
    text = pairs_plan_with_costs(str(path))
    lines = [_line(text, m, 0) for m in ("meta-llama/Llama-2-7b-hf",
                                         "NousResearch/Yarn-Llama-2-7b-128k")]  # fmt: skip
    assert all("GiB on one GPU" not in line and "OVER" not in line for line in lines), lines
    assert "model(s) over" not in text
