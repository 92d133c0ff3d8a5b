"""``nox -s tests``'s two passes (:mod:`tier_split`): the first writes the ids of the tests it
skipped, the second runs the integration tier and those tests, no other."""

from __future__ import annotations

from pathlib import Path

import pytest

MODULE_SKIPPED = """
import os
import pytest

if not os.environ.get("TIER_SPLIT_DATA"):
    pytest.skip("needs cached brown", allow_module_level=True)

def test_reads_data():
    pass
"""

SUITE = """
import pytest

def test_runs():
    pass

def test_needs_data():
    pytest.skip("needs cached brown")

@pytest.mark.skip(reason="needs a CUDA device")
def test_marked_skip():
    pass

@pytest.mark.integration
def test_integration():
    pass

@pytest.mark.xfail(reason="known")
def test_known_failure():
    assert False
"""


@pytest.fixture
def suite(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parent))  # tier_split, in a subprocess
    pytester.makeini("[pytest]\nmarkers =\n    integration: tiny models\n")
    pytester.makepyfile(test_suite=SUITE, test_module_skipped=MODULE_SKIPPED)
    return pytester


def _ids(path: Path) -> list[str]:
    return sorted(path.read_text().splitlines())


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_the_first_pass_writes_the_ids_of_the_tests_it_skipped(suite, workers):
    listed = suite.path / "skipped.txt"
    result = suite.runpytest_subprocess("-p", "tier_split", "-m", "not integration", *workers,
                                        "--write-skipped", str(listed))  # fmt: skip
    outcomes = result.parseoutcomes()  # xdist's summary does not count the deselected test
    assert (outcomes["passed"], outcomes["skipped"], outcomes["xfailed"]) == (1, 3, 1)
    assert _ids(listed) == ["test_module_skipped.py", "test_suite.py::test_marked_skip",
                            "test_suite.py::test_needs_data"]  # fmt: skip


def test_the_second_pass_runs_the_integration_tier_and_the_listed_tests_only(suite):
    listed = suite.path / "skipped.txt"
    listed.write_text("test_suite.py::test_needs_data\n")
    result = suite.runpytest("-p", "tier_split", "-v", "--run-skipped", str(listed))
    result.assert_outcomes(passed=1, skipped=2, deselected=3)  # the skipped module, again
    result.stdout.no_fnmatch_line("*test_runs*PASSED*")


def test_the_two_passes_run_each_test_once(suite, monkeypatch):
    """A module the first pass skipped whole runs in the second (where its data is)."""
    listed = suite.path / "skipped.txt"
    first = suite.runpytest("-p", "tier_split", "-m", "not integration", "-v",
                            "--write-skipped", str(listed))  # fmt: skip
    monkeypatch.setenv("TIER_SPLIT_DATA", "1")
    second = suite.runpytest("-p", "tier_split", "-v", "--run-skipped", str(listed))
    ran = [line.split(" ")[0] for line in (*first.outlines, *second.outlines)
           if line.startswith("test_") and "PASSED" in line]  # fmt: skip
    assert sorted(ran) == ["test_module_skipped.py::test_reads_data",
                           "test_suite.py::test_integration",
                           "test_suite.py::test_runs"]  # fmt: skip


def test_a_missing_list_is_a_usage_error(suite):
    result = suite.runpytest("-p", "tier_split", "--run-skipped", "nowhere.txt")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--run-skipped nowhere.txt: No such file or directory*"])
