"""The RULER task registry and the sample generator.

:func:`generate` makes ``num_samples`` samples of a task, each fitted to ``length`` tokens of the
given tokenizer (see :mod:`longred_bench.taskdata.ruler.sizing`). Sample ``i`` draws from a random
generator seeded by ``(task, length, seed, i)``; QA samples also take their questions in a
seeded order, one after the other, so the first ``k`` samples of a call do not depend on how
many more are asked for.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from longred_bench.errors import UserError
from longred_bench.taskdata.ruler import haystack, niah, qa, synthetic
from longred_bench.taskdata.ruler.phrasings import check_phrasing
from longred_bench.taskdata.ruler.scoring import SCORERS, score_any
from longred_bench.taskdata.ruler.sizing import Draft, Misfit, Sample, fit

Builder = Callable[[str, random.Random, int, int, str, dict], Iterator[Draft]]


def _niah(task, rng, length, seed, corpus, state):
    return niah.build(
        task, rng, length, corpus, state.get("phrasing", "standard"), state.get("depth")
    )


def _qa(task, rng, length, seed, corpus, state):
    return qa.build(task, rng, length, seed, state)


BUILDERS: dict[str, Builder] = {name: _niah for name in niah.CONFIGS}
BUILDERS["vt"] = lambda task, rng, length, seed, corpus, state: synthetic.build_vt(
    rng, length, state.get("phrasing", "standard")
)
BUILDERS["cwe"] = lambda task, rng, length, seed, corpus, state: synthetic.build_cwe(
    rng, length, corpus
)
BUILDERS["fwe"] = lambda task, rng, length, seed, corpus, state: synthetic.build_fwe(rng, length)
BUILDERS["qa_1"] = _qa
BUILDERS["qa_2"] = _qa

TASKS: tuple[str, ...] = tuple(BUILDERS)
TASK_METRIC: dict[str, str] = {task: "any" if task in qa.DATASETS else "all" for task in TASKS}
# Tasks whose references count only as whole words (scoring.score_any): DROP's short numbers.
WHOLE_WORD_TASKS = frozenset(t for t, name in qa.DATASETS.items() if name == "drop")


LENGTHS: tuple[int, ...] = tuple(2**k for k in range(8, 18))  # 256 .. 131072: lm-eval metrics


def check_lengths(lengths: Iterable[int]) -> None:
    """Raise :class:`UserError` unless every length is one of :data:`LENGTHS` (each length is
    one lm-eval metric of the RULER tasks)."""
    lengths = list(lengths)
    odd = [n for n in lengths if n not in LENGTHS]
    if odd or not lengths:
        nearest = ", ".join(f"{n} -> {min(LENGTHS, key=lambda x: abs(x - n))}" for n in odd)
        raise UserError(
            f"RULER lengths {odd or lengths!r} not supported: use powers of two from "
            f"{LENGTHS[0]} to {LENGTHS[-1]} (one lm-eval metric per length)"
            + (f"; nearest: {nearest}" if nearest else "")
        )


def check_task(task: str) -> None:
    """Raise :class:`UserError` for an unknown task name."""
    if task not in BUILDERS:
        raise UserError(f"unknown RULER task {task!r}; tasks: {', '.join(TASKS)}")


def score(task: str, prediction: str, references: tuple[str, ...] | list[str]) -> float:
    """Score a prediction with the task's metric (0-100)."""
    check_task(task)
    if task in WHOLE_WORD_TASKS:
        return score_any(prediction, references, whole_words=True)
    return SCORERS[TASK_METRIC[task]](prediction, references)


def preload(task: str, corpus: str = "brown") -> None:
    """Load the data a task reads (corpus words, vocabulary, QA files) into memory."""
    check_task(task)
    if task in qa.DATASETS:
        qa.load(task)
    elif task not in ("vt", "fwe"):
        haystack.vocabulary(corpus)


PHRASED_TASKS: tuple[str, ...] = (*niah.CONFIGS, "vt")  # the tasks with phrasing families


