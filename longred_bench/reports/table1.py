"""LongReD Table 1: drift of extended models from the original, before and after continued
pre-training, beside the published values.

Reads drift records (``kind`` = ``drift_summary`` / ``drift_layer``, from
:mod:`longred_bench.jobs.drift`) and writes ``table1.md`` and ``table1.png``. A record's ``stage``
is ``"before"`` (the zero-shot extension; also when absent) or ``"after"``: the checkpoint of
``trained_row`` (``"cpt"``) trained at that extension, compared with the original on the same
texts; an after record's ``extension`` is the RoPE spec of the before row it belongs to. A before
row without an after record says at which profile the after values are measured. Claim (c) of
:mod:`longred_bench.reports.verdicts` (drift falls after CPT) is labelled for every extension that
has both.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd

from longred_bench.reports.drift_plot import plot_drift_layers
from longred_bench.reports.drift_report import drift_frames
from longred_bench.reports.paper import TABLE1, TABLE1_MARK, TABLE1_SETTING
from longred_bench.reports.verdicts import CLAIM_C, RULE_C, verdict_drift_falls, verdicts_markdown

AFTER_CPT_MISSING = "not measured yet"
AFTER_PROFILE = "tiny"  # the profile whose reference report measures the after-CPT columns


def _rope_detail(params: dict[str, Any]) -> str:
    if params["rope_type"] == "default":
        return f"base {params['rope_theta']:.0e}"
    return f"{params['rope_type']} x{params['factor']:g}, base {params['rope_theta']:.0e}"


def _is_after(frame: pd.DataFrame) -> pd.Series:
    if "stage" not in frame:
        return pd.Series(False, index=frame.index)
    return frame["stage"].eq("after")


def after_by_extension(summary: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """``{extension: after-CPT drift summary}`` (the lowest ``seed`` where several exist)."""
    after = summary[_is_after(summary)]
    if "seed" in after:
        after = after.sort_values("seed", kind="stable", na_position="last")
    out: dict[str, dict[str, Any]] = {}
    for _, row in after.iterrows():
        out.setdefault(row["extension"], row.to_dict())
    return out


def _missing_note(profile: str, after_profile: str) -> str:
    if profile == after_profile:
        return "not measured in this run"
    return f"measured at profile `{after_profile}` (reports/{after_profile}/table1.md)"


def _num(value: Any, spec: str) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else spec % value


def build_table1(
    records: list[dict[str, Any]],
    out_dir: Path,
    *,
    profile: str,
    command: str,
    after_profile: str = AFTER_PROFILE,
) -> tuple[Path, Path]:
    """Write ``table1.md`` and ``table1.png`` under ``out_dir`` from drift ``records``.

    ``after_profile`` names the profile whose report holds the after-CPT values, cited in the
    cells of rows that have none here.
    """
    summary_all, layers_all = drift_frames(records)
    before = summary_all[~_is_after(summary_all)].reset_index(drop=True)
    after = after_by_extension(summary_all)
    prov = records[0]["provenance"]
    first = before.iloc[0]
    missing = _missing_note(profile, after_profile)
    out_dir.mkdir(parents=True, exist_ok=True)
    stage = "before and after" if after else "before"
    lacking = [e for e in before["extension"] if e not in after]
    if not lacking:
        after_text = "After CPT: the `cpt` checkpoint of each extension against the original."
    else:
        which = "every extension" if not after else ", ".join(f"`{e}`" for e in lacking)
        where = "" if profile == after_profile else f" at this profile; {missing}"
        after_text = f"After CPT: {AFTER_CPT_MISSING} for {which}{where}."
    lines = [
        f"# LongReD Table 1: drift {stage} continued pre-training (profile `{profile}`)",
        "",
        f"- Model: `{first['original']}`, original vs RoPE extensions"
        + (" and their CPT checkpoints." if after else " (zero-shot)."),
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
        + after_text,
        "",
        "| source | model | extension | RoPE | hidden sim. before | hidden sim. after "
        "| attn KL before | attn KL after | KL-selected layers |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    verdicts = []
    for _, row in before.iterrows():
        post = after.get(row["extension"])
        if post is not None:
            verdicts.append(verdict_drift_falls(row["extension"], row.to_dict(), post))
        hidden_after = _num(post["mean_hidden_cosine"], "%.5f") if post else missing
        kl_after = _num(post["mean_attention_kl"], "%.4g") if post else missing
        lines.append(
            f"| this suite | {row['original']} | `{row['extension']}` | "
            f"{_rope_detail(row['rope_parameters'])} | {row['mean_hidden_cosine']:.5f} | "
            f"{hidden_after} | {row['mean_attention_kl']:.4g} | {kl_after} | "
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
        "## Verdict: drift after CPT",
        "",
    ]
    if verdicts:
        lines += verdicts_markdown(verdicts)
    else:
        lines += [
            f"(c) {CLAIM_C} Not checked at this profile: no after-CPT drift records "
            f"({missing}). Rule: {RULE_C}",
            "",
        ]
    lines.append("![per-layer drift](table1.png)")
    md_path = out_dir / "table1.md"
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    layers = layers_all.copy()
    late = _is_after(layers)
    layers.loc[late, "extension"] = layers.loc[late, "extension"] + " (after CPT)"
    png_path = plot_drift_layers(
        layers, out_dir / "table1.png", f"{first['original']}: drift per layer ({profile})"
    )
    return md_path, png_path
