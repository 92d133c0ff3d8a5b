"""LongReD Table 1's claims on drift, and the rules, in code, that label them.

(c) *Drift falls after CPT*, per extension, against the ``control`` row (the same CPT data at
    the original RoPE, in windows of the original length): training on new data moves any model
    away from the original, so the change that CPT makes at the new RoPE (``after - before``,
    per text) is compared with the change the data alone makes (``control - original``: hidden
    similarity ``control - 1``, attention KL ``control - 0``). Every seed of ``cpt`` and of
    ``control`` counts: the interval of ``mean over cpt seeds of (after - before) - mean over
    control seeds of (control - original)`` counts the seeds of each side (t over their spread;
    where both rows have the same seeds, which read the data in the same order, t over the
    per-seed differences) and the (paired) texts
    (:func:`~longred_bench.metrics.stats.seed_mean_of_means_diff_ci`). Hidden similarity:
    entirely above 0 -> reproduced; entirely below 0, or holding 0 and below the paper's effect
    scaled to this drift -> not reproduced; else undecided. Attention KL: the mirror (below 0).
    The paper's effect: the mean fraction of the drift its CPT removed (hidden ``(after -
    before) / (1 - before)``, KL ``(before - after) / before``, over Table 1's rows) times our
    zero-shot drift. The claim: :func:`~longred_bench.reports.verdict_rules.combine` of the two.
    Without a control row, or without per-text values, it is not comparable.
(c2) *A larger RoPE base drifts more* (the order of Table 1's rows): over the ABF extensions
    measured zero-shot on the same texts, Spearman's rho of the base against the mean hidden
    similarity, with an interval resampling the texts
    (:func:`~longred_bench.metrics.rank_trend.bootstrap_rank_trend_ci`): entirely below 0 ->
    reproduced; entirely above 0, or above the paper's rho (-1: its three rows are in order)
    -> not reproduced; else undecided; the same for attention KL with the signs mirrored, and
    the two combined. Fewer than 3 ABF bases (no rank trend), or fewer than
    :data:`MIN_TEXTS_C2` texts (too few to resample) -> not comparable (floors).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from longred_bench.metrics.rank_trend import bootstrap_rank_trend_ci
from longred_bench.metrics.stats import Interval, seed_mean_of_means_diff_ci
from longred_bench.reports.paper import TABLE1, TABLE1_MARK
from longred_bench.reports.verdict_rules import (
    ABOVE,
    BELOW,
    NOT_COMPARABLE,
    REPRODUCED,
    Verdict,
    combine,
    judge,
)
from longred_bench.reports.verdict_stats import BOOT_SEED, LEVEL, N_BOOT, paired_by_seed

CLAIM_C = (
    "Drift falls after CPT, net of what the same training data moves at the original RoPE and "
    "window (`control`): hidden similarity rises and attention KL falls against the control's "
    "change (Table 1)."
)
CLAIM_C2 = "A larger RoPE base drifts more: lower hidden similarity, higher attention KL."
RULE_C = (
    "{level:.0%} interval over cpt and control seeds (paired by seed where both have the same "
    "seeds) and paired texts of "
    "mean(after - before) over cpt seeds - mean(control - original) over control seeds: hidden "
    "similarity entirely above 0 -> reproduced, entirely below 0 or holding 0 and below the "
    "paper's effect scaled to this drift (its mean fraction of drift removed x our zero-shot "
    "drift) -> not reproduced, else undecided; attention KL the mirror; the claim combines "
    "both (not reproduced if either is, else undecided if either is). No control row or no "
    "per-text values -> not comparable."
)
RULE_C2 = (
    "over the ABF extensions: Spearman's rho of the RoPE base against mean hidden similarity, "
    "{level:.0%} bootstrap interval resampling the texts: entirely below 0 -> reproduced, "
    "entirely above 0 or above the paper's rho of -1 -> not reproduced, else undecided; attention "
    "KL mirrored (rho above 0); both combined. Fewer than 3 ABF bases, fewer than {min_texts} "
    "texts, or rho without an interval (undefined in most resamples: the values do not vary) "
    "-> not comparable."
)
MIN_TEXTS_C2 = 10
"""The fewest texts (c2)'s bootstrap resamples: of 2 texts there are 3 distinct resamples, and
an interval of -1 [-1, -1] over them read "reproduced"; of 10, over 90,000."""
# The mean fraction of the zero-shot drift that the paper's CPT removed (Table 1's rows).
PAPER_HIDDEN_RECOVERY = sum(
    (r.hidden_after - r.hidden_before) / (1 - r.hidden_before) for r in TABLE1
) / len(TABLE1)
PAPER_KL_RECOVERY = sum((r.kl_before_1e5 - r.kl_after_1e5) / r.kl_before_1e5 for r in TABLE1) / len(
    TABLE1
)
METRICS = ("hidden_cosine", "attention_kl")
IDENTITY = {"hidden_cosine": 1.0, "attention_kl": 0.0}  # a model's drift from itself


def text_values(summary: Mapping[str, Any], metric: str) -> dict[int, float] | None:
    """``{text index: value}`` of a ``drift_summary`` record's per-text ``metric``
    (``hidden_cosine`` or ``attention_kl``; :mod:`longred_bench.jobs.drift`), finite values
    only; ``None`` when the record has none (records of older runs)."""
    values = summary.get(f"text_{metric}")
    if not isinstance(values, (list, tuple)):
        return None
    out = {i: float(v) for i, v in enumerate(values) if v is not None and math.isfinite(v)}
    return out or None


def paper_evidence_c() -> str:
    """Table 1's before -> after values."""
    parts = [
        f"{r.model}: {r.hidden_before:.2f} -> {r.hidden_after:.2f}, KL "
        f"{r.kl_before_1e5:.2f} -> {r.kl_after_1e5:.2f} (x1e-5)"
        for r in TABLE1
    ]
    return f"{TABLE1_MARK} " + "; ".join(parts) + "."


