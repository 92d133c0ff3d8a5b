"""Table 1's bootstrap intervals over texts, claim (c) on paired per-text values, and the control
row, from drift records made here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from report_helpers import PROV

from longred_bench.reports.table1 import (
    CONTROL_LABEL,
    CONTROL_TEXT,
    build_table1,
    drift_interval,
)

ROPE = {
    "abf:theta=4e4": {"rope_type": "default", "rope_theta": 4e4},
    "pi:factor=4": {"rope_type": "linear", "rope_theta": 1e4, "factor": 4.0},
    None: {"rope_type": "default", "rope_theta": 1e4},
}


def summary(hidden: list[float] | None, kl: list[float] | None, **extra: Any) -> dict[str, Any]:
    """A drift summary whose means are those of its per-text values (``None``: no per-text
    values, as older records; then ``extra`` gives the means)."""
    record: dict[str, Any] = {
        "kind": "drift_summary",
        "original": "tiny-base",
        "extension": "abf:theta=4e4",
        "texts": "brown",
        "seq_len": 256,
        "num_texts": len(hidden) if hidden else 8,
        "num_tokens": 256 * (len(hidden) if hidden else 8),
        "max_position_embeddings": 1024,
        "top_m": 1,
        "selected_layers": [2],
    }
    if hidden is not None and kl is not None:
        record |= {
            "mean_hidden_cosine": float(np.mean(hidden)),
            "last_hidden_cosine": float(np.mean(hidden)),
            "mean_attention_kl": float(np.mean(kl)),
            "text_hidden_cosine": list(hidden),
            "text_attention_kl": list(kl),
            "text_num_tokens": [256] * len(hidden),
        }
    record |= extra
    record["rope_parameters"] = ROPE[record["extension"]]
    return record


def with_layers(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The summary and two layer records of the same model, each with provenance."""
    keys = ("original", "extension", "texts", "seq_len", "num_texts", "num_tokens")
    labels = {k: record[k] for k in (*keys, "stage", "trained_row") if k in record}
    layers = [
        {"kind": "drift_layer", **labels, "layer": i, "hidden_cosine": 0.9, "attention_kl": 0.1}
        for i in (1, 2)
    ]
    return [{**r, "provenance": PROV} for r in (*layers, record)]


def _spread(n: int, seed: int, center: float, scale: float) -> list[float]:
    return list(center + scale * np.random.default_rng(seed).standard_normal(n))


def test_interval_contains_the_value_and_narrows_with_more_texts() -> None:
    few = summary(_spread(16, 0, 0.9, 0.02), _spread(16, 1, 0.3, 0.05))
    many = summary(_spread(256, 0, 0.9, 0.02), _spread(256, 1, 0.3, 0.05))
    widths = []
    for record in (few, many):
        for metric in ("hidden_cosine", "attention_kl"):
            ci = drift_interval(record, metric)
            assert ci is not None
            assert ci.low < record[f"mean_{metric}"] < ci.high
            assert ci.estimate == pytest.approx(record[f"mean_{metric}"], rel=1e-12)
        widths.append(drift_interval(record, "hidden_cosine"))
    (f, m) = widths
    assert (m.high - m.low) < 0.5 * (f.high - f.low)  # 16x the texts: about a quarter the width
    assert drift_interval(summary(None, None, mean_hidden_cosine=0.9), "hidden_cosine") is None


def test_report_shows_intervals_sample_size_and_the_control_row(tmp_path: Path) -> None:
    hidden = _spread(8, 6, 0.9, 0.01)
    kl = [abs(x) for x in _spread(8, 7, 0.3, 0.05)]
    before = summary(hidden, kl)
    after = summary(
        [x + 0.02 for x in hidden], [x - 0.05 for x in kl], stage="after", trained_row="cpt"
    )
    control = summary(
        [0.97] * 7 + [0.98], [0.05] * 7 + [0.06], stage="control", trained_row="control",
        extension=None,
    )  # fmt: skip
    pi = summary(_spread(8, 8, 0.8, 0.01), _spread(8, 9, 0.9, 0.05), extension="pi:factor=4")
    records = [r for s in (before, after, control, pi) for r in with_layers(s)]
    md_path, png = build_table1(records, tmp_path, profile="tiny", command="c")
    md = md_path.read_text()
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert "bootstrap over the 8 texts" in md
    ci = drift_interval(before, "hidden_cosine")
    row = next(x for x in md.splitlines() if x.startswith("| this suite | tiny-base | `abf"))
    assert f"{before['mean_hidden_cosine']:.5f} [{ci.low:.5f}, {ci.high:.5f}]" in row
    control_row = next(x for x in md.splitlines() if CONTROL_LABEL in x)
    cells = [c.strip() for c in control_row.strip("|").split("|")]
    ci = drift_interval(control, "hidden_cosine")
    assert cells[4] == "1 (same model)" and cells[6] == "0 (same model)"
    assert cells[5] == f"0.97125 [{ci.low:.5f}, {ci.high:.5f}]"
    assert cells[7].startswith("0.05125 [")
    assert CONTROL_TEXT in md
    assert md.count("| this suite |") == 3  # two extensions and the control
    assert md.count("| (c) Drift falls after CPT") == 1  # the control is no claim (c) setting
    assert "| `abf:theta=4e4` | **reproduced** |" in md
    # top_m 1: one layer, said so; the control row's selection is of the trained control
    assert "KL-selected layers: the layer with the largest attention KL plus the last" in md
    assert "of an extension before CPT (the zero-shot model), and of the control after" in md


