"""The checks of a training config that need more than a comparison: the optimizer's betas,
LongRecipe's settings (refused for other recipes), the snapshots' steps (LinearARD's CPT stage
counts), where a trained checkpoint may start a run or be merged, and the warm-up's length."""

from __future__ import annotations

import pytest

from longred_bench.errors import UserError
from longred_bench.training.config import TrainConfig

CPT = {"recipe": "cpt", "rope": "pi:factor=2", "steps": 4}


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({**CPT, "betas": [0.9, 1.0]}, "betas must be two numbers in [0, 1)"),
        ({**CPT, "betas": [0.9]}, "betas must be two numbers in [0, 1)"),
        ({**CPT, "keep_other": 0.5}, "keep_other and replay_steps are for recipe longrecipe"),
        ({**CPT, "replay_steps": 2}, "keep_other and replay_steps are for recipe longrecipe"),
        ({"recipe": "longrecipe", "rope": "pi:factor=2", "keep_other": 0.5},
         "below 1 only with anchors"),
        ({"recipe": "longrecipe", "rope": "pi:factor=2", "anchors": ["measured", "number"]},
         "anchors=[measured] stands alone"),
        ({"recipe": "longrecipe", "rope": "pi:factor=2", "replay_steps": 2},
         "replay_lr > 0 with replay steps"),
        ({**CPT, "snapshot_steps": [2, 2]}, "snapshot_steps must be increasing"),
        ({**CPT, "snapshot_steps": [3, 2]}, "snapshot_steps must be increasing"),
        ({**CPT, "snapshot_steps": [5]}, "optimizer steps in 1..4"),
        ({**CPT, "snapshot_steps": [0]}, "optimizer steps in 1..4"),
        ({**CPT, "warmup_steps": 5}, "warmup_steps (5) exceeds the run's 4 steps"),
        ({**CPT, "init": "/some/final"}, "is for recipe linearard"),
        ({"recipe": "linearard", "init": "/some/final"}, "is for recipe linearard with rope=SPEC"),
        ({**CPT, "merge_with": "/some/final"}, "merge_with is for recipe merge, not cpt"),
        ({"recipe": "merge"}, "recipe merge needs merge_with=DIR"),
        ({"recipe": "merge", "merge_with": "/x", "rope": "pi:factor=2"},
         "recipe merge takes the RoPE of merge_with"),
    ],
)  # fmt: skip
def test_a_value_that_cannot_train_is_refused(data, said) -> None:
    with pytest.raises(UserError) as caught:
        TrainConfig.from_dict(data)
    assert said in str(caught.value)


def test_the_bounds_themselves_are_values() -> None:
    """The last step at ``lr`` may be a snapshot and the warm-up's end; LinearARD's CPT stage
    runs at ``lr`` too, so its steps count."""
    cfg = TrainConfig.from_dict({**CPT, "snapshot_steps": [1, 4], "warmup_steps": 4})
    assert cfg.snapshot_steps == (1, 4)
    ard = {"recipe": "linearard", "rope": "pi:factor=2", "steps": 4, "cpt_steps": 2}
    assert TrainConfig.from_dict({**ard, "snapshot_steps": [6], "warmup_steps": 6}).cpt_steps == 2
    assert TrainConfig.from_dict({**CPT, "betas": [0.0, 0.999]}).betas == (0.0, 0.999)
    assert TrainConfig.from_dict({"recipe": "linearard", "rope": "pi:factor=2",
                                  "init": "/some/final"}).init == "/some/final"  # fmt: skip