def _same_texts(summaries: Sequence[Mapping[str, Any]]) -> bool:
    return all(
        all(s.get(k) == summaries[0].get(k) for k in ("texts", "seq_len", "num_texts"))
        for s in summaries
    )


def _comparable(summaries: Sequence[Mapping[str, Any]]) -> bool:
    """Every summary has per-text values of both metrics, on the same texts."""
    values = all(text_values(s, m) is not None for s in summaries for m in METRICS)
    return values and _same_texts(summaries)


def _paper_row(r: Any) -> str:
    return f"{r.rope_base:.1e}: hidden {r.hidden_before:.2f}, KL {r.kl_before_1e5:.2f}"


def _distinct(values: Sequence[float]) -> list[str]:
    """``values`` at 4 significant digits, or as many more (up to 8) as it takes for values
    that differ to read differently (0.999995 and 0.99999 are not both "1")."""
    for digits in range(4, 9):
        text = [f"{v:.{digits}g}" for v in values]
        if len(set(text)) == len(set(values)):
            break
    return text


def _fmt(ci: Interval) -> str:
    return f"{ci.estimate:+.3g} [{ci.low:+.3g}, {ci.high:+.3g}]"


def _change(summary: Mapping[str, Any], metric: str, reference: Mapping[int, float] | float):
    """``{"drift": {"texts": {i: value - reference}}}``: one run's per-text change, nested as
    the seed interval reads runs."""
    values = text_values(summary, metric) or {}
    if isinstance(reference, Mapping):
        values = {i: v - reference[i] for i, v in values.items() if i in reference}
    else:
        values = {i: v - reference for i, v in values.items()}
    return {"drift": {"texts": values}}


def _counts(read: Mapping[str, int]) -> str:
    """``n=12``, or ``n=8 (hidden similarity) and n=12 (attention KL)`` where the metrics' intervals
    read different numbers of texts (``read``: metric name -> texts)."""
    counts = set(read.values())
    if len(counts) == 1:
        return f"n={counts.pop()}"
    return " and ".join(f"n={k} ({name})" for name, k in read.items())


def _seed_of(summary: Mapping[str, Any]) -> int | None:
    """A drift summary's training seed; None where it names none (or a missing value, NaN)."""
    seed = summary.get("seed")
    if isinstance(seed, numbers.Real) and math.isfinite(seed):
        return int(seed)
    return None


