"""Profile files: the built-in ones shipped beside this module (``smoke``, ``tiny``, ``smol``,
``paper``) and a user's own, found by name or path, ``extends`` followed, validated into a
:class:`~longred_bench.profiles.schema.Profile`.

``extends: NAME|PATH`` takes every key of that profile (a path is relative to the file that
names it); the file's own keys replace them, mappings merged key by key, lists replaced whole.
``name`` is not inherited: a profile is named by its ``name`` key, else by its file's stem. The
name labels its training runs (their cache keys), so two files with the same settings and
different names train apart. Nor is a ``model.fallback`` where the file names another
``model.name``: a fallback stands in for the model it was stated with.
"""

from __future__ import annotations

import copy
import os
import re
from dataclasses import replace
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import Any

from longred_bench.errors import UserError
from longred_bench.profiles.schema import Profile, build

BUILTIN = ("smoke", "tiny", "smol", "paper", "paper-128k", "paper-mistral", "paper-linearard")
DEFAULT = "smol"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def builtin_path(name: str) -> Path:
    """The file of built-in profile ``name``."""
    return Path(str(resources.files("longred_bench.profiles") / f"{name}.yaml"))


def profile_file(spec: str | Path, *, relative_to: Path | None = None) -> Path:
    """The file ``spec`` names: a built-in profile's name, or a YAML path (relative to
    ``relative_to``'s folder when given)."""
    if str(spec) in BUILTIN:
        return builtin_path(str(spec))
    path = Path(spec).expanduser()
    if relative_to is not None and not path.is_absolute():
        path = relative_to.parent / path
    if path.is_file():
        return path
    what = f"profile {spec!r}" if relative_to is None else f"{relative_to}: extends {spec!r}"
    if path.suffix in (".yaml", ".yml") and not path.exists():
        raise UserError(f"{what}: no such file ({path}); the built-in profiles: "
                        f"{', '.join(BUILTIN)}")  # fmt: skip
    raise UserError(
        f"{what} is neither a built-in profile ({', '.join(BUILTIN)}) nor a YAML file"
        f"{_meant(path)}; `longred-bench profiles new --from smol --out my.yaml` writes one to edit"
    )


def _meant(path: Path) -> str:
    """`` (did you mean my.yml?)`` where ``path`` with a YAML suffix is a file (``--profile
    my`` for ``my.yml``), or ``path`` is close to a built-in profile's name, else ``""``."""
    import difflib

    files = [
        str(f) for ext in (".yaml", ".yml") if (f := path.with_name(path.name + ext)).is_file()
    ]
    close = files or difflib.get_close_matches(str(path), BUILTIN, n=1, cutoff=0.75)
    return f" (did you mean {close[0]}?)" if close else ""


def unique_key_loader() -> type:
    """A safe YAML loader that refuses a key given twice in one mapping (plain YAML keeps the
    last one silently: ``steps: 5`` then ``steps: 7`` ran 7 steps). Each mapping is checked
    once, as written, before merges (``<<``) rewrite it; a key a merge brings in may be
    overridden, and keys that are not plain scalars are left to the constructor."""
    import yaml

    merge, value = "tag:yaml.org,2002:merge", "tag:yaml.org,2002:value"

    class UniqueKeyLoader(yaml.SafeLoader):
        def __init__(self, stream: Any) -> None:
            super().__init__(stream)
            self._checked: set[int] = set()

        def flatten_mapping(self, node: Any) -> None:
            if id(node) not in self._checked:
                self._checked.add(id(node))
                seen: set[tuple[str, str]] = set()
                for key_node, _ in node.value:
                    if key_node.tag == merge or not isinstance(key_node, yaml.ScalarNode):
                        continue
                    key = ("tag:yaml.org,2002:str" if key_node.tag == value else key_node.tag,
                           key_node.value)  # fmt: skip
                    if key in seen:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"key {key_node.value!r} is given twice",
                            key_node.start_mark)  # fmt: skip
                    seen.add(key)
            super().flatten_mapping(node)

    return UniqueKeyLoader


@lru_cache(maxsize=64)
def _parsed(text: str) -> Any:
    """YAML ``text`` parsed, by its content (a command reads a profile and the files it extends
    at each of its units' configs: 140 parses, 3.5 s of a smoke reproduce); callers get a copy."""
    import yaml

    return yaml.load(text, Loader=unique_key_loader())


