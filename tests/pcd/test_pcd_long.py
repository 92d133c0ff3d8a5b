"""``benchmarks/pcd_long.py``: RULER with greedy decoding and PCD without lm-eval. Its samples,
prompts, budgets, stops and scores must be the harness's, sample by sample (integration, on
``tiny-random``); its run resumes from its CSV and its report pairs the two decodings."""

from __future__ import annotations

import csv

import pytest
from data_helpers import ensure_cached
from script_loader import load_script

from longred_bench.cache import cache_dir
from longred_bench.pcd.config import PcdConfig

pcd_long = load_script("pcd_long")


class _Tok:
    eos_token_id = 0

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        text = "".join("</s>" if i == 0 else chr(96 + i) for i in ids)
        return text.replace("</s>", "") if skip_special_tokens else text


def test_response_is_cut_at_the_end_of_text() -> None:
    assert pcd_long.response_text(_Tok(), [1, 2, 3]) == "abc"
    assert pcd_long.response_text(_Tok(), [1, 2, 0, 3]) == "abc"  # special tokens skipped


def test_generation_budget_is_the_task_yaml_value() -> None:
    from longred_bench.evaluation.harness import tasks_dir

    for task in ("niah_single_1", "vt"):
        text = (tasks_dir() / f"longred_ruler_{task}.yaml").read_text()
        line = next(x for x in text.splitlines() if "max_gen_toks" in x)
        assert pcd_long.generation_budget(task) == int(line.split(":")[1])


@pytest.fixture
def private_cache(tmp_path, monkeypatch, request):
    ensure_cached(request, "brown")
    real = cache_dir()
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "corpora").symlink_to(real / "corpora")
    monkeypatch.setenv("LONGRED_CACHE", str(cache))
    return cache


@pytest.mark.integration
@pytest.mark.parametrize("decoding", ["greedy", "pcd"])
def test_matches_the_harness_sample_by_sample(private_cache, decoding) -> None:
    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.harness import run_eval
    from longred_bench.models.loading import load

    pcd = PcdConfig(alpha=1.5, local_fraction=0.25) if decoding == "pcd" else None
    tasks = ["niah_single_1", "vt"]
    cfg = EvalConfig(
        model="tiny-random", suite="ruler", tasks=[f"longred_ruler_{t}" for t in tasks],
        lengths=[512], samples=3, batch_size=1, decoding=decoding, pcd=pcd,
    )  # fmt: skip
    result = run_eval(cfg, progress=False, item_scores=True)
    harness = {
        (r["task"].removeprefix("longred_ruler_"), r["doc_id"]): (r["value"], r["response"])
        for r in result.records
        if r["kind"] == "eval_item" and r["metric"] == "score"
    }
    loaded = load("tiny-random")
    samples = pcd_long.ruler_samples(loaded.tokenizer, tasks, [512], 3, 0, "standard")
    rows = pcd_long.score_samples(loaded, samples, pcd, line="l", part="test", alpha=0.0,
                                  local_fraction=None)  # fmt: skip
    mine = {(r["task"], r["sample"]): (r["score"], r["response"]) for r in rows}
    assert len(mine) == 6 and mine == harness
    if pcd is not None:
        assert all(r["local_base"] is not None for r in rows)


@pytest.mark.integration
def test_run_chooses_on_dev_resumes_and_reports(private_cache, tmp_path) -> None:
    out = tmp_path / "out"
    argv = ["run", "--model", "tiny-random", "--rope", "none", "pi:factor=4", "--tasks", "vt",
            "--lengths", "512", "--samples", "2", "--dev-samples", "1", "--alphas", "0.5", "3",
            "--fractions", "0.25", "--device", "cpu", "--out", str(out)]  # fmt: skip
    assert pcd_long.main(argv) == 0
    path = out / "pcd_long.csv"
    rows = list(csv.DictReader(path.open()))
    dev = {(r["line"], r["alpha"]) for r in rows if r["part"] == "dev"}
    assert dev == {(line, a) for line in ("tiny-random", "tiny-random [pi:factor=4]")
                   for a in ("0.0", "0.5", "3.0")}  # fmt: skip
    test = [r for r in rows if r["part"] == "test"]
    assert len(test) == 2 * 2 * 2  # lines x decodings x samples
    assert len({r["alpha"] for r in test if r["alpha"] != "0.0"}) == 1  # one chosen setting
    before = path.read_bytes()
    assert pcd_long.main(argv) == 0  # everything is in the CSV: nothing reruns
    assert path.read_bytes() == before
    assert pcd_long.main(["report", str(path)]) == 0
    md = (out / "pcd_long.md").read_text()
    assert "| tiny-random [pi:factor=4] | 512 | 2 |" in md and "## Dev grid" in md
