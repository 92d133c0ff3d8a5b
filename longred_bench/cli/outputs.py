"""The output folder of each command, checked before anything is loaded or measured.

:data:`WRITES` names what each command writes under its ``--out`` folder (a trailing ``/``
marks a folder). :func:`check_out_dir` refuses, in one line naming the path and what is wrong,
an ``--out`` that is a file, lies under a file, cannot be written, holds a folder where the
command writes a file (or a file where it keeps a folder), or holds another command's results
(:data:`RESULTS`: they would sit beside this one's, and plots of the same name be replaced; a
report folder may hold ``psa``'s beside ``reproduce``'s, whose files have other names), so
no computation is lost to a bad path at the end of a run. :func:`check_results_config` (and its
uses for ``eval`` and ``drift``, :func:`check_eval_out`, :func:`check_drift_out`) refuses an
``--out`` holding results of another config of the same command, which the run would replace.
It imports nothing heavy.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from longred_bench.cache import CACHE_FOLDERS as CACHE_FOLDERS  # re-exported
from longred_bench.cache import nearest_existing
from longred_bench.errors import UserError

WRITES: dict[str, tuple[str, ...]] = {
    "eval": (
        "eval.jsonl", "eval.md", "lm_eval_results.json", "ruler_lengths.png", "niah.png",
        "ppl_position.png", "requests/", "samples/",
    ),
    "drift": ("drift.jsonl", "drift.md", "drift.png", "config.yaml", "drift.partial.json"),
    "compare": (
        "compare.md", "retention.png", "ruler_lengths.png", "niah.png", "drift.png", "runs/",
    ),
    "psa": ("psa.jsonl", "psa.md", "psa.png"),
    "train": ("config.yaml", "metrics.jsonl", "run.json", "curves.png", "checkpoints/", "final/",
              "local_files.json"),
    "reproduce": ("TABLE.md", "TABLE.png", "TABLE.jsonl.gz"),
    "reproduce --emit-slurm": ("submit.sh", "logs/"),
}  # fmt: skip


RESULTS = {"eval": "eval.jsonl", "drift": "drift.jsonl", "compare": "compare.md",
           "psa": "psa.jsonl", "train": "metrics.jsonl"}  # fmt: skip
"""The file that marks a folder as holding a command's results."""


def results_in(folder: Path) -> str | None:
    """A command's results file (:data:`RESULTS`) in ``folder`` or a folder in it but ``runs/``
    (where a data cache keeps its own), relative to ``folder``; None where there is none, or
    ``folder`` cannot be listed. A folder of results given as a data cache read them as cache
    entries ("delete out/ruler/eval.jsonl")."""
    try:
        places = [folder, *(p for p in folder.iterdir() if p.is_dir() and p.name != "runs")]
    except OSError:  # not a folder, or not one this user can list: the command says so
        return None
    for place in places:
        for name in RESULTS.values():
            try:
                if (place / name).is_file():
                    return (place / name).relative_to(folder).as_posix()
            except OSError:  # a folder this user cannot enter (a volume's lost+found)
                break
    return None


def _writable(folder: Path) -> bool:
    """Whether a file can be made in ``folder``, by making one (and removing it): permission
    bits say yes to root where the file system refuses it (a root-squashed NFS share, ``/proc``),
    and the command would fail at its first write, after its work."""
    import tempfile

    try:
        fd, name = tempfile.mkstemp(prefix=".longred-write-check-", dir=folder)
    except OSError:
        return False
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(name)
    return True


def check_out_dir(out: Path, command: str, flag: str = "--out") -> None:
    """Raise :class:`UserError` unless ``out`` can be the output folder of ``command``: not a
    file, writable, not the cache or inside a folder the suite keeps there (a run wrote into
    ``models/``, beside the suite's models, without a word)."""
    _check_outside_cache(out, flag)
    names = WRITES[command]
    listing = ", ".join(n.rstrip("/") for n in names[:3])
    if out.exists() and not out.is_dir():
        raise UserError(
            f"{flag} {out} is an existing file, not a folder: give a folder path ({command} "
            f"writes {listing}, ... into it)"
        )
    base = nearest_existing(out)
    if not base.is_dir():
        raise UserError(f"{flag} {out}: {base} is a file, so no folder can be made under it")
    if not _writable(base):
        raise UserError(f"{flag} {out}: {base} is not writable by this user; choose another path")
    for name in names:
        path = out / name.rstrip("/")
        if name.endswith("/") and path.exists() and not path.is_dir():
            raise UserError(
                f"{flag} {out}: {path} is a file where {command} keeps a folder; move it away "
                "or choose another folder"
            )
        if not name.endswith("/") and path.is_dir():
            raise UserError(
                f"{flag} {out}: {path} is a folder where {command} writes a file; move it away "
                "or choose another folder"
            )
    tables = sorted(p.name for p in out.glob("*.jsonl.gz") if p.name != "psa.jsonl.gz"
                    and (out / p.name.replace(".jsonl.gz", ".md")).is_file())  # fmt: skip
    if tables and command.split()[0] not in ("psa", "reproduce"):  # a report folder: its tables
        raise UserError(f"{flag} {out} holds the reports of `reproduce` ({tables[0]}); give "
                        f"{command} a folder of its own")  # fmt: skip
    _check_not_inside(out, command, flag)
    for other, marker in RESULTS.items():
        if {other, command.split()[0]} == {"psa", "reproduce"}:  # a report folder holds both
            continue
        if other != command.split()[0] and (out / marker).is_file():
            raise UserError(
                f"{flag} {out} holds the results of `{other}` ({marker}); give {command} a "
                "folder of its own"
            )


