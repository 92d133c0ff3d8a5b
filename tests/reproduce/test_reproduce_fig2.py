"""``reproduce fig2``: retention against hidden similarity over zero-shot and CPT-trained
extensions; the tiny profile's CPT runs are Table 3's seed-0 runs where those exist."""

from __future__ import annotations

import pytest

from longred_bench.cli import main
from longred_bench.results import read_records


@pytest.mark.integration
def test_reproduce_fig2_smoke(tmp_path, smoke_cache):
    out = tmp_path / "report"
    argv = ["reproduce", "fig2", "--profile", "smoke", "--out", str(out), "--quiet"]
    assert main([*argv, "--jobs", "2"]) == 0
    records = read_records(out / "fig2.jsonl.gz")
    drift = {(r["series"], r["extension"]) for r in records if r["kind"] == "drift_summary"}
    assert drift == {("zero-shot", "abf:theta=1e5"), ("zero-shot", "pi:factor=2"),
                     ("zero-shot", "yarn:factor=2"), ("cpt", "abf:theta=1e5"),
                     ("cpt", "abf:theta=1e6"), ("cpt", "pi:factor=2")}  # fmt: skip
    trained = [r for r in records if r["kind"] == "drift_summary" and r["series"] == "cpt"]
    assert all(r["train"]["steps"] == 2 for r in trained)  # Table 3's smoke CPT
    md = (out / "fig2.md").read_text()
    assert "| after long-only CPT | `pi:factor=2` |" in md
    assert md.count("| (F2) Short-text retention correlates") == 2
    assert (out / "fig2.png").read_bytes()[:4] == b"\x89PNG"


def test_tiny_fig2_trains_twelve_extensions_with_table3s_cpt_config():
    from longred_bench.reproduce.fig2 import FIG2_PROFILES, short_unit
    from longred_bench.reproduce.table3 import TABLE3_PROFILES, _eval_units

    fp, table3 = FIG2_PROFILES["tiny"], TABLE3_PROFILES["tiny"]
    assert len(fp.trained) >= 12 and set(table3.extensions) <= set(fp.trained)
    methods = {ext.split(":")[0] for ext in fp.trained}
    assert methods == {"abf", "pi", "yarn"}
    assert len(FIG2_PROFILES["smol"].zero_shot) >= 12
    # the short evaluation is Table 3's unit, so Table 3's cached evaluations are reused
    table3_short = _eval_units(table3, "some/final", None, "pi:factor=2")[0]
    assert short_unit(fp, "some/final", None) == table3_short
