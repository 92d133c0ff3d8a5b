"""``--resume`` of a finished run leaves it as it is (it rewrote ``final/`` and ``run.json`` from
a call that trained nothing), and a run of another config in ``--out`` is refused before a
recipe's preparation (LongRecipe measured its anchors into that folder first)."""

from __future__ import annotations

import pytest
from train_helpers import smoke

from longred_bench.errors import UserError
from longred_bench.jobs.train import run_training


@pytest.mark.integration
def test_resuming_a_finished_run_trains_and_writes_nothing(tmp_path, capsys) -> None:
    out = tmp_path / "run"
    cfg = smoke("cpt", steps=2)
    final = run_training(cfg, out, progress=False)
    kept = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert run_training(cfg, out, resume=True) == final
    assert f"{out} holds this run finished" in capsys.readouterr().out
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == kept
    with pytest.raises(UserError, match=r"holds this run, finished .*: nothing to train"):
        run_training(cfg, out, progress=False)  # not "pass --resume", which trains nothing
    # another recipe's preparation never starts in a folder holding another config's run
    other = smoke("longrecipe", anchors=["measured"], impact_steps=1, steps=2)
    with pytest.raises(UserError, match="holds a run of another config"):
        run_training(other, out, progress=False)
    assert not (out / "impact").exists()
