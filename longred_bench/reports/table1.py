"""LongReD Table 1: drift of extended models from the original, beside the published values.

Reads drift records (``kind`` = ``drift_summary`` / ``drift_layer``) and writes ``table1.md`` and
``table1.png``. Until continued pre-training exists in the suite, the "after CPT" columns say so.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from longred_bench.reports.drift_plot import plot_drift_layers
from longred_bench.reports.drift_report import drift_frames
from longred_bench.reports.paper import TABLE1, TABLE1_MARK, TABLE1_SETTING

AFTER_CPT_MISSING = "not measured yet"


def _rope_detail(params: dict[str, Any]) -> str:
    if params["rope_type"] == "default":
        return f"base {params['rope_theta']:.0e}"
    return f"{params['rope_type']} x{params['factor']:g}, base {params['rope_theta']:.0e}"


def build_table1(
    records: list[dict[str, Any]],
    out_dir: Path,
    *,
    profile: str,
    command: str,
) -> tuple[Path, Path]:
    """Write ``table1.md`` and ``table1.png`` under ``out_dir`` from drift ``records``."""
    summary, layers = drift_frames(records)
    prov = records[0]["provenance"]
    first = summary.iloc[0]
    out_dir.mkdir(parents=True, exist_ok=True)
    title = f"LongReD Table 1: drift before continued pre-training (profile `{profile}`)"
    lines = [
        f"# {title}",
        "",
        f"- Model: `{first['original']}`, original vs zero-shot RoPE extensions.",
        f"- Texts: `{first['texts']}`, {first['num_texts']} windows of {first['seq_len']} tokens "
        f"({first['num_tokens']} tokens).",
        f"- Device: {prov['device']}; torch {prov['versions']['torch']}, "
        f"transformers {prov['versions']['transformers']}.",
        f"- Commit: `{prov['git_commit']}`; measured {prov['timestamp']}; command: `{command}`.",
        "",
        "Hidden similarity: cosine between extended and original hidden states, mean over tokens "
        "and layers. Attention KL: KL(original || extended) per query row, mean over heads, "
        "positions and layers, in nats (the paper's values are printed with their published "
        "1e-5 scale; its averaging is not spelled out, so compare trends, not magnitudes). "
        "After CPT: "
        f"{AFTER_CPT_MISSING} (needs the suite's continued pre-training).",
        "",
        "| source | model | extension | RoPE | hidden sim. before | hidden sim. after "
        "| attn KL before | attn KL after | KL-selected layers |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for _, row in summary.iterrows():
        lines.append(
            f"| this suite | {row['original']} | `{row['extension']}` | "
            f"{_rope_detail(row['rope_parameters'])} | {row['mean_hidden_cosine']:.5f} | "
            f"{AFTER_CPT_MISSING} | {row['mean_attention_kl']:.4g} | {AFTER_CPT_MISSING} | "
            f"{', '.join(str(x) for x in row['selected_layers'])} |"
        )
    for paper in TABLE1:
        lines.append(
            f"| paper {TABLE1_MARK} | {paper.model} | ABF | base {paper.rope_base:.1e} | "
            f"{paper.hidden_before:.2f} | {paper.hidden_after:.2f} | "
            f"{paper.kl_before_1e5:.2f}e-5 | {paper.kl_after_1e5:.2f}e-5 | |"
        )
    lines += [
        "",
        f"Paper rows: {TABLE1_SETTING}. KL-selected layers: the {int(first['top_m'])} layers with "
        "the largest attention KL plus the last (LongReD's rule for the short-text distillation "
        "layers); 1-based decoder layers.",
        "",
        "![per-layer drift](table1.png)",
    ]
    md_path = out_dir / "table1.md"
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    png_path = plot_drift_layers(
        layers, out_dir / "table1.png", f"{first['original']}: drift per layer ({profile})"
    )
    return md_path, png_path
