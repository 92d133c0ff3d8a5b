"""A profile's task lists, checked before anything runs or is planned, in one line naming the file
and key: a ``longred_`` task or group the suite's registry does not define (a typo reached the
evaluation unit, after a dry run, the job scripts and any training had passed), a RULER task of
another family than the suite's, a bare RULER name (PCD's and PSA's lists) RULER lacks, a PSA
task with no single gold answer (it ran after the table's other units), and a long-context task
among a short suite's tasks."""

from __future__ import annotations

from typing import Any

from longred_bench.errors import UserError
from longred_bench.profiles.schema import Evaluation, Profile


def check_task_lists(prof: Profile, where: str, tables_ev: list[tuple[str, Evaluation]]) -> None:
    """Check the profile's task lists (``tables_ev``: each table's merged evaluation, by key)."""
    from longred_bench.evaluation.task_names import check_own_task, check_short_task
    from longred_bench.jobs.configs import check_psa_task
    from longred_bench.taskdata.ruler.registry import check_task

    named: list[tuple[str, Any]] = [("evaluation", prof.evaluation), *tables_ev]
    lists = [(f"{key}.{suite}.tasks", getattr(ev, suite).tasks)
             for key, ev in named for suite in ("short", "ruler")]  # fmt: skip
    bare = []
    for table, section in prof.tables.items():
        section = section if isinstance(section, dict) else {}
        lists.append((f"tables.{table}.short_tasks", section.get("short_tasks")))
        bare += [(f"tables.{table}.{key}", section.get(key))
                 for key in ("ruler_tasks", "psa_tasks")]  # fmt: skip
    for key, tasks in lists:
        for task in _names(tasks):
            check_own_task(task, f"{where}: {key}")
            if key.endswith(("short.tasks", "short_tasks")):
                check_short_task(task, f"{where}: {key}: {task}")
    for key, tasks in bare:
        for task in _names(tasks):
            if key.endswith("psa_tasks"):  # psa's own rule: a retrieval task (it ran after the
                check_psa_task(task, f"{where}: {key}")  # table's other units)
                continue
            try:
                check_task(task)
            except UserError as exc:
                raise UserError(f"{where}: {key}: {exc}") from None


def _names(tasks: Any) -> list[str]:
    """The string entries of a task list (None: the suite's own, nothing to check)."""
    return [t for t in tasks or () if isinstance(t, str)] if isinstance(tasks, list | tuple) else []
