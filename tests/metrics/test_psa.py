"""PSA: the rank/probability/salience metric, the verdict rule and the `psa` command end to end."""

import json
import math

import pytest
import torch
from data_helpers import ensure_cached

from longred_bench.cli import main
from longred_bench.metrics.psa import (
    answer_scores,
    gold_probability,
    gold_rank,
    is_content_token,
    reciprocal_rank,
    salience,
)
from longred_bench.reports.psa_report import psa_verdicts, sample_frame, summarize
from longred_bench.reports.verdict_rules import (
    NOT_COMPARABLE,
    NOT_REPRODUCED,
    REPRODUCED,
    UNDECIDED,
)

# Hand-computed: row 0 scores token 2 (logit 2.0) below two tokens at 3.0 -> rank 3; row 1's
# gold token 0 has the largest logit -> rank 1; row 2's gold token 1 ties token 3 at the top ->
# rank 1 (only strictly greater probabilities count).
LOGITS = torch.tensor(
    [
        [1.0, 3.0, 2.0, 3.0],
        [0.5, 0.1, 0.2, 0.0],
        [0.0, 3.0, 2.0, 3.0],
    ]
)
GOLD = torch.tensor([2, 0, 1])


def test_gold_rank_hand_example():
    assert gold_rank(LOGITS, GOLD).tolist() == [3, 1, 1]
    # Token 0 of row 0 is below all three others: rank 4 (the last place).
    assert gold_rank(LOGITS[:1], torch.tensor([0])).tolist() == [4]


def test_gold_rank_refuses_nan_logits():
    """A NaN compares above nothing: a NaN row ranked its gold first (reciprocal rank 1)."""
    with pytest.raises(ValueError, match="logits hold NaN"):
        gold_rank(torch.tensor([[1.0, float("nan"), 2.0]]), torch.tensor([1]))


def test_answer_scores_needs_one_text_per_token():
    """Fewer texts than tokens dropped records silently; more, or none, was an IndexError."""
    from longred_bench.metrics.psa import answer_scores

    for texts in (["a"], ["a", "b", "c", "d"], []):
        with pytest.raises(ValueError, match="give one text per token"):
            answer_scores(LOGITS, GOLD, texts)


def test_gold_probability_hand_example():
    logits = torch.tensor([[0.0, math.log(3.0)], [math.log(2.0), 0.0]])
    probs = gold_probability(logits, torch.tensor([1, 1]))
    assert probs.tolist() == pytest.approx([0.75, 1.0 / 3.0], abs=1e-6)
    assert probs.dtype == torch.float32


def test_salience_is_mean_reciprocal_rank():
    ranks = torch.tensor([1, 2, 4])
    assert reciprocal_rank(ranks).tolist() == pytest.approx([1.0, 0.5, 0.25])
    assert float(salience(ranks)) == pytest.approx(7.0 / 12.0)
    assert float(salience(gold_rank(LOGITS, GOLD))) == pytest.approx((1 / 3 + 1 + 1) / 3)
    assert math.isnan(float(salience(torch.tensor([], dtype=torch.long))))


def test_metric_shapes_are_checked():
    with pytest.raises(ValueError, match=r"logits \[T, V\]"):
        gold_rank(LOGITS, GOLD[:2])
    with pytest.raises(ValueError):
        gold_probability(LOGITS[0], GOLD[:1])


def test_content_token():
    assert [is_content_token(t) for t in [" ", ",", " -", "3", " a", "\n"]] == [
        False,
        False,
        False,
        True,
        True,
        False,
    ]


def _rows(extension, length, ranks):
    return [
        {
            "kind": "psa_sample",
            "extension": extension,
            "task": "niah_single_2",
            "length": length,
            "rank": r,
            "probability": 1.0 / r,
            "reciprocal_rank": 1.0 / r,
            "mean_reciprocal_rank_all": 1.0 / r,
            "needle_depth": 50.0,
            "needle_distance": length // 2,
            "beyond_window": False,
        }
        for r in ranks
    ]


