"""Per-document scores of ``run_eval(..., item_scores=True)`` (``eval_item`` records).

A unit test of :func:`longred_bench.evaluation.items.item_records` on hand-made lm-eval samples, and
integration runs on the ``tiny-random`` model: the mean of every (task, metric, length) group of
item records equals the task's tidy value, for the short tiny suite and for RULER.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest
from data_helpers import ensure_cached
from eval_helpers import StandInTask

from longred_bench.errors import UserError
from longred_bench.evaluation.items import item_records, squad_scores


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def mean(values: list[float]) -> float:  # named like lm-eval's mean aggregation
    return _mean(values)


def mean_present(values: list[float | None]) -> float:  # named like RULER's
    return _mean([v for v in values if v is not None])


def perplexity(values: list[float]) -> float:
    return 0.0


def test_item_records_keep_per_document_means_only() -> None:
    tasks = {
        "mc": StandInTask({"acc": mean, "acc_norm": mean}),
        "lm": StandInTask({"acc": mean, "perplexity": perplexity}),
        "rul": StandInTask({"score": mean, "512": mean_present, "1024": mean_present}),
        "gen": StandInTask({"exact_match": mean}, "generate_until"),
    }
    samples = {
        "mc": [
            {
                "doc_id": 7,
                "filter": "none",
                "metrics": ["acc", "acc_norm"],
                "acc": 1.0,
                "acc_norm": 0.0,
            },
            {
                "doc_id": 9,
                "filter": "none",
                "metrics": ["acc", "acc_norm"],
                "acc": True,
                "acc_norm": 1,
            },
        ],
        "lm": [
            {
                "doc_id": 0,
                "filter": "none",
                "metrics": ["perplexity", "acc"],
                "perplexity": -3.2,
                "acc": 0.0,
            }
        ],
        "rul": [
            {
                "doc_id": 0,
                "filter": "none",
                "metrics": ["score", "512", "1024"],
                "score": 40.0,
                "512": 40.0,
                "1024": None,
            },
            {
                "doc_id": 1,
                "filter": "none",
                "metrics": ["score", "512", "1024"],
                "score": 100.0,
                "512": None,
                "1024": 100.0,
            },
        ],
        "gen": [
            {
                "doc_id": 3,
                "filter": "strip",
                "metrics": ["exact_match"],
                "exact_match": 1.0,
                "resps": [[" 4417 and more"]],
                "target": ["4417"],
            }
        ],
    }
    records = item_records(samples, tasks, suite="s", model="m", rope="pi:factor=2")
    got = sorted((r["task"], r["metric"], r["length"], r["doc_id"], r["value"]) for r in records)
    assert got == [
        ("gen", "exact_match,strip", None, 3, 1.0),
        ("lm", "acc", None, 0, 0.0),  # perplexity's per-document log-likelihood is left out
        ("mc", "acc", None, 7, 1.0),
        ("mc", "acc", None, 9, 1.0),
        ("mc", "acc_norm", None, 7, 0.0),
        ("mc", "acc_norm", None, 9, 1.0),
        ("rul", "score", 512, 0, 40.0),  # the document's score at its own length only
        ("rul", "score", 1024, 1, 100.0),
    ]
    assert all(isinstance(r["value"], float) for r in records)
    # A generation task's records carry what the model wrote and the reference; others do not.
    texts = {r["task"]: (r.get("response"), r.get("target")) for r in records}
    assert texts["gen"] == (" 4417 and more", ["4417"])
    assert texts["mc"] == texts["lm"] == texts["rul"] == (None, None)
    assert {(r["kind"], r["suite"], r["model"], r["rope"]) for r in records} == {
        ("eval_item", "s", "m", "pi:factor=2")
    }


def test_item_scores_are_refused_for_the_ppl_suite() -> None:
    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.run import run_eval

    with pytest.raises(UserError, match="ppl suite"):
        run_eval(EvalConfig(model="tiny-random", suite="ppl"), item_scores=True)


def _groups(records: list[dict[str, Any]]) -> dict[tuple, list[float]]:
    groups: dict[tuple, list[float]] = defaultdict(list)
    for r in records:
        if r["kind"] == "eval_item":
            groups[(r["task"], r["metric"], r["length"])].append(r["value"])
    return groups


@pytest.mark.integration
def test_short_tiny_item_means_equal_tidy_values(request: pytest.FixtureRequest) -> None:
    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.run import run_eval

    ensure_cached(request, "brown", "austen", "sotu")
    # The byte tokenizer of tiny-random needs a wider window than its 256 tokens for these
    # prompts; at 640 some lastword and passkey documents do not fit and are skipped.
    result = run_eval(
        EvalConfig(model="tiny-random", suite="short_tiny", limit=24, max_length=640),
        item_scores=True,
        progress=False,
    )
    tidy = {(r["task"], r["metric"], r["length"]): r for r in result.records if r["kind"] == "eval"}
    groups = _groups(result.records)
    assert set(groups) == {
        ("longred_tiny_lastword", "acc", None),
        ("longred_tiny_lastword", "acc_norm", None),
        ("longred_tiny_nextsent", "acc", None),
        ("longred_tiny_swap", "acc", None),
        ("longred_tiny_replace", "acc", None),
        ("longred_tiny_passkey", "acc", None),
        ("longred_tiny_passkey", "acc_norm", None),
    }  # no perplexity-like metric, no group
    assert any(0.0 < _mean(v) < 1.0 for v in groups.values())  # not all 0 or all 1
    fitting = {f.task: f.fitting for f in result.fits}
    for key, values in groups.items():
        assert _mean(values) == pytest.approx(tidy[key]["value"], abs=1e-12), key
        assert len(values) == tidy[key]["n_samples"]
        ids = [
            r["doc_id"]
            for r in result.records
            if r["kind"] == "eval_item" and (r["task"], r["metric"]) == key[:2]
        ]
        assert ids == fitting[key[0]]  # lm-eval's doc_id is the index in the task's split
    assert any(tidy[(t, "acc", None)]["n_over_length"] > 0 for t, _, _ in groups)
    # Some skipped document precedes a fitting one: doc_id is not the position among those scored.
    assert any(ids != list(range(len(ids))) for ids in fitting.values())


@pytest.mark.integration
def test_item_scores_off_changes_nothing(request: pytest.FixtureRequest) -> None:
    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.run import run_eval

    ensure_cached(request, "brown", "austen", "sotu")
    cfg = EvalConfig("tiny-random", suite="short_tiny", tasks=("longred_tiny_nextsent",), limit=6)
    plain = run_eval(cfg, progress=False)
    items = run_eval(cfg, progress=False, item_scores=True)
    assert all(r["kind"] == "eval" for r in plain.records)
    assert plain.records == [r for r in items.records if r["kind"] == "eval"]


@pytest.mark.integration
def test_ruler_item_means_equal_tidy_values_per_length() -> None:
    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.run import run_eval

    tasks = ["longred_ruler_vt", "longred_ruler_fwe"]
    result = run_eval(
        EvalConfig(
            model="tiny-random", suite="ruler", tasks=tasks, lengths=[1024, 2048], samples=2
        ),
        item_scores=True,
        progress=False,
    )
    tidy = {(r["task"], r["length"]): r["value"] for r in result.records if r["kind"] == "eval"}
    groups = _groups(result.records)
    assert set(groups) == {(t, "score", n) for t in tasks for n in (1024, 2048)}
    for (task, _, length), values in groups.items():
        assert len(values) == 2
        assert _mean(values) == pytest.approx(tidy[(task, length)])
    for task in tasks:  # over every length: the task's score without a length
        pooled = groups[(task, "score", 1024)] + groups[(task, "score", 2048)]
        assert _mean(pooled) == pytest.approx(tidy[(task, None)])
    ids = {(r["task"], r["doc_id"]) for r in result.records if r["kind"] == "eval_item"}
    assert len(ids) == 8  # each document once, under its own length
    items = [r for r in result.records if r["kind"] == "eval_item"]
    assert all(isinstance(r["response"], str) and r["target"] for r in items)


@pytest.mark.parametrize(
    ("prediction", "answers", "exact", "f1"),
    [
        ("The Eiffel Tower.", ["Eiffel tower"], 100.0, 100.0),  # case, article, punctuation
        ("in Paris", ["Paris", "Paris, France"], 0.0, 100 * 2 * 0.5 * 1 / 1.5),  # best answer
        ("", [], 100.0, 100.0),  # unanswerable, no answer given
        ("somewhere", [], 0.0, 0.0),  # unanswerable, an answer given
        ("", ["Paris"], 0.0, 0.0),
        ("north south", ["south east"], 0.0, 50.0),
    ],
)
def test_squad_v2_scores_one_document(prediction, answers, exact, f1) -> None:
    got = squad_scores(prediction, answers)
    assert got["exact"] == pytest.approx(exact) and got["f1"] == pytest.approx(f1)


def _squad_agg(values):  # not a mean: lm-eval scores SQuAD v2 as a corpus
    raise AssertionError


def test_squad_v2_documents_get_their_own_f1() -> None:
    """lm-eval logs a SQuAD v2 document's (prediction, reference) pair, not a number; its
    ``eval_item`` value is the document's F1 in percent, and the pairs of other corpus metrics
    are left out."""
    docs = [("Paris", ["Paris"]), ("a dog", ["the cat"]), ("", [])]
    samples = {"squadv2": [
        {"doc_id": i, "filter": "none", "metrics": ["f1", "exact", "best_f1"],
         "resps": [[p]], "target": a,
         **{name: ({"id": str(i), "prediction_text": p, "no_answer_probability": 0.1},
                   {"id": str(i), "answers": {"text": a, "answer_start": [0] * len(a)}})
            for name in ("f1", "exact", "best_f1")}}
        for i, (p, a) in enumerate(docs)
    ]}  # fmt: skip
    task = StandInTask({n: _squad_agg for n in ("f1", "exact", "best_f1")}, "generate_until")
    records = item_records(samples, {"squadv2": task}, suite="paper_short", model="m", rope=None)
    f1 = {r["doc_id"]: r["value"] for r in records if r["metric"] == "f1"}
    assert f1 == {0: 100.0, 1: 0.0, 2: 100.0}
    assert {r["metric"] for r in records} == {"f1", "exact"}
