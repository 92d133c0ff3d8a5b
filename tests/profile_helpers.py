"""Tables resolved at a built-in profile with some of their settings changed, for tests."""

from __future__ import annotations


def ctx_of(table: str, profile: str = "tiny", **section):
    """Table ``table`` resolved at built-in profile ``profile``, its ``tables.<table>`` section
    updated with ``section``."""
    import dataclasses

    from longred_bench.models.choice import choose_model
    from longred_bench.profiles import load_profile
    from longred_bench.reproduce.registry import get_spec

    prof = choose_model(load_profile(profile))  # as `reproduce` does (tests: offline)
    if section:
        tables = {**prof.tables, table: {**prof.tables.get(table, {}), **section}}
        prof = dataclasses.replace(prof, tables=tables)
    return get_spec(table).resolve(prof, progress=False)


def grid_of(table: str, profile: str = "tiny", **section):
    """The run grid of training table ``table`` at ``profile`` (see :func:`ctx_of`)."""
    from longred_bench.reproduce.registry import get_spec

    return get_spec(table).grid(ctx_of(table, profile, **section))
