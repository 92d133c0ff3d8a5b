"""A verdict's scope names the extension's method and its window factor, never a bare ``x4``
that reads as a multiple of the RoPE base."""

from longred_bench.reports.verdicts import (
    extension_scope,
    extension_setting,
    paper_evidence_a,
    paper_evidence_b,
)


def test_scope_names_the_window_factor():
    pe, factor = extension_setting("pi:factor=2")
    assert extension_scope("pi:factor=2", pe, factor) == "`pi:factor=2` (PI, window x2)"
    # An ABF spec's factor is the window's (given by the run), not the base's multiple.
    pe, factor = extension_setting("abf:theta=2e6", 4.0)
    assert extension_scope("abf:theta=2e6", pe, factor) == "`abf:theta=2e6` (ABF, window x4)"


def test_missing_paper_row_names_the_window_factor():
    assert paper_evidence_a("PI", 3.0).endswith("no Table 3 row for PI, window x3.")
    assert paper_evidence_b("PI", 3.0, "LongReD-C").endswith(
        "no Table 3 row for LongReD-C at PI, window x3."
    )
