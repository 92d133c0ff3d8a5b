"""``reproduce tiny_base``: the suite's own pretrained model, ``tiny-base``: its pretraining
curve, the convergence check (the same run continued to 1.5x its steps), the retrieval targets
and its scores. The report is about tiny-base whatever the profile: its evaluation settings are
the table's own (:class:`TinyBaseSettings`, overridable in ``tables.tiny_base``); building
tiny-base takes about 15 minutes on 2 CPU cores the first time."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longred_bench.reproduce.spec import Context, Step, TableSpec

# RULER tasks whose prompts fit 256 tokens of tiny-base's tokenizer (niah_multikey_3,
# niah_multiquery, qa_1 and qa_2 need 266-296 tokens with an empty haystack).
RULER_TASKS = (
    "niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multikey_2",
    "niah_multivalue", "vt", "cwe", "fwe",
)  # fmt: skip
# Those with phrasing families: the targets compare their held-out and standard scores.
PHRASED = tuple(t for t in RULER_TASKS if t not in ("cwe", "fwe"))


@dataclass(frozen=True)
class TinyBaseSettings:
    """``tables.tiny_base``: batch size, RULER lengths and samples of the score table, and the
    samples of the retrieval targets (at tiny-base's 256-token window)."""

    batch_size: int = 16
    ruler_lengths: tuple[int, ...] = (256, 512, 1024)
    ruler_samples: int = 20
    target_samples: int = 100


def units(s: TinyBaseSettings) -> dict[str, tuple[str, dict[str, Any]]]:
    """name -> (suite, settings): the evaluations of the report, each a cached unit."""

    def ruler(tasks: tuple[str, ...], lengths: list[int], samples: int) -> dict[str, Any]:
        return {"lengths": lengths, "samples": samples,
                "tasks": [f"longred_ruler_{t}" for t in tasks]}  # fmt: skip

    every = ruler(RULER_TASKS, list(s.ruler_lengths), s.ruler_samples)
    targets = ruler(PHRASED, [256], s.target_samples)
    return {
        "short_tiny": ("short_tiny", {}),
        "passkey_standard": ("short_tiny", {"tasks": ["longred_tiny_passkey"],
                                            "phrasing": "standard"}),
        "ruler_standard": ("ruler", every),
        "ruler_heldout": ("ruler", {**every, "phrasing": "heldout"}),
        "targets_standard": ("ruler", targets),
        "targets_heldout": ("ruler", {**targets, "phrasing": "heldout"}),
        "lmeval_niah": ("ruler", {"tasks": ["longred_lmeval_niah_single_1"], "lengths": [256],
                                  "samples": s.target_samples}),
    }  # fmt: skip


def _named_steps(ctx: Context) -> dict[str, Step]:
    from longred_bench.jobs.tiny_base import build_identity
    from longred_bench.reproduce.grid import eval_unit

    out = {}
    for name, (suite, extra) in units(ctx.settings).items():
        unit = {"model": "tiny-base", "base": build_identity("tiny-base"), "rope": None,
                "suite": suite, "batch_size": ctx.settings.batch_size, "device": "cpu", "seed": 0,
                "item_scores": True, **extra}  # fmt: skip
        out[name] = Step(eval_unit(unit), f"eval tiny-base {name}", 0.4,
                         labels={"row": "original"})  # fmt: skip
    return out


def _steps(ctx: Context) -> list[Step]:
    return list(_named_steps(ctx).values())


def _note(ctx: Context) -> str | None:
    from longred_bench.jobs.limits import tiny_base_built

    if tiny_base_built():
        return "tiny-base is built"
    return "tiny-base is built first (about 15 min on 2 CPU cores), then continued 1.5x"


def _write(ctx: Context, records: list[dict[str, Any]], out: Path, report: dict[str, Any]
           ) -> list[Path]:  # fmt: skip
    import json

    from longred_bench.jobs.tiny_base import tiny_base_dir, tiny_base_longer_dir
    from longred_bench.reports.curves import read_metrics
    from longred_bench.reports.tiny_base_report import build_tiny_base_report
    from longred_bench.reproduce.engine import gather
    from longred_bench.results import write_table_records
    from longred_bench.taskdata.tiny_tasks import build, chance_accuracy

    del records  # the report reads the evaluations by name
    run = tiny_base_dir(progress=ctx.progress).parent
    longer = read_metrics(tiny_base_longer_dir(progress=ctx.progress) / "metrics.jsonl")
    evals = {name: gather(ctx, [step]) for name, step in _named_steps(ctx).items()}
    chance = {
        f"longred_tiny_{t}": chance_accuracy(t, build(t))
        for t in ("lastword", "nextsent", "swap", "replace", "passkey")
    }
    info = json.loads((run / "run.json").read_text())
    metrics = read_metrics(run / "metrics.jsonl")
    paths = build_tiny_base_report(
        metrics, longer, info, evals, run / "curves.png", out,
        command=report["command"], chance=chance, phrased=PHRASED, every=RULER_TASKS,
    )  # fmt: skip
    return [*paths, write_table_records(out, "tiny_base", report_records(evals, metrics, longer,
                                                                         info))]  # fmt: skip


def report_records(
    evals: dict[str, list[dict[str, Any]]], metrics: list[dict[str, Any]],
    longer: list[dict[str, Any]], info: dict[str, Any],
) -> list[dict[str, Any]]:  # fmt: skip
    """What the report is built from, as the records committed beside it
    (``tiny_base.jsonl.gz``): each evaluation's records with ``unit`` (its name in
    :func:`units`), each line of the build's and its 1.5x continuation's ``metrics.jsonl``
    (``kind: train_metric``, ``run``: ``build`` or ``longer``, the line as ``metric``) and the
    build's ``run.json`` (``kind: train_run``, as ``info``). The chance levels are the tasks'
    own (``taskdata``), not records."""
    out = [{**r, "unit": name} for name, records in evals.items() for r in records]
    out += [{"kind": "train_metric", "run": run, "metric": m}
            for run, lines in (("build", metrics), ("longer", longer)) for m in lines]  # fmt: skip
    return [*out, {"kind": "train_run", "run": "build", "info": info}]


SPEC = TableSpec(
    "tiny_base", "tiny-base: pretraining curve, convergence check, retrieval targets, scores",
    TinyBaseSettings, _steps, write=_write, note=_note, parallel=False,
)  # fmt: skip
