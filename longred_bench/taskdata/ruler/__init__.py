"""RULER's 13 synthetic long-context tasks, generated offline and sized with the target tokenizer.

Tasks (RULER's definitions; see each module): ``niah_single_1..3``, ``niah_multikey_1..3``,
``niah_multivalue``, ``niah_multiquery`` (:mod:`.niah`), ``vt``, ``cwe``, ``fwe``
(:mod:`.synthetic`), ``qa_1`` (SQuAD) and ``qa_2`` (DROP standing in for HotpotQA, which is not
available offline; :mod:`.qa`).

API::

    samples = generate(task, tokenizer, length, num_samples, seed, corpus="brown")
    samples = load_or_generate(task, tokenizer, length, num_samples, seed, cache=None)
    score_all(prediction, references)   # retrieval tasks, TASK_METRIC[task] == "all"
    score_any(prediction, references)   # QA tasks, TASK_METRIC[task] == "any"
    generation_rate(task, tokenizer, length, n)   # samples per second
"""

from longred_bench.taskdata.ruler.registry import (
    TASK_METRIC,
    TASKS,
    generate,
    generation_rate,
    preload,
    score,
)
from longred_bench.taskdata.ruler.scoring import score_all, score_any
from longred_bench.taskdata.ruler.sizing import Sample
from longred_bench.taskdata.ruler.store import cache_path, load_or_generate, tokenizer_fingerprint

__all__ = [
    "TASKS",
    "TASK_METRIC",
    "Sample",
    "cache_path",
    "generate",
    "generation_rate",
    "load_or_generate",
    "preload",
    "score",
    "score_all",
    "score_any",
    "tokenizer_fingerprint",
]
