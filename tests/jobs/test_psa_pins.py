"""Pinned behaviour of the psa job (:mod:`longred_bench.jobs.psa`): where the needle and the
question sit in tokens, which logits score the teacher-forced answer, the fields of each line's
records (its window, whether a sample runs past it, its name), and what ``psa_command`` checks,
runs once per decoding and records. Samples are written here by hand in RULER's own template
(no corpus is read), and the model is ``tiny-random``."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from longred_bench.errors import UserError
from longred_bench.jobs import psa
from longred_bench.jobs.configs import PsaConfig
from longred_bench.metrics.psa import gold_rank
from longred_bench.models.loading import load
from longred_bench.taskdata.ruler import Sample
from longred_bench.taskdata.ruler.niah import ANSWER_PREFIX, NEEDLE, TEMPLATE

KEY, VALUE, KIND = "apple", "4817", "numbers"
NOISE = "The grass is green. "


def _sample(before: int = 3, after: int = 2, *, pad: str = "", depths=(40.0,), index=0) -> Sample:
    """A niah_single_1 sample: ``before`` noise sentences, the needle, ``pad`` and ``after``
    noise sentences, then the question and the answer prefix."""
    needle = NEEDLE.format(kind=KIND, key=KEY, value=VALUE)
    head, tail = TEMPLATE.split("{context}")
    prefix = ANSWER_PREFIX.format(kind=KIND, query=KEY)
    context = NOISE * before + needle + " " + pad + NOISE * after
    prompt = head.format(kind=KIND) + context + tail.format(kind=KIND, query=KEY) + prefix
    meta = {"keys": [KEY], "answer_prefix": prefix, "depth_percent": list(depths)}
    return Sample("niah_single_1", 640, index, prompt, (VALUE,), len(prompt), meta)


@pytest.fixture(scope="module")
def tiny():
    """tiny-random, loaded once for the module."""
    return load("tiny-random")


def _bos(tokenizer) -> int:
    """How many special tokens the tokenizer puts before a text."""
    return len(tokenizer("a")["input_ids"]) - 1


def test_the_needle_and_the_question_are_placed_in_tokens(tiny) -> None:
    """Byte tokens: each place is its character's index (after the special tokens); the depth
    is the needle's place in the haystack, the distance counted from the last prompt token."""
    tok, sample = tiny.tokenizer, _sample()
    bos = _bos(tok)
    head = TEMPLATE.split("{context}")[0].format(kind=KIND)
    needle_at = sample.input.index("One of the special magic")
    question_at = sample.input.index("What are all")
    got = psa.needle_placement(sample, tok)
    n = len(sample.input) + bos
    assert got["prompt_tokens"] == n
    assert got["needle_start"] == needle_at + bos
    assert got["question_start"] == question_at + bos
    expected = 100.0 * (needle_at - len(head)) / (question_at - len(head))
    assert got["needle_depth"] == pytest.approx(expected)
    assert got["needle_depth_drawn"] == 40.0
    assert got["needle_distance"] == n - 1 - (needle_at + bos)


def test_a_needle_at_the_start_of_the_haystack_is_at_depth_zero(tiny) -> None:
    """Depth is counted from the haystack's first token, not the prompt's."""
    got = psa.needle_placement(_sample(before=0), tiny.tokenizer)
    assert got["needle_depth"] == 0.0


def test_the_drawn_depth_is_given_only_for_one_needle(tiny) -> None:
    """``needle_depth_drawn`` is the generator's depth where one was drawn, else ``None``."""
    assert (
        psa.needle_placement(_sample(depths=(10.0, 70.0)), tiny.tokenizer)["needle_depth_drawn"]
        is None
    )
    assert psa.needle_placement(_sample(depths=()), tiny.tokenizer)["needle_depth_drawn"] is None


def test_a_character_past_every_token_indexes_past_the_last() -> None:
    """The token of a character no token reaches is one past the last token."""
    offsets = [(0, 1), (1, 3)]
    assert [psa._token_index(offsets, c) for c in (0, 1, 2, 3, 9)] == [0, 1, 1, 2, 2]


@pytest.mark.parametrize("change", ["twice", "no tail"])
def test_a_prompt_not_holding_its_needle_once_before_the_question_is_refused(tiny, change):
    """A needle found twice, or a prompt that does not end with the question and the answer
    prefix, is refused naming the sample."""
    sample = _sample()
    needle = NEEDLE.format(kind=KIND, key=KEY, value=VALUE)
    if change == "twice":
        text = sample.input.replace(NOISE, needle + " ", 1)
    else:
        text = sample.input + " extra"
    sample = Sample(sample.task, sample.length, 3, text, sample.outputs, 0, sample.metadata)
    with pytest.raises(UserError, match="niah_single_1 sample 3 does not hold its needle exactly"):
        psa.needle_placement(sample, tiny.tokenizer)


