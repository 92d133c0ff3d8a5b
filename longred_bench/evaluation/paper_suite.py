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

Without the hub, the nine members with an offline task run through it, each with its own
few-shot count and metric (the offline tasks report every member's metric), when the user asks
(``--offline-members``, :func:`offline_tasks`): a selection is then those offline task names,
and a run is all hub members or all offline tasks, never both (:func:`check_selection`), so no
result mixes the two. Such a run's records name the task run for each member in ``member`` and
``ran_task`` (``longred_piqa``), ``ran_via="offline"``, and the member in ``benchmark``; its
Short Avg is over those members only, not comparable to the paper's 17.
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
BY_OFFLINE: dict[str, Member] = {m.offline: m for m in MEMBERS if m.offline is not None}
OFFLINE_FLAG = "--offline-members"


def member(name: str) -> Member | None:
    """The member ``name`` runs: its lm-eval task or its offline task (``None``: neither)."""
    return BY_TASK.get(name) or BY_OFFLINE.get(name)


def runs_offline(tasks: Sequence[str] | None) -> bool:
    """Whether a selection ``tasks`` runs offline: every name an offline task (``None``, the
    default, is the 17 through the hub)."""
    return bool(tasks) and all(t in BY_OFFLINE for t in tasks or ())


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


_TABLE_WIDTH = 80 + max(len(m.offline or "") for m in MEMBERS)  # where ``runs:`` starts


def member_table(
    tasks: Iterable[str] | None = None, where: Mapping[str, str] | None = None
) -> list[str]:
    """One line per member (of ``tasks``, default all; lm-eval or offline names): category,
    task, shots, metric, whether LongReD names it (``paper``) or it completes the list
    (``suite``), its offline task and, with ``where`` (``{member task: text}``), how it runs."""
    keep = set(task_names() if tasks is None else tasks)
    lines = []
    for m in MEMBERS:
        if m.task in keep or m.offline in keep:
            offline = m.offline or "-"
            line = (f"{m.category:<8} {m.task:<15} {m.num_fewshot}-shot  {m.metric:<30} "
                    f"{m.source:<5}  offline: {offline}")  # fmt: skip
            if where is not None and m.task in where:
                line = f"{line:<{_TABLE_WIDTH}}  runs: {where[m.task]}"
            lines.append(line)
    return lines


def check_selection(tasks: Sequence[str] | None, *, num_fewshot: int | None) -> None:
    """Refuse a ``paper_short`` config that names tasks outside the suite or asks for one
    few-shot count for all."""
    chosen = task_names() if tasks is None else tuple(tasks)
    unknown = [t for t in chosen if member(t) is None]
    if unknown:
        raise UserError(f"{', '.join(unknown)} not in the {SUITE} suite; its tasks: "
                        f"{', '.join(task_names())}")  # fmt: skip
    offline = [t for t in chosen if t in BY_OFFLINE]
    if offline and len(offline) < len(chosen):
        hub = [t for t in chosen if t not in BY_OFFLINE]
        raise UserError(f"{', '.join(offline)} run offline and {', '.join(hub)} through the hub: "
                        f"one {SUITE} run is one or the other, never both ({OFFLINE_FLAG} runs "
                        "the members that have an offline task offline)")  # fmt: skip
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
        them = "them" if len(code) > 1 else "it"
        raise UserError(f"{' and '.join(code)} {_execute(code)} model-written code: pass "
                        f"{CODE_FLAG} to run {them} (or --tasks without {them})")  # fmt: skip


def _execute(code: list[str]) -> str:
    """The verb of the code tasks ``code``: ``execute``, or ``executes`` for one."""
    return "executes" if len(code) == 1 else "execute"


OFFLINE_HINT = f"--suite {OFFLINE_SUITE} is the offline suite"


def hub_error(why: str, instead: str = OFFLINE_HINT) -> UserError:
    """The one-line error of a ``paper_short`` run without the hub; ``instead``: what runs
    offline."""
    return UserError(f"the {SUITE} suite needs Hugging Face hub access ({why}); {instead}")


def offline_hint(tasks: Sequence[str] | None) -> str:
    """The hint of ``eval``'s hub error for ``tasks`` (default all): :data:`OFFLINE_FLAG` where
    some of them have an offline task, then :data:`OFFLINE_HINT`."""
    have, _ = offline_split(tasks)
    if not have:
        return OFFLINE_HINT
    names = ", ".join(m.task for m in have)
    return f"{OFFLINE_FLAG} runs {names} without it, through their offline tasks; {OFFLINE_HINT}"


def _set(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def hub_missing() -> str | None:
    """Why the hub cannot serve the suite (``HF_HUB_OFFLINE`` or ``HF_DATASETS_OFFLINE`` set,
    or no answer within seconds), or ``None`` when it answers."""
    for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"):
        if _set(name):
            return f"{name} is set"
    from longred_bench.models.loading import hub_unreachable

    return hub_unreachable()


def require_hub(instead: str = OFFLINE_HINT) -> None:
    """Raise :func:`hub_error` (``instead``: its hint) at once when the hub is off
    (:func:`hub_missing`)."""
    why = hub_missing()
    if why is not None:
        raise hub_error(why, instead)


def offline_split(tasks: Sequence[str] | None) -> tuple[list[Member], list[Member]]:
    """The members of ``tasks`` (default all; lm-eval or offline names, checked by
    :func:`check_selection`) that have an offline task, and those that need the hub."""
    check_selection(tasks, num_fewshot=None)
    chosen = {m.task for m in (member(t) for t in tasks or task_names()) if m is not None}
    picked = [m for m in MEMBERS if m.task in chosen]
    return [m for m in picked if m.offline], [m for m in picked if not m.offline]


def offline_tasks(tasks: Sequence[str] | None) -> tuple[str, ...]:
    """What :data:`OFFLINE_FLAG` runs of ``tasks`` (default all): the offline task of each
    member that has one, in member order; :func:`hub_error` when none has."""
    have, need = offline_split(tasks)
    if not have:
        names = ", ".join(m.task for m in need)
        raise hub_error(f"none of {names} has an offline task")
    return tuple(str(m.offline) for m in have)


def _in_categories(members: Sequence[Member]) -> str:
    """``"N member(s) in C categories"``."""
    cats = len({m.category for m in members})
    return f"{len(members)} member(s) in {cats} categor{'y' if cats == 1 else 'ies'}"


def offline_line(tasks: Sequence[str] | None) -> str:
    """The line an offline run of ``tasks`` (default all) prints before it runs: the members
    it runs offline, those it skips (they need the hub) and what its Short Avg is then."""
    have, need = offline_split(tasks)
    ran = ", ".join(f"{m.task} as {m.offline}" for m in have)
    skipped = ", ".join(m.task for m in need) or "none"
    return (f"{SUITE} offline: runs {len(have)} member(s) through their offline tasks ({ran}); "
            f"skips {len(need)} member(s) that need the Hugging Face hub ({skipped}); "
            f"Short Avg is over these {_in_categories(have)} only, not comparable to the "
            "paper's 17")  # fmt: skip


def run_modes(tasks: Sequence[str] | None, *, offline: bool, hub_why: str | None) -> dict[str, str]:
    """``{member task: how it runs}`` for the dry-run of ``tasks`` (default all): offline or
    skipped in an ``offline`` run; otherwise through the hub, or not here (``hub_why``: why the
    hub is missing, ``None`` when it answers)."""
    have, need = offline_split(tasks)
    if offline:
        return {**{m.task: f"offline ({m.offline})" for m in have},
                **{m.task: "skipped (needs the hub)" for m in need}}  # fmt: skip
    if hub_why is None:
        return {m.task: "through the hub" for m in (*have, *need)}
    return {**{m.task: f"not here (no hub); {OFFLINE_FLAG}: offline ({m.offline})"
               for m in have},
            **{m.task: "not here (no hub)" for m in need}}  # fmt: skip


def dry_run_lines(
    tasks: Sequence[str] | None, *, offline: bool, allow_code_eval: bool, hub_why: str | None
) -> list[str]:
    """What ``eval --suite paper_short --dry-run`` prints after the config: the members of
    ``tasks`` (the user's ``--tasks``, default all), each with how it runs here
    (:func:`run_modes`), then the line an ``offline`` run prints, or the code opt-in."""
    chosen = tasks or task_names()
    hub = "not used" if offline else ("reachable" if hub_why is None else f"missing: {hub_why}")
    lines = [f"{SUITE}: {len(chosen)} task(s); paper = named by LongReD, suite = completes its "
             f"17; Hugging Face hub {hub}",
             *member_table(chosen, run_modes(tasks, offline=offline, hub_why=hub_why))]  # fmt: skip
    if offline:
        lines.append(offline_line(tasks))
    else:
        code = code_tasks(tasks)
        if code and not allow_code_eval:
            lines.append(f"{' and '.join(code)} run only with {CODE_FLAG}")
    return lines


def report_lines(tasks: Sequence[str] | None) -> list[str]:
    """The members block of a run's ``eval.md`` (``tasks``: what ran, default all): each
    member with how it ran (:func:`run_modes`) and, for an offline run, what its Short Avg is."""
    offline = runs_offline(tasks)
    lines = member_table(tasks or task_names(), run_modes(tasks, offline=offline, hub_why=None))
    if offline:
        have, _ = offline_split(tasks)
        lines.append(f"run offline: Short Avg is over these {_in_categories(have)} only, not "
                     f"comparable to the paper's 17; the other {len(MEMBERS) - len(have)} did "
                     "not run")  # fmt: skip
    return lines


def code_eval_allowed() -> bool:
    """Whether the environment allows model-written code to run: ``HF_ALLOW_CODE_EVAL=1``, the
    ``code_eval`` metric's own switch (``reproduce --allow-code-eval`` sets it)."""
    return _set("HF_ALLOW_CODE_EVAL")


def check_code_units(tasks: Sequence[str] | None, where: str) -> None:
    """Refuse the ``paper_short`` units of ``where`` (a profile) when ``tasks`` (default all)
    hold code tasks the environment does not allow (:func:`code_eval_allowed`), in one line."""
    code = code_tasks(tasks)
    if code and not code_eval_allowed():
        raise UserError(f"{where}'s short suite {SUITE} runs {' and '.join(code)}, which "
                        f"{_execute(code)} model-written code: pass {CODE_FLAG} (or set "
                        "HF_ALLOW_CODE_EVAL=1), or list evaluation.short.tasks without "
                        "them")  # fmt: skip


def check_units(tasks: Sequence[str] | None, where: str) -> None:
    """Before the ``paper_short`` units of ``where`` run: :func:`check_code_units`, then the hub."""
    check_code_units(tasks, where)
    if not runs_offline(tasks):
        require_hub()


def prepare_run(
    tasks: Sequence[str] | None, allow_code_eval: bool, instead: str = OFFLINE_HINT
) -> None:
    """Before a ``paper_short`` run of ``tasks`` (default all) loads anything: refuse code tasks
    not allowed, check the hub (``instead``: the hint of its error; not for an offline run,
    :func:`runs_offline`), and with ``allow_code_eval`` set ``HF_ALLOW_CODE_EVAL=1`` (the
    ``code_eval`` metric's own switch)."""
    check_code_eval(tasks, allow_code_eval)
    if not runs_offline(tasks):
        require_hub(instead)
    if allow_code_eval:
        os.environ["HF_ALLOW_CODE_EVAL"] = "1"


def load_tasks(manager: Any, names: list[str], *, paper: bool = True) -> dict[str, Any]:
    """``manager.load(names)``, a dataset or metric that cannot load becoming one line (its
    first line as the reason): :func:`hub_error` for this suite's (``paper``), else one naming
    the tasks (a stock lm-eval task offline: it was a traceback after lm-eval's retries);
    this suite's offline tasks' own errors stay theirs."""
    if paper and runs_offline(names):
        return manager.load(names)
    try:
        return manager.load(names)
    except OSError as exc:  # network, offline mode, missing dataset (ConnectionError is one)
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        if paper:
            raise hub_error(f"loading failed: {first}") from None
        raise UserError(
            f"the data of task(s) {', '.join(names)} could not be loaded ({first}): lm-eval's "
            "stock tasks read theirs from the Hugging Face hub or its local datasets cache; "
            f"--suite {OFFLINE_SUITE} is the offline suite"
        ) from None


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
    counts = {}
    for name, top in member_of(group_map, names).items():
        m = member(top)
        if m is not None and not group_map.get(name):
            counts[name] = m.num_fewshot
    return counts


def ran_fields(ran: str | None) -> dict[str, Any]:
    """Which task ran for a member, for every record under it (``ran``: the task or group run
    for the member, the record's ``member``): ``benchmark`` (the member's lm-eval name),
    ``ran_task`` and ``ran_via`` (``"hub"`` or ``"offline"``); empty for no member."""
    m = None if ran is None else member(ran)
    if m is None:
        return {}
    return {"benchmark": m.task, "ran_task": ran,
            "ran_via": "offline" if ran in BY_OFFLINE else "hub"}  # fmt: skip


def record_fields(task: str) -> dict[str, Any]:
    """What a member's records carry besides lm-eval's values: ``category``, ``source``,
    ``headline`` (the metric its score is read from), ``headline_scale`` (to a fraction) and
    :func:`ran_fields`; ``task`` is the member's lm-eval or offline task, empty for any other."""
    m = member(task)
    if m is None:
        return {}
    return {"category": m.category, "source": m.source, "headline": m.metric,
            "headline_scale": m.scale, **ran_fields(task)}  # fmt: skip
