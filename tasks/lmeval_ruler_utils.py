"""Dataset loader for ``longred_lmeval_niah_single_1``: lm-eval's own RULER ``niah_single_1``
samples, scored like the suite's RULER tasks.

The samples come from lm-eval's generator (``lm_eval.tasks.ruler.prepare_niah``, used as a
library): its prompt template, its repeated-sentence haystack, its needle and its answer prefix
(``gen_prefix``), with the settings lm-eval's ``niah_single_1`` task uses. Two things differ
from running lm-eval's task: the tokenizer is the evaluated model's (``tokenizer`` metadata, any
model spec of the suite, where lm-eval's task needs a hub name), and the metric is keyed by the
requested lengths (``lengths``, ``ruler_samples``, as for the ``longred_ruler_*`` tasks), where
lm-eval's task lists only 4K-128K. As in lm-eval, a length counts the 128-token generation
budget: at 256 the prompt is at most 128 tokens.

The wording is RULER's, which the suite's ``standard`` phrasing copies nearly verbatim, so a
model trained on neither scores the same on both; a model trained on RULER's strings scores high
on the suite's task and low on this one when its retrieval is tied to the exact prompt format.
"""

from __future__ import annotations

import random
from typing import Any

from datasets import Dataset, DatasetDict

from longred_bench.tasks.ruler_utils import DEFAULT_SAMPLES, metadata_tokenizer, parse_lengths

TASK = "niah_single_1"
# lm-eval's niah_single_1 settings (lm_eval/tasks/ruler/niah_utils.py).
SETTINGS = {"type_haystack": "repeat", "type_needle_k": "words", "type_needle_v": "numbers"}
SPARE = 2
"""Samples drawn beyond those asked for, and a tenth more: lm-eval's generator sizes the haystack
on one draw and drops a later sample whose needle words take a token more than the length."""


def load_niah_single_1(**metadata: Any) -> DatasetDict:
    """``ruler_samples`` (default 100) of lm-eval's ``niah_single_1`` at every length, the same
    ones for the same ``seed`` (default 0): lm-eval's generator draws its needles from Python's
    global random generator, which is seeded here for each length and restored after."""
    from lm_eval.tasks.ruler.niah_utils import TEMPLATE
    from lm_eval.tasks.ruler.prepare_niah import generate_samples, get_haystack

    tokenizer = metadata_tokenizer(metadata)
    lengths = parse_lengths(metadata.get("lengths"))
    n = int(metadata.get("ruler_samples") or DEFAULT_SAMPLES)
    seed = int(metadata.get("seed") or 0)
    rows = []
    for length in lengths:
        state = random.getstate()  # lm-eval draws needles from the global generator, unseeded
        random.seed(f"{TASK}:{seed}:{length}")
        try:
            samples = generate_samples(
                get_haystack(type_haystack="repeat"),
                tokenizer,
                max_seq_length=length,
                template=TEMPLATE,
                num_samples=n + SPARE + n // 10,
                **SETTINGS,
            )
        finally:
            random.setstate(state)
        if len(samples) < n:
            raise ValueError(
                f"{TASK}: lm-eval's generator fitted {len(samples)} of {n} samples within "
                f"{length} tokens for this tokenizer: give a longer length"
            )
        for index, sample in enumerate(samples[:n]):
            rows.append(
                {
                    "task": TASK,
                    "length": length,
                    "index": index,
                    "input": sample["input"],
                    "gen_prefix": sample["gen_prefix"],
                    "outputs": list(sample["outputs"]),
                    "lengths": lengths,
                }
            )
    return DatasetDict({"test": Dataset.from_list(rows)})