def test_the_answer_is_scored_by_the_logits_that_predict_it(tiny) -> None:
    """Each answer token (" 4817": the space first) is ranked by the logits one position before
    it, as a full forward of prompt and answer gives them."""
    tok, sample = tiny.tokenizer, _sample()
    record, tokens = psa.score_sample(tiny.model, tok, sample)
    prompt = tok(sample.input)["input_ids"]
    answer = tok(" " + VALUE, add_special_tokens=False)["input_ids"]
    assert len(answer) == len(" " + VALUE)
    with torch.no_grad():
        logits = tiny.model(input_ids=torch.tensor([prompt + answer])).logits[0]
    rows = logits[len(prompt) - 1 : len(prompt) - 1 + len(answer)]
    assert [t["rank"] for t in tokens] == gold_rank(rows, torch.tensor(answer)).tolist()
    assert [t["token"] for t in tokens] == list(" " + VALUE)
    assert record["answer"] == VALUE and record["answer_tokens"] == len(answer)


def _padded(prompt_tokens: int, tokenizer, index: int) -> Sample:
    """A sample whose prompt is ``prompt_tokens`` tokens (byte tokens: padded with spaces)."""
    base = len(tokenizer(_sample().input)["input_ids"])
    return _sample(pad=" " * (prompt_tokens - base), index=index)


@pytest.fixture
def hand_samples(tiny, monkeypatch):
    """run_psa's samples are two hand-written ones, of 507 and 509 prompt tokens (with their
    five answer tokens, 512 and 514: at and past the window of tiny-random at pi x2, past
    tiny-random's own); the calls are listed."""
    calls = []
    samples = [_padded(507, tiny.tokenizer, 0), _padded(509, tiny.tokenizer, 1)]

    def fake(task, tokenizer, length, n, seed, **kwargs):
        calls.append({"task": task, "length": length, "n": n, "seed": seed, **kwargs})
        return samples[:n]

    monkeypatch.setattr(psa, "load_or_generate", fake)
    return calls


def test_each_line_records_its_window_and_the_samples_past_it(hand_samples, monkeypatch):
    """A sample runs past a line's window when its prompt and answer together exceed it; the
    window is the line's own (the extension's target for an extended line). Each model is
    loaded once, on the config's device; samples are asked for with its corpus and depths."""
    cfg = PsaConfig(models=("tiny-random",), ropes=("none", "pi:factor=2"),
                    tasks=("niah_single_1",), lengths=(640,), samples=2,
                    depths=(25.0,))  # fmt: skip
    loads, real = [], psa.load
    monkeypatch.setattr(psa, "load", lambda spec, **kw: loads.append(kw) or real(spec, **kw))
    seen = []
    records, provenance = psa.run_psa(cfg, progress=False, scored=seen.append)
    samples = [r for r in records if r["kind"] == "psa_sample"]
    got = [(r["extension"], r["sample"], r["window"], r["beyond_window"]) for r in samples]
    assert got == [("tiny-random", 0, 256, True), ("tiny-random", 1, 256, True),
                   ("pi:factor=2", 0, 512, False), ("pi:factor=2", 1, 512, True)]  # fmt: skip
    assert [r["prompt_tokens"] + r["answer_tokens"] for r in samples[:2]] == [512, 514]
    assert seen == ["tiny-random"] * 2 + ["pi:factor=2"] * 2
    tokens = [r for r in records if r["kind"] == "psa_token"]
    assert len(tokens) == 4 * 5
    common = {"model": "tiny-random", "task": "niah_single_1", "length": 640}
    assert all(r.items() >= common.items() for r in samples + tokens)
    assert hand_samples == [{"task": "niah_single_1", "length": 640, "n": 2, "seed": 0,
                             "corpus": "brown", "depths": (25.0,)}]  # fmt: skip
    assert provenance.config["models"] == ["tiny-random"] and "pcd" not in provenance.config
    assert loads == [{"device": "cpu"}]


def test_a_pcd_line_is_named_so_and_its_parameters_recorded(hand_samples) -> None:
    """Under PCD each line's name ends in " +pcd" and the run's config records PCD's
    parameters."""
    from longred_bench.pcd.config import PcdConfig

    cfg = PsaConfig(models=("tiny-random",), tasks=("niah_single_1",), lengths=(640,), samples=1)
    records, provenance = psa.run_psa(cfg, progress=False, pcd=PcdConfig())
    assert {r["extension"] for r in records} == {"tiny-random +pcd"}
    assert provenance.config["pcd"] == PcdConfig().as_dict()


