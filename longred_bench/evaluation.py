"""Short-context evaluation of a (possibly RoPE-extended) model on the ``tasks/`` registry.

The model is loaded once with :func:`longred_bench.models.load` (so a ``--rope`` extension is
applied to the weights actually evaluated), wrapped in lm-eval's ``HFLM`` as a model instance and
run through ``lm_eval.simple_evaluate`` with a ``TaskManager`` that knows the repository's
``tasks/`` folder. Results come back as tidy records, one per (task or group, metric).

Command line::

    longred-bench eval --model M [--rope SPEC] --suite short [--tasks T ...] [--limit N]
                       [--num-fewshot K] [--batch-size B] [--max-length L] [--device cpu]
                       [--seed S] --out DIR

writes ``DIR/eval.jsonl`` (records with provenance), ``DIR/lm_eval_results.json`` (lm-eval's
results, JSON-safe) and ``DIR/eval.md`` (a task / metric / value table). The default task list is
the ``longred_short`` group, whose subtasks appear as records too. Example (smoke)::

    longred-bench eval --model tiny-random --rope pi:factor=2 \\
        --tasks longred_arc_easy longred_boolq --limit 4 --out runs/eval-smoke

The benchmark data must be in the cache (``longred-bench data fetch --sources benchmarks``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import longred_bench
from longred_bench.errors import UserError

SUITES = ("short",)
DEFAULT_TASKS = ("longred_short",)
_HFLM_MAX_GEN_TOKS = 256  # HFLM.max_gen_toks in lm-eval 0.4.13


def tasks_dir() -> Path:
    """The repository's ``tasks/`` folder (lm-eval YAML registry) next to the package source."""
    path = Path(longred_bench.__file__).resolve().parent.parent / "tasks"
    if not (path / "_longred_short.yaml").is_file():
        raise UserError(
            f"lm-eval task folder {path} not found: `eval` needs a source checkout of "
            "longred-bench (pip install -e .) with its tasks/ folder"
        )
    return path


def task_manager() -> Any:
    """An lm-eval ``TaskManager`` that knows the ``tasks/`` registry."""
    import lm_eval.models  # noqa: F401  (registers hf/vllm before anything else registers models)
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(tasks_dir()))


def check_tasks(names: Iterable[str], manager: Any) -> list[str]:
    """``names`` as a list, after checking each is a task or group lm-eval knows."""
    names = list(names)
    if not names:
        raise UserError("no tasks given")
    known = set(manager.all_tasks)
    unknown = [n for n in names if n not in known]
    if unknown:
        ours = sorted(n for n in known if n.startswith("longred_"))
        raise UserError(
            f"unknown lm-eval task(s) {', '.join(unknown)}; tasks of this repo: {', '.join(ours)}"
        )
    return names


def _jsonable(obj: Any) -> Any:
    """``obj`` round-tripped through JSON (non-serialisable leaves become strings, NaN stays)."""
    from lm_eval.utils import handle_non_serializable

    return json.loads(json.dumps(obj, default=handle_non_serializable))


