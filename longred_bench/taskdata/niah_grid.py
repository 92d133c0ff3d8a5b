"""Needle-in-a-haystack grid: one needle at each depth (percent) of an essay haystack, per length.

Every cell ``(length, depth)`` of the grid holds ``n`` samples. A sample is RULER's
``niah_single_2`` prompt (:mod:`longred_bench.taskdata.ruler.niah`): one "special magic number"
needle, "One of the special magic numbers for {key} is: {value}.", in an essay haystack made of the
prose corpus (:func:`longred_bench.taskdata.ruler.haystack.essay_units`, Brown by default), followed
by the question and the answer prefix. Unlike RULER, whose needle depth is random, the needle sits
at the requested depth, measured in tokens of the haystack: at the word boundary whose share of the
haystack's tokens is closest to ``depth`` percent, moved to the nearest sentence end within 2% of
the haystack's words (so it does not split a sentence) or left there when no sentence ends that
close. Depth 0 puts the needle before the first word, 100 after the last. Each sample records
``depth_actual``, the needle's depth as measured in tokens after sizing (within about 2.5 points
of the requested depth from 1K tokens up).

Sizing is RULER's (:func:`longred_bench.taskdata.ruler.sizing.fit`): the largest haystack whose
prompt plus answer (" <value>") fits in ``length`` tokens of the target tokenizer.

Sample ``i`` draws its key, value and starting document from a generator seeded by
``(seed, i)`` alone, so within one seed sample ``i`` of every cell has the same needle and the
same haystack text (cut to the cell's length): cells differ only in length and depth.

Defaults: lengths 1024, 2048, 4096 and 8192 tokens (up to SmolLM2's window), depths 0, 10, ...,
100 percent (11 rows, the usual NIAH grid), 4 samples per cell (176 prompts).

Samples are cached as JSONL, one file per cell, in ``<cache root>/niah_grid/<tokenizer
fingerprint>/`` as ``<corpus>-L<length>-d<depth>-seed<seed>-n<n>-v<V>.jsonl``, written
atomically (the fingerprint is RULER's :func:`tokenizer_fingerprint`; ``V`` is raised whenever
a change would alter generated samples).

Scoring is a substring match of the needle value in the generated text: 100 or 0.
:func:`niah_cells` turns lm-eval's logged samples of the ``longred_niah`` task into one tidy
record per cell.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from longred_bench.cache import cache_dir
from longred_bench.data.texts import CORPORA
from longred_bench.errors import UserError
from longred_bench.taskdata.ruler import haystack as hs
from longred_bench.taskdata.ruler import niah
from longred_bench.taskdata.ruler.scoring import score_all
from longred_bench.taskdata.ruler.sizing import Draft, Rendered, Sample, count_tokens, fit
from longred_bench.taskdata.ruler.store import (
    generator_hash,
    read_samples,
    tokenizer_fingerprint,
    write_samples,
)

TASK = "niah_grid"
DEFAULT_LENGTHS: tuple[int, ...] = (1024, 2048, 4096, 8192)
DEFAULT_DEPTHS: tuple[float, ...] = tuple(float(d) for d in range(0, 101, 10))
DEFAULT_SAMPLES = 4
SNAP_FRACTION = 0.02  # how far (fraction of the haystack) a needle may move to a sentence end
KIND = "numbers"
_SENTENCE_END = (".", "!", "?", '."', ".'", '?"', '!"')


def check_grid(
    lengths: Iterable[Any], depths: Iterable[Any], num_samples: Any, corpus: str
) -> tuple[tuple[int, ...], tuple[float, ...], int]:
    """Validated ``(lengths, depths, num_samples)``; a :class:`UserError` names a bad value."""
    try:
        lengths = tuple(int(x) for x in lengths)
        depths = tuple(float(x) for x in depths)
        num_samples = int(num_samples)
    except (TypeError, ValueError) as error:
        raise UserError(
            f"NIAH grid: lengths and depths must be lists of numbers and the sample count an "
            f"integer ({error})"
        ) from None
    if not lengths or any(x < 1 for x in lengths):
        raise UserError(f"NIAH grid: lengths must be positive token counts, got {list(lengths)}")
    if not depths or any(not 0.0 <= d <= 100.0 for d in depths):
        raise UserError(f"NIAH grid: depths are percentages in [0, 100], got {list(depths)}")
    if num_samples < 1:
        raise UserError(f"NIAH grid: need at least 1 sample per cell, got {num_samples}")
    if corpus not in CORPORA:
        raise UserError(f"NIAH grid: unknown corpus {corpus!r}; use one of {', '.join(CORPORA)}")
    return tuple(dict.fromkeys(lengths)), tuple(dict.fromkeys(depths)), num_samples


def word_token_offsets(tokenizer: Any, words: Sequence[str]) -> list[int]:
    """``offsets[k]``: tokens in ``" ".join(words[:k])``, for ``k`` in ``0..len(words)``.

    One tokenization of the whole text with character offsets (fast tokenizers); a token
    belongs to the word whose first character, or the space before it, it starts at. Without a
    fast tokenizer words stand in for tokens (``offsets[k] == k``).
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return list(range(len(words) + 1))
    encoding = backend.encode(" ".join(words), add_special_tokens=False)
    starts = sorted(start for start, _ in encoding.offsets)
    offsets = [0]
    char = 0
    for word in words[:-1]:
        char += len(word) + 1  # first character of the next word; the space is at char - 1
        offsets.append(bisect.bisect_left(starts, char - 1))
    if words:
        offsets.append(len(starts))
    return offsets


