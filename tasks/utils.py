"""Dataset loaders for the ``longred_*`` lm-eval tasks (``custom_dataset: !function ...``).

lm-eval calls a task's ``custom_dataset`` with the task's ``metadata`` and ``dataset_kwargs`` as
keyword arguments; the loaders read the offline cache through
:mod:`longred_bench.taskdata.short_benchmarks` (so nothing depends on the working directory) and
ignore the metadata keys (``version`` and whatever a run passes with ``--metadata``). A missing
cache raises :class:`longred_bench.errors.UserError` naming ``longred-bench data fetch --sources
benchmarks``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lm_eval.api.samplers import ContextSampler

from longred_bench.taskdata import short_benchmarks as benchmarks

Splits = benchmarks.Splits


def load_arc_easy(**metadata: Any) -> Splits:
    """ARC-Easy validation."""
    return benchmarks.load_arc("easy")


def load_arc_challenge(**metadata: Any) -> Splits:
    """ARC-Challenge validation."""
    return benchmarks.load_arc("challenge")


def load_piqa(**metadata: Any) -> Splits:
    """PIQA validation."""
    return benchmarks.load_piqa()


def load_boolq(**metadata: Any) -> Splits:
    """BoolQ validation."""
    return benchmarks.load_boolq()


def load_hellaswag(**metadata: Any) -> Splits:
    """HellaSwag validation, preprocessed."""
    return benchmarks.load_hellaswag()


def load_winogrande(**metadata: Any) -> Splits:
    """WinoGrande (xl) validation in partial-scoring form."""
    return benchmarks.load_winogrande()


def load_mmlu(**metadata: Any) -> Splits:
    """Every MMLU subject: ``test`` (scored) and ``dev`` (few-shot examples)."""
    return benchmarks.load_mmlu_all()


class MMLUSubjectSampler(ContextSampler):
    """Few-shot examples for MMLU: the first ``n`` dev rows of the evaluated row's subject.

    lm-eval's MMLU is one task per subject with a ``first_n`` sampler over that subject's dev
    split; with all subjects in one task the sampler needs the evaluated row, which lm-eval
    passes only when the few-shot split is the test split. So ``longred_mmlu`` names ``test``
    as its few-shot split and this sampler reads the dev rows itself.
    """

    def __init__(self, df: Sequence[dict[str, Any]] | None = None, **kwargs: Any) -> None:
        super().__init__(df, **kwargs)
        self.dev_by_subject: dict[str, list[dict[str, Any]]] = {}
        for row in benchmarks.load_mmlu_all()["dev"]:
            self.dev_by_subject.setdefault(row["subject"], []).append(row)

    def sample(
        self, n: int, eval_doc: dict[str, Any] | None = None, df: Any = None, **kwargs: Any
    ) -> list[dict[str, Any]]:
        """Return the first ``n`` dev rows of ``eval_doc``'s subject."""
        if n == 0:
            return []
        if eval_doc is None:
            raise ValueError("MMLUSubjectSampler needs the evaluated row (few-shot split = test)")
        pool = self.dev_by_subject[eval_doc["subject"]]
        if n > len(pool):
            raise ValueError(f"{n} few-shot examples asked, {len(pool)} dev rows available")
        return pool[:n]


def load_triviaqa(**metadata: Any) -> Splits:
    """TriviaQA validation (question and answer aliases)."""
    return benchmarks.load_triviaqa()


def load_lambada(**metadata: Any) -> Splits:
    """LAMBADA (OpenAI) test."""
    return benchmarks.load_lambada()


def load_squad(**metadata: Any) -> Splits:
    """SQuAD v1.1 validation subsample."""
    return benchmarks.load_squad()
