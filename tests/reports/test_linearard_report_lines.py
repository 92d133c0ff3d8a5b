"""The LinearARD report's cost table and the placing of its claims: each row's seconds per token
over CPT's, one cost-target line (``linearard``'s, met where its interval reaches the target
exactly), and (L3) following the ``linearard-lite`` row's (L1) and (L2), naming the budgets as
a fraction of CPT's tokens; an extension without both baselines has no LinearARD claim."""

from __future__ import annotations

from typing import Any

from report_helpers import tiny_run

from longred_bench.reports.linearard_report import cost_lines, linearard_verdicts
from longred_bench.reports.runs import Run, collect_runs
from longred_bench.reports.short_avg import short_categories

EXT = "pi:factor=2"


def _timed(seconds: dict[str, list[float]], tokens: float = 1024.0) -> dict:
    load = {"load_1min_start": 1.0, "load_1min_end": 1.0, "cpus": 2}
    return {(EXT, row, s): Run(train={"seconds": sec, "tokens": tokens, "steps": 4, **load})
            for row, secs in seconds.items() for s, sec in enumerate(secs)}  # fmt: skip


def test_each_rows_cost_over_cpts_and_one_target_line() -> None:
    runs = _timed({"cpt": [100.0, 100.0], "linearard": [150.0, 150.0]})
    runs |= _timed({"linearard-lite": [50.0, 50.0]}, tokens=256.0)
    lines = cost_lines(runs)
    rows = {c[1]: c for c in ([x.strip() for x in line.strip("|").split("|")]
                              for line in lines if line.startswith(f"| `{EXT}`"))}  # fmt: skip
    assert rows["CPT, long data"][3:] == ["1,024", "97656", "1.00"]
    assert rows["LinearARD"][3:] == ["1,024", "146484", "1.50"]
    assert rows["LinearARD, 1/64 tokens"][3:] == ["256", "195312", "2.00"]
    text = "\n".join(lines)
    # 1.5x exactly on both runs: the interval reaches the target and no further, so it is met
    assert text.count(f"`{EXT}` 1.50x [1.50, 1.50] (met)") == 1


def _records() -> list[dict[str, Any]]:
    train = {"seconds": 10.0, "steps": 4}
    recs = tiny_run("original", None, 0.8)
    recs += tiny_run("cpt", EXT, 0.5, ruler=0.4, train={**train, "tokens": 640000})
    recs += tiny_run("longred-c", EXT, 0.6, ruler=0.4, train={**train, "tokens": 640000})
    recs += tiny_run("linearard", EXT, 0.6, ruler=0.4, train={**train, "tokens": 640000})
    recs += tiny_run("linearard-lite", EXT, 0.6, ruler=0.4, train={**train, "tokens": 10000})
    return recs


def test_l3_follows_the_lite_rows_claims_and_names_its_share_of_tokens() -> None:
    records = _records()
    verdicts = linearard_verdicts(collect_runs(records), short_categories(records))
    assert [v.key for v in verdicts] == ["L1", "L2", "L1", "L2", "L3"]
    assert [v.scope.endswith("`linearard-lite`") for v in verdicts] == [False, False, True, True,
                                                                       True]  # fmt: skip
    assert verdicts[-1].ours.startswith(
        "`linearard-lite` distilled on 10,000 tokens, `cpt` trained on 640,000 (1/64, "
    )


def test_an_extension_without_both_baselines_has_no_claims() -> None:
    records = [r for r in _records() if r["row"] != "longred-c"]
    assert linearard_verdicts(collect_runs(records), short_categories(records)) == []


def test_claims_at_a_setting_linearards_paper_did_not_run_say_so() -> None:
    """Its paper extends by PI x4 or x8 (these runs' windows give PI x4): the paper's claims;
    the same runs as ABF are its claims at a setting it did not run."""
    records = _records()
    at_pi = linearard_verdicts(collect_runs(records), short_categories(records))
    assert {v.source for v in at_pi} == {"paper"} and "(PI, window x4)" in at_pi[0].scope
    abf = [{**r, "extension": "abf:theta=4e4"} if r.get("extension") else r for r in records]
    at_abf = linearard_verdicts(collect_runs(abf), short_categories(abf))
    assert [v.key for v in at_abf] == ["L1", "L2", "L1", "L2", "L3"]
    assert {v.source for v in at_abf} == {"elsewhere"}