def insertion_point(
    units: Sequence[str], n: int, depth: float, offsets: Sequence[int] | None = None
) -> int:
    """Word index (in ``units[:n]``) before which the needle goes for ``depth`` percent.

    The exact point is the word boundary whose share of the haystack's tokens (``offsets``, see
    :func:`word_token_offsets`; words when None) is closest to ``depth`` percent. It moves to
    the nearest sentence end within ``SNAP_FRACTION * n`` words (ties: the earlier one); the two
    ends of the haystack stay put.
    """
    if offsets is None:
        exact = round(depth / 100.0 * n)
    else:
        target = depth / 100.0 * offsets[n]
        k = bisect.bisect_left(offsets, target, 0, n + 1)
        exact = min((c for c in (k - 1, k) if 0 <= c <= n), key=lambda c: abs(offsets[c] - target))
    if exact <= 0 or exact >= n:
        return min(max(exact, 0), n)
    window = int(SNAP_FRACTION * n)
    best = exact
    best_distance = window + 1
    for k in range(max(1, exact - window), min(n - 1, exact + window) + 1):
        if units[k - 1].endswith(_SENTENCE_END) and abs(k - exact) < best_distance:
            best, best_distance = k, abs(k - exact)
    return best


def _draft(
    tokenizer: Any, rng: random.Random, length: int, depth: float, corpus: str
) -> tuple[Draft, list[str]]:
    """The draft of one sample (see :mod:`longred_bench.taskdata.ruler.sizing`) and its haystack
    words."""
    key = hs.word_key(rng, hs.vocabulary(corpus))
    value = hs.number_value(rng)
    units = hs.essay_units(corpus, rng, length)
    offsets = word_token_offsets(tokenizer, units)
    needle = niah.NEEDLE.format(kind=KIND, key=key, value=value)
    prefix = niah.ANSWER_PREFIX.format(kind=KIND, query=key)

    def render(n: int) -> Rendered:
        pos = insertion_point(units, n, depth, offsets)
        context = " ".join([*units[:pos], needle, *units[pos:n]])
        prompt = niah.TEMPLATE.format(kind=KIND, context=context, query=key)
        meta = {"key": key, "needle_word": pos, "answer_prefix": prefix}
        return Rendered(prompt + prefix, (value,), meta)

    return Draft(render=render, upper=length), units


def token_depth(tokenizer: Any, words: Sequence[str], pos: int) -> float:
    """Percent of the tokens of the haystack ``words`` that come before word ``pos``."""
    total = count_tokens(tokenizer, " ".join(words), special=False)
    before = count_tokens(tokenizer, " ".join(words[:pos]), special=False)
    return 100.0 * before / max(total, 1)


def generate_cell(
    tokenizer: Any,
    length: int,
    depth: float,
    num_samples: int,
    seed: int,
    *,
    corpus: str = "brown",
) -> list[Sample]:
    """``num_samples`` samples with the needle at ``depth`` percent, each fitted to ``length``."""
    (length,), (depth,), num_samples = check_grid([length], [depth], num_samples, corpus)
    samples = []
    for index in range(num_samples):
        rng = random.Random(f"niah-grid/{seed}/{index}")
        draft, words = _draft(tokenizer, rng, length, depth, corpus)
        units, rendered, tokens = fit(draft, tokenizer, length, "all", task=TASK)
        if units == 0:
            raise UserError(
                f"NIAH grid: length {length} leaves no room for a haystack with this tokenizer "
                f"(the prompt and needle alone take {tokens} tokens); use a length of more than "
                f"{tokens} tokens"
            )
        pos = rendered.metadata["needle_word"]
        metadata = {
            **rendered.metadata,
            "depth": depth,
            "depth_actual": token_depth(tokenizer, words[:units], pos),
            "haystack_units": units,
            "seed": seed,
            "corpus": corpus,
        }
        samples.append(
            Sample(TASK, length, index, rendered.prompt, rendered.outputs, tokens, metadata)
        )
    return samples


