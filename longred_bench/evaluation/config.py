"""What one evaluation runs (:class:`EvalConfig`), checked before any model or data is loaded.

The command line builds one from its arguments, ``compare`` and the tables build one per unit
of work, and :func:`longred_bench.evaluation.run.run_eval` takes it. This module imports
no torch, so building the command line's parser stays fast.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from longred_bench.errors import UserError, reject_repeats, reject_unknown_keys
from longred_bench.evaluation import paper_suite
from longred_bench.evaluation.lm import check_decoding
from longred_bench.models.rope import parse_rope_spec
from longred_bench.pcd.config import PcdConfig
from longred_bench.taskdata.ruler.phrasings import check_phrasing
from longred_bench.taskdata.ruler.registry import check_depth_percents, check_lengths

SUITES: dict[str, tuple[str, ...]] = {
    "short": ("longred_short",),
    "short_tiny": ("longred_short_tiny", "longred_tiny_passkey"),
    paper_suite.SUITE: paper_suite.task_names(),  # stock lm-eval tasks: needs the hub
    "ruler": ("longred_ruler",),
    "niah": ("longred_niah",),
    "ppl": (),
}
LONG_SUITES = ("ruler", "niah")
EVAL_DTYPES = ("float32", "bfloat16", "float16")
SEEDS = 2**32
"""Seeds run from 0 to ``SEEDS - 1``: lm-eval seeds numpy's generator with them."""
BACKENDS = ("hf", "vllm")
PHRASED_SUITES = ("ruler", "short_tiny")  # suites with tasks that take a phrasing family


def check_seed(seed: object, where: str = "--seed") -> None:
    """A one-line :class:`UserError` for a seed lm-eval cannot take (not a whole number from 0 to
    2**32 - 1); nothing otherwise."""
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < SEEDS:
        raise UserError(f"{where} must be a whole number from 0 to {SEEDS - 1} (lm-eval seeds "
                        f"numpy with it), not {seed!r}")  # fmt: skip


