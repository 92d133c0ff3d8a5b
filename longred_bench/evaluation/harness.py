"""The lm-eval harness around a resolved model: the ``tasks/`` registry run on the model
:func:`longred_bench.evaluation.lm.open_model` resolved (backend, decoding and window chosen
there; :func:`longred_bench.evaluation.run.run_eval` dispatches the ``ppl`` suite elsewhere).

The tasks run through ``lm_eval.simple_evaluate`` with a ``TaskManager`` that knows the repository's
``tasks/`` folder and carries the run's metadata (tokenizer, lengths, samples per length, seed) to
the long-context loaders. Results come back as tidy records, one per (task or group, metric[,
length]), and, on request (``item_scores``), one ``eval_item`` record per scored document and
metric, the values whose mean is the task's score (for bootstrap intervals and paired comparisons).

Suites (``--suite``): ``short`` (the ``longred_short`` group), ``short_tiny``
(``longred_short_tiny``), ``ruler`` (``longred_ruler``: 13 tasks at every ``--lengths``),
``niah`` (``longred_niah``: depth x length grid), ``paper_short`` (LongReD's 17 benchmarks as
stock lm-eval tasks, each with its own few-shot count: :mod:`longred_bench.evaluation.paper_suite`;
needs the hub) and ``ppl`` (long-document perplexity by
position bucket, :mod:`longred_bench.evaluation.ppl`, no lm-eval).

Documents whose requests do not fit the window are never truncated: they are skipped and counted
(:mod:`longred_bench.evaluation.fit_check`); every record carries ``n_over_length``.

Command line::

    longred-bench eval --model M [--rope SPEC] --suite short|short_tiny|ruler|niah|ppl|paper_short
                       [--lengths L ...] [--samples N] [--tasks T ...] [--limit N]
                       [--backend hf|vllm] [--decoding greedy|pcd [--pcd-alpha A ...]] --out DIR

writes ``DIR/eval.jsonl`` (records with provenance), ``DIR/lm_eval_results.json`` (lm-eval's
results, JSON-safe) and ``DIR/eval.md``. The data must be in the cache (``longred-bench data
fetch``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longred_bench.errors import UserError
from longred_bench.evaluation import paper_suite
from longred_bench.evaluation.config import LONG_SUITES, SUITES, EvalConfig
from longred_bench.evaluation.fit_check import FitReport, fitting_documents
from longred_bench.evaluation.items import item_records
from longred_bench.evaluation.lm import EvalModel
from longred_bench.evaluation.ppl import pow2_floor
from longred_bench.evaluation.quiet_output import lm_eval_output
from longred_bench.evaluation.request_db import set_aside_damaged
from longred_bench.evaluation.task_names import by_family, tasks_dir

DEFAULT_TASKS = SUITES["short"]
_HFLM_MAX_GEN_TOKS = 256  # HFLM.max_gen_toks in lm-eval 0.4.13
PCD_WINDOWS = "pcd-windows.json"
"""In a request-cache folder: the PCD local windows its responses were computed with, per run."""


def task_manager(metadata: dict[str, Any] | None = None, names: Iterable[str] | None = None) -> Any:
    """An lm-eval ``TaskManager`` that knows the ``tasks/`` registry and passes ``metadata``.

    With ``names``, a manager of this repository's registry alone when it holds every one of
    them (groups with all their members): indexing lm-eval's own task folder reads some 27,000
    YAML files, seconds on every evaluation. Otherwise (or without ``names``), both."""
    import lm_eval.models  # noqa: F401  (registers hf/vllm before anything else registers models)
    from lm_eval.tasks import TaskManager

    path = str(tasks_dir())
    if names is not None:
        local = TaskManager(include_path=path, include_defaults=False, metadata=metadata)
        if all(_self_contained(local, name) for name in names):
            return local
    return TaskManager(include_path=path, metadata=metadata)


def _self_contained(manager: Any, name: str, depth: int = 0) -> bool:
    """Whether ``manager``'s index holds task or group ``name`` and, for a group, each member
    (read from the group's parsed YAML; anything unexpected counts as not held). A tag never
    counts: lm-eval's own tasks may carry the same tag."""
    entry = manager.task_index.get(name)
    if entry is None or depth > 8 or name in getattr(manager, "all_tags", ()):
        return False
    if name not in manager.all_groups:
        return True
    members = (getattr(entry, "cfg", None) or {}).get("task")
    if isinstance(members, str):
        members = [members]
    if not isinstance(members, list) or not members:
        return False
    return all(isinstance(m, str) and _self_contained(manager, m, depth + 1) for m in members)


def check_tasks(names: Iterable[str], manager: Any) -> list[str]:
    """``names`` as a list, after checking each is a task or group lm-eval knows."""
    names = list(names)
    if not names:
        raise UserError("no tasks given")
    known = set(manager.all_tasks)
    unknown = [n for n in names if n not in known]
    if unknown:
        import difflib

        ours = sorted(n for n in known if n.startswith("longred_"))
        near = [m for n in unknown for m in difflib.get_close_matches(n, sorted(known), n=2)]
        hint = f"; nearest: {', '.join(dict.fromkeys(near))}" if near else ""
        raise UserError(f"unknown lm-eval task(s) {', '.join(unknown)}{hint}; tasks of this "
                        f"repo: {', '.join(by_family(ours))}")  # fmt: skip
    return names


def check_task_names(tasks: Iterable[str] | None) -> None:
    """Before a model loads: each of ``tasks`` (the user's; None: a suite's own, known good) is
    a task or group lm-eval knows, else one line (:func:`check_tasks`). Names of this
    repository's registry alone are checked on its own index, without lm-eval's 27,000 files."""
    if tasks is not None:
        check_tasks(tasks, task_manager(names=list(tasks)))


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
    suite: str = "short",
    over_length: dict[str, int] | None = None,
    extra: dict[str, Any] | None = None,
) -> list[dict[str, Any]]:
    """One record per (task or group, metric) of an lm-eval results dict.

    lm-eval keys metrics as ``"<metric>,<filter>"`` with ``"<metric>_stderr,<filter>"`` beside
    them; the record's ``metric`` is ``<metric>`` for the ``none`` filter and ``<metric>,<filter>``
    otherwise. A metric named by a number (the RULER tasks' per-length scores, ``"4096"``)
    becomes ``metric="score"`` with ``length=4096``; every other record has ``length=None``.
    ``n_samples`` is the number of documents scored (``None`` for groups) and ``n_over_length``
    the number skipped because they do not fit the window (``over_length[task]``, 0 if absent).
    ``group`` is the group the task or group belongs to in this run (``None`` at the top).
    """
    per_task = results.get("results", {})
    n_samples = results.get("n-samples", {})
    n_shot = results.get("n-shot", {})
    parent = {
        child: group
        for group, children in results.get("group_subtasks", {}).items()
        for child in children
    }
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
            length = int(name) if name.isdigit() else None
            metric = "score" if length is not None else name
            records.append(
                {
                    "kind": "eval",
                    "suite": suite,
                    "model": model,
                    "rope": rope,
                    "task": task,
                    "group": parent.get(task),
                    "metric": metric if filt == "none" else f"{metric},{filt}",
                    "length": length,
                    "value": value,
                    "stderr": stderr,
                    "n_samples": counts.get("effective"),
                    "num_fewshot": n_shot.get(task),
                    "limit": limit,
                    "n_over_length": (over_length or {}).get(task, 0),
                    **(extra or {}),
                }
            )
    return records


