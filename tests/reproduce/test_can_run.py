"""What a plan asks before any unit runs (:mod:`longred_bench.reproduce.can_run`): which units
are still to compute under ``--force`` (never a cached training run), and a CUDA unit refused up
front where no GPU is visible (a PSA unit by its own device, training on a GPU profile)."""

from __future__ import annotations

import pytest


def test_force_recomputes_evaluations_but_keeps_a_cached_training_run():
    """``--force`` asks every evaluation again, never a cached training run: a cached run is
    not a unit to compute (so a GPU profile's cached runs ask no GPU under ``--force``)."""
    from types import SimpleNamespace as NS

    from longred_bench.reproduce.can_run import needed

    def step(kind, cached):
        return NS(unit=NS(kind=kind, cached=lambda: {"done": True} if cached else None))

    assert not needed(step("train", True), True) and not needed(step("train", True), False)
    assert needed(step("eval", True), True) and not needed(step("eval", True), False)
    assert needed(step("train", False), False) and needed(step("eval", False), True)


def test_a_psa_unit_on_cuda_is_refused_up_front_without_a_gpu(monkeypatch):
    """A PSA unit states its device under ``psa`` (not at its config's top): one still to
    compute on CUDA is refused before any unit runs where no GPU is visible."""
    from types import SimpleNamespace as NS

    import torch

    from longred_bench.errors import UserError
    from longred_bench.reproduce.can_run import check_can_run

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    psa = NS(unit=NS(kind="psa", cached=lambda: None, config={"psa": {"device": "cuda"}}))
    profile = NS(name="mine", source="", hardware=NS(nproc_per_node=1, device="cpu"),
                 evaluation=NS(device="cpu"))  # fmt: skip
    with pytest.raises(UserError, match="runs on CUDA GPUs and none is visible"):
        check_can_run(profile, [psa])
    on_cpu = NS(unit=NS(kind="psa", cached=lambda: None, config={"psa": {"device": "cpu"}}))
    check_can_run(profile, [on_cpu])


def test_training_on_a_gpu_profile_is_refused_up_front_without_a_gpu(monkeypatch):
    """A training unit to run asks a GPU where the profile trains on several processes, or says
    ``hardware.device: auto`` and evaluates on CUDA (a GPU profile); ``auto`` at a profile that
    evaluates on the CPU trains there, and a cached run asks nothing."""
    from types import SimpleNamespace as NS

    import torch

    from longred_bench.errors import UserError
    from longred_bench.reproduce.can_run import check_can_run

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)

    def profile(device, evaluate, nproc=1):
        return NS(name="mine", source="", evaluation=NS(device=evaluate),
                  hardware=NS(nproc_per_node=nproc, device=device))  # fmt: skip

    def train(cached=None):
        return NS(unit=NS(kind="train", cached=lambda: cached, config={"device": "auto"}))

    for gpu in (profile("auto", "cuda"), profile("cpu", "cpu", nproc=2)):
        with pytest.raises(UserError, match="runs on CUDA GPUs and none is visible"):
            check_can_run(gpu, [train()])
        check_can_run(gpu, [train(cached={"done": True})])
    check_can_run(profile("auto", "cpu"), [train()])


def test_a_run_whose_training_unit_would_stop_at_startup_computes_nothing(
    tmp_path, monkeypatch, capsys
):
    """A step's tokens that do not split into whole rows stopped the run at that training unit,
    after every unit before it (hours on a GPU), in a line naming no unit and no profile; the
    dry run and ``--emit-slurm`` already refused it. Now nothing is fetched or computed."""
    from longred_bench.cli import main

    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    profile = tmp_path / "odd.yaml"
    profile.write_text("extends: smoke\nruns: {overrides: {tokens_per_step: 700}}\n")
    out = tmp_path / "out"
    assert main(["reproduce", "table3", "--profile", str(profile), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: 3 training unit(s) of table3 would stop at startup, so nothing "
                          "is run (e.g. train control original RoPE seed 0: tokens_per_step=700 "
                          "cannot be split into whole rows by the mix")  # fmt: skip
    assert err.endswith(f"change the profile {profile} (training.<recipe> or runs.overrides), "
                        "then run again")  # fmt: skip
    assert not (tmp_path / "cache").exists() and not out.exists()
