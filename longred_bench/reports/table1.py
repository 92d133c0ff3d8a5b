"""LongReD Table 1: drift of extended models from the original, before and after continued
pre-training, beside the published values.

Reads drift records (``kind`` = ``drift_summary`` / ``drift_layer``, from
:mod:`longred_bench.jobs.drift`) and writes ``table1.md`` and ``table1.png``. A record's ``stage``
is ``"before"`` (the zero-shot extension; also when absent), ``"after"``: the checkpoint of
``trained_row`` (``"cpt"``) trained at that extension, compared with the original on the same
texts (its ``extension`` is the RoPE spec of the before row it belongs to), or ``"control"``: the
``control`` checkpoint, trained on the same data at the original RoPE and window, compared with
the original on the same texts (its ``extension`` is ``None``). A before row without an after
record says at which profile the after values are measured. Claims (c) (drift falls after CPT,
against the control row, every seed) and (c2) (a larger RoPE base drifts more) of
:mod:`longred_bench.reports.drift_verdicts` are labelled where their rows were measured.

Every value is shown with its percentile-bootstrap interval over the evaluated texts
(:func:`~longred_bench.metrics.stats.bootstrap_mean_ci` of the summary's per-text values); a
record without per-text values (older runs) shows its point value alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from longred_bench.metrics.stats import Interval, bootstrap_mean_ci
from longred_bench.reports import model_named, provenance
from longred_bench.reports.drift_plot import plot_drift_layers
from longred_bench.reports.drift_report import cosine_digits, drift_frames
from longred_bench.reports.drift_verdicts import (
    CLAIM_C,
    RULE_C,
    text_values,
    verdict_base_drifts_more,
    verdict_drift_falls,
)
from longred_bench.reports.paper import TABLE1, TABLE1_MARK, TABLE1_SETTING
from longred_bench.reports.verdict_rules import at_paper_setting, verdicts_markdown
from longred_bench.reports.verdict_stats import BOOT_SEED, LEVEL, N_BOOT
from longred_bench.wording import counted

AFTER_CPT_MISSING = "not measured yet"
AFTER_PROFILE = "tiny"  # the profile whose reference report measures the after-CPT columns
CONTROL_LABEL = "control: CPT data at the original RoPE and window"
CONTROL_TEXT = (
    "Control: the `control` checkpoint, trained on the same CPT data at the original RoPE in "
    "windows of the original length (CPT's are the extended window's), against the original "
    "(no RoPE change); it measures how far the training data alone moves the model, so an "
    "after-CPT similarity near the control's says the remaining drift is the data's, not the "
    "extension's (its RoPE and longer training windows)."
)


def _rope_detail(params: dict[str, Any]) -> str:
    if params["rope_type"] == "default":
        return f"base {params['rope_theta']:.0e}"
    return f"{params['rope_type']} x{params['factor']:g}, base {params['rope_theta']:.0e}"


def _stage(frame: pd.DataFrame) -> pd.Series:
    """Each row's stage, ``"before"`` where the record has none."""
    if "stage" not in frame:
        return pd.Series("before", index=frame.index)
    return frame["stage"].fillna("before")


def _by_seed(frame: pd.DataFrame) -> pd.DataFrame:
    if "seed" in frame:
        return frame.sort_values("seed", kind="stable", na_position="last")
    return frame


