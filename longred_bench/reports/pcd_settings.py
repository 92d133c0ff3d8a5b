"""The PCD settings a report names, read from its records' ``pcd`` field (``eval.md``,
``compare.md``): the command line shows only the ``--pcd-*`` flags given."""

from __future__ import annotations

from typing import Any


def pcd_lines(records: list[dict[str, Any]], *, windows: bool = True) -> list[str]:
    """The PCD settings the records ran with (alpha, plausibility rule, local window rule and,
    with ``windows``, each local window ``W'`` run with its base ``B'``: one model's), then a
    blank line; none for greedy decoding. The command line shows only the flags given, so a
    run at the defaults said none."""
    pcd = next((r["pcd"] for r in records if isinstance(r.get("pcd"), dict)), None)
    if pcd is None:
        return []
    cut = (f"top-{pcd.get('top_k')}" if pcd.get("plausibility") == "topk"
           else f"adaptive, beta {pcd.get('beta')}")  # fmt: skip
    local = ", ".join(f"W' {w['window']} with B' {w['base']:.6g}" if w.get("base") is not None
                      else f"W' {w['window']} (nothing over-rotated)"
                      for w in pcd.get("local") or [])  # fmt: skip
    none = "none (alpha 0 runs no local pass)" if pcd.get("alpha") == 0 else "none recorded"
    run = f"; local windows run: {local or none}"
    return [f"PCD: alpha {pcd.get('alpha')}, plausible tokens {cut}, local window "
            f"{pcd.get('window_rule')}, first pair {pcd.get('first_pair')}"
            f"{run if windows else ''}.", ""]  # fmt: skip
