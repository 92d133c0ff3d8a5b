"""Versions of what the training module builds, part of tiny-base's cache key: each is bumped
when what it versions changes, so a model built by older code is built again. Kept apart from
the code they version so that a cache key is computed without importing torch."""

TOKENIZER_VERSION = 1
"""Version of the byte-level BPE tokenizer training (:mod:`.pretrain.tokenizer`)."""
RETRIEVAL_VERSION = 3
"""Version of the in-window retrieval examples (:mod:`.pretrain.retrieval`: strings or draws)."""
COPY_MIX_VERSION = 1
"""Version of :func:`~longred_bench.training.data.copy_mix_rows`."""
