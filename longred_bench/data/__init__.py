"""Data sources for longred-bench: fetching, verifying, decoding and loading cached corpora.

Submodules: :mod:`.sources` (the registry and its sha256 pins), :mod:`.fetch` (obtaining
archives and building cache entries), :mod:`.decode` (per-source decoders), :mod:`.corpora`
(documents, splits and model paths for the rest of the suite), :mod:`.corpus_spec`,
:mod:`.source_documents`, :mod:`.local_corpora` and :mod:`.hub_corpora` (training data sources:
local folders and files, hub datasets, the offline fallback) and :mod:`.cli` (the ``data``
command). Import the submodule you need; this package imports nothing heavy on its own.
"""
