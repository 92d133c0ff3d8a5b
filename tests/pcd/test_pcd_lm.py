"""Positional Contrastive Decoding through lm-eval and the command lines: the ``longred-pcd``
model (choice scores, generation, refusals), ``simple_evaluate`` and lm-eval's own command line,
``eval`` / ``psa`` / ``compare`` with ``--decoding pcd``, and perplexities under PCD.

Everything runs on the built-in ``tiny-random`` model (fixtures in ``conftest.py``).
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
from longred_bench.pcd.model import PcdConfig


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


@pytest.mark.parametrize("chunk", [256, 1])
def test_only_contrast_scores_reach_the_response_cache(tiny, monkeypatch, chunk) -> None:
    """HFLM writes each pass's scores to lm-eval's response cache as it computes them; a run
    resumed after an interruption reads that cache as answers, so it must hold the contrast
    scores alone, once per request, round by round (``chunk`` requests a round)."""
    from lm_eval.api.model import CacheHook, hash_args

    from longred_bench.pcd import lm
    from longred_bench.pcd.lm import PcdLM

    monkeypatch.setattr(lm, "CACHE_CHUNK", chunk)

    class Recording(CacheHook):
        def __init__(self) -> None:
            self.dbdict, self.writes = {}, []

        def add_partial(self, attr, req, res) -> None:
            self.writes.append(hash_args(attr, req))
            super().add_partial(attr, req, res)

    strong = PcdLM(alpha=1.5, pretrained=tiny.model, tokenizer=tiny.tokenizer, batch_size=2)
    strong.cache_hook = hook = Recording()
    ll = [
        _instance("loglikelihood", ("The sky is", " blue")),
        _instance("loglikelihood", ("One, two,", " three"), 1),
    ]
    got = strong.loglikelihood(ll)
    keys = [hash_args("loglikelihood", r.args) for r in ll]
    assert sorted(hook.writes) == sorted(keys)  # one write per request, none from the passes
    assert [hook.dbdict[k] for k in keys] == got
    assert strong.cache_hook is hook
    hf = PcdLM(alpha=0, pretrained=tiny.model, tokenizer=tiny.tokenizer, batch_size=2)
    assert got != hf.loglikelihood(ll)  # the cached answers are not the plain pass's scores


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
    got = json.loads(results.read_text())
    assert got["results"]["pcd_toy_choice"]["acc,none"] >= 0
    # run outside a checkout: the package's commit, and no git error on the terminal
    from longred_bench.results import git_commit

    assert got["git_hash"] == git_commit() and "not a git repository" not in run.stderr


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
    md = (tmp_path / "out" / "eval.md").read_text()
    assert "with PCD" in md
    # the settings as run, which the command line shows only where a flag was given
    assert "PCD: alpha 2.0, plausible tokens adaptive, beta 0.1, local window fraction 0.25, " \
        "first pair 0; local windows run: W' 128 with B' " in md  # fmt: skip


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

    def fake_eval(unit, progress, **kwargs):
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


def test_generation_stops_at_a_stop_string_and_ignores_an_empty_one() -> None:
    """lm-eval skips an empty stop term (a seq2seq model's decoded end-of-text is ''); taken as
    a stop, every step would end the generation at once."""
    from types import SimpleNamespace

    from longred_bench.pcd.lm import PcdLM

    def decode(ids: list[int], skip_special_tokens: bool = False) -> str:
        return "".join(chr(96 + i) for i in ids)  # 1 -> "a", 26 -> "z"

    lm = SimpleNamespace(eot_token_id=0, tok_decode=decode)
    done = PcdLM._stop_check(lm, ["", "zz"])
    assert not done([1, 2]) and done([1, 2, 0]) and done([26, 26])
    assert PcdLM._stop_check(lm, ["bc"])([1, 2, 3])


def test_a_choice_without_a_local_variant_scores_as_the_standard_pass(tiny) -> None:
    """Where a request's window reaches the model's longest wavelength there is nothing to
    over-rotate: its contrast score is the standard pass's score, at any strength."""
    from lm_eval.models.huggingface import HFLM

    from longred_bench.pcd.lm import PcdLM

    common = {"pretrained": tiny.model, "tokenizer": tiny.tokenizer, "batch_size": 2}
    far = PcdLM(alpha=1.5, local_window=100_000, **common)
    ll = [
        _instance("loglikelihood", ("The sky is", " blue")),
        _instance("loglikelihood", ("One, two,", " three"), 1),
    ]
    assert far.loglikelihood(ll) == HFLM(**common).loglikelihood(ll)


def test_a_requests_local_base_follows_its_context_and_continuation(tiny, monkeypatch) -> None:
    """A 10-token context with a 60-token continuation is a 70-token request: its local pass runs
    under the base of 70 tokens (W' 32), not of its 10-token context (W' 16)."""
    from longred_bench.pcd.lm import PcdLM

    strong = PcdLM(alpha=1.5, pretrained=tiny.model, tokenizer=tiny.tokenizer, batch_size=2)
    bases = []
    local = strong.pcd.local

    def recording(base):
        bases.append(base)
        return local(base)

    monkeypatch.setattr(strong.pcd, "local", recording)
    strong._loglikelihood_tokens([(None, [65] * 10, [66] * 60)], disable_tqdm=True)
    assert bases == [strong.pcd.base_for(70)] and bases != [strong.pcd.base_for(10)]


def test_a_task_asking_for_a_temperature_is_refused(tiny) -> None:
    """A temperature above 0 is sampling whether or not ``do_sample`` says so: refused by the
    request (lm-eval sets ``do_sample`` from it) and by the model call itself."""
    from longred_bench.pcd.lm import PcdLM

    strong = PcdLM(alpha=1.5, pretrained=tiny.model, tokenizer=tiny.tokenizer)
    warm = _instance("generate_until", ("x", {"temperature": 0.7, "max_gen_toks": 4}))
    with pytest.raises(UserError, match=r"decodes greedily.*temperature=0\.7"):
        strong.generate_until([warm])
    context = torch.tensor([[65, 66]])
    with pytest.raises(UserError, match=r"decodes greedily.*temperature=0\.7"):
        strong._model_generate(context, 6, ["."], temperature=0.7)
    assert strong._model_generate(context, 6, ["."], temperature=0.0).shape[1] <= 6


def test_model_info_records_the_pcd_parameters_as_run(tiny) -> None:
    from longred_bench.pcd.lm import PcdLM, _dtype

    strong = PcdLM(alpha=2.0, local_window=64, pretrained=tiny.model, tokenizer=tiny.tokenizer)
    strong.pcd.base_for(1)
    pcd = strong.get_model_info()["pcd"]
    assert (pcd["alpha"], pcd["window_rule"], pcd["base"]) == (2.0, "window 64", 1e4)
    assert [x["window"] for x in pcd["local"]] == [64]
    assert _dtype("auto") is torch.float32 and _dtype("bfloat16") is torch.bfloat16
    with pytest.raises(UserError, match="unknown dtype 'float7'"):
        _dtype("float7")


def test_a_cuda_device_falls_back_to_the_cpu_only_where_there_is_none(monkeypatch) -> None:
    from longred_bench.pcd.lm import _device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert [_device(d) for d in ("cuda:0", "cuda", None, "cpu")] == ["cpu"] * 4
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert [_device(d) for d in ("cuda:1", None)] == ["cuda:1", "cpu"]