def check_phrasing_for(task: str, phrasing: str) -> None:
    """Raise :class:`UserError` unless ``phrasing`` is a family and ``task`` takes it (the NIAH
    tasks and ``vt`` have phrasing families)."""
    check_phrasing(phrasing)
    if phrasing != "standard" and task not in PHRASED_TASKS:
        raise UserError(
            f"phrasing {phrasing!r} is for the NIAH tasks and vt ({', '.join(PHRASED_TASKS)}); "
            f"{task} has RULER's phrasing only"
        )


def generate(
    task: str,
    tokenizer: Any,
    length: int,
    num_samples: int,
    seed: int,
    *,
    corpus: str = "brown",
    phrasing: str = "standard",
    depths: Sequence[float] = (),
) -> list[Sample]:
    """``num_samples`` samples of ``task``, each as close to ``length`` tokens as fits, in
    RULER's strings or a phrasing family's (:mod:`longred_bench.taskdata.ruler.phrasings`).
    ``depths`` (percent; single-needle NIAH tasks) puts sample ``i``'s needle at
    ``depths[i % len(depths)]``, so the samples of every length have the same depths."""
    check_task(task)
    check_phrasing_for(task, phrasing)
    check_depths(task, depths)
    if length < 1 or num_samples < 0:
        raise UserError(f"length must be >= 1 and num_samples >= 0 (got {length}, {num_samples})")
    samples = []
    # Shared by the samples of this call (QA: which questions are taken; NIAH, vt: the phrasing).
    state: dict = {"phrasing": phrasing}
    for index in range(num_samples):
        state["depth"] = float(depths[index % len(depths)]) if depths else None
        samples.append(_sample(task, tokenizer, length, seed, index, corpus, state))
    return samples


def check_depths(task: str, depths: Sequence[float]) -> None:
    """Raise :class:`UserError` unless ``depths`` are percents for a NIAH task (or empty)."""
    if not depths:
        return
    if task not in niah.CONFIGS:
        raise UserError(f"fixed needle depths are for the NIAH tasks, not {task!r}")
    check_depth_percents(depths)


def check_depth_percents(depths: Sequence[float], what: str = "needle depths") -> None:
    """Raise :class:`UserError` (naming ``what``) unless every depth is a percent in [0, 100]."""
    bad = [d for d in depths if not 0 <= float(d) <= 100]
    if bad:
        raise UserError(f"{what} are percents in [0, 100], got {bad}")


REDRAWS = 8  # fresh draws of a sample whose drawn words leave no room at a small length


def _sample(
    task: str,
    tokenizer: Any,
    length: int,
    seed: int,
    index: int,
    corpus: str,
    state: dict,
    *,
    first_misfit: bool = False,
) -> Sample:
    """Sample ``index``: the first draft that fits. Where none does (at the smallest lengths a
    draw of long words can leave no room, e.g. ``cwe``'s ten common words at 256 tokens), the
    sample is drawn again from a seed of its own, up to :data:`REDRAWS` times; the metadata of
    a redrawn sample records which draw it is (``redraw``). ``first_misfit``: raise the first
    draft's :class:`Misfit` at once, the one raised after every draft and redraw failed."""
    misfit: Misfit | None = None
    for redraw in range(REDRAWS + 1):
        name = f"ruler/{task}/{length}/{seed}/{index}" + (f"/redraw{redraw}" if redraw else "")
        if state.get("phrasing", "standard") != "standard":
            name += f"/{state['phrasing']}"
        rng = random.Random(name)
        for draft in BUILDERS[task](task, rng, length, seed, corpus, state):
            try:
                units, rendered, tokens = fit(
                    draft, tokenizer, length, TASK_METRIC[task], task=task
                )
            except Misfit as error:
                if first_misfit:
                    raise
                misfit = misfit or error
                continue
            metadata = dict(rendered.metadata, haystack_units=units, seed=seed, corpus=corpus)
            if state.get("phrasing", "standard") != "standard":
                metadata["phrasing"] = state["phrasing"]
            if redraw:
                metadata["redraw"] = redraw
            return Sample(task, length, index, rendered.prompt, rendered.outputs, tokens, metadata)
    raise misfit or UserError(f"RULER task {task!r}: no sample fits in {length} tokens")


