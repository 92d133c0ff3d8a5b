"""The ``longred_ruler_*`` lm-eval tasks (``tasks/ruler_utils.py`` and the RULER YAMLs).

Unit tests of the loader's metadata parsing and scoring; lm-eval-level tests that load the
``longred_ruler`` group for the ``tiny-random`` byte tokenizer (samples from
:mod:`longred_bench.taskdata.ruler`, read from or written to the cache) and score it with two small
``LM`` subclasses that answer from the document (an oracle, and partial or empty answers), so
the scoring and aggregation path is shown to give 100, 0 and the means in between; and an
integration run of :func:`longred_bench.evaluation.run.run_eval` with the real tiny model.

The group needs the ``brown`` and ``benchmarks`` cache entries (QA questions come from the
latter): they are fetched with ``--run-network``, and those tests are skipped without them.
"""

from __future__ import annotations

import importlib.util
import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import lm_eval
import pytest
from data_helpers import ensure_cached
from lm_eval.api.model import LM

from longred_bench.errors import UserError
from longred_bench.taskdata.ruler import TASK_METRIC, TASKS, load_or_generate

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"
LENGTHS = [1024, 2048]  # the byte tokenizer's samples need >= 1024 tokens for some tasks
METADATA = {"tokenizer": "tiny-random", "lengths": LENGTHS, "ruler_samples": 2}
BUDGET = {"vt": 30, "cwe": 120, "fwe": 50, "qa_1": 32, "qa_2": 32}  # niah_*: 128
NAMES = [f"longred_ruler_{task}" for task in TASKS]


