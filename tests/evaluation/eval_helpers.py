"""Stand-ins shared by the evaluation tests."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


class StandInTask:
    """An lm-eval task as :func:`longred_bench.evaluation.items.item_records` reads it: its
    metrics' aggregations and its output type."""

    def __init__(self, aggregations: dict[str, Any], output_type: str = "loglikelihood") -> None:
        self._aggregations = aggregations
        self.OUTPUT_TYPE = output_type

    def aggregation(self) -> dict[str, Any]:
        return self._aggregations


class HarnessTask:
    """The config surface of an lm-eval task that :mod:`longred_bench.evaluation.harness` reads
    and sets."""

    def __init__(self, **config: Any) -> None:
        self.config = {"output_type": "loglikelihood", **config}
        self.seed: int | None = None
        self.eval_docs: list[dict[str, Any]] = []

    def get_config(self, key: str) -> Any:
        return self.config.get(key)

    def set_config(self, key: str, value: Any, update: bool = False) -> None:
        if update and isinstance(self.config.get(key), dict):
            self.config[key] = {**self.config[key], **value}
        else:
            self.config[key] = value

    def set_fewshot_seed(self, seed: int) -> None:
        self.seed = seed


def loading_manager(tasks: dict[str, Any], group_map: dict[str, list[str]] | None = None) -> Any:
    """A task manager that knows ``tasks`` and the groups of ``group_map`` and loads them all."""
    group_map = group_map or {}
    return SimpleNamespace(
        all_tasks=[*tasks, *group_map],
        load=lambda names: {"tasks": tasks, "groups": {g: g for g in group_map},
                            "group_map": group_map},
    )  # fmt: skip


def fit(task: str, fitting: list[int], over: int = 0) -> Any:
    """The fit report of ``task``: ``fitting`` documents, ``over`` skipped."""
    from longred_bench.evaluation.fit_check import FitReport

    return FitReport(task=task, fitting=fitting, over_length=over, longest=0, shortest=1)