def test_a_bad_config_is_refused_before_any_model_is_loaded(monkeypatch) -> None:
    """run_psa checks its config itself, before loading."""

    def loaded(*args, **kwargs):
        raise AssertionError("loaded")

    monkeypatch.setattr(psa, "load", loaded)
    with pytest.raises(UserError, match="psa: give at least one --model"):
        psa.run_psa(PsaConfig(models=()), progress=False)


@pytest.fixture
def fake_runs(monkeypatch):
    """psa_command's measuring and report replaced: each run_psa call's ``pcd`` is listed and
    gives one record."""
    from longred_bench.reports import psa_report
    from longred_bench.results import Provenance

    runs = []

    def run(cfg, *, progress=True, pcd=None, scored=None):
        runs.append(pcd)
        return [{"kind": "psa_sample"}], Provenance.collect({}, seed=0, device="cpu")

    monkeypatch.setattr(psa, "run_psa", run)
    monkeypatch.setattr(psa_report, "write_psa_report", lambda *a, **k: [])
    return runs


CFG = PsaConfig(models=("tiny-random",), tasks=("niah_single_1",), lengths=(640,), samples=1)


def _provenance(path: Path) -> dict:
    """The provenance of the records ``path`` holds."""
    import json

    return json.loads(path.read_text().splitlines()[0])["provenance"]


def test_each_decoding_runs_once_and_pcd_takes_the_defaults(fake_runs, tmp_path) -> None:
    """A decoding named twice runs once; pcd without parameters runs with the defaults, and the
    record names every decoding and the parameters."""
    from longred_bench.pcd.config import PcdConfig

    (jsonl,) = psa.psa_command(CFG, tmp_path, decodings=("greedy", "pcd", "greedy"), top_k=5,
                               command="c", progress=False)  # fmt: skip
    assert fake_runs == [None, PcdConfig()]
    config = _provenance(jsonl)["config"]
    assert config["decoding"] == ["greedy", "pcd"] and config["pcd"] == PcdConfig().as_dict()


def test_a_greedy_psa_records_no_pcd_parameters(fake_runs, tmp_path) -> None:
    """Without pcd among the decodings the record's ``pcd`` is null."""
    (jsonl,) = psa.psa_command(CFG, tmp_path, top_k=5, command="c", progress=False)
    assert fake_runs == [None]
    assert _provenance(jsonl)["config"]["pcd"] is None


def test_pcd_parameters_without_pcd_and_a_bad_top_k_are_refused(fake_runs, tmp_path) -> None:
    """PCD parameters with no pcd decoding, and a top-k below 1, are refused before measuring."""
    from longred_bench.pcd.config import PcdConfig

    with pytest.raises(UserError, match="PCD parameters given without pcd in --decoding"):
        psa.psa_command(CFG, tmp_path, pcd=PcdConfig(), top_k=5, command="c")
    with pytest.raises(UserError, match="--top-k must be >= 1"):
        psa.psa_command(CFG, tmp_path, top_k=0, command="c")
    assert fake_runs == [] and not list(tmp_path.iterdir())


def test_an_earlier_report_is_removed_before_the_new_records(fake_runs, tmp_path) -> None:
    """An earlier run's psa.md and psa.png go before the new records are written."""
    for name in ("psa.md", "psa.png"):
        (tmp_path / name).write_text("old")
    psa.psa_command(CFG, tmp_path, top_k=5, command="c", progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["psa.jsonl"]


def test_the_progress_line_counts_samples_over_every_line(fake_runs, tmp_path, monkeypatch):
    """Under --quiet a heartbeat says how many samples of all lines are scored and which line
    runs (``loading`` before the first)."""
    import contextlib

    said = []

    @contextlib.contextmanager
    def beat(describe, *, enabled=True):
        said.append((enabled, describe()))
        yield
        said.append((enabled, describe()))

    def run(cfg, *, progress=True, pcd=None, scored=None):
        scored("tiny-random")
        from longred_bench.results import Provenance

        return [], Provenance.collect({}, seed=0, device="cpu")

    monkeypatch.setattr(psa, "heartbeat", beat)
    monkeypatch.setattr(psa, "run_psa", run)
    cfg = PsaConfig(models=("tiny-random",), ropes=("none", "pi:factor=2"),
                    tasks=("niah_single_1",), lengths=(640, 900), samples=3)  # fmt: skip
    psa.psa_command(cfg, tmp_path, decodings=("greedy", "greedy"), top_k=5, command="c",
                    progress=False)  # fmt: skip
    assert said == [(True, "[psa] 0 of 12 sample(s) scored; now loading"),
                    (True, "[psa] 1 of 12 sample(s) scored; now tiny-random")]  # fmt: skip