def _load_ruler_utils() -> Any:
    spec = importlib.util.spec_from_file_location("_ruler_utils", TASKS_DIR / "ruler_utils.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ru = _load_ruler_utils()


# --- parse_lengths, process_results, mean_present, metadata (unit) ---------------------------


def test_parse_lengths_list_string_and_default() -> None:
    assert ru.parse_lengths([2048, 1024, 2048]) == [1024, 2048]
    assert ru.parse_lengths("4096,256") == [256, 4096]
    assert ru.parse_lengths(" 1024 , 131072") == [1024, 131072]
    assert ru.parse_lengths(["512"]) == [512]
    assert ru.parse_lengths(None) == [4096]


@pytest.mark.parametrize(
    ("value", "match"),
    [
        ([1000], r"\[1000\] not supported"),
        ("1024,3000", r"\[3000\] not supported"),
        ([128], "not supported"),  # below the smallest metric
        ([262144], "not supported"),  # above the largest metric
        ([], "not supported"),
        ("abc", "must be integers"),
        ("1024;2048", "must be integers"),
        ("1024.0", "must be integers"),
        ([1024.5], "must be integers"),
        ([None], "must be integers"),
    ],
)
def test_parse_lengths_errors_are_one_line(value: Any, match: str) -> None:
    with pytest.raises(UserError, match=match) as info:
        ru.parse_lengths(value)
    assert "\n" not in str(info.value)


MULTIVALUE = ["1234567", "7654321", "1111111", "2222222"]


def _doc(task: str, outputs: list[str], length: int = 2048) -> dict[str, Any]:
    return {"task": task, "length": length, "lengths": [1024, 2048, 4096], "outputs": outputs}


def test_process_results_reports_score_under_its_length() -> None:
    doc = _doc("niah_multivalue", MULTIVALUE)
    got = ru.process_results(doc, [" " + ", ".join(MULTIVALUE)])
    assert got == {"score": 100.0, "1024": None, "2048": 100.0, "4096": None}
    got = ru.process_results({**doc, "length": 1024}, ["7654321"])
    assert got == {"score": 25.0, "1024": 25.0, "2048": None, "4096": None}


def test_process_results_all_versus_any() -> None:
    partial = "They are 2222222 and 1234567."
    retrieval = ru.process_results(_doc("niah_multivalue", MULTIVALUE), [partial])
    assert retrieval["score"] == retrieval["2048"] == 50.0  # "all": the fraction found
    qa_refs = ["Saint Bernadette Soubirous", "Bernadette"]
    qa = ru.process_results(_doc("qa_1", qa_refs), ["It was bernadette."])
    assert qa["score"] == qa["2048"] == 100.0  # "any": one reference is enough
    vt = ru.process_results(_doc("vt", ["AAAAA", "BBBBB"]), ["aaaaa"])
    assert vt["score"] == 50.0  # case-insensitive


@pytest.mark.parametrize("task", ["niah_single_1", "niah_multivalue", "cwe", "qa_2"])
def test_process_results_no_answer_is_zero(task: str) -> None:
    got = ru.process_results(_doc(task, ["alpha", "beta"]), [""])
    assert got == {"score": 0.0, "1024": None, "2048": 0.0, "4096": None}


def test_mean_present() -> None:
    assert ru.mean_present([None, 100.0, None, 50.0]) == 75.0
    assert ru.mean_present([0.0, None, 100.0]) == 50.0  # a 0 counts, only None is skipped
    assert ru.mean_present([0.0, None]) == 0.0
    # Every document of that length skipped as too long (fit check): no score, not a crash.
    assert math.isnan(ru.mean_present([None, None]))


def test_missing_tokenizer_is_a_user_error() -> None:
    with pytest.raises(UserError, match="--metadata") as info:
        ru.load_vt(lengths=[1024], ruler_samples=2)
    assert "\n" not in str(info.value)
    with pytest.raises(UserError, match="--metadata"):
        ru.build("niah_single_1", {"tokenizer": "", "lengths": [1024]})


def test_the_tokenizer_defaults_to_the_models_pretrained_spec() -> None:
    """Without ``tokenizer`` the ``hf`` model's ``pretrained`` argument names the tokenizer; a
    given ``tokenizer`` wins over it."""
    from longred_bench.models.loading import load_tokenizer

    byte = load_tokenizer("tiny-random")
    got = ru.metadata_tokenizer({"pretrained": "tiny-random"})
    assert type(got) is type(byte) and got.get_vocab() == byte.get_vocab()
    with pytest.raises(UserError, match="no-such-model"):
        ru.metadata_tokenizer({"tokenizer": "no-such-model", "pretrained": "tiny-random"})


@pytest.mark.parametrize(
    ("key", "value"), [("ruler_samples", 0), ("ruler_samples", -3), ("ruler_samples", "x")]
)
def test_bad_sample_count_is_a_user_error(key: str, value: Any) -> None:
    with pytest.raises(UserError, match=f"metadata {key}=") as info:
        ru.load_vt(tokenizer="tiny-random", lengths=[1024], **{key: value})
    assert "\n" not in str(info.value)


def test_negative_seed_is_a_user_error() -> None:
    with pytest.raises(UserError, match="metadata seed=-1"):
        ru.load_vt(tokenizer="tiny-random", lengths=[1024], ruler_samples=1, seed=-1)


def test_limit_with_ruler_suite_is_a_user_error() -> None:
    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.run import run_eval

    with pytest.raises(UserError, match="--limit is not for the ruler suite") as info:
        run_eval(
            EvalConfig(model="tiny-random", suite="ruler", limit=2, lengths=LENGTHS), progress=False
        )
    assert "\n" not in str(info.value)


# --- the longred_ruler group in lm-eval ------------------------------------------------------


@pytest.fixture(scope="module")
def manager(request: pytest.FixtureRequest) -> Any:
    """A TaskManager with the RULER metadata (tiny-random, 1024 and 2048, 2 per length)."""
    ensure_cached(request, "brown", "benchmarks")
    from longred_bench.evaluation.harness import task_manager

    return task_manager(dict(METADATA))


@pytest.fixture(scope="module")
def group(manager: Any) -> dict[str, Any]:
    return manager.load(["longred_ruler"])


@pytest.fixture(scope="module")
def samples() -> dict[tuple[str, int], list[Any]]:
    """The samples :mod:`longred_bench.taskdata.ruler` gives for the same settings, by (task,
    length)."""
    from longred_bench.models.zoo import byte_tokenizer

    tok = byte_tokenizer()
    return {
        (task, length): load_or_generate(task, tok, length, 2, 0)
        for task in TASKS
        for length in LENGTHS
    }


def test_group_has_rulers_13_tasks(group: dict[str, Any]) -> None:
    assert group["group_map"] == {"longred_ruler": NAMES}
    assert sorted(group["tasks"]) == sorted(NAMES)


@pytest.mark.parametrize("task", TASKS)
def test_task_docs_prompts_targets_and_budget(
    group: dict[str, Any], samples: dict[tuple[str, int], list[Any]], task: str
) -> None:
    lm_task = group["tasks"][f"longred_ruler_{task}"]
    docs = list(lm_task.eval_docs)
    assert len(docs) == 4
    assert Counter(doc["length"] for doc in docs) == {1024: 2, 2048: 2}
    for doc in docs:
        sample = samples[(task, doc["length"])][doc["index"]]
        assert doc["task"] == task and doc["lengths"] == LENGTHS
        assert doc["token_count"] == sample.token_count <= doc["length"]
        assert lm_task.doc_to_text(doc) == sample.input
        assert lm_task.doc_to_target(doc) == list(sample.outputs)
    gen = lm_task.config.generation_kwargs
    assert gen["max_gen_toks"] == BUDGET.get(task, 128)
    assert gen["until"] == [] and gen["do_sample"] is False
    # The request lm-eval builds carries the sample's input unchanged, and the budget.
    lm_task.set_config(key="num_fewshot", value=0)
    lm_task.build_all_requests(rank=0, world_size=1)
    for instance in lm_task.instances:
        assert instance.request_type == "generate_until"
        sample = samples[(task, instance.doc["length"])][instance.doc["index"]]
        assert instance.arguments[0] == sample.input
        assert instance.arguments[1]["max_gen_toks"] == BUDGET.get(task, 128)


# --- scoring through lm-eval with models that answer from the document ----------------------


def _full(doc: dict[str, Any]) -> str:
    return " " + ", ".join(doc["outputs"])


class DocAnswerLM(LM):
    """An lm-eval model whose ``generate_until`` returns ``answer(doc)`` for each request."""

    def __init__(self, answer: Callable[[dict[str, Any]], str]) -> None:
        super().__init__()
        self.answer = answer

    def loglikelihood(self, requests: list[Any]) -> list[Any]:
        raise NotImplementedError("RULER tasks only generate")

    def loglikelihood_rolling(self, requests: list[Any]) -> list[Any]:
        raise NotImplementedError("RULER tasks only generate")

    def generate_until(self, requests: list[Any]) -> list[str]:
        return [self.answer(request.doc) for request in requests]


def _evaluate(manager: Any, answer: Callable[[dict[str, Any]], str], **kwargs: Any) -> dict:
    tasks = kwargs.pop("tasks", ["longred_ruler"])
    out = lm_eval.simple_evaluate(
        model=DocAnswerLM(answer),
        tasks=tasks,
        task_manager=manager,
        verbosity="ERROR",
        **kwargs,
    )
    return out["results"]


def _metrics(result: dict[str, Any]) -> dict[str, float]:
    return {
        key.split(",")[0]: value
        for key, value in result.items()
        if key.endswith(",none") and "_stderr" not in key
    }


@pytest.mark.parametrize(("answer", "expected"), [(_full, 100.0), (lambda doc: "", 0.0)])
def test_oracle_scores_100_and_silence_0(manager: Any, answer: Callable, expected: float) -> None:
    results = _evaluate(manager, answer)
    for name in [*NAMES, "longred_ruler"]:
        assert _metrics(results[name]) == {"score": expected, "1024": expected, "2048": expected}


def test_group_score_is_the_mean_over_tasks(manager: Any, group: dict[str, Any]) -> None:
    def answer(doc: dict[str, Any]) -> str:
        if doc["length"] == 1024:  # the first reference only
            return " " + doc["outputs"][0]
        return _full(doc) if doc["index"] == 0 else ""  # 2048: one of the two documents

    results = _evaluate(manager, answer)
    expected: dict[str, dict[str, float]] = {}
    for task in TASKS:
        first = [
            100.0 if TASK_METRIC[task] == "any" else 100.0 / len(doc["outputs"])
            for doc in group["tasks"][f"longred_ruler_{task}"].eval_docs
            if doc["length"] == 1024
        ]
        short = sum(first) / len(first)
        expected[task] = {"score": (sum(first) + 100.0) / 4, "1024": short, "2048": 50.0}
    for task in TASKS:
        assert _metrics(results[f"longred_ruler_{task}"]) == pytest.approx(expected[task])
    # Tasks weigh the same in the group: `score` and each length are means over the 13 tasks.
    group_metrics = _metrics(results["longred_ruler"])
    assert set(group_metrics) == {"score", "1024", "2048"}  # exactly the requested lengths
    for key in ("score", "1024", "2048"):
        assert group_metrics[key] == pytest.approx(sum(e[key] for e in expected.values()) / 13)
    # "all" versus "any" shows: QA gets full credit for one reference, vt (5 values) a fifth.
    assert expected["qa_1"]["1024"] == 100.0 and expected["vt"]["1024"] == 20.0


def test_length_with_every_document_skipped_is_nan(manager: Any, group: dict[str, Any]) -> None:
    name = "longred_ruler_vt"
    docs = list(group["tasks"][name].eval_docs)
    short = [i for i, doc in enumerate(docs) if doc["length"] == 1024]
    results = _evaluate(manager, _full, tasks=[name], samples={name: short})
    got = _metrics(results[name])
    assert got["score"] == got["1024"] == 100.0
    assert math.isnan(got["2048"])


# --- run_eval (integration) ------------------------------------------------------------------


@pytest.mark.integration
def test_run_eval_ruler_records_per_task_and_length() -> None:
    from longred_bench.evaluation.config import EvalConfig
    from longred_bench.evaluation.run import run_eval

    tasks = ["longred_ruler_vt", "longred_ruler_fwe"]
    result = run_eval(
        EvalConfig(model="tiny-random", suite="ruler", tasks=tasks, lengths=LENGTHS, samples=2),
        progress=False,
    )
    by_key = {(r["task"], r["length"]): r for r in result.records}
    assert set(by_key) == {(t, n) for t in tasks for n in (None, *LENGTHS)}
    assert len(result.records) == len(by_key)  # one record per (task, length)
    for task in tasks:
        per_length = [by_key[(task, n)]["value"] for n in LENGTHS]
        assert by_key[(task, None)]["value"] == pytest.approx(sum(per_length) / len(per_length))
    for record in result.records:
        assert record["metric"] == "score" and record["suite"] == "ruler"
        assert 0.0 <= record["value"] <= 100.0
        # 2 documents at each length, 4 over the task's two lengths
        n = 4 if record["length"] is None else 2
        assert (record["n_samples"], record["n_over_length"]) == (n, 0)
        # The window is the longest length plus the largest generation budget (fwe: 50).
        assert record["max_length"] == 2048 + 50
    assert [(f.task, f.fitting, f.over_length) for f in result.fits] == [
        (t, [0, 1, 2, 3], 0) for t in tasks
    ]


def test_a_phrasing_family_applies_to_the_tasks_that_take_one(monkeypatch) -> None:
    """``--metadata phrasing=heldout`` phrases the NIAH tasks and vt; cwe, fwe and the QA tasks
    have RULER's phrasing only and are built in it (not refused: the group runs every task)."""
    from types import SimpleNamespace

    asked: dict[str, str] = {}

    def samples(task, tokenizer, length, n, seed, *, corpus, phrasing):
        asked[task] = phrasing
        return [SimpleNamespace(index=0, input="x", outputs=["y"], token_count=1)]

    monkeypatch.setattr(ru, "load_or_generate", samples)
    monkeypatch.setattr(ru, "metadata_tokenizer", lambda metadata: None)
    for task in ("niah_single_1", "vt", "cwe", "fwe", "qa_1"):
        rows = ru.build(task, {"tokenizer": "t", "lengths": [1024], "phrasing": "heldout"})
        assert rows["test"][0]["phrasing"] == asked[task]
    assert asked == {"niah_single_1": "heldout", "vt": "heldout", "cwe": "standard",
                     "fwe": "standard", "qa_1": "standard"}  # fmt: skip
