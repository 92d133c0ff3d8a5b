"""``benchmarks/bench_eval.py`` and ``benchmarks/bench_ruler_rate.py``: helpers (unit) and a
smoke run of the evaluation benchmark on the tiny model (integration).

The smoke run uses RULER ``vt`` only, whose samples need no cached corpus, and a private cache
directory, so it reads and writes nothing outside ``tmp_path``.
"""

from __future__ import annotations

import csv
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
from script_loader import load_script

from longred_bench.errors import UserError

common = load_script("bench_common")
bench = load_script("bench_eval")
rate = load_script("bench_ruler_rate")


def _words(text: str) -> list[int]:
    return [len(w) for w in text.split()]


def _pair(context: str, continuation: str) -> tuple[list[int], list[int]]:
    return _words(context), _words(continuation)


# --- token counting ----------------------------------------------------------------------------


def test_request_tokens_by_kind() -> None:
    kw = {"encode": _words, "encode_pair": _pair}
    assert bench.request_tokens("loglikelihood", ("a b c", " d e"), **kw) == 5
    assert bench.request_tokens("loglikelihood", ("", " d e"), **kw) == 3  # prefix token + 2
    assert bench.request_tokens("loglikelihood_rolling", ("one two three four",), **kw) == 4
    assert bench.request_tokens("generate_until", ("q: x y", {"until": ["\n"]}), **kw) == 3
    with pytest.raises(ValueError, match="unknown request type"):
        bench.request_tokens("embed", ("x",), **kw)


def _chars(ids: list[int]) -> str:
    # id 0 is a special token (decodes to nothing); others are letters a, b, c, ... or "."
    return "".join("" if i == 0 else ("." if i == 27 else chr(96 + i)) for i in ids)


def test_kept_tokens_stops_at_first_stop_sequence() -> None:
    ids = [1, 2, 27, 3, 4]  # "ab.cd"
    assert bench.kept_tokens(ids, ["."], _chars) == 2
    assert bench.kept_tokens(ids, ["c", "."], _chars) == 2  # the earliest stop wins
    assert bench.kept_tokens(ids, ["d"], _chars) == 4
    assert bench.kept_tokens(ids, [], _chars) == 5
    assert bench.kept_tokens([27, 1], ["."], _chars) == 0


def test_kept_tokens_ignores_trailing_special_tokens() -> None:
    assert bench.kept_tokens([1, 2, 0, 0, 0], ["</s>"], _chars) == 2
    assert bench.kept_tokens([0, 0], [], _chars) == 0


# --- rows and tables ---------------------------------------------------------------------------


def test_throughput_row_rates() -> None:
    totals = bench.KindTotals(
        n_requests=4,
        input_tokens=300,
        generated_tokens=100,
        forward_calls=10,
        forward_rows=20,
        forward_tokens=500,
        seconds=2.0,
    )
    row = bench.throughput_row(totals, request_type="all", wall_s=8.0, model="m", batch_size=2)
    assert set(row) == set(bench.FIELDS)
    assert (row["tokens"], row["tokens_per_s_model"], row["tokens_per_s_wall"]) == (400, 200, 50)
    assert (row["requests_per_s_model"], row["requests_per_s_wall"]) == (2, 0.5)
    assert row["mean_forward_rows"] == 2
    empty = bench.throughput_row(bench.KindTotals(), request_type="x", wall_s=None)
    assert empty["tokens_per_s_model"] is None and empty["mean_forward_rows"] is None


def test_kind_totals_add() -> None:
    total = bench.KindTotals()
    total.add(bench.KindTotals(n_requests=1, input_tokens=5, seconds=0.5))
    total.add(bench.KindTotals(n_requests=2, generated_tokens=3, seconds=0.25))
    assert (total.n_requests, total.input_tokens, total.generated_tokens) == (3, 5, 3)
    assert total.seconds == pytest.approx(0.75)


def test_with_speedup_against_batch_one() -> None:
    cell = {"model": "m", "suite": "s", "request_type": "all"}
    rows = [{**cell, "batch_size": b, "tokens_per_s_model": v} for b, v in ((1, 100.0), (8, 250.0))]
    rows.append({**rows[0], "suite": "t", "batch_size": 8})  # no batch-1 run of that suite
    assert [r["speedup"] for r in bench.with_speedup(rows)] == [1.0, 2.5, None]


def test_markdown_table_and_csv(tmp_path: Path) -> None:
    rows = [{"a": 1, "b": None, "c": "x"}, {"a": 2.5, "b": "y", "c": "z"}]
    md = common.markdown_table(rows, ["a", "b"])
    assert md.splitlines() == ["| a | b |", "|---|---|", "| 1 |  |", "| 2.5 | y |"]
    path = tmp_path / "sub" / "t.csv"
    common.write_csv(rows, path, ["a", "b"])
    with open(path, newline="") as fh:
        assert list(csv.DictReader(fh)) == [{"a": "1", "b": ""}, {"a": "2.5", "b": "y"}]
    assert sorted(p.name for p in path.parent.iterdir()) == ["t.csv"]  # no temporary left


