"""``train --set KEY=VALUE`` overrides: each value read as YAML, a method's setting named in its
group (``longred.a1=5``); the mapping :func:`longred_bench.training.config.resolve_config`
takes as ``overrides``."""

from __future__ import annotations

from typing import Any

import yaml

from longred_bench.errors import UserError
from longred_bench.training.config import yaml_number


def parse_set(items: list[str]) -> dict[str, Any]:
    """``KEY=VALUE`` overrides, values parsed as YAML (``lr=1e-4``, ``layers=[1,4]``); a method's
    setting may be named in its group (``longred.a1=5``)."""
    out: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--set {item!r} is not KEY=VALUE")
        parsed = yaml.safe_load(value) if value.strip() else None
        if isinstance(parsed, str) and parsed.lower() in ("none", "null"):
            parsed = None
        if key.strip() == "rope" and isinstance(parsed, dict):  # a JSON spec, as --rope takes
            parsed = value.strip()
        group, dot, name = key.strip().partition(".")
        target = out.setdefault(group, {}) if dot else out
        target[name if dot else key.strip()] = yaml_number(parsed)
    return out
