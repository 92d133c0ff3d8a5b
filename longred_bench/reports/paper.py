"""Published numbers of the papers, for the side-by-side columns of the reports.

Marks follow PAPER_TABLES: ``[sec]`` = from secondary write-ups of arXiv 2502.07365 v3, still to be
checked against the PDF; ``[fig]`` = read from the table image in the LongReD repository.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Table1Row:
    """One row of LongReD Table 1: drift before -> after continued pre-training (~1B tokens)."""

    model: str
    rope_base: float
    hidden_before: float
    hidden_after: float
    kl_before_1e5: float
    kl_after_1e5: float


TABLE1_MARK = "[sec]"
TABLE1_SETTING = "Llama-3-8B family, 1,000 texts of 8,192 tokens"
TABLE1 = (
    Table1Row("Llama-3-8B-32K", 2e7, 0.92, 0.95, 3.51, 1.51),
    Table1Row("Llama-3-8B-128K", 1e8, 0.83, 0.94, 6.74, 1.68),
    Table1Row("Llama-3-8B-Instruct-262K", 2.8e8, 0.76, 0.91, 8.75, 2.50),
)


@dataclass(frozen=True)
class Table3Row:
    """One row of LongReD Table 3: short-text category scores, RULER and their average.

    ``window`` is the context window (``"8K"``, ``"32K"``, ``"128K"``); ``pe`` the position
    extension (``"ABF"``, ``"PI"``, ``None`` for the original); ``data`` the training data
    (``"Long"``: long texts only, ``"Mix"``: long and short; ``None`` for the original); ``method``
    ``"original"``, ``"CPT"``, ``"LongReD-C"`` or ``"LongReD-U"``. ``short`` is the mean of the five
    categories; ``avg = (5 short + ruler) / 6``; both ``None`` where the paper prints ``-``.
    """

    model: str
    window: str
    pe: str | None
    data: str | None
    method: str
    general: float
    code: float
    math: float
    rc: float
    common: float
    short: float
    ruler: float | None
    avg: float | None


TABLE3_MARK = "[fig]"
TABLE3_CATEGORIES = ("General", "Code", "Math", "RC", "Common")
# model, window, PE, data, method, General, Code, Math, RC, Common, Short, RULER, Avg ("-": none)
_TABLE3_TEXT = """
Llama-3-8B       8K    -    -    original   68.18 41.20 30.12 63.78 72.54 55.16  -     -
Llama-3-8B       32K   ABF  Long CPT        65.39 29.32 29.50 60.98 69.83 51.00 82.80 56.30
Llama-3-8B       32K   ABF  Mix  CPT        66.04 27.40 29.32 34.65 71.88 45.86 85.04 52.39
Llama-3-8B       32K   ABF  Mix  LongReD-C  67.65 39.90 31.52 62.84 72.35 54.85 84.98 59.87
Llama-3-8B       32K   ABF  Mix  LongReD-U  67.05 39.71 30.90 62.51 72.61 54.56 84.08 59.48
Llama-3-8B       32K   PI   Long CPT        63.84 27.13 26.18 61.95 67.71 49.36 82.17 54.83
Llama-3-8B       32K   PI   Mix  CPT        64.22 27.29 29.16 36.63 71.09 45.68 81.63 51.67
Llama-3-8B       32K   PI   Mix  LongReD-C  66.45 38.39 30.78 62.79 71.30 53.94 81.19 58.48
Llama-3-8B       32K   PI   Mix  LongReD-U  66.34 38.83 31.68 62.76 72.36 54.39 79.30 58.54
Llama-3-8B       128K  ABF  Long CPT        64.06 30.04 27.72 60.49 68.37 50.14 69.70 53.40
Llama-3-8B       128K  ABF  Mix  CPT        66.39 14.03 29.02 35.28 71.91 43.33 69.64 47.71
Llama-3-8B       128K  ABF  Mix  LongReD-C  65.99 40.03 30.26 62.39 71.50 54.03 64.93 55.85
Llama-3-8B       128K  ABF  Mix  LongReD-U  65.61 39.87 29.67 62.47 71.64 53.85 68.41 56.28
Mistral-7B-v0.3  32K   -    -    original   65.36 33.20 26.98 68.07 61.86 51.09  -     -
Mistral-7B-v0.3  128K  ABF  Long CPT        55.29 26.37 15.79 52.93 53.07 40.68 44.63 41.35
Mistral-7B-v0.3  128K  ABF  Mix  CPT        55.99 26.36 15.30 60.21 52.74 40.66 45.76 41.51
Mistral-7B-v0.3  128K  ABF  Mix  LongReD-C  61.45 26.66 19.88 65.25 58.26 46.30 58.37 48.31
Mistral-7B-v0.3  128K  ABF  Mix  LongReD-U  62.42 29.64 19.56 66.86 59.98 47.69 53.60 48.68
"""


def _table3_row(line: str) -> Table3Row:
    model, window, pe, data, method, *numbers = line.split()
    values = [None if x == "-" else float(x) for x in numbers]
    general, code, math_, rc, common, short, ruler, avg = values
    return Table3Row(
        model,
        window,
        None if pe == "-" else pe,
        None if data == "-" else data,
        method,
        general,
        code,
        math_,
        rc,
        common,
        short,
        ruler,
        avg,
    )


TABLE3 = tuple(_table3_row(line) for line in _TABLE3_TEXT.strip().splitlines())
TABLE3_HEADLINE = (
    "LongReD-C keeps 54.85/55.16 = 99.4% of the original short average; long-only CPT 92.5%"
)


TABLE2_MARK = "[sec]"
TABLE2_SETTING = (
    "Llama-3-8B extended to 32K by ABF; Long+Short: half of the long data replaced by 8K-token "
    "text (the original window)"
)
# (benchmark, Long, Long+Short)
TABLE2: tuple[tuple[str, float, float], ...] = (
    ("MMLU", 62.0, 62.5),
    ("HumanEval", 14.02, 16.46),
    ("PIQA", 74.10, 78.24),
    ("TriviaQA", 70.67, 72.82),
)

TABLE7_MARK = "[sec]"
TABLE7_SETTING = "Llama-3-8B extended to 32K by ABF"
TABLE7_COLUMNS = ("General", "Math", "Common", "RULER")
# method -> scores of TABLE7_COLUMNS (None where the write-ups give none)
TABLE7: dict[str, tuple[float | None, ...]] = {
    "model merging": (65.92, None, None, 83.38),
    "PET (attention-only tuning)": (66.82, 30.16, 70.78, 85.86),
    "CPT": (65.39, None, None, 82.80),
    "LongReD-C": (67.51, 31.52, 72.35, 84.98),
}

ABLATION_MARK = "[sec]"
ABLATION_SETTING = "Llama-3-8B extended to 32K by ABF, LongReD-C"
# LongReD Table 4: loss weights -> RULER (and what the write-ups note)
TABLE4: tuple[tuple[str, float, str], ...] = (
    ("a1 = 5, a2 = 10 (default)", 84.98, "Short Avg 54.85"),
    ("no L_short (a1 = 0, a2 = 15)", 85.48, "General 66.54, Common 70.64 (default 67.65, 72.35)"),
    ("no L_s2l (a2 = 0)", 83.61, ""),
    ("a2 = 100", 80.40, ""),
    ("a1 = 100", 80.19, ""),
    ("a1 = 2", 86.03, ""),
)
# LongReD Table 5: distilled layers -> RULER
TABLE5: tuple[tuple[str, float], ...] = (
    ("attention-KL selected (6) + last (default)", 84.98),
    ("uniform (6) + last", 82.53),
    ("all layers", 81.47),
    ("last only", 82.24),
)
# LongReD Table 6: short-distillation length (of the 8K window) -> RULER
TABLE6: tuple[tuple[str, float], ...] = (
    ("1,024 (1/8, default)", 84.98),
    ("2,048 (1/4)", 83.20),
    ("8,192 (1x)", 75.54),
)