def test_parse_ropes() -> None:
    assert bench.parse_ropes(["tiny-random=pi:factor=8"]) == {"tiny-random": "pi:factor=8"}
    assert bench.parse_ropes(["tiny-random=pi:factor=8", "tiny-random=none"]) == {}
    for bad in ("tiny-random", "=pi:factor=8"):
        with pytest.raises(UserError, match="--rope takes MODEL=SPEC"):  # one line, status 2
            bench.parse_ropes([bad])


def test_suite_kwargs() -> None:
    args = bench.build_parser().parse_args(["--ruler-tasks", "vt", "--ruler-lengths", "512"])
    assert bench.suite_kwargs("short", args) == ({"limit": 2}, "limit=2")
    kwargs, setting = bench.suite_kwargs("ruler", args)
    assert kwargs == {"tasks": ["longred_ruler_vt"], "lengths": [512], "samples": 2}
    assert setting == "vt L=512 n=2"


# --- the request meter -------------------------------------------------------------------------


class _FakeLM:
    """Request methods shaped like HFLM's, over a one-layer model."""

    def __init__(self) -> None:
        self.model = torch.nn.Embedding(10, 4)

    def loglikelihood(self, requests):
        self.model(torch.zeros(2, 5, dtype=torch.long))
        return [(0.0, True)] * len(requests)

    def loglikelihood_rolling(self, requests):
        return [0.0] * len(requests)

    def generate_until(self, requests):
        context = torch.zeros(1, 3, dtype=torch.long)
        self._model_generate(context=context, max_length=6, stop=["."])
        return ["x"] * len(requests)

    def _model_generate(self, context, max_length, stop, **kwargs):
        return torch.tensor([[0, 0, 0, 7, 8, 9]])


def test_request_meter_records_and_restores() -> None:
    originals = {n: _FakeLM.__dict__[n] for n in (*bench.REQUEST_TYPES, "_model_generate")}
    lm = _FakeLM()
    meter = bench.RequestMeter()
    with meter.watch(_FakeLM):
        lm.loglikelihood([SimpleNamespace(args=("a", " b"))] * 3)
        lm.generate_until([SimpleNamespace(args=("q", {"until": ["."]}))])
    assert {n: _FakeLM.__dict__[n] for n in originals} == originals
    ll, gen = meter.calls
    assert (ll.kind, len(ll.args), ll.forward_calls, ll.forward_rows, ll.forward_tokens) == (
        "loglikelihood",
        3,
        1,
        2,
        10,
    )
    assert ll.seconds >= 0 and not ll.generations
    assert gen.kind == "generate_until" and gen.args == [("q", {"until": ["."]})]
    ((ids, stop),) = gen.generations
    assert ids.tolist() == [[7, 8, 9]] and stop == ["."]


# --- RULER rate helpers ------------------------------------------------------------------------


def test_resolve_function_from_registry_reference() -> None:
    import longred_bench
    from longred_bench.taskdata.ruler import registry

    root = Path(longred_bench.__file__).resolve().parent
    fn = rate.resolve_function(f"{root}/taskdata/ruler/registry.generation_rate", root)
    assert fn is registry.generation_rate


def test_mean_prompt_tokens() -> None:
    def tokenizer(text: str) -> SimpleNamespace:
        return SimpleNamespace(input_ids=text.split())

    assert rate.mean_prompt_tokens(["a b", "a b c d"], tokenizer) == 3.0
    assert rate.mean_prompt_tokens([], tokenizer) is None


def test_ruler_rate_report_lists_what_was_not_compared() -> None:
    base = dict.fromkeys(rate.FIELDS)
    rows = [
        {**base, "task": "vt", "lm_eval_task": "ruler_vt", "length": 4096, "tokenizer": "tok",
         "n_samples": 500, "ours_per_s": 40.0, "lm_eval_per_s": 90.0, "status": "compared"},
        {**base, "task": "qa_1", "lm_eval_task": "ruler_qa_squad", "length": 4096,
         "tokenizer": "tok", "status": "not compared: downloads http://x at run time"},
    ]  # fmt: skip
    info = {k: "v" for k in ("commit", "device", "cpu_count", "python", "torch", "transformers")}
    info.update(lm_eval="0.4.13", timestamp="t", loadavg="0 0 0", loadavg_end="0 0 0")
    md = rate.report(rows, info, "cmd")
    assert "| vt | ruler_vt | 4096 | 500 |" in md
    assert "- `qa_1` (lm-eval `ruler_qa_squad`) at 4096: downloads http://x at run time" in md


# --- smoke run (integration) -------------------------------------------------------------------


