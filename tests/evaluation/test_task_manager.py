"""``harness.task_manager``: this repository's registry alone when it holds every requested name,
lm-eval's own tasks as well otherwise."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from data_helpers import ensure_cached

from longred_bench.evaluation.config import SUITES
from longred_bench.evaluation.harness import _self_contained, task_manager


@pytest.fixture(scope="module")
def local():
    return task_manager(None, ["longred_short_tiny"])


def test_every_suite_is_served_by_the_repository_registry_alone(local, request) -> None:
    ensure_cached(request, "brown", "austen", "sotu")  # loading a tiny task reads their test splits
    # lm-eval's own tasks are not indexed: the manager came from tasks/ alone ...
    assert "hellaswag" not in local.all_tasks
    assert "longred_tiny_lastword" in local.all_tasks
    # ... and every offline suite's names, groups with all their members, resolve in it;
    # paper_short is lm-eval's own tasks, none of them in tasks/.
    for suite, names in SUITES.items():
        if suite == "paper_short":
            assert not any(_self_contained(local, n) for n in names)
            continue
        assert all(_self_contained(local, n) for n in names), suite
    loaded = local.load(["longred_tiny_lastword"])
    assert "longred_tiny_lastword" in loaded["tasks"]


def _fake(index: dict[str, dict | None], groups: set[str], tags: set[str] = frozenset()):
    """A manager with ``index`` (name -> parsed YAML), ``groups`` and ``tags``, as lm-eval's
    index has."""
    entries = {name: SimpleNamespace(cfg=cfg) for name, cfg in index.items()}
    return SimpleNamespace(task_index=entries, all_groups=sorted(groups), all_tags=sorted(tags))


def test_a_group_is_self_contained_only_when_all_its_members_are() -> None:
    manager = _fake(
        {
            "g_ok": {"group": "g_ok", "task": ["a", "g_inner"]},
            "g_inner": {"group": "g_inner", "task": "b"},
            "g_out": {"group": "g_out", "task": ["a", "hellaswag"]},
            "g_inline": {"group": "g_inline", "task": [{"task": "x", "dataset_path": "y"}]},
            "g_odd": None,
            "a": {"task": "a"},
            "b": {"task": "b"},
            "t": None,
        },
        groups={"g_ok", "g_inner", "g_out", "g_inline", "g_odd"},
        tags={"t"},
    )
    assert _self_contained(manager, "a")
    assert _self_contained(manager, "g_ok")
    assert not _self_contained(manager, "hellaswag")
    assert not _self_contained(manager, "g_out")  # a member only lm-eval's own folder has
    assert not _self_contained(manager, "g_inline")  # an inline task: not read, so not trusted
    assert not _self_contained(manager, "g_odd")  # no parsed YAML to read members from
    assert not _self_contained(manager, "t")  # a tag: lm-eval's own tasks may carry it too


def test_a_name_outside_the_registry_gets_lm_evals_tasks_too(monkeypatch) -> None:
    import lm_eval.tasks

    built = []

    class Recording:
        def __init__(self, include_path=None, include_defaults=True, metadata=None):
            built.append(include_defaults)
            self.task_index, self.all_groups = {}, []

    monkeypatch.setattr(lm_eval.tasks, "TaskManager", Recording)
    task_manager(None, ["hellaswag"])
    assert built == [False, True]  # the local index is tried first, then both
    built.clear()
    task_manager(None)
    assert built == [True]
