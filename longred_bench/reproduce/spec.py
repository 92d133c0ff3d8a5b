"""What a table declares (:class:`TableSpec`) and what the run engine hands it
(:class:`Context`); a table's work is a list of :class:`Step`, each one cached unit.

A table module defines one ``SPEC``: its name and title, the dataclass of its settings (its
``tables.<name>`` section of a profile, validated against it), a function listing its steps at a
profile, how its records are gathered (by default: every step's records with the step's labels)
and the report builder that writes them. :mod:`longred_bench.reproduce.registry` names every
table module; the dispatcher, ``--dry-run``, the command line's choices and ``longred-bench
profiles`` read that registry.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from longred_bench.errors import UserError
from longred_bench.jobs.units import CachedUnit
from longred_bench.profiles.schema import Profile, build


@dataclass(frozen=True)
class Step:
    """One cached unit of a table, as the table uses it: ``label`` names it in progress lines
    and plans, ``cost`` orders the worker pool (largest first; a Table 3 CPT run is 1),
    ``after`` holds the folders of the units it waits for. Its records enter the table with
    ``labels`` (None: it adds no records, as a training run does); ``train`` names the training
    step whose summary record joins them as ``labels["train"]``, with ``train_extra`` added.
    ``relisted``: its config names the results of the units it waits for (a merge names its
    source run's record), so it runs only once they are cached when the table is listed."""

    unit: CachedUnit
    label: str
    cost: float = 1.0
    after: tuple[str, ...] = ()
    labels: dict[str, Any] | None = None
    train: str | None = None
    train_extra: dict[str, Any] = field(default_factory=dict)
    relisted: bool = False

    @property
    def key(self) -> str:
        """The unit's folder: its id across tables."""
        return self.unit.folder


@dataclass(frozen=True)
class Context:
    """A table at a profile: the profile and the table's resolved settings."""

    table: str
    profile: Profile
    settings: Any
    progress: bool = True
    force: bool = False
    options: dict[str, Any] = field(default_factory=dict)  # a table's own flags (table3: d1)


@dataclass(frozen=True)
class TableSpec:
    """One table or figure (see the module docstring).

    ``steps(ctx)`` lists its units (those whose configs depend on other units' results, such as
    PCD's test units on its dev grid, appear once those are cached); ``records(ctx)`` gathers its
    records (None: :func:`longred_bench.reproduce.engine.gather`); ``build(records, out,
    **report)`` writes the report; ``write(ctx, records, out, report)`` replaces the standard
    output (records file + report) where a table writes something else. ``check(ctx)`` refuses a
    profile for a reason it states. ``parallel``: its steps may run in worker processes
    (``--jobs``). ``note(ctx)``: a line the plan adds (e.g. units not yet known). ``grid(ctx)``:
    a training table's run grid (:mod:`longred_bench.reproduce.grid`)."""

    name: str
    title: str
    settings: type
    steps: Callable[[Context], list[Step]]
    build: Callable[..., list[Path]] | None = None
    records: Callable[[Context], list[dict[str, Any]]] | None = None
    write: Callable[..., list[Path]] | None = None
    check: Callable[[Context], None] | None = None
    note: Callable[[Context], str | None] | None = None
    grid: Callable[[Context], Any] | None = None
    parallel: bool = True
    default_profile: str = "tiny"

    def resolve(
        self,
        profile: Profile,
        *,
        progress: bool = True,
        force: bool = False,
        options: dict[str, Any] | None = None,
    ) -> Context:
        """The table at ``profile``: its section validated into its settings, then its own
        checks (a one-line error naming the profile file and the key)."""
        section = profile.tables.get(self.name) or {}
        settings = build(self.settings, section, file=profile.source or profile.name,
                         where=f"tables.{self.name}")  # fmt: skip
        ctx = Context(self.name, profile, settings, progress=progress, force=force,
                      options=dict(options or {}))  # fmt: skip
        if self.check is not None:
            self.check(ctx)
        return ctx


def refuse(ctx: Context, key: str, reason: str) -> UserError:
    """The one-line error of a table that cannot run at a profile: ``reason``, naming the key."""
    where = ctx.profile.source or ctx.profile.name
    return UserError(f"{ctx.table} cannot run at profile {ctx.profile.name} ({where}): "
                     f"{key}: {reason}")  # fmt: skip


@dataclass(frozen=True)
class NoSettings:
    """A table with nothing to set per profile."""


def settings_keys(cls: type) -> list[str]:
    """The keys a table's section may hold."""
    return [f.name for f in dataclasses.fields(cls)]


def lazy(target: str) -> Callable[..., Any]:
    """A function that imports ``module:name`` when first called (report builders import
    pandas and matplotlib; a spec is read without them)."""

    def call(*args: Any, **kwargs: Any) -> Any:
        import importlib

        module, _, name = target.partition(":")
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = target.rpartition(":")[2]
    return call


def option_args(options: dict[str, Any]) -> str:
    """A table's options (``Context.options``) as the flags that set them, each after a space
    (``" --d1 prose"``; empty for none)."""
    return "".join(f" --{k.replace('_', '-')} {shlex.quote(str(v))}" for k, v in options.items())
