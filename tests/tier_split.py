"""The test suite in two passes that together run each test once (``nox -s tests``).

The first pass is the unit tier as a fresh clone runs it, on an empty data cache: tests that need
a corpus skip. ``--write-skipped FILE`` writes the ids of the tests it skipped, one per line. The
second pass, ``--run-skipped FILE``, runs the integration tier and those tests only, with the
cache and ``--run-network``: a test the first pass ran is not run again. Give FILE in one word
(``--run-skipped=FILE``): apart from its option pytest reads an existing FILE as a test path.
"""

from __future__ import annotations

from pathlib import Path

import pytest


class _SkippedIds:
    """Collects the ids of skipped tests and writes them at the end (registered in the
    controlling process alone: pytest-xdist's workers send it their reports)."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.ids: dict[str, None] = {}

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.skipped and not hasattr(report, "wasxfail"):
            self.ids[report.nodeid] = None

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.skipped:  # a module skipped whole (``allow_module_level``): its file's id
            self.ids[report.nodeid] = None

    def pytest_sessionfinish(self) -> None:
        self.path.write_text("".join(f"{i}\n" for i in self.ids))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--write-skipped", metavar="FILE",
                     help="write the ids of the tests this run skipped to FILE")  # fmt: skip
    parser.addoption("--run-skipped", metavar="FILE",
                     help="run the integration tier and the tests FILE lists only")  # fmt: skip


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--write-skipped")
    if path and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_SkippedIds(path), "write-skipped")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    path = config.getoption("--run-skipped")
    if not path:
        return
    try:
        listed = set(Path(path).read_text().splitlines())
    except OSError as err:
        raise pytest.UsageError(f"--run-skipped {path}: {err.strerror}: give the file "
                                "a first run wrote with --write-skipped") from err  # fmt: skip

    def wanted(item: pytest.Item) -> bool:  # listed by its id, or by its file's (skipped whole)
        ids = {item.nodeid, item.nodeid.split("::")[0]}
        return "integration" in item.keywords or bool(ids & listed)

    keep: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        (keep if wanted(item) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    items[:] = keep