def test_report_of_old_records_shows_point_values(tmp_path: Path) -> None:
    before = summary(None, None, mean_hidden_cosine=0.9, last_hidden_cosine=0.9,
                     mean_attention_kl=0.2)  # fmt: skip
    after = summary(None, None, mean_hidden_cosine=0.95, last_hidden_cosine=0.95,
                    mean_attention_kl=0.1, stage="after", trained_row="cpt")  # fmt: skip
    records = [r for s in (before, after) for r in with_layers(s)]
    md = build_table1(records, tmp_path, profile="tiny", command="c")[0].read_text()
    row = next(x for x in md.splitlines() if x.startswith("| this suite | tiny-base | `abf"))
    assert "[" not in row.split("|")[5] and "0.90000" in row
    assert "Intervals: none" in md and "| `abf:theta=4e4` | **not comparable** |" in md
    assert CONTROL_LABEL not in md


def test_report_names_every_commit_and_source_hash_of_its_records(tmp_path: Path) -> None:
    before = summary(_spread(8, 6, 0.9, 0.01), [abs(x) for x in _spread(8, 7, 0.3, 0.05)])
    records = with_layers(before)
    for i, r in enumerate(records):  # the summary measured by other code than its layers
        r["provenance"] = {**PROV, "source_hash": ("ab" if i < 2 else "cd") * 32, "dirty": False}
    md = build_table1(records, tmp_path, profile="tiny", command="c")[0].read_text()
    assert "- Commit: `abc123`; source `abababababab`, `cdcdcdcdcdcd`; measured" in md


def test_cosines_take_the_decimals_that_tell_the_rows_apart(tmp_path: Path) -> None:
    """A random model's extensions (cosines 0.999989 and 0.999986) both read 0.99999 [0.99999,
    0.99999]; the column takes as many decimals as tell them apart (5 where those do)."""
    near = [summary([0.999989] * 4, [1e-5] * 4),
            summary([0.999986] * 4, [2e-5] * 4, extension="pi:factor=4")]  # fmt: skip
    md = build_table1([r for s in near for r in with_layers(s)], tmp_path, profile="p",
                      command="c")[0].read_text()  # fmt: skip
    rows = [x for x in md.splitlines() if x.startswith("| this suite |")]
    assert "| 0.999989 [0.999989, 0.999989] |" in rows[0]
    assert "| 0.999986 [0.999986, 0.999986] |" in rows[1]


def test_a_rule_that_takes_every_layer_says_so(tmp_path: Path) -> None:
    """A 2-layer model at M = 6 read "the 6 layers with the largest attention KL plus the
    last", layers it does not have."""
    record = summary([0.9] * 4, [0.1] * 4, top_m=6)
    md = build_table1(with_layers(record), tmp_path, profile="p", command="c")[0].read_text()
    assert ("KL-selected layers: all 2 of the model's layers (LongReD's rule for the short-text "
            "distillation layers, the 6 layers with the largest attention KL plus the last, "
            "takes them all at M = 6), of an extension") in md  # fmt: skip


def test_claim_c2_is_judged_with_any_count_of_bases_and_c_said_unchecked(tmp_path: Path) -> None:
    """One ABF base and no drift after CPT: (c) is named as not checked and (c2) as not
    comparable (a rank trend needs 3 bases); the section held neither before."""
    before = summary(_spread(12, 6, 0.9, 0.01), [abs(x) for x in _spread(12, 7, 0.3, 0.05)])
    md = build_table1(with_layers(before), tmp_path, profile="p", command="c")[0].read_text()
    section = md.split("## Verdicts: drift after CPT, and by RoPE base", 1)[1]
    assert "(c) Drift falls after CPT" in section and "Not checked at this profile" in section
    assert "**(c2) ABF bases 4e+04: not comparable.**" in section
    assert "1 ABF base(s) measured: a rank trend needs at least 3." in section


def test_an_abf_extension_given_as_json_counts_among_the_bases() -> None:
    """An ABF extension written in its JSON form is an ABF base of claim (c2), as its
    ``abf:theta=...`` form is; other methods are not."""
    import pandas as pd

    from longred_bench.reports.table1 import abf_bases

    rows = [
        {"extension": ext, "rope_parameters": {"rope_type": "default", "rope_theta": theta}}
        for ext, theta in (('{"method": "abf", "theta": 1e7}', 1e7), ("abf:theta=4e5", 4e5))
    ]
    rows.append({"extension": "pi:factor=4", "rope_parameters": ROPE["pi:factor=4"]})
    assert sorted(abf_bases(pd.DataFrame(rows))) == [4e5, 1e7]
