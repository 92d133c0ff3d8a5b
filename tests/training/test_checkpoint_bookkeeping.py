"""How often a run keeps checkpoints, and how many, changes nothing it trains: a run
checkpointed at every step ends with the weights of one never checkpointed, and both are one run
in the cache (``TrainConfig.trained_dict`` and the run key leave them out)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file
from train_helpers import smoke

from longred_bench.jobs.train import run_training as train
from longred_bench.jobs.units import train_key


def test_checkpoint_settings_are_not_part_of_a_run_key() -> None:
    every = smoke("cpt", checkpoint_every=1, keep_checkpoints=5)
    never = smoke("cpt", checkpoint_every=1000, keep_checkpoints=1)
    assert every.trained_dict() == never.trained_dict()
    assert train_key(every) == train_key(never)
    assert train_key(every) != train_key(smoke("cpt", checkpoint_every=1, steps=4))


@pytest.mark.integration
@pytest.mark.parametrize(
    ("recipe", "extra"),
    [("cpt", {}), ("longred", {}), ("linearard", {}), ("longrecipe", {"replay_steps": 2})],
)
def test_checkpointing_at_every_step_trains_the_same_weights(recipe, extra, tmp_path: Path):
    every = train(smoke(recipe, steps=3, checkpoint_every=1, **extra), tmp_path / "every",
                  progress=False)  # fmt: skip
    never = train(smoke(recipe, steps=3, checkpoint_every=1000, **extra), tmp_path / "never",
                  progress=False)  # fmt: skip
    kept = sorted(p.name for p in (tmp_path / "every" / "checkpoints").glob("step-*"))
    steps = [int(name.removeprefix("step-")) for name in kept]  # LongRecipe's replay: 5
    assert len(steps) == 2 and steps[1] - steps[0] == 1  # written at every step, 2 kept
    a = load_file(str(every / "model.safetensors"))
    b = load_file(str(never / "model.safetensors"))
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
