"""Table 1's after-CPT columns and claim (c), from synthetic drift records made here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from report_helpers import PROV

from longred_bench.reports.table1 import build_table1

EXTS = {
    "abf:theta=4e4": {"rope_type": "default", "rope_theta": 4e4},
    "pi:factor=4": {"rope_type": "linear", "rope_theta": 1e4, "factor": 4.0},
}


def drift_records(
    extension: str, hidden: float, kl: float, *, stage: str | None = None, seed: int | None = None
) -> list[dict[str, Any]]:
    """Two layers and a summary of one model's drift (``stage=None``: no stage key, as before)."""
    common: dict[str, Any] = {
        "original": "tiny-base",
        "extension": extension,
        "texts": "brown",
        "seq_len": 256,
        "num_texts": 4,
        "num_tokens": 1024,
    }
    if stage is not None:
        common["stage"] = stage
    if stage == "after":
        common["trained_row"] = "cpt"
    if seed is not None:
        common["seed"] = seed
    out = [
        {"kind": "drift_layer", **common, "layer": i, "hidden_cosine": hidden, "attention_kl": kl}
        for i in (1, 2)
    ]
    out.append(
        {
            "kind": "drift_summary",
            **common,
            "rope_parameters": EXTS[extension],
            "max_position_embeddings": 1024,
            "mean_hidden_cosine": hidden,
            "last_hidden_cosine": hidden,
            "mean_attention_kl": kl,
            "top_m": 1,
            "selected_layers": [2],
        }
    )
    return [{**r, "provenance": PROV} for r in out]


def _row(md: str, extension: str) -> list[str]:
    line = next(
        x for x in md.splitlines() if x.startswith(f"| this suite | tiny-base | `{extension}`")
    )
    return [c.strip() for c in line.strip("|").split("|")]


def test_after_values_fill_their_own_extension(tmp_path: Path) -> None:
    records = drift_records("abf:theta=4e4", 0.90, 0.20)
    records += drift_records("pi:factor=4", 0.80, 0.50, stage="before")
    records += drift_records("pi:factor=4", 0.95, 0.10, stage="after", seed=1)
    records += drift_records("pi:factor=4", 0.93, 0.12, stage="after", seed=0)
    md_path, png = build_table1(records, tmp_path, profile="tiny", command="c")
    md = md_path.read_text()
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert "drift before and after continued pre-training (profile `tiny`)" in md
    pi = _row(md, "pi:factor=4")
    # source, model, extension, RoPE, hidden before, hidden after, KL before, KL after, layers
    assert pi[4:8] == ["0.80000", "0.93000", "0.5", "0.12"]  # seed 0's after record
    abf = _row(md, "abf:theta=4e4")
    assert abf[5] == abf[7] == "not measured in this run"
    assert md.count("| this suite |") == 2  # after records are not rows of their own
    # no control row measured: (c) cannot separate the data's drift from the RoPE's
    assert "| (c) Drift falls after CPT" in md and "| `pi:factor=4` | **not comparable** |" in md
    assert "no `control` row" in md
    assert "After CPT: not measured yet for `abf:theta=4e4`." in md


def test_missing_after_cites_the_reference_profile(tmp_path: Path) -> None:
    records = drift_records("abf:theta=4e4", 0.90, 0.20)
    md = build_table1(records, tmp_path, profile="smol", command="c")[0].read_text()
    # the other profile measures its own model, not this one's (a user's profile read as if
    # its model's after-CPT drift were in reports/tiny/)
    where = "profile `tiny` measures it, on its own model: reports/tiny/table1.md"
    assert _row(md, "abf:theta=4e4")[5] == f"not measured here ({where})"
    assert f"After CPT: not measured yet for every extension at this profile; {where}." in md
    assert "Not checked at this profile" in md
    md = build_table1(records, tmp_path, profile="smol", command="c", after_profile="paper")[0]
    assert "profile `paper` measures it, on its own model: reports/paper/table1.md" in (
        md.read_text()
    )