def generation_rate(
    task: str, tokenizer: Any, length: int, n: int, *, seed: int = 0, corpus: str = "brown"
) -> float:
    """Samples generated per second (data already loaded, so only generation is timed)."""
    preload(task, corpus)
    start = time.perf_counter()
    generate(task, tokenizer, length, n, seed, corpus=corpus)
    return n / max(time.perf_counter() - start, 1e-9)


def length_holding(tokens: int) -> int:
    """The smallest RULER length (of :data:`LENGTHS`, past them the next power of two) that
    holds ``tokens`` tokens."""
    return min((n for n in LENGTHS if n >= tokens), default=1 << (tokens - 1).bit_length())


def registry_tasks(names: Iterable[str]) -> list[str]:
    """The RULER tasks of lm-eval task names (``longred_ruler``: all of them;
    ``longred_ruler_<task>``: that one; any other name: none), each once, in order."""
    prefix = "longred_ruler_"
    return list(dict.fromkeys(t for n in names for t in (TASKS if n == "longred_ruler" else
                [n.removeprefix(prefix)] if n.startswith(prefix) else [])))  # fmt: skip


def least_misfit(
    task: str, tokenizer: Any, seed: int, *, corpus: str = "brown", phrasing: str = "standard"
) -> None:
    """Raise the :class:`Misfit` that :func:`generate` raises for ``task``'s first sample at
    length 1 (its ``needed``: the first draft's prompt with an empty haystack plus the answer),
    from the first draft alone: ``generate`` tries every draft and redraw first (a QA task
    shuffles its distractor pools for each of 450, a second and a half)."""
    check_task(task)
    check_phrasing_for(task, phrasing)
    _sample(task, tokenizer, 1, seed, 0, corpus, {"phrasing": phrasing, "depth": None},
            first_misfit=True)  # fmt: skip


def check_fits_all(
    tasks: Sequence[str],
    tokenizer: Any,
    length: int,
    seed: int,
    *,
    corpus: str = "brown",
    phrasing: str = "standard",
) -> None:
    """Raise one :class:`Misfit` naming every task of ``tasks`` whose least sample (its prompt
    with an empty haystack plus the answer) does not fit ``length`` tokens (the run's shortest
    length) with ``tokenizer``, each with the tokens it needs, and the smallest RULER length
    that holds them all; a run stopped at the first such task, with the length that held that
    one alone (often too small for the next). Cheap: a task's least sample is measured from its
    first draft at one token (:func:`least_misfit`; no haystack is searched), and only a task
    that this finds too long is generated at ``length`` (its run's first sample, which the run
    would have stopped at), so a task is named only where the run would stop on it."""
    needs: dict[str, int] = {}
    for task in tasks:
        own = phrasing if task in PHRASED_TASKS else "standard"
        try:  # a cheap measure: the first draft's least tokens (the draws differ by length)
            least_misfit(task, tokenizer, seed, corpus=corpus, phrasing=own)
        except Misfit as least:
            if least.needed <= length:
                continue  # fits, as far as this check can tell
        try:  # the run's own first sample
            generate(task, tokenizer, length, 1, seed, corpus=corpus, phrasing=own)
        except Misfit as error:
            if error.needed > length or error.needed == 0:  # 0: no sample fits, of unknown need
                needs[task] = error.needed or length + 1  # (fwe: none unambiguous): the run
    if needs:  # stopped on it after the tasks before it
        most = max(needs.values())
        each = ", ".join(f"{t} {n if n > length + 1 else f'more than {length}'}"
                         for t, n in sorted(needs.items(), key=lambda kv: -kv[1]))  # fmt: skip
        fits = length_holding(most)
        raise Misfit(f"RULER at length {length}: {len(needs)} task(s) need more tokens with "
                     f"this tokenizer ({each}; each its prompt with an empty haystack plus the "
                     f"answer): the smallest RULER length that holds them all is {fits}",
                     most)  # fmt: skip
