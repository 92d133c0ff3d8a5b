"""Choosing PCD's settings (:mod:`longred_bench.pcd.selection`): from dev scores only (a test
score never enters the choice), the best mean dev score, ties to the smaller strength."""

from __future__ import annotations

import pytest

from longred_bench.errors import UserError
from longred_bench.pcd.config import PcdConfig
from longred_bench.pcd.selection import choose, dev_scores


def _item(alpha: float, value: float, part: str = "dev", fraction: float | None = 0.25) -> dict:
    return {"kind": "eval_item", "metric": "score", "part": part, "alpha": alpha,
            "local_fraction": fraction, "value": value}  # fmt: skip


GRID = [PcdConfig(alpha=a, local_fraction=0.25) for a in (0.5, 1.0)]


def test_the_choice_reads_dev_scores_only() -> None:
    records = [_item(0.5, 60.0), _item(0.5, 40.0), _item(1.0, 45.0),
               _item(1.0, 100.0, part="test"), _item(0.0, 30.0, fraction=None)]  # fmt: skip
    assert dev_scores(records) == {(0.5, 0.25): 50.0, (1.0, 0.25): 45.0, (0.0, None): 30.0}
    assert choose(records, GRID).alpha == 0.5  # the test split's 100 would pick 1.0


def test_a_tie_goes_to_the_smaller_strength_in_any_order() -> None:
    records = [_item(1.0, 50.0), _item(0.5, 50.0)]
    assert choose(records, GRID).alpha == 0.5
    assert choose(records, GRID[::-1]).alpha == 0.5
    with pytest.raises(UserError, match="no dev scores"):
        choose([_item(1.0, 50.0, part="test")], GRID)


def test_only_per_item_scores_count() -> None:
    """A dev unit's summary record (``eval``) and an item's other metrics are no item scores."""
    records = [_item(0.5, 40.0), _item(1.0, 50.0),
               {**_item(0.5, 99.0), "kind": "eval"},
               {**_item(0.5, 99.0), "metric": "response_tokens"}]  # fmt: skip
    assert dev_scores(records) == {(0.5, 0.25): 40.0, (1.0, 0.25): 50.0}
    assert choose(records, GRID).alpha == 1.0


def test_a_tie_in_strength_goes_to_the_smaller_fraction() -> None:
    grid = [PcdConfig(alpha=1.0, local_fraction=f) for f in (0.5, 0.125, 0.25)]
    records = [_item(1.0, 50.0, fraction=f) for f in (0.5, 0.125, 0.25)]
    assert choose(records, grid).local_fraction == 0.125
    records.append(_item(1.0, 60.0, fraction=0.5))  # the mean of 0.5 now 55
    assert choose(records, grid).local_fraction == 0.5
