"""The papers' settings in ``reproduce all --profile paper --dry-run``: what the training units of
each ``paper*`` profile run, read from the units' own resolved configs (the run grid sets every
row's model, RoPE and budget over the profile's ``training.<recipe>`` sections, so those
sections alone are not what runs), and the members of the ``paper_short`` suite; offline."""

from __future__ import annotations

from typing import Any

# The papers' settings, one profile each: LongReD at 32K (ABF, PI), at 128K (ABF), on Mistral,
# and LinearARD's own; `reproduce all --profile paper --dry-run` lists all four.
PAPER_PROFILES = ("paper", "paper-128k", "paper-mistral", "paper-linearard")
# The rows shown: every recipe of the tables at ``paper``, the key ones at the other three.
ROWS = ("control", "cpt", "mix-cpt", "longred-c", "longred-u", "attention-only", "linearard",
        "pose", "rpes", "longrecipe")  # fmt: skip
KEY_ROWS = ("cpt", "mix-cpt", "longred-c", "linearard")
# What the other papers state of their compute (LongReD's own GPU hours are its Table 10).
OTHER_PAPERS_COMPUTE = {
    "linearard": "4.25M training tokens against 256M for LongReD / CPT (LLaMA2-7B, 4K -> 32K)",
    "longrecipe": "16 H100-hours at 80K (Llama-3-8B-Instruct; 104 steps of 96 sequences)",
}


def row_configs(profile: Any, rows: tuple[str, ...]) -> list[tuple[str, str | None, Any]]:
    """``(row, extension, config)`` of the seed-0 training run of each of ``rows`` at each
    extension, as the training tables at ``profile`` resolve them (a run two tables share once;
    a row whose config differs between tables once per config), in the tables' order."""
    from longred_bench.jobs.units import train_unit
    from longred_bench.reproduce.grid import trained_rows
    from longred_bench.reproduce.registry import get_spec, table_names

    seen: dict[str, tuple[str, str | None, Any]] = {}
    for table in table_names():
        spec = get_spec(table)
        if spec.grid is None:
            continue
        grid = spec.grid(spec.resolve(profile, progress=False))
        for run in trained_rows(grid):
            if run.seed == 0 and run.row in rows:
                cfg = run.config(grid)
                seen.setdefault(train_unit(cfg).folder, (run.row, run.extension, cfg))
    order = {row: i for i, row in enumerate(rows)}
    return sorted(seen.values(), key=lambda r: order[r[0]])


def _millions(tokens: int) -> str:
    return f"{tokens / 1e6:,.1f}M"


def row_line(row: str, cfg: Any, window: int) -> str:
    """One table line: what the run of ``row`` reads (steps, tokens per stream at their row
    lengths, the original ``window`` for ``s2l``) and its settings."""
    from longred_bench.reproduce.costs import stream_tokens

    streams = stream_tokens(cfg, window)
    total = sum(tokens for tokens, _ in streams.values())
    steps = cfg.steps + cfg.replay_steps
    counted = f"{cfg.steps} + {cfg.replay_steps} replay = {steps}" if cfg.replay_steps else steps
    read = ", ".join(f"{name} {_millions(tokens)} x {length:,}"
                     for name, (tokens, length) in streams.items())  # fmt: skip
    weights = f"a1 {cfg.a1:g}, a2 {cfg.a2:g}, top_m {cfg.top_m}" if cfg.recipe == "longred" else ""
    name = f"{row} (from cpt-light)" if cfg.init else row  # LinearARD's student: grid.py
    return (
        f"| {name} | {cfg.model} | {cfg.rope or 'original'} | {counted} x "
        f"{total // max(1, steps):,} = {total:,} | {read} | {cfg.lr:g} | {weights} | "
        f"{OTHER_PAPERS_COMPUTE.get(cfg.recipe, '')} |"
    )


def paper_plan(profile: Any, rows: tuple[str, ...] = ROWS) -> str:
    """What the training units of ``rows`` run at ``profile`` (:func:`row_configs`), with LongReD
    Table 10's GPU hours after the full list; offline."""
    from longred_bench.reports.table10_report import TABLE10

    lines = [
        f"What the training runs of profile {profile.name} ({profile.about.purpose}) run, seed 0 "
        "of each row, from the units' own configs: the tables set each row's model (model.name), "
        "RoPE (the table's extension) and budget over the profile's training sections "
        f"(`longred-bench profiles show {profile.name}`); a real run needs GPUs and hub access.",
        "",
        "| row | model | RoPE | steps x tokens a step = tokens | tokens read per stream x "
        "row length | lr | loss weights | the paper's compute |",
        "|---|---|---|---|---|---|---|---|",
    ]
    lines += [row_line(row, cfg, profile.model.window)
              for row, _, cfg in row_configs(profile, rows)]  # fmt: skip
    if rows is ROWS:
        lines += ["", "LongReD Table 10, GPU hours on 8 x A800 (Llama-3-8B):"]
        for window, hours in TABLE10.items():
            lines.append(f"- {window}: " + ", ".join(f"{k} {v} h" for k, v in hours.items()))
    return "\n".join(lines)


def paper_short_lines(selections: set[tuple[str, ...]]) -> list[str]:
    """The members of the ``paper_short`` evaluations planned (``()``: all 17): category, task,
    shots, metric, ``paper`` (named by LongReD) or ``suite`` (completes the list)."""
    from longred_bench.evaluation import paper_suite
    from longred_bench.reproduce.costs import paper_short_keys, uncounted

    tasks = sorted({t for sel in selections for t in (sel or paper_suite.task_names())})
    missing = uncounted(paper_short_keys(tasks) or ())
    hours = ("GPU-hours from their counted tokens" if not missing else
             f"GPU-hours not estimated: {len(missing)} of its members' tokens are not counted; "
             "`python benchmarks/short_task_tokens.py --suite paper_short` counts them where the "
             "hub is reachable")  # fmt: skip
    head = (f"Short suite paper_short ({len(tasks)} of LongReD's 17 benchmarks; `paper`: named "
            "by LongReD, `suite`: this suite's completion; needs the hub, and "
            f"{paper_suite.CODE_FLAG} for the code tasks; {hours}):")  # fmt: skip
    return [head, *(f"  {line}" for line in paper_suite.member_table(tasks))]