def _float_or_none(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out


def tidy_records(
    results: dict[str, Any],
    *,
    model: str,
    rope: str | None,
    limit: int | None,
    extra: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One record per (task or group, metric) of an lm-eval results dict.

    lm-eval keys metrics as ``"<metric>,<filter>"`` with ``"<metric>_stderr,<filter>"`` beside
    them; the record's ``metric`` is ``<metric>`` for the ``none`` filter and ``<metric>,<filter>``
    otherwise. ``n_samples`` is the number of documents scored (``None`` for groups).
    """
    per_task = results.get("results", {})
    n_samples = results.get("n-samples", {})
    n_shot = results.get("n-shot", {})
    records: list[dict[str, Any]] = []
    for task in sorted(per_task):
        metrics = per_task[task]
        for key in sorted(metrics):
            if "," not in key:
                continue
            name, filt = key.split(",", 1)
            if name.endswith("_stderr"):
                continue
            value = _float_or_none(metrics[key])
            if value is None:
                continue
            stderr = _float_or_none(metrics.get(f"{name}_stderr,{filt}"))
            if stderr is not None and math.isnan(stderr):
                stderr = None
            counts = n_samples.get(task) or {}
            records.append(
                {
                    "kind": "short_eval",
                    "model": model,
                    "rope": rope,
                    "task": task,
                    "metric": name if filt == "none" else key,
                    "value": value,
                    "stderr": stderr,
                    "n_samples": counts.get("effective"),
                    "num_fewshot": n_shot.get(task),
                    "limit": limit,
                    **(extra or {}),
                }
            )
    return records


def run_short_eval(
    model_spec: str,
    *,
    rope: str | None = None,
    tasks: list[str] | None = None,
    limit: int | None = None,
    num_fewshot: int | None = None,
    batch_size: int = 1,
    max_length: int | None = None,
    device: str = "cpu",
    seed: int = 0,
    progress: bool = True,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Evaluate ``model_spec`` (optionally RoPE-extended by ``rope``) on lm-eval ``tasks``.

    Returns the tidy records (see :func:`tidy_records`; each also carries the evaluated model's
    ``rope_parameters`` and the ``max_length`` used) and lm-eval's results dict made
    JSON-serialisable. ``max_length`` defaults to the evaluated model's
    ``max_position_embeddings``, i.e. the extended window when ``rope`` is given. ``num_fewshot``
    ``None`` keeps each task's own setting. Generation tasks keep lm-eval's 256-token budget
    unless the window is at most 256 tokens, where it becomes half the window.
    """
    import lm_eval
    from lm_eval.models.huggingface import HFLM

    from longred_bench.models import load

    manager = task_manager()
    tasks = check_tasks(tasks if tasks is not None else DEFAULT_TASKS, manager)
    if limit is not None and limit < 1:
        raise UserError(f"--limit must be at least 1, got {limit}")
    if batch_size < 1:
        raise UserError(f"--batch-size must be at least 1, got {batch_size}")

    loaded = load(model_spec, rope=rope, device=device)
    config = loaded.model.config
    window = int(max_length or getattr(config, "max_position_embeddings", 0) or 2048)
    lm = HFLM(
        pretrained=loaded.model,
        tokenizer=loaded.tokenizer,
        max_length=window,
        batch_size=batch_size,
        device=device,
    )
    # HFLM reserves 256 new tokens for generation tasks and fails when the window is not larger;
    # only such tiny windows (the smoke model's) get half the window instead.
    gen_kwargs = {"max_gen_toks": window // 2} if window <= _HFLM_MAX_GEN_TOKS else None
    out = lm_eval.simple_evaluate(
        model=lm,
        gen_kwargs=gen_kwargs,
        tasks=tasks,
        num_fewshot=num_fewshot,
        limit=limit,
        log_samples=False,
        task_manager=manager,
        random_seed=seed,
        numpy_random_seed=seed,
        torch_random_seed=seed,
        fewshot_random_seed=seed,
        verbosity="INFO" if progress else "ERROR",
    )
    if out is None:
        raise UserError("lm-eval returned no results (not the main process?)")
    raw = _jsonable({k: v for k, v in dict(out).items() if k != "samples"})
    evaluated = lm.model.config
    extra = {
        "rope_parameters": _jsonable(dict(getattr(evaluated, "rope_parameters", None) or {})),
        "max_position_embeddings": getattr(evaluated, "max_position_embeddings", None),
        "max_length": window,
    }
    records = tidy_records(raw, model=model_spec, rope=rope, limit=limit, extra=extra)
    return records, raw


def eval_markdown(records: list[dict[str, Any]], title: str) -> str:
    """A Markdown table task / metric / value (± stderr) / n of evaluation records."""
    lines = [f"# {title}", "", "| task | metric | value | stderr | n |", "|---|---|---:|---:|---:|"]
    for r in records:
        stderr = "" if r.get("stderr") is None else f"{r['stderr']:.4f}"
        n = "" if r.get("n_samples") is None else str(r["n_samples"])
        lines.append(f"| {r['task']} | {r['metric']} | {r['value']:.4f} | {stderr} | {n} |")
    return "\n".join(lines) + "\n"