@pytest.mark.integration
def test_bench_eval_smoke(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    threads = torch.get_num_threads()
    argv = ["--models", "tiny-random", "--suites", "ruler", "--ruler-tasks", "vt"]
    argv += ["--ruler-lengths", "512", "--ruler-samples", "2", "--batch-sizes", "1", "2"]
    try:
        written = bench.main([*argv, "--out", str(tmp_path / "out")])
    finally:
        torch.set_num_threads(threads)
    csv_path, md_path = written
    assert csv_path.name == "eval_throughput_tiny-random.csv" and md_path.suffix == ".md"
    with open(csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["batch_size"], r["request_type"]) for r in rows] == [
        ("1", "generate_until"),
        ("1", "all"),
        ("2", "generate_until"),
        ("2", "all"),
    ]
    from longred_bench.results import git_commit
    from longred_bench.source_tree import source_hash

    assert {(r["commit"], r["source"]) for r in rows} == {(git_commit(), source_hash()[:12])}
    # The prompt tokens are those of the two cached samples in the model's own tokenizer.
    from longred_bench.models.loading import load_tokenizer
    from longred_bench.taskdata.ruler import load_or_generate

    tok = load_tokenizer("tiny-random")
    prompts = sum(len(tok(s.input).input_ids) for s in load_or_generate("vt", tok, 512, 2, 0))
    for r in rows:
        assert (r["model"], r["rope"], r["suite"], r["n_docs"]) == (
            "tiny-random",
            "pi:factor=8",
            "ruler",
            "2",
        )
        assert (int(r["n_requests"]), int(r["input_tokens"])) == (2, prompts)
        assert 0 < int(r["generated_tokens"]) <= 2 * 30  # vt's max_gen_toks is 30
        assert float(r["model_s"]) > 0 and r["commit"] and r["lm_eval"]
    assert rows[0]["generated_tokens"] == rows[2]["generated_tokens"]  # same for any batch size
    assert float(rows[1]["wall_s"]) >= float(rows[1]["model_s"])
    assert rows[3]["mean_forward_rows"] == "2.0"  # the two vt samples ran as one batch
    md = md_path.read_text()
    assert md.startswith("# Evaluation throughput: tiny-random (rope `pi:factor=8`)")
    assert "| ruler | vt L=512 n=2 | 2 | 2 | 0 | 2 |" in md and "load average" in md


def test_file_label_names_a_run_folder_and_keeps_no_dots(tmp_path: Path) -> None:
    final = tmp_path / "models" / "tiny-base-1a2b.3c" / "final"
    final.mkdir(parents=True)
    assert bench.file_label(str(final)) == "tiny-base-1a2b-3c"  # a dot would read as a suffix
    assert bench.file_label("shape:smollm2-135m") == "shape_smollm2-135m"
    assert bench.file_label("org/model") == "org_model"


@pytest.mark.integration
def test_bench_eval_shape_model_is_random_init_with_the_given_tokenizer(tmp_path: Path) -> None:
    """A ``shape:NAME`` model is written once, at the shape's sizes, with the tokenizer folder it
    is given, and evaluated on RULER like a named model."""
    from longred_bench.models.zoo import byte_tokenizer

    byte_tokenizer().save_pretrained(tmp_path / "tok")
    work, threads = tmp_path / "shapes", torch.get_num_threads()
    argv = ["--models", "shape:smollm2-135m", "--suites", "ruler", "--ruler-tasks", "vt"]
    argv += ["--ruler-lengths", "512", "--ruler-samples", "1", "--batch-sizes", "1"]
    argv += ["--tokenizer", str(tmp_path / "tok"), "--work", str(work), "--rope"]
    try:
        csv_path, _ = bench.main([*argv, "--out", str(tmp_path / "out")])
    finally:
        torch.set_num_threads(threads)
    assert csv_path.name == "eval_throughput_shape_smollm2-135m.csv"
    import json

    config = json.loads((work / "smollm2-135m" / "config.json").read_text())
    assert (config["hidden_size"], config["num_hidden_layers"], config["vocab_size"]) == (
        576, 30, 49_152
    )  # fmt: skip
    assert (work / "smollm2-135m" / "tokenizer.json").is_file()
    with open(csv_path, newline="") as fh:
        row = list(csv.DictReader(fh))[-1]
    assert row["model"] == "shape:smollm2-135m" and row["n_requests"] == "1"
    assert int(row["input_tokens"]) > 0 and row["peak_gib"] == ""  # no CUDA peak on a CPU


@pytest.mark.integration
def test_bench_pcd_smoke_measures_both_modes(tmp_path: Path) -> None:
    """The PCD cost benchmark runs end to end on tiny-random: greedy and PCD rows, PCD with the
    local variant's second KV cache and its rotary buffers."""
    pcd = load_script("bench_pcd")
    threads = torch.get_num_threads()
    argv = ["--models", "tiny-random", "--lengths", "128", "--new-tokens", "2", "--repeats", "1"]
    try:
        written = pcd.main([*argv, "--threads", "1", "--out", str(tmp_path)])
    finally:
        torch.set_num_threads(threads)
    with open(written[0], newline="") as fh:
        greedy, with_pcd = list(csv.DictReader(fh))
    assert (greedy["mode"], with_pcd["mode"]) == ("greedy", "pcd")
    assert float(with_pcd["kv_mib"]) == pytest.approx(2 * float(greedy["kv_mib"]), abs=0.011)
    assert float(greedy["extra_state_kib"]) == 0 < float(with_pcd["extra_state_kib"])
    assert float(with_pcd["score_ratio"]) > 0 and not greedy["score_ratio"]