def cell_cache_path(
    tokenizer: Any,
    length: int,
    depth: float,
    num_samples: int,
    seed: int,
    *,
    corpus: str = "brown",
    cache: Path | None = None,
) -> Path:
    """Where :func:`load_or_generate_cell` keeps a cell (``cache`` overrides the root)."""
    root = Path(cache) if cache is not None else cache_dir() / "niah_grid"
    name = (
        f"{corpus}-L{int(length)}-d{float(depth):g}-seed{seed}-n{num_samples}"
        f"-{generator_hash()}.jsonl"
    )
    return root / tokenizer_fingerprint(tokenizer) / name


def load_or_generate_cell(
    tokenizer: Any,
    length: int,
    depth: float,
    num_samples: int,
    seed: int,
    *,
    corpus: str = "brown",
    cache: Path | None = None,
) -> list[Sample]:
    """A cell's cached samples if present and complete, else :func:`generate_cell` and store."""
    path = cell_cache_path(tokenizer, length, depth, num_samples, seed, corpus=corpus, cache=cache)
    samples = read_samples(path, num_samples)
    if samples is not None:
        return samples
    samples = generate_cell(tokenizer, length, depth, num_samples, seed, corpus=corpus)
    write_samples(path, samples)
    return samples


def generate_grid(
    tokenizer: Any,
    lengths: Iterable[int] = DEFAULT_LENGTHS,
    depths: Iterable[float] = DEFAULT_DEPTHS,
    num_samples: int = DEFAULT_SAMPLES,
    seed: int = 0,
    *,
    corpus: str = "brown",
    cache: Path | None = None,
) -> list[Sample]:
    """Every cell's samples (cached), ordered by length, then depth, then sample index."""
    lengths, depths, num_samples = check_grid(lengths, depths, num_samples, corpus)
    return [
        sample
        for length in lengths
        for depth in depths
        for sample in load_or_generate_cell(
            tokenizer, length, depth, num_samples, seed, corpus=corpus, cache=cache
        )
    ]


def score_response(prediction: str, outputs: Sequence[str]) -> float:
    """100 if the needle value occurs in ``prediction`` (case-insensitive substring), else 0."""
    return score_all(prediction, outputs)


def _sample_score(sample: Mapping[str, Any]) -> float:
    if "score" in sample:
        return float(sample["score"])
    responses = sample.get("filtered_resps")
    if not responses:
        raise ValueError("a logged NIAH sample has neither a 'score' nor 'filtered_resps'")
    first = responses[0]
    text = first[0] if isinstance(first, (list, tuple)) else first
    return score_response(str(text), sample["doc"]["outputs"])


def niah_cells(samples: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One record ``{"kind": "niah", "length", "depth", "score", "n"}`` per grid cell.

    ``samples`` are lm-eval's logged samples of the ``longred_niah`` task
    (``simple_evaluate(..., log_samples=True)["samples"]["longred_niah"]``, or the lines of the
    ``samples_longred_niah_*.jsonl`` file ``--log_samples`` writes): each has the ``doc`` (with
    ``length`` and ``depth``) and the per-sample ``score``; a sample without ``score`` is scored
    from its ``filtered_resps``. ``score`` is the mean over the cell's samples (0-100), ``n``
    their number. Records are sorted by length, then depth.
    """
    cells: dict[tuple[int, float], list[float]] = {}
    for sample in samples:
        doc = sample["doc"]
        cells.setdefault((int(doc["length"]), float(doc["depth"])), []).append(
            _sample_score(sample)
        )
    return [
        {
            "kind": "niah",
            "length": length,
            "depth": depth,
            "score": math.fsum(scores) / len(scores),
            "n": len(scores),
        }
        for (length, depth), scores in sorted(cells.items())
    ]


def lm_eval_doc(sample: Sample) -> dict[str, Any]:
    """The ``longred_niah`` document of a sample.

    ``input`` is the prompt up to the question and ``gen_prefix`` the answer prefix without its
    leading space: lm-eval joins them with the task's target delimiter (a space), which gives
    back ``sample.input`` exactly, so the token budget holds as generated.
    """
    prefix = sample.metadata["answer_prefix"]
    if not sample.input.endswith(prefix):
        raise ValueError("NIAH sample does not end with its answer prefix")
    return {
        "input": sample.input[: -len(prefix)],
        "gen_prefix": prefix.lstrip(),
        "outputs": list(sample.outputs),
        "length": sample.length,
        "depth": float(sample.metadata["depth"]),
        "depth_actual": float(sample.metadata["depth_actual"]),
        "index": sample.index,
        "token_count": sample.token_count,
        "key": sample.metadata["key"],
        "corpus": sample.metadata["corpus"],
        "seed": int(sample.metadata["seed"]),
    }
