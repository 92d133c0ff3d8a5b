"""``compare --pairs FILE|NAME``: many originals, each against its published extensions, in one
command: one :mod:`~longred_bench.jobs.compare` report per pair under ``<out>/<original>/`` and an
index ``<out>/pairs.md`` linking them.

A pairs file is YAML with ``settings`` (``compare`` options, its flags with ``_`` for ``-``:
suites, lengths, samples, drift texts, device, ...) and ``pairs``: each an ``original`` hub id,
zoo name or folder with its ``window``, and its ``extended`` models, each a ``model`` and its
``window``. A pair's RULER and NIAH lengths are ``settings.lengths`` up to the largest window
among its extended models (the original is scored at all of them: that it fails past its window
is part of the comparison). The built-in ``compare`` file
(``longred_bench/profiles/compare.yaml``) lists published releases; the windows are stated in
the file, so ``--dry-run`` plans offline. This module imports no torch.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from importlib import resources
from pathlib import Path
from typing import Any

from longred_bench.errors import UserError
from longred_bench.evaluation.config import LONG_SUITES

BUILTIN_PAIRS = ("compare",)
PAIR_SETTINGS_FORBIDDEN = ("original", "extended", "rope")


@dataclass(frozen=True)
class Pair:
    """One original model and the extensions compared with it (model, window)."""

    original: str
    window: int
    extended: tuple[tuple[str, int], ...]

    @property
    def slug(self) -> str:
        """The pair's folder name: the original's name made path-safe."""
        from longred_bench.jobs.compare import slug

        return slug(self.original)


def _path(spec: str) -> Path:
    if spec in BUILTIN_PAIRS:
        return Path(str(resources.files("longred_bench.profiles") / f"{spec}.yaml"))
    path = Path(spec).expanduser()
    if not path.is_file():
        raise UserError(
            f"pairs {spec!r} is neither a built-in pairs file ({', '.join(BUILTIN_PAIRS)}) nor "
            "a YAML file; `longred-bench compare --pairs compare --dry-run` shows the built-in one"
        )
    return path


def _int(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UserError(f"{where} must be a positive whole number of tokens, got {value!r}")
    return value


def _model(value: Any, where: str) -> str:
    """A model spec of the file: a name or path (a list or mapping there was read as its text)."""
    if not isinstance(value, str) or not value.strip():
        raise UserError(f"{where} must be one model (a name or a path), not {value!r}")
    return value


def load_pairs(spec: str) -> tuple[dict[str, Any], list[Pair], str]:
    """(compare settings, pairs, the file read) of pairs file ``spec`` (a built-in name or a
    path); a malformed file is a one-line error naming the file and the key."""
    import yaml

    from longred_bench.jobs.configs import CompareConfig
    from longred_bench.profiles.loader import unique_key_loader

    path = _path(spec)
    try:  # a key given twice in one mapping refused, as in profiles
        data = yaml.load(path.read_text(encoding="utf-8"), Loader=unique_key_loader())
    except UnicodeDecodeError:
        raise UserError(f"pairs {path}: not UTF-8 text; give a YAML file") from None
    except yaml.YAMLError as exc:
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UserError(f"pairs {path}: not valid YAML ({problem})") from None
    if not isinstance(data, dict):
        raise UserError(f"pairs {path}: a mapping with `settings` and `pairs` expected")
    unknown = sorted(set(data) - {"about", "settings", "pairs"})
    if unknown:
        raise UserError(f"pairs {path}: unknown key {unknown[0]} (keys: about, settings, pairs)")
    settings = data.get("settings") or {}
    if not isinstance(settings, dict):
        raise UserError(f"pairs {path}: settings must be a mapping of compare settings")
    known = {f.name for f in fields(CompareConfig)} - set(PAIR_SETTINGS_FORBIDDEN)
    bad = sorted(set(settings) - known)
    if bad:
        raise UserError(f"pairs {path}: settings.{bad[0]} is not a compare setting "
                        f"(settings: {', '.join(sorted(known))})")  # fmt: skip
    _check_lists(settings, f"pairs {path}: settings")
    if not isinstance(data.get("pairs") or [], list):
        raise UserError(f"pairs {path}: pairs must be a list of pairs")
    pairs = []
    for i, item in enumerate(data.get("pairs") or []):
        where = f"pairs {path}: pairs[{i}]"
        if not isinstance(item, dict) or set(item) != {"original", "window", "extended"}:
            raise UserError(f"{where} needs exactly original, window and extended")
        if not isinstance(item["extended"] or [], list):
            raise UserError(f"{where}.extended must be a list of {{model, window}}")
        extended = []
        for j, ext in enumerate(item["extended"] or []):
            if not isinstance(ext, dict) or set(ext) != {"model", "window"}:
                raise UserError(f"{where}.extended[{j}] needs exactly model and window")
            model = _model(ext["model"], f"{where}.extended[{j}].model")
            extended.append((model, _int(ext["window"], f"{where}.extended[{j}]")))
        if not extended:
            raise UserError(f"{where}.extended lists no model")
        pairs.append(Pair(_model(item["original"], f"{where}.original"),
                          _int(item["window"], f"{where}.window"), tuple(extended)))  # fmt: skip
    if not pairs:
        raise UserError(f"pairs {path}: `pairs` lists no pair")
    first: dict[str, Pair] = {}
    for pair in pairs:
        before = first.setdefault(pair.slug, pair)
        if before is pair:
            continue
        if before.original == pair.original:
            raise UserError(f"pairs {path}: original {pair.original} is listed twice; list its "
                            "extensions once")  # fmt: skip
        raise UserError(f"pairs {path}: originals {before.original} and {pair.original} would "
                        f"share the folder {pair.slug}: name one otherwise (a link or a copy "
                        "under another name)")  # fmt: skip
    return settings, pairs, str(path)


def check_windows(pairs: list[Pair], path: str) -> None:
    """Say, one line each, where a window the file states for a local model folder is not the
    one its ``config.json`` gives (``max_position_embeddings``): the stated windows decide which
    lengths each model is scored at, and a typo there changes them without a word. The stated
    window is used (a model's config may give another than it was trained for: a sliding
    window, a stand-in). Names and hub ids are taken as stated (their configs would load or
    download)."""
    import json

    from longred_bench.cache import warn

    def stated(model: str, window: int, key: str) -> None:
        config = Path(model).expanduser() / "config.json"
        try:
            own = json.loads(config.read_text(encoding="utf-8")).get("max_position_embeddings")
        except (OSError, ValueError, AttributeError):
            return  # no local folder, or a config the model's own check refuses
        if isinstance(own, int) and own != window:
            warn(f"pairs {path}: {key} is {window}, but {model}'s config says {own}; the "
                 f"stated {window} is used (set {key}: {own} if that is a typo)")  # fmt: skip

    for i, pair in enumerate(pairs):
        stated(pair.original, pair.window, f"pairs[{i}].window")
        for j, (model, window) in enumerate(pair.extended):
            stated(model, window, f"pairs[{i}].extended[{j}].window")


def check_settings(settings: dict[str, Any], pairs: list[Pair], path: str) -> None:
    """The settings as ``compare`` reads them (a suite, a PCD key, a long-context task among the
    short tasks), refused naming the file (the line named neither file nor key); a pair's own
    misfit is left to that pair."""
    from longred_bench.jobs.configs import CompareConfig

    first = pairs[0]
    try:
        cfg = CompareConfig.from_dict({**settings, "original": first.original,
                                       "extended": [m for m, _ in first.extended]})  # fmt: skip
    except UserError as exc:
        raise UserError(f"pairs {path}: {exc}") from None
    from longred_bench.evaluation.task_names import check_short_task

    for task in cfg.short_tasks:
        check_short_task(task, f"pairs {path}: settings.short_tasks {task}")
    from longred_bench.jobs.compare import decodes_nothing

    if decodes_nothing(cfg.decoding, cfg.suites):  # as compare's flags
        raise UserError(f"pairs {path}: settings.decoding pcd decodes nothing in suites "
                        "[drift] (drift reads the weights): drop it and the pcd "
                        "settings")  # fmt: skip


def _check_lists(settings: dict[str, Any], where: str) -> None:
    """A setting that is a list in ``compare`` (lengths, suites, depths, ...) given as a list,
    whole numbers where it holds numbers (a bare string was read letter by letter, a number
    or an empty value, ``null``, was a traceback)."""
    from longred_bench.jobs.configs import CompareConfig

    for f in fields(CompareConfig):
        value = settings.get(f.name)
        if f.name not in settings or not isinstance(f.default, tuple):
            continue
        if not isinstance(value, list):
            number = isinstance(value, int | float) and not isinstance(value, bool)
            example = f"[{value}]" if number else f"{list(f.default)}"
            raise UserError(f"{where}.{f.name} must be a list, e.g. {example}; got {value!r}")
        if f.name in ("lengths", "niah_depths") and not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise UserError(f"{where}.{f.name} must list whole numbers, got {value}")


def pair_config(settings: dict[str, Any], pair: Pair) -> Any:
    """The ``compare`` config of one pair (see the module docstring for its lengths)."""
    from longred_bench.jobs.configs import CompareConfig

    default = {f.name: f.default for f in fields(CompareConfig)}["lengths"]
    lengths = settings.get("lengths", default)
    top = max(w for _, w in pair.extended)
    kept = [n for n in lengths if n <= top]
    suites = settings.get("suites", {f.name: f.default for f in fields(CompareConfig)}["suites"])
    if not kept and lengths and not set(LONG_SUITES) & set(suites):
        kept = [min(lengths)]  # no suite reads them: the config keeps one, unused
    if not kept:
        raise UserError(f"pair {pair.original}: no length of settings.lengths {list(lengths)} "
                        f"fits its extended models' windows (at most {top})")  # fmt: skip
    data = {**settings, "original": pair.original, "lengths": kept,
            "extended": [m for m, _ in pair.extended]}  # fmt: skip
    return CompareConfig.from_dict(data)


def pairs_plan(spec: str, estimates: dict[str, list[str]] | None = None) -> str:
    """``compare --pairs ... --dry-run``: each pair, its windows, the lengths it is scored at and
    its units, then its ``estimates`` lines where given (by the pair's slug:
    :mod:`longred_bench.reproduce.pair_costs`); nothing is loaded."""
    settings, pairs, source = load_pairs(spec)
    lines = [f"compare --pairs {spec} --dry-run ({source}); nothing is run", ""]
    total = 0
    for pair in pairs:
        cfg = pair_config(settings, pair)
        models = 1 + len(pair.extended)
        evals = models * len([s for s in cfg.suites if s != "drift"]) * len(cfg.decoding)
        units = evals + (len(pair.extended) if "drift" in cfg.suites else 0)  # one per model
        total += units
        lines.append(f"{pair.original} (window {pair.window}) -> {pair.slug}/: {units} units")
        for model, window in pair.extended:
            lines.append(f"  {model} (window {window}, {window / pair.window:g}x)")
        scored = [f"suites {', '.join(cfg.suites)}"]
        if set(LONG_SUITES) & set(cfg.suites):  # the suites scored at lengths
            scored.append(f"lengths {', '.join(map(str, cfg.lengths))}")
        if "ruler" in cfg.suites:
            scored.append(f"{cfg.ruler_samples} RULER samples per task and length")
        lines.append(f"  {'; '.join(scored)}; device {cfg.device}")
        lines += (estimates or {}).get(pair.slug, [])
    lines += ["", f"In all: {len(pairs)} pairs, {total} units. Hub names are checked when a "
              "model loads; a missing one stops its pair in one line (units already measured "
              "are kept)."]  # fmt: skip
    return "\n".join(lines) + "\n"


def compare_pairs(spec: str, out: Path, *, command: str, progress: bool = True) -> list[Path]:
    """Run every pair of ``spec`` into ``out/<pair>/`` (each resumable as ``compare`` is), then
    write ``out/pairs.md``; the paths written."""
    from longred_bench.jobs.compare import compare_command

    settings, pairs, source = load_pairs(spec)
    configs = [(pair, pair_config(settings, pair)) for pair in pairs]  # all checked first
    _check_tokenizers(configs)
    written: list[Path] = []
    title = (
        "Published extensions against their originals"
        if spec in BUILTIN_PAIRS
        else "Extended models against their originals"
    )  # a user's file: its own pairs
    index = [f"# {title} ({Path(source).name})", "",
             f"Command: `{command}`.", "", "| original | window | extended (window) | report |",
             "|---|---:|---|---|"]  # fmt: skip
    for pair, cfg in configs:
        written += compare_command(cfg, out / pair.slug, command=command, progress=progress,
                                   tasks_key=f"settings.short_tasks in {source}",
                                   seq_len_key=f"settings.drift_seq_len in {source}")  # fmt: skip
        exts = ", ".join(f"`{m}` ({w})" for m, w in pair.extended)
        index.append(f"| `{pair.original}` | {pair.window} | {exts} | "
                     f"[{pair.slug}/compare.md]({pair.slug}/compare.md) |")  # fmt: skip
    (out / "pairs.md").write_text("\n".join(index) + "\n", encoding="utf-8")
    return [*written, out / "pairs.md"]


def _check_tokenizers(configs: list[tuple[Pair, Any]]) -> None:
    """Every pair's extended models share its original's tokenizer, checked before the first
    pair runs (not when its turn comes, after the pairs before it); a model that does not load
    here is left to stop its own pair when it runs."""
    from longred_bench.jobs.compare import check_tokenizers
    from longred_bench.jobs.same_tokens import Mismatch

    for pair, cfg in configs:
        try:
            check_tokenizers(cfg, note=False)  # noted when the pair runs
        except Mismatch as exc:
            raise Mismatch(f"pair {pair.original}: {exc}") from None
        except UserError:
            continue
