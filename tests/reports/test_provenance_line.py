"""The provenance line of the run reports (:func:`longred_bench.reports.provenance`): the
commits, the distinct source hashes (short) and which of them ran dirty or unverified; records
made before source hashes still read as they did."""

from __future__ import annotations

from longred_bench.reports import provenance
from longred_bench.reports.run_sections import call_lines


def _record(commit: str, source: str | None = None, dirty: object = False, device: str = "cpu"):
    prov = {"git_commit": commit, "device": device}
    if source is not None:
        prov |= {"source_hash": source, "dirty": dirty}
    return {"provenance": prov}


def test_commits_and_source_hashes_are_listed_once() -> None:
    a, b = "a" * 64, "b" * 64
    records = [_record("c1", a), _record("c1", a), _record("c2", b, device="gpu")]
    assert provenance(records) == ("cpu, gpu", f"`c1`, `c2`; source `{'a' * 12}`, `{'b' * 12}`")


def test_dirty_and_unknown_are_said_per_source_hash() -> None:
    a, b, c = "a" * 64, "b" * 64, "c" * 64
    records = [_record("c1+dirty", a, True), _record("c1", a, False),
               _record("c1 (dirty unknown)", b, "unknown"), _record("c1", c)]  # fmt: skip
    _, code = provenance(records)
    assert code == (f"`c1`; source `{'a' * 12}` (dirty), `{'b' * 12}` (dirty unknown), "
                    f"`{'c' * 12}`")  # fmt: skip


def test_older_records_read_as_before() -> None:
    assert provenance([_record("abc+dirty"), _record("def (copy)")]) == (
        "cpu", "`abc+dirty`, `def (copy)`")  # fmt: skip
    mixed = provenance([_record("abc"), _record("abc", "d" * 64)])[1]
    assert mixed == f"`abc`; source `{'d' * 12}`, none for older records"
    assert provenance([]) == ("not recorded", "`not recorded`")


def test_report_header_names_the_source() -> None:
    lines = call_lines([_record("c1", "e" * 64, "unknown")], "cmd", 1.0, "")
    assert lines[1] == f"- Device: cpu; commit `c1`; source `{'e' * 12}` (dirty unknown)."


def test_a_zoo_name_of_registry_weights_is_shown_with_what_they_are() -> None:
    from longred_bench.reports import model_named

    shown = model_named("smollm2-135m")
    assert shown == (
        "`smollm2-135m` (SmolLM2-135M-Instruct, Q4_1 GGUF: 4-bit weights dequantized to float32)"
    )
    assert model_named("tiny-base") == "`tiny-base`"  # built by the suite: its name says it
    assert model_named("HuggingFaceTB/SmolLM2-135M") == "`HuggingFaceTB/SmolLM2-135M`"