@dataclass
class EvalResult:
    """What :func:`run_eval` returns: tidy records, lm-eval's results and the fit reports."""

    records: list[dict[str, Any]]
    raw: dict[str, Any] = field(default_factory=dict)
    fits: list[FitReport] = field(default_factory=list)
    samples: dict[str, list[dict[str, Any]]] | None = None  # by task, when cfg.log_samples


def _configure(task: Any, *, num_fewshot: int | None, seed: int, window: int) -> None:
    """Apply the settings ``simple_evaluate`` would apply to ``task``, plus the tiny-window rule.

    Generation tasks keep their own budget unless it does not leave room in the window (only the
    smoke model's 256-token window), where it becomes half the window.
    """
    if num_fewshot is not None and task.get_config("num_fewshot") != 0:
        task.set_config(key="num_fewshot", value=num_fewshot)
    elif task.get_config("num_fewshot") is None:
        task.set_config(key="num_fewshot", value=0)
    task.set_fewshot_seed(seed=seed)
    if task.get_config("output_type") == "generate_until":
        gen = task.get_config("generation_kwargs") or {}
        if int(gen.get("max_gen_toks", _HFLM_MAX_GEN_TOKS)) >= window:
            task.set_config(
                key="generation_kwargs", value={"max_gen_toks": window // 2}, update=True
            )


def _generation_budget(tasks: dict[str, Any]) -> int:
    """The largest ``max_gen_toks`` among the generation tasks (0 without any)."""
    budgets = [
        int((t.get_config("generation_kwargs") or {}).get("max_gen_toks", _HFLM_MAX_GEN_TOKS))
        for t in tasks.values()
        if t.get_config("output_type") == "generate_until"
    ]
    return max(budgets, default=0)


def _group_totals(counts: dict[str, int], group_map: dict[str, list[str]]) -> dict[str, int]:
    """``counts`` per task plus, for every group, the sum over its (nested) members."""
    totals = dict(counts)

    def total(name: str) -> int:
        if name not in totals:
            totals[name] = sum(total(child) for child in group_map.get(name, []))
        return totals[name]

    for group in group_map:
        total(group)
    return totals


def _metadata(model_spec: str, **values: Any) -> dict[str, Any]:
    """The task metadata of a run: the tokenizer spec and every setting that was given."""
    return {"tokenizer": model_spec, **{k: v for k, v in values.items() if v is not None}}


def _count_by_length(
    records: list[dict[str, Any]], tasks: dict[str, Any], fits: list[FitReport]
) -> None:
    """Give each per-length record of a task (RULER's ``score`` at ``length``) the documents
    scored at that length, where lm-eval counts the task's documents over every length."""
    from collections import Counter

    counts: dict[str, Counter] = {}
    for f in fits:
        docs = tasks[f.task].eval_docs if f.task in tasks else None
        if docs is not None and len(docs) and "length" in docs[0]:
            counts[f.task] = Counter(int(docs[i]["length"]) for i in f.fitting)
    for r in records:
        if r["length"] is not None and r["n_samples"] is not None and r["task"] in counts:
            r["n_samples"] = counts[r["task"]].get(r["length"], 0)


class RulerTooShort(UserError):
    """The shortest RULER length asked is too short for some task's first sample with this
    tokenizer; ``fits`` is the smallest RULER length that holds them all. The message names no
    flag: each command adds its own (``eval``: ``--lengths``/``--tasks``; ``reproduce``: the
    profile's keys)."""

    def __init__(self, message: str, length: int, fits: int) -> None:
        super().__init__(message)
        self.length, self.fits = length, fits

    def __reduce__(self) -> tuple:  # a worker process's error keeps its lengths
        return type(self), (str(self), self.length, self.fits)


def _check_ruler_fits(cfg: EvalConfig, names: list[str], length: int) -> None:
    """Every asked RULER task's first sample at the shortest ``length``, before lm-eval builds
    them: one line naming each task that does not fit and the length that holds them all
    (lm-eval stopped at the first, with the length that held that one alone)."""
    from longred_bench.models.loading import load_tokenizer
    from longred_bench.taskdata.ruler.registry import check_fits_all, length_holding, registry_tasks
    from longred_bench.taskdata.ruler.sizing import Misfit

    tokenizer = load_tokenizer(cfg.model)
    try:
        check_fits_all(registry_tasks(names), tokenizer, length, cfg.seed,
                       corpus=cfg.corpus or "brown",
                       phrasing=cfg.phrasing or "standard")  # fmt: skip
    except Misfit as exc:
        raise RulerTooShort(str(exc), length, length_holding(exc.needed)) from None


@dataclass
class _Prepared:
    """An evaluation made ready to run: its lm-eval model, the task manager, the loaded tasks,
    the names asked for and the window."""

    lm: Any
    manager: Any
    tasks: dict[str, Any]
    names: list[str]
    window: int


def _prepare(cfg: EvalConfig, model: EvalModel, batch_size: int | str) -> _Prepared:
    """Load ``cfg``'s tasks and build ``model``'s lm-eval model at the window they need (inside
    ``lm_eval_output``)."""
    suite, lengths = cfg.suite, list(cfg.lengths) if cfg.lengths is not None else None
    if suite in LONG_SUITES and lengths is None:
        lengths = [pow2_floor(model.window)]
    metadata = _metadata(
        cfg.model,
        lengths=sorted(lengths) if lengths else None,
        ruler_samples=cfg.samples if suite == "ruler" else None,
        niah_samples=cfg.samples if suite == "niah" else None,
        depths=list(cfg.depths) if cfg.depths is not None else None,
        corpus=cfg.corpus,
        seed=cfg.seed,
        phrasing=cfg.phrasing,
    )
    wanted = list(cfg.tasks) if cfg.tasks is not None else SUITES[suite]
    manager = task_manager(metadata, wanted)
    names = check_tasks(wanted, manager)
    if suite == "ruler":
        _check_ruler_fits(cfg, names, min(lengths))
    paper = suite == paper_suite.SUITE
    loaded_tasks = paper_suite.load_tasks(manager, names, paper=paper)
    if cfg.max_length is not None:
        window = cfg.max_length
    elif suite in LONG_SUITES:
        window = max(lengths) + _generation_budget(loaded_tasks["tasks"])
    else:
        window = model.window
    shots = paper_suite.leaf_fewshot(loaded_tasks["group_map"], names) if paper else {}
    for name, task in loaded_tasks["tasks"].items():
        _configure(task, num_fewshot=cfg.num_fewshot, seed=cfg.seed, window=window)
        if name in shots:  # the member's own count, a 0 in the task's YAML included
            task.set_config(key="num_fewshot", value=shots[name])
    lm = model.lm(window=window, batch_size=batch_size, seed=cfg.seed)
    return _Prepared(lm, manager, loaded_tasks, names, window)


class WindowTooSmall(UserError):
    """No document of some task fits the evaluated window. ``needed`` is the smallest window
    that admits a document of every task (each task's shortest request, their maximum)."""

    def __init__(self, message: str, *, tasks: list[str], window: int, needed: int) -> None:
        super().__init__(message)
        self.tasks, self.window, self.needed = tasks, window, needed


def check_fits(fits: list[FitReport], window: int) -> None:
    """Raise :class:`WindowTooSmall` (naming each such task's shortest request) when a task has
    no document that fits ``window``."""
    empty = [f for f in fits if not f.fitting]
    if empty:
        needed = max(f.shortest for f in empty)
        each = ", ".join(f"{f.task} ({f.shortest})" for f in empty)
        raise WindowTooSmall(
            f"no document fits the {window}-token window in {each}: the shortest request of each "
            f"(in brackets, tokens) is longer; a window of {needed} tokens holds one of each",
            tasks=[f.task for f in empty], window=window, needed=needed,
        )  # fmt: skip


def suite_fits(cfg: EvalConfig, *, limit: int | None) -> tuple[int, list[FitReport]]:
    """The window ``cfg`` would evaluate at and which of each task's first ``limit`` documents
    fit it, without evaluating anything (``longred-bench models``)."""
    from longred_bench.evaluation.lm import open_model

    with lm_eval_output(quiet=True):
        run = _prepare(cfg, open_model(cfg), cfg.batch_size or 1)
        return run.window, fitting_documents(run.tasks["tasks"], run.lm, limit=limit,
                                             seed=cfg.seed)  # fmt: skip


def run_harness(
    cfg: EvalConfig,
    model: EvalModel,
    *,
    progress: bool = True,
    item_scores: bool = False,
    request_cache: Path | None = None,
) -> EvalResult:
    """Run the lm-eval suite of ``cfg`` on ``model`` (see
    :func:`longred_bench.evaluation.run.run_eval`, which resolves the model)."""
    model_spec, suite, rope, limit = cfg.model, cfg.suite, cfg.rope, cfg.limit
    num_fewshot, backend, seed, decoding = cfg.num_fewshot, cfg.backend, cfg.seed, cfg.decoding
    batch_size: int | str = cfg.batch_size or (1 if backend == "hf" else "auto")
    if request_cache is not None:  # a damaged file is set aside (a warning), not a traceback
        set_aside_damaged(Path(str(request_cache)))
    with lm_eval_output(quiet=not progress):
        import lm_eval

        run = _prepare(cfg, model, batch_size)
        lm, loaded_tasks, window = run.lm, run.tasks, run.window
        if decoding == "pcd" and request_cache is not None:  # its windows, kept as its responses
            from longred_bench.results import config_hash

            run_key = config_hash(cfg.run_settings())
            lm.pcd.keep_windows(Path(str(request_cache)) / PCD_WINDOWS, run=run_key)
        fits = fitting_documents(loaded_tasks["tasks"], lm, limit=limit, seed=seed)
        check_fits(fits, window)
        top = [loaded_tasks["groups"].get(n) or loaded_tasks["tasks"][n] for n in run.names]
        out = lm_eval.simple_evaluate(
            model=lm,
            tasks=top,
            num_fewshot=num_fewshot,
            samples={f.task: f.fitting for f in fits},
            log_samples=suite == "niah" or item_scores or cfg.log_samples,
            task_manager=run.manager,
            use_cache=None if request_cache is None else str(request_cache),
            random_seed=seed,
            numpy_random_seed=seed,
            torch_random_seed=seed,
            fewshot_random_seed=seed,
            confirm_run_unsafe_code=cfg.allow_code_eval,
            verbosity="WARNING" if progress else "ERROR",  # its INFO lines: per task, per pass
        )
        if out is None:
            raise UserError("lm-eval returned no results (not the main process?)")
        raw = _jsonable({k: v for k, v in dict(out).items() if k != "samples"})
        evaluated = model.ran_with(lm)
        model.close(lm)
        extra = {
            "rope_parameters": _jsonable(dict(getattr(evaluated, "rope_parameters", None) or {})),
            "max_position_embeddings": getattr(evaluated, "max_position_embeddings", None),
            "max_length": window,
            "backend": backend,
            "decoding": decoding,
            "dtype": model.dtype,
        }
        if decoding == "pcd":
            extra["pcd"] = lm.pcd.resolved()
        over = _group_totals({f.task: f.over_length for f in fits}, loaded_tasks["group_map"])
        records = tidy_records(
            raw,
            model=model_spec,
            rope=rope,
            limit=limit,
            suite=suite,
            over_length=over,
            extra=extra,
        )
        _count_by_length(records, loaded_tasks["tasks"], fits)
        if decoding == "pcd":
            _undefined_under_pcd(records)
        if suite == "niah":
            from longred_bench.taskdata.niah_grid import niah_cells

            for cell in niah_cells(out["samples"]["longred_niah"]):
                records.append({**cell, "suite": suite, "model": model_spec, "rope": rope, **extra})
        if item_scores:
            records += item_records(
                out["samples"], loaded_tasks["tasks"], suite=suite, model=model_spec, rope=rope
            )
        if suite == paper_suite.SUITE:  # each record names its member (MMLU's subjects: mmlu)
            member = paper_suite.member_of(loaded_tasks["group_map"], run.names)
            for r in records:
                r.update(paper_suite.record_fields(r["task"]), member=member.get(r["task"]))
        samples = None
        if cfg.log_samples:
            from longred_bench.evaluation.samples import sample_records

            samples = sample_records(_jsonable(out["samples"]), decoding=decoding)
        return EvalResult(records, raw, fits, samples)


PERPLEXITY_LIKE = ("perplexity", "bits_per_byte", "byte_perplexity", "word_perplexity")


def _undefined_under_pcd(records: list[dict[str, Any]]) -> None:
    """Perplexity-like metrics of a PCD run lose their value (``None``, with ``not_defined``):
    lm-eval derives them from the request scores, which under PCD are contrasts of two passes,
    not log-probabilities (:mod:`longred_bench.pcd.lm`)."""
    for r in records:
        if str(r.get("metric", "")).split(",")[0] in PERPLEXITY_LIKE:
            r.update(value=None, stderr=None, not_defined="not a probability under PCD")