def _check_not_inside(out: Path, command: str, flag: str) -> None:
    """Refuse an ``out`` inside a folder another run keeps in its own ``--out`` (compare's
    ``runs/``, a training run's ``checkpoints/``, an eval's ``requests/``), by the results file
    beside that folder: its files would sit among that run's."""
    absolute = Path(os.path.abspath(out))  # ".." taken: CMP/runs/../../x is not in CMP/runs
    for parent in absolute.parents:
        for other, marker in RESULTS.items():
            if not (parent / marker).is_file():
                continue
            for name in WRITES[other]:
                kept = parent / name.rstrip("/")
                if name.endswith("/") and (absolute == kept or kept in absolute.parents):
                    where = f"`{other}` keeps in its --out {parent}"
                    raise UserError(f"{flag} {out} lies in {kept}, which {where}; give {command} "
                                    "a folder of its own")  # fmt: skip


EVAL_FREE_KEYS = ("batch_size", "device", "log_samples")
"""An eval's settings that do not change its results: it runs again into the same folder with
them."""


ORDERLESS = ("tasks", "lengths", "models", "decoding")
"""Config lists whose order changes no result: the tasks, lengths, models and decodings a run
measures (each is measured on its own)."""


MODEL_KEYS = ("model", "models", "original", "extended")
TEXT_KEYS = ("corpus", "texts")


def same_files(key: str, value: Any) -> Any:
    """A config value naming local models or text files (:data:`MODEL_KEYS`,
    :data:`TEXT_KEYS`) with each named absolute, as commands record them now: results written
    before, with a relative name, compare as named from this folder."""
    from longred_bench.cli.named import local_names, local_text

    one = local_names if key in MODEL_KEYS else local_text if key in TEXT_KEYS else None
    if one is None or value is None:
        return value
    if isinstance(value, list | tuple):
        return [one(v) if isinstance(v, str) else v for v in value]
    return one(value) if isinstance(value, str) else value


def check_results_config(
    out: Path,
    name: str,
    what: str,
    mine: dict[str, Any],
    free: tuple[str, ...] = (),
    before: dict[str, Any] | None = None,
    orderless: tuple[str, ...] = ORDERLESS,
) -> None:
    """Refuse, before anything loads, an ``out`` whose results file ``name`` (JSONL, each record
    with its ``provenance``) holds the results of ``what`` of another config than ``mine``
    (keys in ``free`` aside; or ``name.gz``, the same records compressed, where ``name`` is
    absent): writing there would replace them. RoPE specs compare by label, the lists of
    ``orderless`` (default :data:`ORDERLESS`) in any order; an absent or empty file has nothing
    to keep, and one that is no such results (unreadable, cut short, without provenance) is
    refused too: what it holds is not known. ``before``: what results written before a key
    existed had for it. A list of RoPE specs (psa's lines) compares in any order too."""
    import collections
    import gzip
    import json

    from longred_bench.models.rope import parse_rope_spec

    def norm(key: str, value: Any) -> Any:  # one spec spelled two ways; tasks in any order
        value = same_files(key, value)
        if key in ("rope", "ropes") and value:
            specs = value if isinstance(value, list | tuple) else [value]
            labels = [s if s == "none" else parse_rope_spec(str(s)).label() for s in specs]
            return sorted(labels) if isinstance(value, list | tuple) else labels[0]
        if key in orderless and isinstance(value, list | tuple):
            return sorted(map(str, value))
        return list(value) if isinstance(value, tuple) else value

    path = out / name
    if not path.is_file() and (out / f"{name}.gz").is_file():  # the records kept compressed
        path, name = out / f"{name}.gz", f"{name}.gz"
    try:
        if not path.is_file() or path.stat().st_size == 0:
            return
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as handle:
            first = handle.readline()
            # the last record whole too: a file cut short after a whole record was read as the
            # config's results, and the run replaced them
            rest = collections.deque(handle, maxlen=1)
            json.loads(rest.pop() if rest else first)
            theirs = {**(before or {}), **json.loads(first)["provenance"]["config"]}
        differs = sorted(k for k in mine if k in theirs and k not in free
                         and norm(k, theirs[k]) != norm(k, mine[k]))  # fmt: skip
    except (OSError, EOFError, ValueError, KeyError, TypeError, UserError):  # EOF: a cut .gz
        raise UserError(
            f"--out {out} holds {name}, which is not readable as results with their "
            f"provenance (cut short? another tool's?): give another --out, or delete "
            f"{name} there to give it up"
        ) from None
    if differs:
        raise UserError(f"--out {out} holds the results of {what} of another config (differs "
                        f"in {', '.join(differs)}): give another --out, or delete {name} there "
                        "to give them up")  # fmt: skip


