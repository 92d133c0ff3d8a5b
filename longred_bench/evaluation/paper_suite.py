"""The ``paper_short`` suite: LongReD's 17 short benchmarks as stock lm-eval tasks.

LongReD (arXiv 2502.07365, Table 3) scores short text in five categories (General, Code, Math,
RC, Common) over 17 benchmarks; Short Avg is the mean of the five category means. Only part of
the list is published: MMLU, BBH, LAMBADA (General), HumanEval (Code), SQuAD v2 and DROP (RC),
PIQA (Common) and TriviaQA (its category not stated). Those 8 are marked ``"paper"``; the other 9
complete the list with the usual members of each category and are marked ``"suite"``:

- General: TriviaQA sits here, as in the offline ``short`` suite (``longred_general``).
- Code: MBPP (3-shot, lm-eval's default) beside HumanEval (0-shot).
- Math: GSM8K (5-shot, strict ``#### N`` answers) and MATH as ``minerva_math`` (4-shot, the
  Minerva prompt; the group averages its seven subjects weighted by size).
- RC: BoolQ (0-shot) beside SQuAD v2 (0-shot, F1) and DROP (3-shot, F1).
- Common: HellaSwag, WinoGrande, ARC-Easy, ARC-Challenge and SIQA (``social_iqa``) beside PIQA,
  all 0-shot; HellaSwag and ARC-Challenge read length-normalised accuracy (``acc_norm``).
- Few-shot counts: MMLU 5 and TriviaQA 5 (lm-eval's defaults are 0); BBH 3 (``bbh_fewshot``,
  answer only, lm-eval's default); every other count is the task's lm-eval default.

Every name is a task or group of lm-eval 0.4.13's own index. ``metric`` is the key of the score
in the run's records (lm-eval's ``metric,filter`` with ``,none`` dropped). ``offline`` names the
task of this package's ``tasks/`` registry with the same data and prompt, run from the local
cache; ``longred_squad`` is SQuAD v1.1, so SQuAD v2 has none.

The suite needs the Hugging Face hub (datasets, and the ``squad_v2`` and ``code_eval`` metrics
load at run time): :func:`require_hub` fails at once, in one line, when it cannot be reached.
HumanEval and MBPP execute model-written code: they run only when the user allows it
(``--allow-code-eval``: lm-eval's ``confirm_run_unsafe_code`` and ``HF_ALLOW_CODE_EVAL=1``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from longred_bench.errors import UserError

SUITE = "paper_short"
OFFLINE_SUITE = "short"
CATEGORIES = ("General", "Code", "Math", "RC", "Common")
SOURCES = ("paper", "suite")
CODE_FLAG = "--allow-code-eval"


@dataclass(frozen=True)
class Member:
    """One benchmark of the suite: its ``category``, the lm-eval ``task`` (a task or group
    name), ``num_fewshot``, the record ``metric`` its score is read from, ``source`` (``"paper"``:
    named by LongReD; ``"suite"``: completes the list), the ``offline`` ``tasks/`` equivalent
    (or ``None``), whether it executes model-written code (``runs_code``) and the ``scale``
    that makes its metric a fraction (SQuAD v2's metric reports percentages)."""

    category: str
    task: str
    num_fewshot: int
    metric: str
    source: str
    offline: str | None = None
    runs_code: bool = False
    scale: float = 1.0


MEMBERS: tuple[Member, ...] = (
    Member("General", "mmlu", 5, "acc", "paper", "longred_mmlu"),
    Member("General", "bbh_fewshot", 3, "exact_match", "paper"),
    Member("General", "lambada_openai", 0, "acc", "paper", "longred_lambada_openai"),
    Member("General", "triviaqa", 5, "exact_match,remove_whitespace", "paper", "longred_triviaqa"),
    Member("Code", "humaneval", 0, "pass@1,create_test", "paper", runs_code=True),
    Member("Code", "mbpp", 3, "pass_at_1", "suite", runs_code=True),
    Member("Math", "gsm8k", 5, "exact_match,strict-match", "suite"),
    Member("Math", "minerva_math", 4, "exact_match", "suite"),
    Member("RC", "squadv2", 0, "f1", "paper", scale=0.01),
    Member("RC", "drop", 3, "f1", "paper"),
    Member("RC", "boolq", 0, "acc", "suite", "longred_boolq"),
    Member("Common", "piqa", 0, "acc", "paper", "longred_piqa"),
    Member("Common", "hellaswag", 0, "acc_norm", "suite", "longred_hellaswag"),
    Member("Common", "winogrande", 0, "acc", "suite", "longred_winogrande"),
    Member("Common", "arc_easy", 0, "acc", "suite", "longred_arc_easy"),
    Member("Common", "arc_challenge", 0, "acc_norm", "suite", "longred_arc_challenge"),
    Member("Common", "social_iqa", 0, "acc", "suite"),
)
BY_TASK: dict[str, Member] = {m.task: m for m in MEMBERS}


def task_names() -> tuple[str, ...]:
    """The lm-eval task and group names of the suite, in member order."""
    return tuple(m.task for m in MEMBERS)


def categories(tasks: Iterable[str] | None = None) -> dict[str, tuple[str, ...]]:
    """``{category: (task, ...)}`` for Short Avg, in :data:`CATEGORIES` order; with ``tasks``,
    only those members (a category with none of them is left out)."""
    keep = set(task_names() if tasks is None else tasks)
    out = {c: tuple(m.task for m in MEMBERS if m.category == c and m.task in keep)
           for c in CATEGORIES}  # fmt: skip
    return {c: ts for c, ts in out.items() if ts}


def member_table(tasks: Iterable[str] | None = None) -> list[str]:
    """One line per member (of ``tasks``, default all): category, task, shots, metric, whether
    LongReD names it (``paper``) or it completes the list (``suite``), its offline task."""
    keep = set(task_names() if tasks is None else tasks)
    lines = []
    for m in MEMBERS:
        if m.task in keep:
            offline = m.offline or "-"
            lines.append(f"{m.category:<8} {m.task:<15} {m.num_fewshot}-shot  {m.metric:<30} "
                         f"{m.source:<5}  offline: {offline}")  # fmt: skip
    return lines


def check_selection(tasks: Sequence[str] | None, *, num_fewshot: int | None) -> None:
    """Refuse a ``paper_short`` config that names tasks outside the suite or asks for one
    few-shot count for all."""
    chosen = task_names() if tasks is None else tuple(tasks)
    unknown = [t for t in chosen if t not in BY_TASK]
    if unknown:
        raise UserError(f"{', '.join(unknown)} not in the {SUITE} suite; its tasks: "
                        f"{', '.join(task_names())}")  # fmt: skip
    if num_fewshot is not None:
        raise UserError(f"--num-fewshot is not for the {SUITE} suite: each task runs with its "
                        f"own count (eval --suite {SUITE} --dry-run lists them)")  # fmt: skip


def code_tasks(tasks: Sequence[str] | None) -> list[str]:
    """The members among ``tasks`` (default all) that execute model-written code."""
    return [t for t in (tasks or task_names()) if t in BY_TASK and BY_TASK[t].runs_code]


def check_code_eval(tasks: Sequence[str] | None, allow_code_eval: bool) -> None:
    """Refuse code tasks among ``tasks`` unless the user allowed them (one line, the flag)."""
    code = code_tasks(tasks)
    if code and not allow_code_eval:
        raise UserError(f"{' and '.join(code)} execute model-written code: pass {CODE_FLAG} to "
                        "run them (or --tasks without them)")  # fmt: skip


OFFLINE_HINT = f"--suite {OFFLINE_SUITE} is the offline suite"


def hub_error(why: str, instead: str = OFFLINE_HINT) -> UserError:
    """The one-line error of a ``paper_short`` run without the hub; ``instead``: what runs
    offline."""
    return UserError(f"the {SUITE} suite needs Hugging Face hub access ({why}); {instead}")


def _set(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def require_hub(instead: str = OFFLINE_HINT) -> None:
    """Raise :func:`hub_error` (``instead``: its hint) at once when the hub is off
    (``HF_HUB_OFFLINE`` or ``HF_DATASETS_OFFLINE`` set) or does not answer within seconds."""
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        if _set(name):
            raise hub_error(f"{name} is set", instead)
    from longred_bench.models.loading import hub_unreachable

    why = hub_unreachable()
    if why is not None:
        raise hub_error(why, instead)


def code_eval_allowed() -> bool:
    """Whether the environment allows model-written code to run: ``HF_ALLOW_CODE_EVAL=1``, the
    ``code_eval`` metric's own switch (``reproduce --allow-code-eval`` sets it)."""
    return _set("HF_ALLOW_CODE_EVAL")


def check_code_units(tasks: Sequence[str] | None, where: str) -> None:
    """Refuse the ``paper_short`` units of ``where`` (a profile) when ``tasks`` (default all)
    hold code tasks the environment does not allow (:func:`code_eval_allowed`), in one line."""
    code = code_tasks(tasks)
    if code and not code_eval_allowed():
        raise UserError(f"{where}'s short suite {SUITE} runs {' and '.join(code)}, which execute "
                        f"model-written code: pass {CODE_FLAG} (or set HF_ALLOW_CODE_EVAL=1), "
                        "or list evaluation.short.tasks without them")  # fmt: skip


def check_units(tasks: Sequence[str] | None, where: str) -> None:
    """Before the ``paper_short`` units of ``where`` run: :func:`check_code_units`, then the hub."""
    check_code_units(tasks, where)
    require_hub()


def prepare_run(tasks: Sequence[str] | None, allow_code_eval: bool) -> None:
    """Before a ``paper_short`` run of ``tasks`` (default all) loads anything: refuse code tasks
    not allowed, check the hub, and with ``allow_code_eval`` set ``HF_ALLOW_CODE_EVAL=1`` (the
    ``code_eval`` metric's own switch)."""
    check_code_eval(tasks, allow_code_eval)
    require_hub()
    if allow_code_eval:
        os.environ["HF_ALLOW_CODE_EVAL"] = "1"


def load_tasks(manager: Any, names: list[str]) -> dict[str, Any]:
    """``manager.load(names)``, a dataset or metric that cannot load becoming
    :func:`hub_error` (its first line as the reason)."""
    try:
        return manager.load(names)
    except OSError as exc:  # network, offline mode, missing dataset (ConnectionError is one)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise hub_error(f"loading failed: {first}") from None


def member_of(group_map: Mapping[str, Sequence[str]], names: Iterable[str]) -> dict[str, str]:
    """``{task or group: member}``: every name in the tree under each member of ``names`` (the
    member itself, its subgroups and leaf tasks) mapped to that member (``group_map`` is
    lm-eval's ``{group: [children]}`` of the loaded tasks)."""
    out: dict[str, str] = {}

    def give(name: str, member: str) -> None:
        out[name] = member
        for child in group_map.get(name) or ():
            give(child, member)

    for name in names:
        give(name, name)
    return out


def leaf_fewshot(group_map: Mapping[str, Sequence[str]], names: Iterable[str]) -> dict[str, int]:
    """``{leaf task: num_fewshot}``: each member's count given to every task under it
    (``group_map`` is lm-eval's ``{group: [children]}`` of the loaded tasks)."""
    return {name: BY_TASK[member].num_fewshot
            for name, member in member_of(group_map, names).items()
            if not group_map.get(name)}  # fmt: skip


def record_fields(task: str) -> dict[str, Any]:
    """What a member's records carry besides lm-eval's values: ``category``, ``source``,
    ``headline`` (the metric its score is read from) and ``headline_scale`` (to a fraction);
    empty for a task that is no member."""
    m = BY_TASK.get(task)
    if m is None:
        return {}
    return {"category": m.category, "source": m.source, "headline": m.metric,
            "headline_scale": m.scale}  # fmt: skip
