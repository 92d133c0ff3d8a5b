"""``benchmarks/bench_train.py``: the interleaved rounds of ``--repeats`` combined into one row
per recipe (unit)."""

from __future__ import annotations

from script_loader import load_script

bench = load_script("bench_train")


def _row(recipe: str, seconds: float) -> dict:
    return {"recipe": recipe, "seconds_per_step": seconds, "tokens_per_second": 8192 / seconds}


def test_rounds_give_medians_and_the_range_of_per_round_ratios():
    rounds = [
        [_row("cpt", 1.0), _row("linearard", 1.5)],
        [_row("cpt", 1.2), _row("linearard", 1.5)],  # a slow CPT round: ratio 1.25
        [_row("cpt", 1.0), _row("linearard", 1.7)],
    ]
    cpt, ard = bench.combine_rounds(rounds)
    assert cpt["seconds_per_step"] == 1.0 and cpt["cost_vs_first"] == 1.0
    assert ard["seconds_per_step"] == 1.5
    assert ard["cost_vs_first"] == 1.5  # the ratio of the medians, not the median ratio
    assert ard["cost_range"] == "1.25-1.70"
    assert cpt["cost_range"] == "1.00-1.00"


def test_one_round_has_no_range():
    (only,) = bench.combine_rounds([[_row("cpt", 2.0)]])
    assert only["cost_vs_first"] == 1.0 and only["cost_range"] == ""
    assert only["tokens_per_second"] == 4096.0


def test_scripts_that_load_tiny_base_by_name_register_it(tmp_path):
    """In a fresh process (no other test has imported ``longred_bench.jobs``), importing a script
    whose runs load ``tiny-base`` by name makes it a zoo name, as the command line does. The
    process starts outside the checkout, as ``python benchmarks/X.py`` puts the script's folder
    first, not the checkout root (whose ``kernels/`` transformers 5.25 would take for its own)."""
    import subprocess
    import sys

    from script_loader import BENCHMARKS

    code = (
        "import sys; sys.path.insert(0, {d!r}); import runpy; "
        "runpy.run_path({f!r}, run_name='bench'); "
        "from longred_bench.models.zoo import ZOO; print('tiny-base' in ZOO)"
    )
    scripts = ("bench_train", "bench_drift_cost", "bench_eval", "bench_pcd", "pcd_long",
               "probe_heldout_parts", "probe_lmeval_niah")  # fmt: skip
    for name in scripts:
        script = BENCHMARKS / f"{name}.py"
        out = subprocess.run(
            [sys.executable, "-c", code.format(d=str(BENCHMARKS), f=str(script))],
            capture_output=True, text=True, check=True, cwd=tmp_path,
        )  # fmt: skip
        assert out.stdout.split()[-1] == "True", name
