"""Stand-ins shared by the evaluation tests."""

from __future__ import annotations

from typing import Any


class StandInTask:
    """An lm-eval task as :func:`longred_bench.evaluation.items.item_records` reads it: its
    metrics' aggregations and its output type."""

    def __init__(self, aggregations: dict[str, Any], output_type: str = "loglikelihood") -> None:
        self._aggregations = aggregations
        self.OUTPUT_TYPE = output_type

    def aggregation(self) -> dict[str, Any]:
        return self._aggregations
