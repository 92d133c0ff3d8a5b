"""README.md and docs/*.md stay short and true: links resolve, and the commands, nox sessions and
test files they name exist (unit tier: CPU, no network)."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
README_MAX_LINES = 160

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^(```|~~~)[^\n]*\n(.*?)^\1[ \t]*$", re.MULTILINE | re.DOTALL)
INLINE = re.compile(r"`([^`\n]+)`")
SUBCOMMAND = re.compile(r"(?<![\w./-])longred-bench[ \t]+([a-z][a-z0-9_-]*)")
NOX_SESSION = re.compile(r"\bnox(?:\s+-[A-Za-z]+)*\s+-s\s+([A-Za-z_]\w*)")
NOX_DEF = re.compile(r"@nox\.session[^\n]*\n(?:[ \t]*@[^\n]*\n)*[ \t]*def\s+(\w+)\s*\(")
TEST_PATH = re.compile(r"(?<![\w./-])(tests/[\w./-]*?\.py)\b")


def _text(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def _code(text: str) -> str:
    """Fenced code blocks and inline code spans of a Markdown page, one per line."""
    blocks = [match.group(2) for match in FENCE.finditer(text)]
    prose = FENCE.sub("", text)
    return "\n".join([*blocks, *INLINE.findall(prose)])


def _ids(pages: list[Path]) -> list[str]:
    return [str(page.relative_to(ROOT)) for page in pages]


def test_docs_pages_exist() -> None:
    assert len(PAGES) > 1, "docs/*.md is missing"


def test_readme_is_short() -> None:
    lines = len(_text(README).splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES})"


@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_relative_links_resolve(page: Path) -> None:
    broken = []
    for target in LINK.findall(FENCE.sub("", _text(page))):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE) or target.startswith("#"):
            continue  # http(s), mailto: and in-page anchors
        path = target.split("#", 1)[0]
        if path and not (page.parent / path).exists():
            broken.append(target)
    assert not broken, f"{page.name}: links to missing files: {broken}"


def _subcommands() -> set[str]:
    from longred_bench.cli import build_parser

    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    raise AssertionError("longred_bench.cli.build_parser() has no subcommands")


def test_named_subcommands_exist() -> None:
    known = _subcommands()
    unknown = {
        f"{page.relative_to(ROOT)}: longred-bench {name}"
        for page in PAGES
        for name in SUBCOMMAND.findall(_code(_text(page)))
        if name not in known
    }
    assert not unknown, f"not a longred-bench subcommand ({sorted(known)}): {sorted(unknown)}"


def test_named_nox_sessions_exist() -> None:
    sessions = set(NOX_DEF.findall((ROOT / "noxfile.py").read_text(encoding="utf-8")))
    assert sessions, "no @nox.session found in noxfile.py"
    unknown = {
        f"{page.relative_to(ROOT)}: nox -s {name}"
        for page in PAGES
        for name in NOX_SESSION.findall(_text(page))
        if name not in sessions
    }
    assert not unknown, f"not a nox session ({sorted(sessions)}): {sorted(unknown)}"


def test_named_test_files_exist() -> None:
    missing = {
        f"{page.relative_to(ROOT)}: {path}"
        for page in PAGES
        for path in TEST_PATH.findall(_text(page))
        if not (ROOT / path).is_file()
    }
    assert not missing, f"test files that do not exist: {sorted(missing)}"


def test_patterns_find_what_they_should() -> None:
    """The extractors themselves: a broken regex would make every check above pass vacuously."""
    page = (
        "See [a](docs/x.md#part) and [b](https://example.org).\n"
        "```bash\nlongred-bench data fetch --sources benchmarks\n"
        "nox -R -s tests_vllm\n```\n"
        "Inline `longred-bench eval --out d`, prose longred-bench psa, `tests/pcd/test_pcd.py`.\n"
    )
    assert LINK.findall(page) == ["docs/x.md#part", "https://example.org"]
    assert SUBCOMMAND.findall(_code(page)) == ["data", "eval"]
    assert NOX_SESSION.findall(page) == ["tests_vllm"]
    assert TEST_PATH.findall(page) == ["tests/pcd/test_pcd.py"]
    noxfile = "@nox.session\n@nox.parametrize('t', ['1'])\ndef compile_kernels(session):\n"
    assert NOX_DEF.findall(noxfile) == ["compile_kernels"]
