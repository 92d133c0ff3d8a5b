"""The on-disk cache of generated RULER samples.

Samples are stored as JSONL (one :meth:`Sample.to_dict` per line) under ``<cache root>/ruler/
<tokenizer fingerprint>/<task>/<corpus>-L<length>-seed<seed>-n<n>-<code>.jsonl``, written
atomically. The tokenizer fingerprint hashes its class name, its vocabulary and how it
encodes a probe string (so a tokenizer that adds a BOS token differs from one that does not);
``code`` is the source hash of the generating code (:data:`GENERATOR_CODE`), so a change to it
generates the samples again.
Beside each file, ``<name>.jsonl.manifest.json`` records its size and sha256; a file that does
not match it or does not parse is reported with a warning and generated again.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from longred_bench.cache import cache_dir, read_jsonl_file, warn, write_jsonl_file
from longred_bench.source_tree import source_hash
from longred_bench.taskdata.ruler.registry import (
    check_depths,
    check_phrasing_for,
    check_task,
    generate,
)
from longred_bench.taskdata.ruler.sizing import Sample, count_tokens

GENERATOR_CODE = ("longred_bench/taskdata/", "longred_bench/data/")
"""The code that generates samples (tasks, phrasings, haystacks and the corpora they read): a
store file is named by its source hash, so samples of other code are generated again."""
_PROBE = "Hello world. 1234567 quiet-harbor"


def generator_hash() -> str:
    """The short source hash of :data:`GENERATOR_CODE`, as it runs."""
    return source_hash(GENERATOR_CODE)[:12]


def tokenizer_fingerprint(tokenizer: Any) -> str:
    """A short hash identifying a tokenizer's behaviour (class, vocabulary, special tokens)."""
    digest = hashlib.sha256()
    digest.update(type(tokenizer).__name__.encode())
    vocab = tokenizer.get_vocab()
    digest.update(json.dumps(sorted(vocab.items()), ensure_ascii=False).encode())
    digest.update(str(count_tokens(tokenizer, _PROBE)).encode())
    return digest.hexdigest()[:16]


def cache_path(
    task: str,
    tokenizer: Any,
    length: int,
    num_samples: int,
    seed: int,
    *,
    corpus: str = "brown",
    cache: Path | None = None,
    phrasing: str = "standard",
    depths: Sequence[float] = (),
) -> Path:
    """Where :func:`load_or_generate` keeps these samples (``cache`` overrides the root; a
    phrasing family other than RULER's own, and fixed needle depths, are part of the name)."""
    root = Path(cache) if cache is not None else cache_dir() / "ruler"
    words = "" if phrasing == "standard" else f"-{phrasing}"
    if depths:
        words += "-depths" + "_".join(f"{float(d):g}" for d in depths)
    name = f"{corpus}{words}-L{length}-seed{seed}-n{num_samples}-{generator_hash()}.jsonl"
    return root / tokenizer_fingerprint(tokenizer) / task / name


def read_samples(path: Path, num_samples: int) -> list[Sample] | None:
    """The samples stored at ``path`` if it holds exactly ``num_samples`` readable ones that
    match its manifest; None otherwise (with a warning naming the file if it exists)."""
    samples = read_jsonl_file(path, "RULER sample cache", Sample.from_dict)
    if samples is None:
        return None
    if len(samples) != num_samples:
        warn(
            f"RULER sample cache {path} holds {len(samples)} samples, not {num_samples}; "
            "making it again"
        )
        return None
    return samples


def load_or_generate(
    task: str,
    tokenizer: Any,
    length: int,
    num_samples: int,
    seed: int,
    *,
    corpus: str = "brown",
    cache: Path | None = None,
    phrasing: str = "standard",
    depths: Sequence[float] = (),
) -> list[Sample]:
    """Cached samples if present and complete, else :func:`generate` them and store them."""
    check_task(task)
    check_phrasing_for(task, phrasing)
    check_depths(task, depths)
    path = cache_path(task, tokenizer, length, num_samples, seed, corpus=corpus, cache=cache,
                      phrasing=phrasing, depths=depths)  # fmt: skip
    samples = read_samples(path, num_samples)
    if samples is not None:
        return samples
    samples = generate(task, tokenizer, length, num_samples, seed, corpus=corpus, phrasing=phrasing,
                       depths=depths)  # fmt: skip
    write_samples(path, samples)
    return samples


def write_samples(path: Path, samples: list[Sample]) -> None:
    """Store ``samples`` at ``path`` as JSONL, atomically, then its manifest beside it."""
    write_jsonl_file(path, [s.to_dict() for s in samples], "ruler-samples")
