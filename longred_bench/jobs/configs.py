"""The frozen configs of the jobs (drift, compare, psa), importable without torch so the command
line builds its parser fast; each rejects unknown keys and checks its values before anything
loads. The evaluation's own config is :class:`longred_bench.evaluation.config.EvalConfig`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from longred_bench.data.texts import check_text_source
from longred_bench.errors import UserError, meant_note, reject_repeats, reject_unknown_keys
from longred_bench.evaluation.lm import DECODINGS
from longred_bench.models.rope import parse_rope_spec
from longred_bench.pcd.config import PcdConfig
from longred_bench.taskdata.ruler.registry import TASKS, check_depths, check_lengths

FLOAT_DTYPES = ("float32", "bfloat16", "float16", "float64")
"""The dtypes a drift, or a profile, may name for training, evaluation and drift (torch's
floating types)."""
DRIFT_HOW_KEYS = ("batch_size", "impl", "device")
"""The drift settings that say how its windows are computed, not what: the windows an
interrupted run measured resume under others (a batch size lowered after running out of
memory, the run moved to a GPU), as each window is measured alone."""


def drift_what(config: dict[str, Any]) -> dict[str, Any]:
    """A drift config (``DriftConfig.to_dict``) without its :data:`DRIFT_HOW_KEYS`."""
    return {k: v for k, v in config.items() if k not in DRIFT_HOW_KEYS}


@dataclass(frozen=True)
class DriftConfig:
    """What to compare and on which texts.

    ``extended`` lists checkpoints compared as they are; ``rope`` lists zero-shot extensions of
    the original, each compared too (a measurement needs at least one of the two).
    ``top_m`` is LongReD's M: how many highest-KL layers are selected (plus the last).
    """

    original: str
    extended: tuple[str, ...] = ()
    rope: tuple[str, ...] = ()
    texts: str = "brown"
    num_texts: int = 8
    seq_len: int = 1024
    batch_size: int = 1
    seed: int = 0
    top_m: int = 6
    impl: str = "auto"
    device: str = "cpu"
    dtype: str = "float32"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DriftConfig:
        """Build from a dict (e.g. YAML), rejecting unknown keys."""
        reject_unknown_keys(cls, data, "drift")
        values = dict(data)
        for key in ("extended", "rope"):
            if key in values:
                values[key] = tuple(values[key])
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        """JSON/YAML-able form (tuples as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    def __post_init__(self) -> None:
        for rope in self.rope:
            parse_rope_spec(rope)  # a bad spec is refused before any model loads
        check_text_source(self.texts)
        least = {"num_texts": 1, "seq_len": 1, "batch_size": 1, "top_m": 0}
        for key, low in least.items():  # refused before anything is measured
            if getattr(self, key) < low:
                flag = "--" + key.replace("_", "-")
                raise UserError(
                    f"drift: {key} ({flag}) must be at least {low}, not {getattr(self, key)}"
                )
        if self.dtype not in FLOAT_DTYPES:  # before an --out check reads it as another config
            raise UserError(f"drift: dtype (--dtype) {self.dtype!r} is not one of "
                            f"{', '.join(FLOAT_DTYPES)}")  # fmt: skip
        if self.impl == "triton" and not self.device.startswith("cuda"):
            raise UserError(
                f"drift: --impl triton runs on CUDA devices only, not {self.device}: pass "
                "--device cuda, or --impl auto"
            )


COMPARE_SUITES = ("drift", "short", "ruler", "niah")


@dataclass(frozen=True)
class CompareConfig:
    """What to compare and how much of each suite to run (see the module docstring).

    ``short_tasks`` replaces the short suite's task list (e.g. to leave out benchmarks whose
    prompts do not fit a small model's window). ``decoding`` lists the decodings each model is
    evaluated with (``greedy``, ``pcd``); ``pcd`` sets PCD's parameters (defaults when ``None``).
    """

    original: str
    extended: tuple[str, ...] = ()
    rope: tuple[str, ...] = ()
    suites: tuple[str, ...] = COMPARE_SUITES
    short_suite: str = "short"
    short_tasks: tuple[str, ...] = ()
    short_limit: int | None = 50
    lengths: tuple[int, ...] = (1024, 2048)
    ruler_samples: int = 5
    niah_depths: tuple[int, ...] = (0, 25, 50, 75, 100)
    niah_samples: int = 1
    drift_texts: str = "brown"
    drift_num_texts: int = 4
    drift_seq_len: int = 512
    batch_size: int = 1
    device: str = "cpu"
    seed: int = 0
    decoding: tuple[str, ...] = ("greedy",)
    pcd: PcdConfig | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CompareConfig:
        """Build from a dict, rejecting unknown keys; lists become tuples, ``pcd`` a
        :class:`PcdConfig` (its unknown keys rejected too)."""
        reject_unknown_keys(cls, data, "compare")
        values = {k: tuple(v) if isinstance(v, list) else v for k, v in data.items()}
        if isinstance(values.get("pcd"), dict):
            values["pcd"] = PcdConfig.from_dict(values["pcd"])
        return cls(**values)

    def __post_init__(self) -> None:
        if not self.extended and not self.rope:
            raise UserError("compare needs --extended checkpoints and/or --rope extensions")
        odd = sorted(set(self.suites) - set(COMPARE_SUITES))
        if odd:
            raise UserError(
                f"unknown suite(s) {', '.join(odd)}; suites: {', '.join(COMPARE_SUITES)}"
            )
        if self.short_suite not in ("short", "short_tiny"):
            raise UserError(f"short suite must be short or short_tiny, not {self.short_suite!r}")
        odd = sorted(set(self.decoding) - set(DECODINGS))
        if odd or not self.decoding or len(set(self.decoding)) != len(self.decoding):
            raise UserError(
                f"decoding must list some of {', '.join(DECODINGS)} once each, "
                f"got {', '.join(self.decoding) or 'none'}"
            )
        if self.pcd is not None and "pcd" not in self.decoding:
            raise UserError("PCD parameters given without pcd in --decoding")
        for rope in self.rope:
            parse_rope_spec(rope)
        counts = {"ruler_samples": 1, "niah_samples": 1, "short_limit": 1, "batch_size": 1,
                  "drift_num_texts": 1, "drift_seq_len": 1}  # fmt: skip
        for key, low in counts.items():  # named as compare and a pairs file name them
            value = getattr(self, key)
            if value is None and key == "short_limit":
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise UserError(f"compare: {key} (--{key.replace('_', '-')}) must be a whole "
                                f"number of at least {low}, not {value!r}")  # fmt: skip
        if any(not isinstance(d, int) or not 0 <= d <= 100 for d in self.niah_depths):
            raise UserError(f"compare: niah_depths (--niah-depths) must be percents from 0 to "
                            f"100, not {list(self.niah_depths)}")  # fmt: skip
        if "ruler" in self.suites:  # before drift and the short suite spend hours
            check_lengths(self.lengths)
        if "drift" in self.suites:
            check_text_source(self.drift_texts)


RETRIEVAL_TASKS: tuple[str, ...] = (
    "niah_single_1",
    "niah_single_2",
    "niah_single_3",
    "niah_multikey_1",
    "niah_multikey_2",
    "niah_multikey_3",
)


def check_psa_task(task: str, where: str) -> None:
    """Refuse a task ``psa`` cannot teacher-force, in one line led by ``where``: a name that is
    none of :data:`RETRIEVAL_TASKS` (the nearest of them, not of every RULER task, suggested),
    or a RULER task with no single gold answer."""
    if task not in TASKS:  # RETRIEVAL_TASKS are RULER's
        raise UserError(f"{where}: unknown task {task!r}{meant_note(task, RETRIEVAL_TASKS)}; "
                        f"retrieval tasks: {', '.join(RETRIEVAL_TASKS)}")  # fmt: skip
    if task not in RETRIEVAL_TASKS:
        raise UserError(f"{where}: task {task!r} has no single gold answer to teacher-force; "
                        f"retrieval tasks: {', '.join(RETRIEVAL_TASKS)}")  # fmt: skip


DEFAULT_TASKS: tuple[str, ...] = ("niah_single_2", "niah_multikey_3")
ORIGINAL = "none"  # the --rope value that stands for the unextended model


@dataclass(frozen=True)
class PsaConfig:
    """What to measure: every model in ``models`` once per entry of ``ropes`` (``"none"`` is the
    model as it is), on ``samples`` samples of each task at each length; with ``depths``
    (percent), sample ``i``'s needle sits at ``depths[i % len(depths)]`` at every length (else
    at a drawn depth, which differs by length)."""

    models: tuple[str, ...]
    ropes: tuple[str, ...] = (ORIGINAL,)
    tasks: tuple[str, ...] = DEFAULT_TASKS
    lengths: tuple[int, ...] = (512, 1024, 2048)
    samples: int = 10
    seed: int = 0
    corpus: str = "brown"
    device: str = "cpu"
    depths: tuple[float, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (tuples as lists; ``depths`` only when given, so the cache keys of
        configs without it stay as they were)."""
        out = {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}
        if not self.depths:
            del out["depths"]
        return out

    def check(self) -> None:
        """Raise :class:`UserError` on bad values, before anything is loaded."""
        if not self.models:
            raise UserError("psa: give at least one --model")
        for task in self.tasks:
            check_psa_task(task, "psa")
        if not self.tasks or not self.lengths:
            raise UserError("psa: give at least one task and one length")
        for task in self.tasks:
            check_depths(task, self.depths)
        if min(self.lengths) < 1 or self.samples < 1:
            raise UserError(
                f"psa: lengths and --samples must be >= 1 (got {list(self.lengths)}, "
                f"{self.samples})"
            )
        # each spec parsed (a bad one refused), then compared by its label
        labels = [r if r == ORIGINAL else parse_rope_spec(r).label() for r in self.ropes]
        first: dict[str, str] = {}
        for rope, label in zip(self.ropes, labels, strict=True):  # two spellings: named as typed
            if first.setdefault(label, rope) != rope:
                raise UserError(f"psa --rope: {first[label]} and {rope} are one extension "
                                f"({label}); give it once")  # fmt: skip
        reject_repeats(labels, "psa --rope")
        reject_repeats(self.lengths, "psa --lengths")
        reject_repeats(self.models, "psa --model")