def verdict_drift_falls(
    extension: str,
    before: Mapping[str, Any],
    after: Sequence[Mapping[str, Any]],
    control: Sequence[Mapping[str, Any]],
) -> Verdict:
    """Claim (c) for one extension: its zero-shot ``before`` summary, the ``after`` summaries of
    its CPT checkpoints (one per seed) and the ``control`` summaries (one per seed)."""
    scope, paper, rule = f"`{extension}`", paper_evidence_c(), RULE_C.format(level=LEVEL)
    rows = ", ".join(f"seed {s.get('seed', 0)}" for s in after)
    if not control:
        ours = f"after `cpt` ({rows}); no `control` row: the data's own drift is not measured."
        return Verdict("c", CLAIM_C, scope, paper, ours, NOT_COMPARABLE, rule)
    if not _comparable([before, *after, *control]):
        ours = "no per-text values on the same texts for every run: no interval."
        return Verdict("c", CLAIM_C, scope, paper, ours, NOT_COMPARABLE, rule)
    parts, labels, paired = [], [], {}
    seeds = [[_seed_of(s) for s in runs] for runs in (control, after)]
    by_seed = None not in seeds[0] + seeds[1] and paired_by_seed(*seeds)
    if by_seed:  # the same data order at a seed: compared seed by seed
        after, control = (sorted(runs, key=_seed_of) for runs in (after, control))
    for metric, side, recovery, name in (
        ("hidden_cosine", ABOVE, PAPER_HIDDEN_RECOVERY, "hidden similarity"),
        ("attention_kl", BELOW, PAPER_KL_RECOVERY, "attention KL"),
    ):
        base = text_values(before, metric) or {}
        cpt_runs = [_change(s, metric, base) for s in after]
        control_runs = [_change(s, metric, IDENTITY[metric]) for s in control]
        # the texts the interval reads: those every run has a (finite) value of
        texts = [set(r["drift"]["texts"]) for r in (*cpt_runs, *control_runs)]
        paired[name] = len(set.intersection(*texts))
        ci = seed_mean_of_means_diff_ci(
            control_runs, cpt_runs, n_boot=N_BOOT, level=LEVEL, seed=BOOT_SEED, paired=by_seed
        )
        zero_shot = float(before[f"mean_{metric}"])
        drift = 1 - zero_shot if metric == "hidden_cosine" else zero_shot
        effect = side * recovery * drift
        labels.append(judge(ci, side, paper=effect))
        raw = sum(float(s[f"mean_{metric}"]) for s in after) / len(after) - zero_shot
        shown = _distinct([zero_shot, IDENTITY[metric]])[0]  # 0.999995 is not "1"
        against = " (against the claim's direction" + (
            ": it holds net of the control only)" if labels[-1] == REPRODUCED else ")"
        )
        parts.append(
            f"{name} {shown} before, raw change after CPT {raw:+.3g} (mean of its seeds)"
            f"{against if raw * side < 0 else ''}; CPT's change net of the control's "
            f"{_fmt(ci)} (the paper's effect, scaled: {effect:+.3g}): {labels[-1]}"
        )
    n = _counts(paired)
    ours = (
        "; ".join(parts) + f". {LEVEL:.0%} interval over {len(after)} cpt and {len(control)} "
        f"control seeds{' (paired by seed)' if by_seed else ''} and {n} paired texts "
        f"({before.get('num_tokens')} tokens)."
    )
    return Verdict("c", CLAIM_C, scope, paper, ours, combine(labels), rule)


def verdict_base_drifts_more(bases: Mapping[float, Mapping[str, Any]]) -> Verdict:
    """Claim (c2) from the zero-shot summaries of the ABF extensions, keyed by RoPE base."""
    rule = RULE_C2.format(level=LEVEL, min_texts=MIN_TEXTS_C2)
    paper = (
        f"{TABLE1_MARK} bases "
        + ", ".join(_paper_row(r) for r in TABLE1)
        + " (x1e-5): in order, rho -1 (hidden) and +1 (KL)."
    )
    scope = "ABF bases " + (", ".join(f"{b:.0e}" for b in sorted(bases)) or "none")
    summaries = [bases[b] for b in sorted(bases)]
    if len(bases) < 3:
        ours = f"{len(bases)} ABF base(s) measured: a rank trend needs at least 3."
        return Verdict("c2", CLAIM_C2, scope, paper, ours, NOT_COMPARABLE, rule)
    if not _comparable(summaries):
        ours = "no per-text values on the same texts for every base: no interval."
        return Verdict("c2", CLAIM_C2, scope, paper, ours, NOT_COMPARABLE, rule)
    parts, labels, read = [], [], {}
    for metric, side, name in (("hidden_cosine", BELOW, "hidden similarity"),
                               ("attention_kl", ABOVE, "attention KL")):  # fmt: skip
        per = [text_values(s, metric) or {} for s in summaries]
        keys = sorted(set.intersection(*(set(p) for p in per)))
        if len(keys) < MIN_TEXTS_C2:
            ours = (f"{len(keys)} text(s) measured at every base: a bootstrap needs at least "
                    f"{MIN_TEXTS_C2}.")  # fmt: skip
            return Verdict("c2", CLAIM_C2, scope, paper, ours, NOT_COMPARABLE, rule)
        values = [[p[k] for k in keys] for p in per]
        read[name] = len(keys)
        ci = bootstrap_rank_trend_ci(sorted(bases), values, n_boot=N_BOOT, level=LEVEL,
                                     seed=BOOT_SEED)  # fmt: skip
        label = NOT_COMPARABLE if math.isnan(ci.low) else judge(ci, side, paper=side * 1.0)
        labels.append(label)
        means = ", ".join(_distinct([sum(v) / len(v) for v in values]))
        parts.append(f"{name} {means}: rho {_fmt(ci)} ({label})")
    ours = "; ".join(parts) + f". {LEVEL:.0%} bootstrap over {_counts(read)} texts."
    return Verdict("c2", CLAIM_C2, scope, paper, ours, combine(labels), rule)
