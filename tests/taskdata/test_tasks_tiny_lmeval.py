"""The ``longred_short_tiny`` tasks through lm-eval: their YAMLs load and build the prompts the
builders make (``test_tasks_tiny.py``), and the group runs on a tiny model. Like the builders'
checks on real prose, they need the cached State of the Union addresses (``--run-network``
fetches them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from data_helpers import ensure_cached

from longred_bench.taskdata import tiny_tasks

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"
TASK_NAMES = tuple(f"longred_tiny_{task}" for task in tiny_tasks.TASKS)
CORPORA = tiny_tasks.DEFAULT_CORPORA


@pytest.fixture(scope="module")
def task_manager(request: pytest.FixtureRequest):
    ensure_cached(request, *CORPORA)
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASKS_DIR))


def test_yamls_load_and_build_prompts(task_manager) -> None:
    assert "longred_short_tiny" in task_manager.all_groups
    tasks = task_manager.load(list(TASK_NAMES))["tasks"]
    rows = {t: tiny_tasks.build(t) for t in tiny_tasks.TASKS}

    lastword = tasks["longred_tiny_lastword"]
    doc = lastword.test_docs()[0]
    assert lastword.doc_to_text(doc) == rows["lastword"][0]["context"]
    requests = lastword.construct_requests(doc, lastword.doc_to_text(doc))
    assert [r.arguments[1] for r in requests] == [" " + c for c in rows["lastword"][0]["choices"]]
    assert lastword.doc_to_choice(doc)[lastword.doc_to_target(doc)] == doc["target"]

    nextsent = tasks["longred_tiny_nextsent"]  # multiple inputs: the contexts are the choices
    doc = nextsent.test_docs()[0]
    assert nextsent.multiple_input == 4
    contexts = nextsent.fewshot_context(doc, num_fewshot=0)
    assert contexts == rows["nextsent"][0]["contexts"]
    requests = nextsent.construct_requests(doc, contexts)
    assert [r.arguments for r in requests] == [
        (c, " " + rows["nextsent"][0]["sentence"]) for c in contexts
    ]
    assert nextsent.doc_to_text(doc) == rows["nextsent"][0]["gold"]  # the gold, as WinoGrande

    passkey = tasks["longred_tiny_passkey"]
    doc = passkey.test_docs()[0]
    assert passkey.doc_to_text(doc) == rows["passkey"][0]["prompt"]  # held-out phrasing
    assert "pass key" not in passkey.doc_to_text(doc)
    assert passkey.doc_to_choice(doc)[passkey.doc_to_target(doc)] == doc["key"]
    requests = passkey.construct_requests(doc, passkey.doc_to_text(doc))
    assert [r.arguments[1] for r in requests] == [" " + c for c in doc["choices"]]

    ppl = tasks["longred_tiny_ppl"]
    doc = ppl.test_docs()[0]
    assert ppl.doc_to_target(doc) == rows["ppl"][0]["text"]
    for name in tiny_tasks.TASKS:
        assert len(tasks[f"longred_tiny_{name}"].test_docs()) == tiny_tasks.SIZES[name], name
    for name in ("swap", "replace"):
        pairs = tasks[f"longred_tiny_{name}"]
        doc = pairs.test_docs()[0]
        assert pairs.doc_to_text(doc) == rows[name][0]["context"]
        assert pairs.doc_to_choice(doc)[pairs.doc_to_target(doc)] == rows[name][0]["original"]


@pytest.mark.integration
def test_group_runs_on_tiny_model(task_manager) -> None:
    import lm_eval
    from lm_eval.models.huggingface import HFLM

    from longred_bench.models.loading import load

    loaded = load("tiny-random")
    lm = HFLM(pretrained=loaded.model, tokenizer=loaded.tokenizer, max_length=1024, batch_size=8)
    out = lm_eval.simple_evaluate(
        model=lm, tasks=["longred_short_tiny", "longred_tiny_passkey"], limit=4,
        task_manager=task_manager,
    )  # fmt: skip
    results = out["results"]
    tiny = ("lastword", "nextsent", "swap", "replace", "passkey")
    for name in (f"longred_tiny_{t}" for t in tiny):
        assert 0.0 <= results[name]["acc,none"] <= 1.0, name
    for name in ("longred_tiny_lastword", "longred_tiny_passkey"):
        assert 0.0 <= results[name]["acc_norm,none"] <= 1.0, name
    assert "acc_norm,none" not in results["longred_tiny_nextsent"]  # a context's length: no norm
    ppl = results["longred_tiny_ppl"]
    assert ppl["word_perplexity,none"] > ppl["byte_perplexity,none"] > 1.0
    assert ppl["bits_per_byte,none"] > 0.0
    group = [results[f"longred_tiny_{t}"]["acc,none"] for t in tiny[:4]]  # not the passkey
    assert results["longred_short_tiny"]["acc,none"] == pytest.approx(sum(group) / 4)
    assert out["n-samples"]["longred_tiny_ppl"]["effective"] == 4


def test_the_passkey_loader_takes_the_phrasing_of_the_metadata(
    request: pytest.FixtureRequest,
) -> None:
    """``phrasing`` in the task metadata picks the passkey's strings (``heldout`` without it);
    the other loaders ignore the metadata."""
    import importlib.util

    ensure_cached(request, *CORPORA)
    spec = importlib.util.spec_from_file_location("tiny_utils", TASKS_DIR / "tiny_utils.py")
    tiny_utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tiny_utils)
    for given, used in (("train", "train"), ("standard", "standard"), (None, "heldout")):
        rows = tiny_utils.load_passkey(version=1.0, phrasing=given)["test"]
        assert set(rows["phrasing"]) == {used}
    assert tiny_utils.load_swap(phrasing="train")["test"][0] == tiny_tasks.build("swap")[0]