def test_verdict_rule():
    records = (
        _rows("falls", 512, [1, 1, 1, 1])
        + _rows("falls", 2048, [2, 2, 2, 2])
        + _rows("flat", 512, [1, 2, 1, 2])
        + _rows("flat", 2048, [2, 1, 2, 1])
        + _rows("lost", 512, [1, 1, 1, 1])
        + _rows("lost", 2048, [40, 50, 60, 30])
        + _rows("rises", 512, [2, 2, 2, 2])
        + _rows("rises", 2048, [1, 1, 1, 1])
        + _rows("single", 512, [1, 1])
        + _rows("unclear", 512, [1] * 8)
        + _rows("unclear", 2048, [2, 20] * 4)
    )
    by_length = summarize(sample_frame(records), ["extension", "length"], top_k=10)
    verdicts = {v.extension: v for v in psa_verdicts(by_length, top_k=10)}
    assert verdicts["falls"].label == REPRODUCED
    assert verdicts["falls"].shortest["s_first"] == 1.0
    assert verdicts["falls"].longest["s_first"] == 0.5
    # Overlapping intervals cannot tell; a rise, or a rank outside the top k, refutes it.
    assert (verdicts["flat"].label, verdicts["flat"].salience_falls) == (UNDECIDED, False)
    assert verdicts["rises"].label == NOT_REPRODUCED
    assert verdicts["lost"].salience_falls and not verdicts["lost"].stays_top_k
    assert verdicts["lost"].leaves_top_k and verdicts["lost"].label == NOT_REPRODUCED
    assert verdicts["lost"].worst_median_rank == 45.0
    assert verdicts["single"].label == NOT_COMPARABLE  # one length: no fall to measure
    # Half the samples in the top 10 at 2048: neither stays nor leaves, so no label, although
    # salience falls (a point rule on the median rank would have decided it).
    unclear = verdicts["unclear"]
    assert unclear.salience_falls and not unclear.stays_top_k and not unclear.leaves_top_k
    assert unclear.label == UNDECIDED and "0.50 [" in unclear.sentence()
    # k is a parameter: at k = 100 the "lost" line counts as highly ranked.
    wide_summary = summarize(sample_frame(records), ["extension", "length"], top_k=100)
    wide = {v.extension: v for v in psa_verdicts(wide_summary)}
    assert wide["lost"].label == REPRODUCED
    with pytest.raises(ValueError, match="top_k 10 but the summary counted top-100"):
        psa_verdicts(wide_summary, top_k=10)
    assert "n = 4" in verdicts["falls"].sentence()