def check_drift_out(out: Path, mine: dict[str, Any]) -> None:
    """Refuse, before anything loads, an ``out`` holding the results or the saved windows of a
    drift of another config than ``mine`` (its ``to_dict``): measuring there would replace them
    (a finished run's results, or an interrupted run's windows, which resume only with their own
    config, but for :data:`~longred_bench.jobs.configs.DRIFT_HOW_KEYS`)."""
    import json

    import yaml

    from longred_bench.jobs.configs import DRIFT_HOW_KEYS
    from longred_bench.jobs.in_progress import PARTIAL, partial_windows

    foreign_config(out, "drift", "original")
    for name, what in ((PARTIAL, "the saved windows of an interrupted drift"),
                       ("config.yaml", "the results of a drift")):  # fmt: skip
        path = out / name
        try:
            text = path.read_text()
            theirs = json.loads(text)["config"] if name == PARTIAL else yaml.safe_load(text)
            how = DRIFT_HOW_KEYS if name == PARTIAL else ()  # saved windows resume under others
            differs = sorted(k for k in mine if k in theirs and k not in how
                             and same_files(k, theirs[k]) != same_files(k, mine[k]))  # fmt: skip
        except (OSError, ValueError, KeyError, TypeError, yaml.YAMLError):
            continue  # absent or unreadable: nothing of another config to keep
        if differs and (name != PARTIAL or partial_windows(path)):
            files = name if name == PARTIAL else "config.yaml and drift.jsonl"  # all of it
            raise UserError(
                f"--out {out} holds {what} of another config (differs in "
                f"{', '.join(differs)}): give another --out, or run that drift's own command "
                f"there (delete {files} to give its work up)"
            )
    # the results themselves, where their config.yaml is gone
    check_results_config(
        out, "drift.jsonl", "a drift", mine, orderless=(*ORDERLESS, "extended")
    )  # as saved_drift_order takes them


def _spelled(key: str) -> Any:
    """How a listed value of ``key`` compares: a RoPE spec by its label (``PI:factor=4.0`` is
    ``pi:factor=4``), a model as it is named."""
    from longred_bench.models.rope import parse_rope_spec

    return (lambda spec: parse_rope_spec(str(spec)).label()) if key == "rope" else str


def saved_drift_order(out: Path, mine: dict[str, Any]) -> dict[str, tuple[str, ...]]:
    """``{"rope": ..., "extended": ...}`` in the order a drift saved in ``out`` (its interrupted
    windows, else its finished results) lists them, where that drift is ``mine`` (a
    ``to_dict``) but for their order and spelling; else ``{}``. A run given its own extensions
    in another order (or spelling: ``pi:factor=4.0``) takes them as saved: its windows resume
    (they resume only under their exact config) and its finished results are found, not
    refused as another config's."""
    import json

    import yaml

    from longred_bench.jobs.configs import DRIFT_HOW_KEYS
    from longred_bench.jobs.in_progress import PARTIAL

    order = ("rope", "extended")

    def unordered(config: dict[str, Any], how: tuple[str, ...]) -> dict[str, Any]:
        return {k: sorted(map(_spelled(k), same_files(k, config[k]) or ())) if k in order
                else same_files(k, config[k]) for k in mine if k not in how}  # fmt: skip

    for name in (PARTIAL, "config.yaml"):
        how = DRIFT_HOW_KEYS if name == PARTIAL else ()  # saved windows resume under others
        try:
            text = (out / name).read_text()
            theirs = json.loads(text)["config"] if name == PARTIAL else yaml.safe_load(text)
            if unordered(theirs, how) == unordered(mine, how):  # config.yaml's wall time aside
                return {k: tuple(same_files(k, theirs[k]) or ()) for k in order}
        except (OSError, ValueError, KeyError, TypeError, AttributeError, UserError,
                yaml.YAMLError):  # fmt: skip
            continue
    return {}