@dataclass(frozen=True)
class EvalConfig:
    """One evaluation: ``model`` (a model spec), optionally RoPE-extended by ``rope``, on a
    ``suite`` (or its ``tasks``). ``lengths`` (ruler, niah, ppl) default to the evaluated window
    rounded down to a power of two; ``samples`` is per task and length (ruler), per grid cell
    (niah) or the number of windows (ppl); ``limit`` keeps the first documents of each task
    (short suites only). ``max_length`` defaults to the evaluated window (short suites) or the
    longest length plus the generation budget (ruler, niah). ``batch_size`` defaults to 1 with
    ``hf`` and to all requests at once with ``vllm``. ``decoding="pcd"`` decodes with Positional
    Contrastive Decoding (parameters ``pcd``, defaults when ``None``). ``allow_code_eval``
    lets tasks that execute model-written code run (``paper_short``'s HumanEval and MBPP: lm-eval's
    ``confirm_run_unsafe_code`` and ``HF_ALLOW_CODE_EVAL=1``). ``phrasing`` names the
    prompt strings of the tasks that have phrasing families (ruler: the NIAH tasks and ``vt``,
    default ``standard``, RULER's own; short_tiny: the passkey task, default ``heldout``): see
    :mod:`longred_bench.taskdata.ruler.phrasings`. ``log_samples`` keeps every scored document
    (prompt, responses, metrics, target: :mod:`longred_bench.evaluation.samples`), lm-eval's
    ``--log_samples``; it changes no result. ``dtype`` is the dtype the model runs in
    (:data:`EVAL_DTYPES`; ``hf`` backend): by default bfloat16 on a CUDA device and float32
    elsewhere (:meth:`resolved_dtype`)."""

    model: str
    suite: str = "short"
    rope: str | None = None
    tasks: tuple[str, ...] | None = None
    limit: int | None = None
    lengths: tuple[int, ...] | None = None
    samples: int | None = None
    depths: tuple[int, ...] | None = None
    corpus: str | None = None
    num_fewshot: int | None = None
    batch_size: int | None = None
    max_length: int | None = None
    backend: str = "hf"
    device: str = "cpu"
    seed: int = 0
    decoding: str = "greedy"
    pcd: PcdConfig | None = None
    phrasing: str | None = None
    allow_code_eval: bool = False
    log_samples: bool = False
    dtype: str | None = None

    def __post_init__(self) -> None:
        for name in ("tasks", "lengths", "depths"):  # lists from YAML/JSON become tuples
            value = getattr(self, name)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))
        if self.suite not in SUITES:
            raise UserError(f"unknown suite {self.suite!r}; suites: {', '.join(SUITES)}")
        if self.backend not in BACKENDS:
            raise UserError(f"unknown backend {self.backend!r}; backends: {', '.join(BACKENDS)}")
        for flag, value in (("--limit", self.limit), ("--samples", self.samples),
                            ("--batch-size", self.batch_size),
                            ("--max-length", self.max_length)):  # fmt: skip
            if value is not None and value < 1:
                raise UserError(f"{flag} must be at least 1, got {value}")
        if self.num_fewshot is not None and self.num_fewshot < 0:
            raise UserError(f"--num-fewshot must be 0 or more, got {self.num_fewshot}")
        if self.suite == "ppl" and (self.max_length is not None or self.backend != "hf"):
            raise UserError(
                "the ppl suite runs the model on windows of --lengths tokens itself, not through "
                "lm-eval: --max-length and --backend vllm do not apply to it"
            )
        if self.limit is not None and self.suite in (*LONG_SUITES, "ppl"):
            raise UserError(
                f"--limit is not for the {self.suite} suite (it keeps the shortest length only): "
                "use --samples N per length"
            )
        if self.lengths is not None and (not self.lengths or min(self.lengths) < 1):
            raise UserError(f"--lengths must be positive token counts, got {list(self.lengths)}")
        reject_repeats(self.lengths or (), "--lengths")
        reject_repeats(self.depths or (), "--depths")
        if self.suite == "ruler" and self.lengths:
            check_lengths(self.lengths)
        check_depth_percents(self.depths or (), "--depths")  # before any model loads
        method = None if self.rope is None else parse_rope_spec(self.rope).method  # refused if bad
        if method == "dynamic" and self.backend == "vllm":
            raise UserError(
                f"--rope {self.rope}: vLLM's dynamic NTK is not transformers' (one static "
                "base for every length); evaluate it with --backend hf"
            )
        if self.suite == paper_suite.SUITE:
            paper_suite.check_selection(self.tasks, num_fewshot=self.num_fewshot)
        if self.log_samples and self.suite == "ppl":
            raise UserError(
                "--log-samples is for the lm-eval suites; the ppl suite has no documents"
            )
        check_decoding(self.decoding, self.pcd, backend=self.backend, suite=self.suite)
        check_seed(self.seed)
        if self.dtype is not None and self.dtype not in EVAL_DTYPES:
            raise UserError(f"--dtype {self.dtype!r}: use one of {', '.join(EVAL_DTYPES)}")
        if self.dtype not in (None, "float32") and self.backend != "hf":
            raise UserError("--dtype is for the hf backend; the vllm backend runs float32")
        if self.phrasing is not None:
            check_phrasing(self.phrasing)
            if self.suite not in PHRASED_SUITES:
                raise UserError(
                    f"--phrasing is for the {' and '.join(PHRASED_SUITES)} suites, not {self.suite}"
                )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvalConfig:
        """Build from a dict (a cached unit, YAML), rejecting unknown keys; ``pcd`` may be a
        dict of :class:`PcdConfig` fields."""
        reject_unknown_keys(cls, data, "eval")
        values = dict(data)
        if isinstance(values.get("pcd"), dict):
            values["pcd"] = PcdConfig.from_dict(values["pcd"])
        return cls(**values)

    def resolved_dtype(self) -> str:
        """The dtype the model runs in: ``dtype``, else bfloat16 on a CUDA device (fused
        attention; in float32 a long RULER row ran as materialised score matrices, 87 GiB at
        32K tokens for SmolLM2-135M's shape on an H200) and float32 elsewhere (the CPU's bf16
        matmuls are about 100x slower than its fp32 ones); float32 with ``vllm``."""
        if self.dtype is not None:
            return self.dtype
        cuda = self.backend == "hf" and self.device.split(":")[0] == "cuda"
        return "bfloat16" if cuda else "float32"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (tuples as lists, ``pcd`` as a dict; ``allow_code_eval``,
        ``log_samples`` and ``dtype`` only when set, so configs saved before they existed keep
        their cache keys)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        for flag in ("allow_code_eval", "log_samples", "dtype"):
            if not out[flag]:
                del out[flag]
        out = {k: list(v) if isinstance(v, tuple) else v for k, v in out.items()}
        out["pcd"] = None if self.pcd is None else self.pcd.as_dict()
        return out

    def ran_dict(self) -> dict[str, Any]:
        """:meth:`to_dict` with the dtype the model runs in, given or not: what a run records
        and prints (its cache keys stay those of :meth:`to_dict`)."""
        return {**self.to_dict(), "dtype": self.resolved_dtype()}

    def run_settings(self) -> dict[str, Any]:
        """What tells one run from another that shares its saved responses: :meth:`ran_dict`
        with its tasks and lengths in any order, ``log_samples`` aside (it changes no
        document)."""
        return {k: sorted(v) if k in ("tasks", "lengths") and isinstance(v, list | tuple) else v
                for k, v in self.ran_dict().items() if k != "log_samples"}  # fmt: skip


def describe(cfg: EvalConfig, tasks: list[str] | None = None) -> str:
    """What ``eval --dry-run`` prints: the resolved config as JSON (its dtype resolved), then
    ``tasks`` (lines; for ``paper_short`` how each member runs here,
    :func:`longred_bench.evaluation.paper_suite.dry_run_lines`), by default the suite's tasks.
    Nothing is loaded."""
    import json

    if tasks is None:
        tasks = ["tasks: " + (", ".join(cfg.tasks or SUITES[cfg.suite]) or "(none)")]
    return "\n".join(["config: " + json.dumps(cfg.ran_dict(), sort_keys=True), *tasks])
