"""Table 1 with several seeds: the control row's cells are those of the lowest control seed
(whatever order the records come in), and the sentence on seeds appears as soon as either the
``cpt`` or the ``control`` row has more than one seed, counting the extension with the most
``cpt`` seeds, whose every seed claim (c) reads. Also: the cosines take the decimals that tell
apart every row shown, after CPT and the control included, and a selection rule whose M equals
the model's layer count says it takes them all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from report_helpers import PROV

from longred_bench.reports.table1 import CONTROL_LABEL, build_table1

ROPE = {
    "abf:theta=4e4": {"rope_type": "default", "rope_theta": 4e4},
    "pi:factor=4": {"rope_type": "linear", "rope_theta": 1e4, "factor": 4.0},
    None: {"rope_type": "default", "rope_theta": 1e4},
}


def drift(
    hidden: float, kl: float, *, extension: str | None = "abf:theta=4e4",
    stage: str = "before", seed: int | None = None, top_m: int = 1,
) -> list[dict[str, Any]]:  # fmt: skip
    """Two layer records and the summary of one model, four texts at the same values."""
    common: dict[str, Any] = {
        "original": "tiny-base", "extension": extension, "texts": "brown", "seq_len": 256,
        "num_texts": 4, "num_tokens": 1024, "stage": stage,
    }  # fmt: skip
    if stage != "before":
        common["trained_row"] = "cpt" if stage == "after" else "control"
    if seed is not None:
        common["seed"] = seed
    layers = [{"kind": "drift_layer", **common, "layer": i, "hidden_cosine": hidden,
               "attention_kl": kl} for i in (1, 2)]  # fmt: skip
    summary = {
        "kind": "drift_summary", **common, "rope_parameters": ROPE[extension],
        "max_position_embeddings": 1024, "mean_hidden_cosine": hidden,
        "last_hidden_cosine": hidden, "mean_attention_kl": kl, "top_m": top_m,
        "selected_layers": [2], "text_hidden_cosine": [hidden] * 4,
        "text_attention_kl": [kl] * 4, "text_num_tokens": [256] * 4,
    }  # fmt: skip
    return [{**r, "provenance": PROV} for r in (*layers, summary)]


def _control_cells(md: str) -> list[str]:
    line = next(x for x in md.splitlines() if CONTROL_LABEL in x)
    return [c.strip() for c in line.strip("|").split("|")]


def test_the_control_row_shows_the_lowest_control_seed(tmp_path: Path) -> None:
    records = [
        *drift(0.9, 0.2),
        *drift(0.95, 0.1, stage="after", seed=0),
        *drift(0.93, 0.07, extension=None, stage="control", seed=1),  # listed first
        *drift(0.97, 0.05, extension=None, stage="control", seed=0),
    ]
    md = build_table1(records, tmp_path, profile="tiny", command="c")[0].read_text()
    cells = _control_cells(md)
    assert cells[5].startswith("0.97000 [")  # seed 0's hidden similarity, not seed 1's 0.93
    assert cells[7].startswith("0.05 [")  # and its attention KL
    assert "the verdicts use every seed (1 of `cpt`, 2 of `control`)" in md


def test_the_seed_sentence_counts_the_extension_with_most_cpt_seeds(tmp_path: Path) -> None:
    records = [
        *drift(0.9, 0.2),
        *drift(0.8, 0.4, extension="pi:factor=4"),
        *drift(0.95, 0.1, stage="after", seed=0),
        *drift(0.96, 0.09, stage="after", seed=1),
        *drift(0.85, 0.3, extension="pi:factor=4", stage="after", seed=0),
        *drift(0.97, 0.05, extension=None, stage="control", seed=0),
    ]
    md = build_table1(records, tmp_path, profile="tiny", command="c")[0].read_text()
    assert "Cells show the lowest seed" in md
    assert "the verdicts use every seed (2 of `cpt`, 1 of `control`)" in md
    assert "interval over 2 cpt and 1 control seeds" in md  # claim (c) reads both seeds


def test_one_seed_of_each_row_needs_no_seed_sentence(tmp_path: Path) -> None:
    records = [
        *drift(0.9, 0.2),
        *drift(0.95, 0.1, stage="after", seed=0),
        *drift(0.97, 0.05, extension=None, stage="control", seed=0),
    ]
    md = build_table1(records, tmp_path, profile="tiny", command="c")[0].read_text()
    assert "After CPT: the `cpt` checkpoint of each extension against the original." in md
    assert "Cells show the lowest seed" not in md


def test_m_equal_to_the_layer_count_takes_every_layer(tmp_path: Path) -> None:
    """Two layers at M = 2: the top two plus the last are both layers, said so."""
    md = build_table1(drift(0.9, 0.2, top_m=2), tmp_path, profile="p", command="c")[0].read_text()
    assert "KL-selected layers: all 2 of the model's layers" in md
    assert "takes them all at M = 2)" in md


def test_cosines_after_cpt_and_of_the_control_are_told_apart(tmp_path: Path) -> None:
    """The zero-shot row alone needs 5 decimals; the after-CPT cell (0.999991) and the control's
    (0.999994) would both read 0.99999 at 5, so the column takes 6."""
    records = [
        *drift(0.9, 0.2),
        *drift(0.999991, 0.1, stage="after", seed=0),
        *drift(0.999994, 0.05, extension=None, stage="control", seed=0),
    ]
    md = build_table1(records, tmp_path, profile="tiny", command="c")[0].read_text()
    assert _control_cells(md)[5].startswith("0.999994 [")
    row = next(x for x in md.splitlines() if x.startswith("| this suite | tiny-base | `abf"))
    assert "| 0.900000 [" in row and "| 0.999991 [" in row