def foreign_config(out: Path, command: str, key: str) -> None:
    """Refuse an ``out`` whose ``config.yaml`` (which ``command`` writes there) is not one
    ``command`` wrote: not YAML, or a mapping without ``key`` (a drift's ``original``, a
    training run's ``recipe``), such as a project's own file or another command's; the run
    replaced it without a word."""
    import yaml

    path = out / "config.yaml"
    if not path.is_file():
        return
    try:
        theirs = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        theirs = None
    if isinstance(theirs, dict) and key in theirs:
        return
    whose = ("a training run's (train's)" if isinstance(theirs, dict) and "recipe" in theirs
             else "a drift's" if isinstance(theirs, dict) and "original" in theirs
             else f"not one {command} wrote")  # fmt: skip
    raise UserError(f"--out {out} holds config.yaml, {whose}, which {command} would replace: "
                    "give another --out, or move that file away")  # fmt: skip


def check_train_out(out: Path) -> None:
    """Refuse, before anything loads, an ``out`` holding a ``config.yaml`` no training run
    wrote (:func:`foreign_config`), or any other of the files and folders a run writes
    (``metrics.jsonl``, ``run.json``, ``curves.png``, ``checkpoints/``, ``final/``; not
    ``local_files.json``, written before ``config.yaml``) without a training run's
    ``config.yaml`` beside it: the run replaces them (a user's own ``final/`` was deleted, their
    ``metrics.jsonl`` overwritten)."""
    foreign_config(out, "train", "recipe")
    if (out / "config.yaml").is_file():
        return
    for name in WRITES["train"]:
        if name in ("config.yaml", "local_files.json") or not (out / name.rstrip("/")).exists():
            continue
        what = "folder" if name.endswith("/") else "file"
        raise UserError(f"--out {out} holds {name}, which no training run wrote there (no "
                        "config.yaml beside it), and train would replace it: give another "
                        f"--out, or move that {what} away")  # fmt: skip


def _check_outside_cache(out: Path, flag: str) -> None:
    from longred_bench.cache import cache_dir

    root, where = cache_dir().resolve(), out.resolve()
    inside = where.relative_to(root).parts if where.is_relative_to(root) else None
    if inside is not None and (not inside or inside[0] in CACHE_FOLDERS):
        what = (
            "is the suite's cache" if not inside else f"is inside the suite's cache ({inside[0]}/)"
        )
        raise UserError(f"{flag} {out} {what}, which the suite manages: give a folder outside "
                        f"{root}")  # fmt: skip


def check_out_outside(out: Path, *models: str | None, flag: str = "--out") -> None:
    """Refuse an ``out`` (given as ``flag``) that is a local model folder the command reads, or
    lies inside one: the results written there change the files the model is known by (its
    results are keyed by them: nothing was ever reused), and mix with the model's own."""
    where = out.resolve()
    for model in models:
        folder = Path(model).expanduser() if model else None
        if folder is None or not (folder / "config.json").is_file():  # no model folder: the
            continue  # model's own check says what it is instead
        if where.is_relative_to(folder.resolve()):
            raise UserError(f"{flag} {out} is inside the model folder {model}, which the "
                            "files written there would change (and mix with): give a folder "
                            "outside it")  # fmt: skip


def check_reproduce_outside(
    table: str, profile: str | None, out: str | None, emit_slurm: str | None
) -> None:
    """Refuse ``reproduce``'s report folder (``out``; a dry run's too, which writes none, so
    that it says what the run would) or ``--emit-slurm`` folder inside the profile's model
    folder: its units are keyed by the model's files, so what is written there made every one
    of them new."""
    from longred_bench.reproduce.profile_views import checked_profile
    from longred_bench.reproduce.registry import get_spec

    name = profile or ("tiny" if table == "all" else get_spec(table).default_profile)
    model = checked_profile(name).model
    for flag, folder in (("--out", out), ("--emit-slurm", emit_slurm)):
        if folder:
            check_out_outside(Path(folder), model.name, model.fallback, flag=flag)


def check_eval_out(out: Path, mine: dict[str, Any]) -> None:
    """Refuse, before anything loads, an ``out`` whose ``eval.jsonl`` holds the results of an
    evaluation of another config than ``mine`` (its ``ran_dict``: with the dtype it runs in):
    writing there replaced them and left files of the other run beside the new ones (its
    ``lm_eval_results.json``). Results written before evaluations had a dtype ran float32.
    NIAH depths count in any order too: each cell of the grid is made on its own (PSA's
    samples follow the order of its depths, so its check keeps their order)."""
    check_results_config(out, "eval.jsonl", "an eval", mine, free=EVAL_FREE_KEYS,
                         before={"dtype": "float32"},
                         orderless=(*ORDERLESS, "depths"))  # fmt: skip
