"""``reproduce table5 --profile smoke``: LongReD-C and its distilled-layer variants trained and
evaluated, each run's layers recorded, the paper's Table 5 beside ours and its claims; the tiny
profiles of Tables 4-6 share LongReD-C's runs with Table 3 and set what they vary."""

from __future__ import annotations

import pytest

from longred_bench.cli import main
from longred_bench.results import read_records


@pytest.mark.integration
def test_reproduce_table5_smoke(tmp_path, smoke_cache):
    out = tmp_path / "report"
    argv = ["reproduce", "table5", "--profile", "smoke", "--out", str(out), "--quiet"]
    assert main(argv) == 0  # in this process (Table 3's test runs these unit kinds in two)
    records = read_records(out / "table5.jsonl.gz")
    layers = {r["row"]: tuple(r["train"]["layers"]) for r in records if r["train"]}
    assert layers["longred-c-all-layers"] == (1, 2, 3, 4)
    assert layers["longred-c-last-layer"] == (4,)
    assert layers["longred-c-uniform"] == (2, 4)
    md = (out / "table5.md").read_text()
    assert "| uniform (6) + last | 82.53 |" in md
    for key in ("T5a", "T5b", "T5c"):
        assert f"| ({key}) Attention-KL selected layers" in md
    assert (out / "table5.png").read_bytes()[:4] == b"\x89PNG"


def test_tiny_ablations_vary_one_setting_of_table3s_longred_c():
    from profile_helpers import grid_of

    from longred_bench.reproduce.grid import TrainedRow, trained_rows

    table3 = grid_of("table3")
    ext = "pi:factor=2"  # where (a), the premise of every ablation claim, holds at tiny
    default = TrainedRow("longred-c", ext, 0).config(table3)
    for name in ("table4", "table5", "table6"):
        grid = grid_of(name)
        assert grid.extensions == (ext,)
        # LongReD-C and CPT (the premises' row) are Table 3's runs: shared, not trained again
        assert all(run in trained_rows(table3) for run in trained_rows(grid)
                   if run.row in ("longred-c", "cpt"))  # fmt: skip
        assert "cpt" in grid.rows
        assert set(grid.seeds.values()) == {3} and set(grid.seeds) == set(grid.rows)
        for row in grid.rows[2:]:
            cfg = TrainedRow(row, ext, 0).config(grid)
            changed = {k for k, v in cfg.to_dict().items() if default.to_dict().get(k) != v}
            assert changed and changed <= {"a1", "a2", "layers", "short_len"}, (name, row)
    short = {r: TrainedRow(r, ext, 0).config(table3).short_len
             for r in grid_of("table6").rows if r != "cpt"}  # fmt: skip
    assert short == {"longred-c": 128, "longred-c-short-eighth": 32,
                     "longred-c-short-quarter": 64, "longred-c-short-full": 256}  # fmt: skip


def test_table5_refuses_a_one_layer_model_naming_the_key():
    import dataclasses

    from longred_bench.errors import UserError
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.ablations import TABLE5

    prof = load_profile("smoke")
    one = dataclasses.replace(prof, model=dataclasses.replace(prof.model, layers=1))
    with pytest.raises(UserError, match=r"model\.layers: table5 needs at least 2 layers"):
        TABLE5.resolve(one)
