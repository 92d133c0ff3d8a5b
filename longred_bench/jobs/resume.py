"""Where an evaluation keeps what it has computed, so that a run interrupted (Ctrl-C, a crash)
and started again computes only the rest.

An evaluation's model responses go to lm-eval's request cache (a SQLite file per prefix, written
as each response is computed), and the ``ppl`` suite's finished lengths and PCD's local windows
to a folder of the same name (:func:`longred_bench.evaluation.run.run_eval`'s
``request_cache``). The prefix is keyed by what a response depends on (:data:`RESPONSE_KEYS`:
the model, its RoPE, the decoding, ...), not by which tasks, lengths or documents are asked, so
a rerun with more of them reuses every response already computed and one with another model or
extension never does.
"""

from __future__ import annotations

from pathlib import Path

from longred_bench.evaluation.config import EvalConfig
from longred_bench.jobs.local_files import files_stamp
from longred_bench.jobs.saved_responses import REQUESTS as REQUESTS  # re-exported
from longred_bench.jobs.saved_responses import drop_responses as drop_responses
from longred_bench.jobs.saved_responses import saved_responses as saved_responses
from longred_bench.jobs.saved_responses import saved_responses_under as saved_responses_under
from longred_bench.jobs.units import stored_config
from longred_bench.models.rope import parse_rope_spec
from longred_bench.results import config_hash

RESPONSE_KEYS = ("model", "rope", "backend", "device", "decoding", "pcd", "seed", "batch_size",
                 "max_length")  # fmt: skip
"""What a response depends on, of an evaluation's config; and its dtype where not float32."""


def request_cache(root: Path, cfg: EvalConfig) -> Path:
    """The request-cache prefix of evaluations like ``cfg`` under ``root/requests/`` (the RoPE
    extension by its canonical label, so another spelling of it reuses its responses); a local
    model also keys it by its files (:func:`weights_stamp`), so weights replaced at the same
    path are evaluated anew, not answered from the old ones' responses."""
    keys = {k: v for k, v in cfg.to_dict().items() if k in RESPONSE_KEYS}
    if keys.get("rope"):  # one extension however it is spelled (4e5, 400000, JSON)
        keys["rope"] = parse_rope_spec(keys["rope"]).label()
    if cfg.resolved_dtype() != "float32":  # responses kept before dtypes were all float32
        keys["dtype"] = cfg.resolved_dtype()
    stamp = weights_stamp(cfg.model)
    if stamp is not None:
        keys["weights"] = stamp
    return root / REQUESTS / config_hash(stored_config(keys))


def weights_stamp(model: str) -> str | None:
    """The name, size and modification time of each file of a local model folder (or of a
    GGUF file), hashed; None for a name that is no local path (a hub id, a zoo model)."""
    return files_stamp(Path(model))
