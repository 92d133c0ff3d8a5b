"""``benchmarks/pcd_long.py``: RULER with greedy decoding and PCD without lm-eval. Its samples,
prompts, budgets, stops and scores must be the harness's, sample by sample (integration, on
``tiny-random``); its run resumes from its CSV and its report pairs the two decodings."""

from __future__ import annotations

import csv

import pytest
from data_helpers import ensure_cached
from script_loader import load_script

from longred_bench.cache import cache_dir
from longred_bench.errors import UserError
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
    from longred_bench.evaluation.run import run_eval
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
    assert "(source `" in md and "at end ?" not in md  # provenance from the run's start


def test_shards_take_every_nth_sample_and_cover_all_once() -> None:
    items = list(range(10))
    shards = [pcd_long.sharded(items, f"{i}/3") for i in range(3)]
    assert shards[1] == [1, 4, 7]
    assert sorted(x for s in shards for x in s) == items
    assert pcd_long.sharded(items, None) == items
    for bad in ("3/3", "1", "a/b", "-1/2"):
        with pytest.raises(UserError, match="--shard"):
            pcd_long.sharded(items, bad)


def _row(sample: int, score: float, response: str = "x") -> dict:
    return {"line": "l", "part": "test", "alpha": 0.0, "local_fraction": None, "task": "vt",
            "length": 512, "sample": sample, "score": score, "response": response,
            "prompt_tokens": 500, "local_base": None, "seconds": 1.0}  # fmt: skip


def test_merge_keeps_each_sample_once_and_refuses_disagreeing_shards(tmp_path) -> None:
    a, b, out = tmp_path / "a.csv", tmp_path / "b.csv", tmp_path / "all.csv"
    pcd_long.write_csv([_row(0, 100.0), _row(1, 0.0)], a, pcd_long.FIELDS)
    pcd_long.write_csv([_row(1, 0.0), _row(2, 100.0)], b, pcd_long.FIELDS)
    pcd_long.merge(out, [a, b])
    assert sorted(r["sample"] for r in pcd_long.read_rows(out)) == [0, 1, 2]
    pcd_long.write_csv([_row(2, 0.0, "y")], b, pcd_long.FIELDS)
    with pytest.raises(UserError, match="differs"):
        pcd_long.merge(out, [b])  # out already holds sample 2 with another response
    with pytest.raises(UserError, match="no such CSV"):
        pcd_long.merge(tmp_path / "new.csv", [tmp_path / "missing.csv"])


@pytest.mark.integration
def test_shards_merged_equal_one_run(private_cache, tmp_path) -> None:
    common = ["--model", "tiny-random", "--tasks", "vt", "--lengths", "512", "--samples", "3",
              "--dev-samples", "2", "--alphas", "0.5", "3", "--fractions", "0.25",
              "--device", "cpu"]  # fmt: skip
    assert pcd_long.main(["run", *common, "--out", str(tmp_path / "one")]) == 0
    everything = tmp_path / "all" / "pcd_long.csv"
    with pytest.raises(UserError, match="no dev rows"):
        pcd_long.main(["run", *common, "--part", "test", "--out", str(tmp_path / "early")])
    for part in ("dev", "test"):
        for i in range(2):
            shard = tmp_path / f"{part}{i}"
            if part == "test":
                pcd_long.merge(shard / "pcd_long.csv", [everything])
            argv = ["run", *common, "--part", part, "--shard", f"{i}/2", "--out", str(shard)]
            assert pcd_long.main(argv) == 0
        pcd_long.merge(everything, [tmp_path / f"{part}{i}" / "pcd_long.csv" for i in range(2)])

    def keyed(path):
        return {tuple(r[k] for k in pcd_long.KEY): (r["score"], r["response"])
                for r in pcd_long.read_rows(path)}  # fmt: skip

    one = keyed(tmp_path / "one" / "pcd_long.csv")
    assert len(one) == 3 * 2 + 2 * 3  # dev: 3 settings x 2 samples; test: 2 decodings x 3
    assert keyed(everything) == one


def test_report_gives_the_floor_verdict_and_says_when_there_is_no_test_split(tmp_path) -> None:
    path = tmp_path / "pcd_long.csv"
    dev = [{**_row(i, 0.0), "part": "dev"} for i in range(4)]
    pcd_long.write_csv(dev, path, pcd_long.FIELDS)
    assert "No test rows" in pcd_long.report(path).read_text()
    pcd = [{**_row(i, 0.0), "alpha": 0.5, "local_fraction": 0.5} for i in range(4)]
    pcd_long.write_csv([*dev, *(_row(i, 0.0) for i in range(4)), *pcd], path, pcd_long.FIELDS)
    md = pcd_long.report(path).read_text()
    assert "| l | 512 | 4 | 0.0 | 0.0 | +0.00 [+0.00, +0.00] | not comparable |" in md
    ten = [{**r, "score": 10.0} for r in pcd]  # PCD 10 points above greedy on every sample
    pcd_long.write_csv([*dev, *(_row(i, 0.0) for i in range(4)), *ten], path, pcd_long.FIELDS)
    assert "| reproduced |" in pcd_long.report(path).read_text()


def test_a_report_of_a_mistyped_csv_is_refused_and_keeps_the_report(tmp_path) -> None:
    """``report OUT/pcd_lng.csv`` wrote an empty report over ``OUT/pcd_long.md`` and exited 0."""
    (tmp_path / "pcd_long.md").write_text("the real report")
    with pytest.raises(UserError, match=r"pcd_lng\.csv: no such file: give the pcd_long\.csv"):
        pcd_long.main(["report", str(tmp_path / "pcd_lng.csv")])
    assert (tmp_path / "pcd_long.md").read_text() == "the real report"


def test_bad_input_and_ctrl_c_end_in_one_line(tmp_path) -> None:
    """A CUDA device the machine lacks was an AssertionError traceback; Ctrl-C a
    KeyboardInterrupt traceback: one line each, naming what a run keeps."""
    import subprocess
    import sys
    from pathlib import Path

    import torch

    script = Path(__file__).resolve().parents[2] / "benchmarks" / "pcd_long.py"
    if not torch.cuda.is_available():
        argv = [sys.executable, str(script), "run", "--device", "cuda", "--out", str(tmp_path)]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
        assert done.returncode == 2
        assert done.stderr == ("error: --device cuda: this machine has no CUDA device; give "
                               "--device cpu\n")  # fmt: skip
    line = pcd_long.interrupted_line(["run", "--model", "m", "--out", "o"])
    assert line == ("every finished line and setting is in o/pcd_long.csv, which the same "
                    "command skips; run it again with: python benchmarks/pcd_long.py run "
                    "--model m --out o")  # fmt: skip
    assert pcd_long.interrupted_line(["report", "x.csv"]) == "nothing was being saved"