def read_mapping(path: Path, what: str = "profile") -> dict[str, Any]:
    """The YAML mapping in ``path`` (a one-line error naming it as ``what`` if it is not UTF-8
    text, does not parse, gives a key twice in one mapping or is no mapping)."""
    import yaml

    try:
        data = copy.deepcopy(_parsed(path.read_text(encoding="utf-8")))
    except UnicodeDecodeError:
        raise UserError(f"{what} {path}: not UTF-8 text; give a YAML file") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or ""
        detail = f" ({problem})" if problem else ""  # the parser's reason: "expected ',' or ']'"
        raise UserError(f"{what} {path}: not valid YAML{where}{detail}; fix the file") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UserError(f"{what} {path}: must hold a mapping of keys to values")
    return data


def merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``over``'s keys: mappings merged key by key, anything else replaced."""
    out = dict(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def resolved_mapping(path: Path, _seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """The keys of the profile in ``path`` with its ``extends`` chain merged in (its own
    ``name``, or none)."""
    if path.resolve() in _seen:
        chain = " -> ".join(str(p) for p in (*_seen, path.resolve()))
        raise UserError(f"profile {path}: extends itself ({chain}); remove one `extends`")
    data = read_mapping(path)
    parent = data.pop("extends", None)
    if parent is None:
        return data
    if not isinstance(parent, str):
        raise UserError(f"profile {path}: extends must be a profile name or a path, got {parent!r}")
    base = resolved_mapping(profile_file(parent, relative_to=path), (*_seen, path.resolve()))
    base.pop("name", None)
    model, inherited = data.get("model"), base.get("model")
    if isinstance(model, dict) and isinstance(inherited, dict):
        parent_name = inherited.get("name")
        if model.get("name", parent_name) != parent_name:  # another model named here
            inherited.pop("fallback", None)  # it stood in for the parent's model
    return merge(base, data)


def _ancestors(path: Path) -> list[Path]:
    """The files ``path`` extends, nearest first (``resolved_mapping`` has read them all)."""
    out: list[Path] = []
    while isinstance(parent := read_mapping(path).get("extends"), str):
        path = profile_file(parent, relative_to=path).resolve()
        if path in out:
            break
        out.append(path)
    return out


def _at_its_origin(exc: UserError, path: Path) -> UserError:
    """``exc`` (a key of ``path``'s resolved profile refused) said of the file the key comes from:
    the farthest file of its ``extends`` chain whose own profile gives the same error (a parent's
    ``model.window: banana`` was reported against the child that extends it)."""
    for ancestor in reversed(_ancestors(path)):
        data = resolved_mapping(ancestor)
        try:
            build(Profile, {**data, "name": data.pop("name", ancestor.stem)}, file=str(ancestor))
        except UserError as theirs:
            if str(theirs).replace(str(ancestor), str(path), 1) == str(exc):
                return UserError(f"{theirs} (extended by {path})")
    return exc


ZOO_NAMES = ("tiny-random", "smollm2-135m", "tiny-base")
"""The zoo's model names (:func:`longred_bench.models.names.zoo_names`, a layer above; a test
keeps the two equal): a zoo name is the zoo's model even where a folder of that name lies in the
current folder, as on the command line."""


def _local(name: str) -> bool:
    """Whether a model name is a local path (see :func:`check_model_path`): written as one, or
    an existing file or folder of the current one (``my-model``, ``models/llama``) that is not a
    zoo name, as on the command line."""
    return (name.startswith(("/", "./", "../", "~")) or name.endswith(".gguf")
            or (name not in ZOO_NAMES and Path(name).expanduser().exists()))  # fmt: skip


def _absolute(name: str | None) -> str | None:
    """A local model path made absolute (from the current folder, as on the command line), so
    that two folders' ``./model`` are two models, in the run cache's keys as everywhere."""
    if name is None or not _local(name):
        return name
    return str(Path(name).expanduser().resolve())


@cache
def _load(path: Path, contents: tuple[bytes, ...], cwd: str) -> Profile:
    del contents, cwd  # part of the cache key: an edited file (the profile or one it extends)
    # or another folder reads again (its text, not its time: one edited within the file
    # system's time step kept its time and was taken as read)
    data = resolved_mapping(path)
    named = "name" in data
    name = data.pop("name", path.stem)
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        fix = ("set its `name:` to such a name" if named else "rename the file (its name is "
               "the profile's) or set `name:` in it to such a name")  # fmt: skip
        raise UserError(f"profile {path}: name must be letters, digits, '.', '_' or '-', got "
                        f"{name!r}; {fix}")  # fmt: skip
    if name in BUILTIN and path != builtin_path(name).resolve():
        raise UserError(f"profile {path}: its name {name!r} is a built-in profile's, whose "
                        "reports it would replace; set `name:` to one of your own (or "
                        "rename the file)")  # fmt: skip
    try:
        profile = build(Profile, {**data, "name": name}, file=str(path))
    except UserError as exc:
        raise _at_its_origin(exc, path) from None
    check_model_path(profile.model.name, _setting(path, "name"), path)
    check_fallback(profile.model.fallback, _setting(path, "fallback"), path)
    check_ruler_tasks(profile.evaluation.ruler.tasks, str(path), "evaluation.ruler.tasks")
    model = replace(profile.model, name=_absolute(profile.model.name),
                    fallback=_absolute(profile.model.fallback))  # fmt: skip
    return Profile(**{**profile.__dict__, "model": model, "source": str(path)})


def check_ruler_tasks(tasks: tuple[str, ...] | None, file: str, where: str) -> None:
    """RULER tasks are the suite's own lm-eval tasks (``longred_ruler_<name>``, and lm-eval's
    NIAH as ``longred_lmeval_<name>``): a bare RULER name would select lm-eval's task of that
    name, a different task, so it is refused."""
    for task in tasks or ():
        if not task.startswith(("longred_ruler_", "longred_lmeval_")):
            name = task.removeprefix("ruler_")
            raise UserError(f"profile {file}: {where}: {task!r} is not one of the suite's RULER "
                            f"tasks; write longred_ruler_{name}")  # fmt: skip


def _setting(path: Path, key: str) -> Path:
    """The file of ``path``'s ``extends`` chain, nearest first, whose own ``model`` section
    sets ``key`` (``path`` where none does)."""
    for file in (path, *_ancestors(path)):
        model = read_mapping(file).get("model")
        if isinstance(model, dict) and key in model:
            return file
    return path


def check_model_path(name: str, path: Path, read: Path | None = None,
                     key: str = "model.name") -> None:  # fmt: skip
    """A model named by a local path (``/``, ``./``, ``../``, ``~`` or a ``.gguf`` file; a
    relative one is read from the current folder, as on the command line, where a bare name
    that exists there is one too) must exist; zoo names and hub ids are checked when the model
    is read. ``path``: the file that sets ``key``; ``read``: the profile read, where it is
    another file, which extends ``path``."""
    if not _local(name):
        return
    given = Path(name).expanduser()
    if not given.exists():
        where = "" if given.is_absolute() else f" (read from the current folder, {Path.cwd()})"
        by = f" (extended by {read})" if read not in (None, path) else ""
        raise UserError(f"profile {path}: {key} {name!r} does not exist{where}; give a Hugging "
                        f"Face folder, a .gguf file, a zoo name or a hub id{by}")  # fmt: skip


def check_fallback(fallback: str | None, path: Path, read: Path | None = None) -> None:
    """A model's fallback runs where the hub cannot be reached, so it must be offline: a zoo
    name, a local folder or a ``.gguf`` file that exists (not a hub id); ``path`` and ``read``
    as for :func:`check_model_path`."""
    if fallback is None:
        return
    if not _local(fallback) and "/" in fallback:
        by = f" (extended by {read})" if read not in (None, path) else ""
        raise UserError(
            f"profile {path}: model.fallback {fallback!r} looks like a hub id; give an offline "
            f"model: a zoo name, a local folder or a .gguf file{by}"
        )
    check_model_path(fallback, path, read, "model.fallback")


def load_profile(spec: str | Path) -> Profile:
    """The profile ``spec`` names (a built-in name or a YAML path), validated."""
    path = profile_file(spec).resolve()
    try:
        chain = [path, *_ancestors(path)]
    except UserError:  # a broken chain: _load says what is wrong, as it reads the files
        chain = [path]
    return _load(path, tuple(p.read_bytes() for p in chain), os.getcwd())


def profile_help() -> str:
    """For help texts: the built-in names, or a file."""
    return f"{' | '.join(BUILTIN)} | PATH.yaml"