def after_seeds(summary: pd.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """``{extension: after-CPT drift summaries, one per seed, lowest seed first}``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for _, row in _by_seed(summary[_stage(summary).eq("after")]).iterrows():
        out.setdefault(row["extension"], []).append(row.to_dict())
    return out


def after_by_extension(summary: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """``{extension: after-CPT drift summary}`` of the lowest ``seed`` (the table's cells)."""
    return {ext: runs[0] for ext, runs in after_seeds(summary).items()}


def control_seeds(summary: pd.DataFrame) -> list[dict[str, Any]]:
    """The control checkpoints' drift summaries, one per seed, lowest first."""
    return [r.to_dict() for _, r in _by_seed(summary[_stage(summary).eq("control")]).iterrows()]


def control_summary(summary: pd.DataFrame) -> dict[str, Any] | None:
    """The control checkpoint's drift summary (the lowest ``seed``), or ``None``."""
    controls = control_seeds(summary)
    return controls[0] if controls else None


def _abf(extension: str) -> bool:
    """Whether ``extension`` is ABF, the extension of every row of the paper's Table 1."""
    from longred_bench.models.rope import parse_rope_spec

    return parse_rope_spec(str(extension)).method == "abf"


def abf_bases(before: pd.DataFrame) -> dict[float, dict[str, Any]]:
    """``{RoPE base: zero-shot drift summary}`` of the ABF extensions measured (an extension
    read as its spec: ``abf:theta=1e7`` or its JSON form)."""
    out = {}
    for _, row in before.iterrows():
        params = row["rope_parameters"]
        if row["extension"] and _abf(row["extension"]):
            out[float(params["rope_theta"])] = row.to_dict()
    return out


def drift_interval(summary: Mapping[str, Any], metric: str) -> Interval | None:
    """Bootstrap interval over texts of a summary's mean ``metric`` (``hidden_cosine`` or
    ``attention_kl``), or ``None`` without per-text values."""
    values = text_values(summary, metric)
    if values is None:
        return None
    return bootstrap_mean_ci(list(values.values()), n_boot=N_BOOT, level=LEVEL, seed=BOOT_SEED)


def _cell(summary: Mapping[str, Any], metric: str, spec: str) -> str:
    """``0.98141 [0.98010, 0.98260]``: the summary's value and its interval (value alone
    without per-text values)."""
    value = _num(summary[f"mean_{metric}"], spec)
    ci = drift_interval(summary, metric)
    return value if ci is None else f"{value} [{spec % ci.low}, {spec % ci.high}]"


def _texts_count(summaries: list[Mapping[str, Any]]) -> int | None:
    """Number of per-text values of the first summary that has them."""
    for s in summaries:
        values = text_values(s, "hidden_cosine")
        if values is not None:
            return len(values)
    return None


def _elsewhere(after_profile: str) -> str:
    """Where a profile that does not measure Table 1 after CPT finds it: another profile's
    report, of that profile's own model (not this one's)."""
    report = f"reports/{after_profile}/table1.md"
    return f"profile `{after_profile}` measures it, on its own model: {report}"


def _missing_note(profile: str, after_profile: str) -> str:
    if profile == after_profile:
        return "not measured in this run"
    return f"not measured here ({_elsewhere(after_profile)})"


def _num(value: Any, spec: str) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else spec % value


def build_table1(
    records: list[dict[str, Any]],
    out_dir: Path,
    *,
    profile: str,
    command: str,
    after_profile: str = AFTER_PROFILE,
    note: str = "",
) -> tuple[Path, Path]:
    """Write ``table1.md`` and ``table1.png`` under ``out_dir`` from drift ``records``; ``note``
    follows the command (a rebuild's: how the report was written).

    ``after_profile`` names the profile whose report holds the after-CPT values, cited in the
    cells of rows that have none here.
    """
    summary_all, layers_all = drift_frames(records)
    before = summary_all[_stage(summary_all).eq("before")].reset_index(drop=True)
    after = after_by_extension(summary_all)
    after_all = after_seeds(summary_all)
    controls = control_seeds(summary_all)
    control = controls[0] if controls else None
    prov = records[0]["provenance"]
    devices, code = provenance(records)
    first = before.iloc[0]
    missing = _missing_note(profile, after_profile)
    out_dir.mkdir(parents=True, exist_ok=True)
    stage = "before and after" if after else "before"
    lacking = [e for e in before["extension"] if e not in after]
    if not lacking:
        after_text = "After CPT: the `cpt` checkpoint of each extension against the original."
        n_seeds = max(len(v) for v in after_all.values())
        if n_seeds > 1 or len(controls) > 1:
            after_text += (
                f" Cells show the lowest seed, its interval over texts only (another seed's value"
                f" may lie outside it); the verdicts use every seed ({n_seeds} of `cpt`, "
                f"{len(controls)} of `control`)."
            )
    else:
        which = "every extension" if not after else ", ".join(f"`{e}`" for e in lacking)
        elsewhere = _elsewhere(after_profile)
        where = "" if profile == after_profile else f" at this profile; {elsewhere}"
        after_text = f"After CPT: {AFTER_CPT_MISSING} for {which}{where}."
    shown = [r.to_dict() for _, r in before.iterrows()] + list(after.values())
    n_texts = _texts_count(shown + ([control] if control else []))
    if n_texts is None:
        interval_text = "- Intervals: none (these records have no per-text values): point values."
    else:
        seeds = (
            ", and its interval over the cpt and control seeds adds their spread (at t's "
            "quantile for their seed count less 1; where both have the same seeds, the spread "
            "of their per-seed differences)"
            if after
            else ""
        )
        interval_text = (
            f"- Intervals: {LEVEL:.0%} percentile bootstrap over the {n_texts} texts (windows) "
            f"of each value, {N_BOOT} resamples; the verdict pairs the same texts before and "
            f"after{seeds}."
        )
    lines = [
        f"# LongReD Table 1: drift {stage} continued pre-training (profile `{profile}`)",
        "",
        f"- Model: {model_named(first['original'])}, original vs RoPE extensions"
        + (" and their CPT checkpoints." if after else " (zero-shot)."),
        f"- Texts: `{first['texts']}`, {counted(int(first['num_texts']), 'window')} of "
        f"{int(first['seq_len'])} tokens ({int(first['num_tokens'])} tokens).",
        interval_text,
        f"- Device: {devices}; torch {prov['versions']['torch']}, "
        f"transformers {prov['versions']['transformers']}.",
        f"- Commit: {code}; measured {prov['timestamp']}; command: `{command}`"
        + (f" ({note})." if note else "."),
        "",
        "Hidden similarity: cosine between extended and original hidden states, mean over tokens "
        "and layers. Attention KL: KL(original || extended) per query row, mean over heads, "
        "positions and layers, in nats (the paper's values are printed with their published "
        "1e-5 scale; its averaging is not spelled out, so compare trends, not magnitudes). "
        + after_text
        + (f" {CONTROL_TEXT}" if control else ""),
        "",
        "| source | model | extension | RoPE | hidden sim. before | hidden sim. after "
        "| attn KL before | attn KL after | KL-selected layers |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    means = [r["mean_hidden_cosine"] for _, r in before.iterrows()]
    means += [r["mean_hidden_cosine"] for r in [*after.values(), control] if r]
    means = [float(m) for m in means if isinstance(m, int | float) and not math.isnan(m)]
    cos = f"%.{cosine_digits(means, least=5)}f"  # as many as tell the rows apart (tiny-random)
    verdicts = []
    for _, row in before.iterrows():
        post = after.get(row["extension"])
        if post is not None:
            seeds = after_all[row["extension"]]
            falls = verdict_drift_falls(row["extension"], row.to_dict(), seeds, controls)
            verdicts.append(at_paper_setting(falls, _abf(row["extension"])))
        hidden_after = _cell(post, "hidden_cosine", cos) if post else missing
        kl_after = _cell(post, "attention_kl", "%.4g") if post else missing
        lines.append(
            f"| this suite | {row['original']} | `{row['extension']}` | "
            f"{_rope_detail(row['rope_parameters'])} | {_cell(row, 'hidden_cosine', cos)} | "
            f"{hidden_after} | {_cell(row, 'attention_kl', '%.4g')} | {kl_after} | "
            f"{', '.join(str(x) for x in row['selected_layers'])} |"
        )
    if control:
        lines.append(
            f"| this suite | {control['original']} | {CONTROL_LABEL} | "
            f"{_rope_detail(control['rope_parameters'])} (original) | 1 (same model) | "
            f"{_cell(control, 'hidden_cosine', cos)} | 0 (same model) | "
            f"{_cell(control, 'attention_kl', '%.4g')} | "
            f"{', '.join(str(x) for x in control['selected_layers'])} |"
        )
    for paper in TABLE1:
        lines.append(
            f"| paper {TABLE1_MARK} | {paper.model} | ABF | base {paper.rope_base:.1e} | "
            f"{paper.hidden_before:.2f} | {paper.hidden_after:.2f} | "
            f"{paper.kl_before_1e5:.2f}e-5 | {paper.kl_after_1e5:.2f}e-5 | |"
        )
    lines += [
        "",
        f"Paper rows: {TABLE1_SETTING}. KL-selected layers: "
        f"{_selection_rule(first, int(layers_all['layer'].max()) if len(layers_all) else 0)}, "
        "of an extension before CPT (the zero-shot model)"
        + (", and of the control after its training" if control else "")
        + "; 1-based decoder layers.",
        "",
        "## Verdicts: drift after CPT, and by RoPE base",
        "",
    ]
    if not verdicts:  # (c) needs the drift after CPT; (c2) is judged with any count of bases
        lines += [
            f"(c) {CLAIM_C} Not checked at this profile: no after-CPT drift records "
            f"({missing}). Rule: {RULE_C.format(level=LEVEL)}",
            "",
        ]
    lines += verdicts_markdown([*verdicts, verdict_base_drifts_more(abf_bases(before))])
    lines.append("![per-layer drift](table1.png)")
    md_path = out_dir / "table1.md"
    md_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    layers = layers_all.copy()
    stages = _stage(layers)
    late = stages.eq("after")
    layers.loc[late, "extension"] = layers.loc[late, "extension"] + " (after CPT)"
    layers.loc[stages.eq("control"), "extension"] = "control (CPT at the original RoPE)"
    png_path = plot_drift_layers(
        layers, out_dir / "table1.png", f"{first['original']}: drift per layer ({profile})"
    )
    return md_path, png_path


def _selection_rule(first: Any, layers: int) -> str:
    """How the KL-selected layers were chosen, by the records' ``top_m``: LongReD's rule, or,
    where ``top_m`` reaches the model's ``layers``, that it selects them all."""
    m = int(first["top_m"])
    top = "the layer with" if m == 1 else f"the {m} layers with"
    rule = f"{top} the largest attention KL plus the last"
    if m >= layers > 0:  # a small model: the rule asks for more layers than it has
        return (f"all {layers} of the model's layers (LongReD's rule for the short-text "
                f"distillation layers, {rule}, takes them all at M = {m})")  # fmt: skip
    return f"{rule} (LongReD's rule for the short-text distillation layers)"
