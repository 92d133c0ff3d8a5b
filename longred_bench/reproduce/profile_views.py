"""``longred-bench profiles``: the built-in profiles and what each runs (``profiles``), one
profile resolved with every table's settings (``profiles show P``), and an editable copy of one
(``profiles new --from P --out FILE``). Nothing here imports torch, but ``profiles show`` of a
multi-GPU profile with LinearARD's ``-lite`` rows, whose budget is split by the training methods."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from longred_bench.errors import UserError, close_name, meant_note
from longred_bench.jobs.configs import FLOAT_DTYPES
from longred_bench.profiles import BUILTIN, load_profile
from longred_bench.profiles.loader import read_mapping
from longred_bench.profiles.schema import Profile, build, to_dict
from longred_bench.reproduce.registry import get_spec, table_names


def checked_profile(spec: str | Path) -> Profile:
    """Profile ``spec`` loaded, and what the file's schema cannot check refused in one line
    naming the file and key: a ``tables`` section of no table, or one with a key its table has
    not or a value of the wrong type (whichever table runs), an extension in ``runs`` that
    is no RoPE spec, RULER lengths no task can be scored at, a training data source whose local
    file or folder does not exist (``hf:`` members are not asked for), a ``training`` key that
    no recipe has, a local ``model.name`` (or fallback) that is no model folder or ``.gguf`` or
    one that is a mistyped zoo name (``tiny-bse``: no hub id is asked for), drift
    texts that are no corpus, ``random`` or file."""
    from longred_bench.data.corpus_spec import check_local_paths
    from longred_bench.data.texts import check_text_source
    from longred_bench.models.names import check_local, check_not_mistyped
    from longred_bench.models.rope import parse_rope_spec
    from longred_bench.taskdata.ruler.registry import check_lengths
    from longred_bench.training.config import check_training_sections

    prof = load_profile(spec)
    check_training_sections(prof)
    where = f"profile {prof.source or prof.name}"
    unknown = sorted(set(prof.tables) - set(table_names()))
    if unknown:
        meant = meant_note(str(unknown[0]), table_names())
        raise UserError(f"{where}: tables.{unknown[0]} is no table{meant}; the tables: "
                        f"{', '.join(table_names())}")  # fmt: skip
    for table, section in prof.tables.items():  # every section's keys and types, as its run
        build(get_spec(table).settings, section or {}, file=prof.source or prof.name,
              where=f"tables.{table}")  # fmt: skip
    checks = [(f"runs.extensions[{i}]", parse_rope_spec, ext)
              for i, ext in enumerate(prof.runs.extensions)]  # fmt: skip
    checks.append(("evaluation.ruler.lengths", check_lengths, prof.evaluation.ruler.lengths))
    checks.append(("drift.texts", check_text_source, prof.drift.texts))
    tables_ev: list[tuple[str, Any]] = []  # (key, a table's evaluation merged over the profile's)
    for table, section in prof.tables.items():  # a table's own extensions and RULER lengths
        section = section if isinstance(section, dict) else {}
        from longred_bench.jobs.configs import ORIGINAL

        for list_key in ("extensions", "ropes"):  # PCD's lines: specs, or none (the model)
            exts = section.get(list_key)
            exts = exts if isinstance(exts, list | tuple) else ()
            checks += [(f"tables.{table}.{list_key}[{i}]", parse_rope_spec, ext)
                       for i, ext in enumerate(exts) if ext != ORIGINAL]  # fmt: skip
        if "evaluation" in section:  # its keys and types; its values with the profile's
            own = f"tables.{table}.evaluation"
            if not isinstance(section["evaluation"], dict):
                raise UserError(f"{where}: {own} must be a mapping of evaluation keys")
            from longred_bench.reproduce.grid import table_evaluation

            ev = table_evaluation(prof, section["evaluation"], table)
            checks.append((f"{own}.ruler.lengths", check_lengths, ev.ruler.lengths))
            tables_ev.append((own, ev))
    checks += [(key, check_local_paths, value) for key, value in data_sources(prof)]
    local = [(k, n) for k in ("name", "fallback") if (n := getattr(prof.model, k))]
    checks += [(f"model.{k}", check_local, n) for k, n in local if Path(n).expanduser().exists()]
    checks += [(f"model.{k}", check_not_mistyped, n) for k, n in local]  # tiny-bse: no hub id
    for key, check, value in checks:
        try:
            got = check(value)
        except UserError as exc:
            raise UserError(f"{where}: {key}: {exc}") from None
        if check is parse_rope_spec and got.method == "dynamic":
            check_vllm_rope(prof, key, value, where)
    check_values(prof, where)
    for key, ev in tables_ev:
        check_evaluation(ev, where, key)
    from longred_bench.reproduce.profile_tasks import check_task_lists

    check_task_lists(prof, where, tables_ev)
    check_repeats(to_dict(prof), where)
    check_training_values(prof)
    return prof


SPEC_LISTS = ("extensions", "ropes", "zero_shot", "trained")
"""Profile keys whose list names RoPE specs (compared by their canonical label)."""
LISTS = (*SPEC_LISTS, "lengths", "dev_lengths", "snapshots", "rows", "tasks", "ruler_tasks",
         "short_tasks", "psa_tasks", "dev_lines")  # fmt: skip
"""The profile keys whose list may name a value once only (a length or extension twice would
count its samples twice in every mean and interval)."""


def check_repeats(data: Any, where: str, path: str = "") -> None:
    """Refuse any list under a key of :data:`LISTS` in profile mapping ``data`` that names a
    value twice (RoPE specs compared by their canonical label), naming its key path."""
    from longred_bench.errors import reject_repeats
    from longred_bench.jobs.configs import ORIGINAL
    from longred_bench.models.rope import parse_rope_spec

    def named(value: Any, spec: bool) -> Any:
        if isinstance(value, list | tuple):  # PCD's trained lines: [recipe, spec, ...] as given
            return tuple(named(v, False) for v in value)
        if spec and isinstance(value, str) and value != ORIGINAL:
            return parse_rope_spec(value).label()
        return value if isinstance(value, str | int | float | bool) or value is None else str(value)

    if not isinstance(data, dict):
        return
    for key, value in data.items():
        here = f"{path}.{key}" if path else str(key)
        if key in LISTS and isinstance(value, list | tuple):
            try:
                names = [named(v, key in SPEC_LISTS) for v in value]
            except UserError as exc:
                raise UserError(f"{where}: {here}: {exc}") from None
            reject_repeats(names, f"{where}: {here}")
        else:
            check_repeats(value, where, here)


def check_training_values(prof: Profile) -> None:
    """Each training key of ``training.<recipe>``, ``runs.overrides`` and every
    ``tables.<t>.overrides`` is a training key (or a method group) of its type, refused in one
    line naming the file and the key path (the schema's own type check); ``null`` in an
    ``overrides`` section gives up an inherited override."""
    import dataclasses
    import typing

    from longred_bench.profiles.schema import coerce
    from longred_bench.training.config import HARDWARE_KEYS, METHOD_GROUPS, TrainConfig

    hints = typing.get_type_hints(TrainConfig)
    known = {f.name for f in dataclasses.fields(TrainConfig)} - {"recipe", "profile"}
    file = str(prof.source or prof.name)
    sections = {f"training.{name}": keys for name, keys in prof.training.items()}
    sections["runs.overrides"] = prof.runs.overrides
    for table, section in prof.tables.items():
        if isinstance(section, dict) and "overrides" in section:
            sections[f"tables.{table}.overrides"] = section["overrides"]
    for path, keys in sections.items():
        if not isinstance(keys, dict):
            raise UserError(f"profile {file}: {path} must be a mapping of training keys")
        for key, value in keys.items():
            if key in HARDWARE_KEYS:
                raise UserError(f"profile {file}: {path}.{key}: set it under `hardware:`")
            if key in METHOD_GROUPS:
                continue
            if key not in known:
                close = close_name(str(key), sorted(known))
                meant = f"did you mean {close}? " if close else ""
                raise UserError(f"profile {file}: {path}.{key} is not a training key ({meant}see "
                                "docs/training.md)")  # fmt: skip
            if value is None and path.endswith("overrides"):
                continue  # no override: an inherited one given up
            coerce(hints[key], value, file=file, where=f"{path}.{key}")
            _check_training_value(key, value, f"profile {file}: {path}.{key}")


def _check_training_value(key: str, value: object, where: str) -> None:
    """A training value of the right type that still cannot train: a RoPE spec that does not
    parse (one line naming ``where``; a NaN or infinite number the type check refuses)."""
    from longred_bench.models.rope import parse_rope_spec

    if key == "rope" and value is not None:
        try:
            parse_rope_spec(str(value))
        except UserError as exc:
            raise UserError(f"{where}: {exc}") from None


def check_vllm_rope(prof: Profile, key: str, rope: str, where: str) -> None:
    """Refuse dynamic RoPE ``rope`` (at ``key``) where the table that runs it evaluates through
    vLLM, whose dynamic NTK is one static base for every length, unlike transformers'."""
    table = key.split(".")[1] if key.startswith("tables.") else None
    section = prof.tables.get(table) if table else None
    evaluation = section.get("evaluation") if isinstance(section, dict) else None
    own = evaluation.get("backend") if isinstance(evaluation, dict) else None
    if (own or prof.evaluation.backend) == "vllm":
        raise UserError(
            f"{where}: {key}: {rope} is dynamic RoPE, which the vllm backend "
            "does not evaluate as transformers does: use evaluation.backend: hf"
        )


DEVICE = re.compile(r"(auto|cpu|mps|cuda(:\d+)?)")


def check_values(prof: Profile, where: str) -> None:
    """The values the schema's types cannot refuse, each in one line naming its key: a backend,
    short suite, device, dtype, RULER phrasing or perplexity corpus the suite does not have, and
    a count below its least."""
    check_evaluation(prof.evaluation, where, "evaluation")
    for key, value in (("hardware.device", prof.hardware.device),
                       ("drift.device", prof.drift.device)):  # fmt: skip
        if not DEVICE.fullmatch(value):
            raise UserError(f"{where}: {key} {value!r} is no device: use auto, cpu or cuda[:N]")
    counts = [("drift.num_texts", prof.drift.num_texts), ("drift.seq_len", prof.drift.seq_len),
              ("hardware.nproc_per_node", prof.hardware.nproc_per_node), ("runs.seeds",
              prof.runs.seeds), ("model.window", prof.model.window),
              ("model.layers", prof.model.layers)]  # fmt: skip
    for key, value in counts:
        if value is not None and value < 1:
            raise UserError(f"{where}: {key} must be at least 1, not {value}")
    if prof.drift.top_m < 0:
        raise UserError(f"{where}: drift.top_m must be at least 0, not {prof.drift.top_m}")
    for key, value, auto in (("hardware.dtype", prof.hardware.dtype, ("auto",)),
                             ("drift.dtype", prof.drift.dtype, ())):  # fmt: skip
        if value not in (*auto, *FLOAT_DTYPES):
            raise UserError(f"{where}: {key} {value!r} is not one of "
                            f"{', '.join((*auto, *FLOAT_DTYPES))}")  # fmt: skip


def check_evaluation(ev: Any, where: str, key: str) -> None:
    """An evaluation section's values (the profile's ``evaluation``, or a table's merged over
    it, at ``key``) the schema's types cannot refuse, in one line naming the key: its backend,
    short suite, device, RULER phrasing and perplexity corpus, and its counts."""
    from longred_bench.data.texts import check_text_source
    from longred_bench.evaluation.config import BACKENDS, LONG_SUITES, SUITES
    from longred_bench.taskdata.ruler.phrasings import check_phrasing

    shorts = [s for s in SUITES if s not in (*LONG_SUITES, "ppl")]
    for name, value, known in (("backend", ev.backend, BACKENDS),
                               ("short.suite", ev.short.suite, shorts)):  # fmt: skip
        if value not in known:
            raise UserError(f"{where}: {key}.{name} {value!r} is not one of {', '.join(known)}")
    if not DEVICE.fullmatch(ev.device):
        raise UserError(f"{where}: {key}.device {ev.device!r} is no device: use auto, cpu or "
                        "cuda[:N]")  # fmt: skip
    counts = [("ruler.samples", ev.ruler.samples), ("short.limit", ev.short.limit),
              ("short.max_length", ev.short.max_length), ("ppl.windows", ev.ppl.windows),
              ("batch_size", ev.batch_size)]  # fmt: skip
    for name, value in counts:
        if value is not None and value < 1:
            raise UserError(f"{where}: {key}.{name} must be at least 1, not {value}")
    named = [("ruler.phrasing", check_phrasing, ev.ruler.phrasing),
             ("ppl.corpus", check_text_source, ev.ppl.corpus)]  # fmt: skip
    for name, check, value in named:
        try:
            if value is not None:
                check(value)
        except UserError as exc:
            raise UserError(f"{where}: {key}.{name}: {exc}") from None


def data_sources(profile: Profile) -> list[tuple[str, str]]:
    """Each training data source ``profile`` names, with its key: ``training.<recipe>``,
    ``runs.overrides`` and ``tables.<table>.overrides``."""
    from longred_bench.data.corpus_spec import DATA_KEYS

    sections = [(f"training.{recipe}", keys) for recipe, keys in profile.training.items()]
    sections.append(("runs.overrides", profile.runs.overrides))
    for table, section in profile.tables.items():
        if isinstance(section, dict):
            sections.append((f"tables.{table}.overrides", section.get("overrides")))
    return [(f"{where}.{key}", keys[key]) for where, keys in sections if isinstance(keys, dict)
            for key in DATA_KEYS if isinstance(keys.get(key), str)]  # fmt: skip


def table_support(profile: Profile) -> dict[str, str | None]:
    """Each table and why it cannot run at ``profile`` (None: it can)."""
    out: dict[str, str | None] = {}
    for name in table_names():
        try:
            get_spec(name).resolve(profile, progress=False)
            out[name] = None
        except UserError as exc:
            out[name] = str(exc)
    return out


def profiles_table() -> str:
    """Every built-in profile: its model, where it runs, its purpose, the tables it runs ("every
    table" where it runs them all, the tables named once below)."""
    rows = ["| profile | model | where | purpose | reproduce |", "|---" * 5 + "|"]
    tables = list(table_names())
    for name in BUILTIN:
        prof = load_profile(name)
        runs = [t for t, why in table_support(prof).items() if why is None]
        cell = "every table" if runs == tables else ", ".join(runs) or "-"
        rows.append(f"| {name} | {prof.about.model or prof.model.name} | {prof.about.where} | "
                    f"{prof.about.purpose} | {cell} |")  # fmt: skip
    rows += [
        "",
        f"Tables: {', '.join(tables)} (`longred-bench reproduce TABLE --profile P`). "
        "`longred-bench profiles show P` prints one whole; `longred-bench profiles new "
        "--from P --out my.yaml` writes an editable copy (`--profile my.yaml` runs it).",
    ]
    return "\n".join(rows)


def show_profile(spec: str) -> str:
    """Profile ``spec`` resolved (``extends`` followed, defaults filled) as YAML, then every
    table's resolved settings (its plan's rows and seeds checked), or why it cannot run; a
    ``tables.<name>`` section the file itself gives that its table refuses (an unknown key, a
    row no table has) is a one-line error, as ``reproduce <name>`` would give, not a line of
    the listing; several such sections (a full copy from ``profiles new``), every one of them
    in that line. A training value no run of a table can take (``steps: -1``) is a one-line
    error naming the run and the keys that set it, as ``reproduce`` gives before any work; so is
    a local model whose config has another window or depth than the profile states, or that an
    extension of a table does not apply to, as a dry run gives."""
    import dataclasses

    import yaml

    from longred_bench.reproduce.grid import trained_rows
    from longred_bench.reproduce.model_check import check_model, extensions_of, local_model

    prof = checked_profile(spec)
    steps: dict[str, list[Any]] = {}
    own = (read_mapping(Path(prof.source)).get("tables") or {}) if prof.source else {}
    data = to_dict(prof)
    tables: dict[str, Any] = {}
    refused: list[UserError] = []
    for name in table_names():
        grid = None
        try:
            table = get_spec(name)
            ctx = table.resolve(prof, progress=False)
            if table.grid is not None:  # its rows, seeds and lengths
                grid = table.grid(ctx)
            settings = ctx.settings
            tables[name] = to_dict(settings) if dataclasses.fields(settings) else {}
            if local_model(prof.model.name):  # the extensions its units apply, checked below
                steps[name] = table.steps(ctx)
        except UserError as exc:
            if isinstance(own, dict) and own.get(name):
                refused.append(exc)  # each one the file sets, in one line (a full copy: many)
            tables[name] = f"cannot run: {exc}"
        for run in trained_rows(grid) if grid is not None else ():
            run.config(grid)  # every training config, as the plan resolves it
    if len(refused) == 1:
        raise refused[0]
    if refused:
        raise UserError(f"{len(refused)} tables the file sets cannot run: "
                        + "; ".join(str(e) for e in refused))  # fmt: skip
    if steps:  # a local model's window, depth and extensions, read from its config, as
        check_model(prof, None, extensions_of(steps))  # a dry run checks them
    data["tables"] = tables
    head = f"# profile {prof.name}, from {prof.source}, resolved (every key, defaults filled)\n"
    return head + yaml.safe_dump(data, sort_keys=False, width=100)


def new_profile(source: str, out: Path) -> Path:
    """Write an editable copy of profile ``source`` to ``out`` (named after ``out``'s stem,
    with no ``name:`` key, so that a copy of the copy is named after its own file): the file
    itself with its comments where it extends nothing, else its resolved keys. Refuses to
    replace a file."""
    import yaml

    from longred_bench.profiles.loader import profile_file

    if out.exists():
        raise UserError(f"{out} exists; give another --out (nothing was written)")
    if out.suffix not in (".yaml", ".yml"):
        raise UserError(f"--out {out}: a profile is a .yaml (or .yml) file; give one")
    from longred_bench.profiles.loader import NAME_PATTERN

    if not NAME_PATTERN.match(out.stem):
        raise UserError(f"--out {out}: the file's stem names the profile; use letters, digits, "
                        "'.', '_' or '-'")  # fmt: skip
    if out.stem in BUILTIN:  # its reports would land in the built-in's folder, reports/<name>/
        raise UserError(f"--out {out}: the file's stem names the profile, and {out.stem} is "
                        "a built-in profile's name; choose another")  # fmt: skip
    parent = next(p for p in (out.parent.absolute(), *out.parent.absolute().parents) if p.exists())
    if not parent.is_dir():
        raise UserError(f"--out {out}: {parent} is a file, so no profile can be written under it")
    prof = checked_profile(source)  # validates before anything is written
    path = profile_file(source)
    raw = read_mapping(path)
    head = (f"# A longred-bench profile, copied from {prof.name} ({path.name}) by `longred-bench "
            "profiles new`.\n# Edit any value; `longred-bench profiles show FILE` checks it and "
            "`--profile FILE` runs it.\n# The file's name names the profile (its reports go to "
            "reports/<name>/): a copy of this file is a profile of its own.\n")  # fmt: skip
    if "extends" in raw:  # the resolved keys, less the source's name: the copy is out's own
        keys = {k: v for k, v in to_dict(prof).items() if k != "name"}
        body = yaml.safe_dump(keys, sort_keys=False, width=100)
    else:
        body = "".join(line for line in path.read_text(encoding="utf-8").splitlines(True)
                       if not line.startswith("name:"))  # fmt: skip
    if prof.model.fallback:  # it stands in for the source's model only
        note = (
            f"  # The fallback stands in for {prof.model.name} where the hub cannot give "
            "it:\n  # delete it when you change name (else it runs in your model's place).\n"
        )
        body = re.sub(r"(?m)^(?=  fallback: )", lambda _: note, body, count=1)
    about = ("# about: the copied profile's description; rewrite it for your model and setting "
             "(`profiles` shows it; nothing runs from it)\n")  # fmt: skip
    body = re.sub(r"(?m)^(?=about:)", lambda _: about, body, count=1)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(head + body, encoding="utf-8")  # no name: the file's stem names it
    load_profile(out)  # the copy is a valid profile
    return out