@pytest.mark.integration
def test_psa_command_tiny_random(tmp_path, capsys, request):
    ensure_cached(request, "brown")  # the NIAH haystack
    out = tmp_path / "psa"
    argv = ["psa", "--model", "tiny-random", "--rope", "none", "pi:factor=4"]
    argv += ["--tasks", "niah_single_1", "--lengths", "640", "--samples", "2"]
    argv += ["--out", str(out), "--quiet"]
    assert main(argv) == 0
    assert capsys.readouterr().out.strip().startswith("wrote ")
    records = [json.loads(line) for line in (out / "psa.jsonl").read_text().splitlines()]
    samples = [r for r in records if r["kind"] == "psa_sample"]
    tokens = [r for r in records if r["kind"] == "psa_token"]
    assert sorted(r["extension"] for r in samples) == ["pi:factor=4"] * 2 + ["tiny-random"] * 2
    assert len(tokens) == sum(r["answer_tokens"] for r in samples)
    for s in samples:
        mine = [t for t in tokens if (t["extension"], t["sample"]) == (s["extension"], s["sample"])]
        steps = [t for t in mine if t["gold_step"]]
        assert len(steps) == 1 and steps[0]["answer_index"] == s["gold_step"]
        assert steps[0]["token"] == s["answer"][0]  # " " is skipped; the first digit is gold
        assert steps[0]["rank"] == s["rank"]
        assert s["reciprocal_rank"] == pytest.approx(1.0 / s["rank"])
        assert 1 <= s["rank"] <= 259 and 0.0 < s["probability"] < 1.0
        assert s["question_start"] > s["needle_start"] > 0
        assert s["needle_distance"] == s["prompt_tokens"] - 1 - s["needle_start"]
        assert 0.0 <= s["needle_depth"] <= 100.0
        assert s["window"] == (1024 if s["rope"] == "pi:factor=4" else 256)
    assert {"git_commit", "versions", "device", "seed", "config"} <= set(records[0]["provenance"])
    md = (out / "psa.md").read_text()
    assert "| tiny-random | 640 | 2 |" in md and "not comparable (one length only" in md
    prov = records[0]["provenance"]
    source = prov["source_hash"][:12]
    assert f"Device: {prov['device']}; commit `{prov['git_commit']}` (source `{source}`)" in md
    assert (out / "psa.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.integration
def test_ranks_match_a_full_forward_and_needle_is_located(request):
    ensure_cached(request, "brown")  # the NIAH haystack
    from longred_bench.jobs.psa import score_sample
    from longred_bench.models.loading import load
    from longred_bench.taskdata.ruler import generate

    loaded = load("tiny-random")
    tok = loaded.tokenizer
    sample = generate("niah_multikey_3", tok, 900, 1, 0)[0]
    record, tokens = score_sample(loaded.model, tok, sample)
    prompt = tok(sample.input)["input_ids"]
    answer = tok(" " + sample.outputs[0], add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        logits = loaded.model(input_ids=torch.tensor([prompt + answer])).logits[0]
    rows = logits[len(prompt) - 1 : len(prompt) - 1 + len(answer)]
    expected = gold_rank(rows, torch.tensor(answer)).tolist()
    assert [t["rank"] for t in tokens] == expected
    # Byte tokens: the needle's and the question's first tokens decode to their text.
    needle = tok.decode(prompt[record["needle_start"] :])
    assert needle.startswith(f"One of the special magic uuids for {sample.metadata['keys'][0]}")
    assert tok.decode(prompt[record["question_start"] :]).startswith("What are all the")
    # the needle's depth is its place in the context (haystack), not in the whole prompt
    from longred_bench.jobs.psa import needle_placement

    (deep,) = generate("niah_single_1", tok, 4096, 1, 0, depths=(90.0,))  # snapped back a bit
    placed = needle_placement(deep, tok)
    assert placed["needle_depth_drawn"] == 90.0
    assert placed["needle_depth"] == pytest.approx(90.0, abs=2.5)  # of the prompt: about 84.5


def test_a_line_is_named_by_its_extension_alone_where_one_model_is_measured() -> None:
    from longred_bench.jobs.configs import PsaConfig
    from longred_bench.jobs.psa import label

    one = PsaConfig(models=("a",), ropes=("none", "pi:factor=4"))
    two = PsaConfig(models=("a", "b"), ropes=("none", "pi:factor=4"))
    assert (label("a", "none", one), label("a", "pi:factor=4", one)) == ("a", "pi:factor=4")
    assert label("a", "pi:factor=4", two) == "a [pi:factor=4]"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--tasks", "vt"], "no single gold answer"),
        # the nearest retrieval task, not every RULER task, is offered
        (
            ["--tasks", "niah_singel_1"],
            "psa: unknown task 'niah_singel_1' (did you mean "
            "niah_single_1?); retrieval tasks: niah_single_1, niah_single_2, niah_single_3, "
            "niah_multikey_1, niah_multikey_2, niah_multikey_3",
        ),
        (["--rope", "warp:factor=2"], "warp"),
        (["--samples", "0"], "must be >= 1"),
    ],
)
def test_psa_bad_input_is_one_line(tmp_path, capsys, extra, message):
    argv = ["psa", "--model", "tiny-random", "--lengths", "640", "--out", str(tmp_path)]
    assert main(argv + extra + ["--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ")
    assert message in err and "\n" not in err


def test_salience_falls_by_the_interval_of_the_difference():
    """Two lengths whose own intervals overlap, while the interval of their difference lies
    below 0: salience falls (non-overlap of the two intervals would count it undecided)."""
    records = _rows("x", 512, [1] * 40 + [2] * 24) + _rows("x", 2048, [1] * 28 + [2] * 36)
    by_length = summarize(sample_frame(records), ["extension", "length"], top_k=10)
    short, long = by_length.iloc[0], by_length.iloc[1]
    assert long["s_first_high"] > short["s_first_low"]  # the two intervals overlap
    (v,) = psa_verdicts(by_length, top_k=10)
    assert v.fall is not None and v.fall.high < 0 and v.salience_falls
    assert v.label == REPRODUCED and "S first change -0.094" in v.sentence()


def test_psa_checks_every_models_extensions_before_scoring_any(tmp_path, capsys):
    """A second model whose RoPE is already scaled was refused after the first was scored,
    and nothing was written."""
    from longred_bench.models.loading import extend, load

    loaded = load("tiny-random")
    scaled = tmp_path / "pi"
    extend(loaded.model, "pi:factor=4").save_pretrained(scaled)
    loaded.tokenizer.save_pretrained(scaled)
    capsys.readouterr()  # the save's progress bars
    out = str(tmp_path / "o")
    argv = ["psa", "--model", "tiny-random", str(scaled), "--rope", "none", "pi:factor=2",
            "--lengths", "640", "--samples", "1", "--out", out, "--quiet"]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert "RoPE is already scaled" in err and "\n" not in err
    assert not (tmp_path / "o").exists()


def test_a_forward_pass_giving_nan_is_one_line(request):
    """NaN logits have no gold rank: a ValueError's traceback before, now one line naming the
    sample."""
    ensure_cached(request, "brown")  # the NIAH haystack
    from longred_bench.errors import UserError
    from longred_bench.jobs.psa import score_sample
    from longred_bench.models.loading import load
    from longred_bench.taskdata.ruler import generate

    loaded = load("tiny-random")
    with torch.no_grad():
        loaded.model.lm_head.weight.fill_(float("nan"))
    sample = generate("niah_multikey_3", loaded.tokenizer, 900, 1, 0)[0]
    with pytest.raises(
        UserError, match="logits hold NaN on niah_multikey_3 sample 0 at length 900"
    ):
        score_sample(loaded.model, loaded.tokenizer, sample)


def test_a_small_mean_gold_probability_is_not_printed_as_zero() -> None:
    """psa.md printed a random model's mean P(gold) of 2e-5 as 0.000; the plot showed 2e-5."""
    from longred_bench.reports.psa_report import probability_text

    assert probability_text(2.04e-5) == "2.0e-05"
    assert probability_text(0.260) == "0.260" and probability_text(0.0) == "0.000"


def test_a_gold_token_pcd_never_emits_is_unranked_in_s_first_and_the_top_k_share():
    """Under PCD a gold token outside the plausible set has probability 0 and, in its record,
    rank one past the set's size: rank 6 under a top-5 cut read as in the top 10, and its
    reciprocal rank 1/6 as salience. It counts as unranked; the greedy line is unchanged."""
    never = [{**r, "probability": 0.0} for r in _rows("m +pcd", 512, [6] * 4)]
    never += [{**r, "probability": 0.0} for r in _rows("m +pcd", 2048, [6] * 4)]
    greedy = _rows("m", 512, [6] * 4) + _rows("m", 2048, [6] * 4)
    by_length = summarize(sample_frame(never + greedy), ["extension", "length"], top_k=10)
    pcd = by_length[by_length["extension"] == "m +pcd"]
    plain = by_length[by_length["extension"] == "m"]
    assert (pcd["top_k_share"] == 0.0).all() and (pcd["s_first"] == 0.0).all()
    assert (pcd["median_rank"] == 6).all()  # the record's rank, as documented
    assert (plain["top_k_share"] == 1.0).all() and list(plain["s_first"]) == pytest.approx(
        [1 / 6] * 2
    )
    verdicts = {v.extension: v for v in psa_verdicts(by_length, top_k=10)}
    assert verdicts["m +pcd"].leaves_top_k and verdicts["m +pcd"].label == NOT_REPRODUCED
    from longred_bench.reports.psa_report import psa_markdown

    said = "8 `+pcd` sample(s) have a gold token outside PCD's plausible tokens"
    assert said in psa_markdown(never + greedy, "t")
    assert "plausible tokens" not in psa_markdown(greedy, "t")  # greedy alone: nothing to say


def test_answer_scores_give_the_gold_step_and_means_over_every_token() -> None:
    # ranks [3, 1, 1] (the hand example above); the first content token is index 1
    summary, tokens = answer_scores(LOGITS, GOLD, [" ", "3", "x"])
    assert summary["gold_step"] == 1 and summary["rank"] == 1
    assert summary["mean_reciprocal_rank_all"] == pytest.approx((1 / 3 + 1 + 1) / 3)
    assert summary["mean_rank_all"] == pytest.approx(5 / 3)
    assert [t["gold_step"] for t in tokens] == [False, True, False]
