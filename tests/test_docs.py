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


def _command_lines(pages: list[Path]) -> list[tuple[str, list[str]]]:
    """``longred-bench ...`` lines of fenced blocks (comments stripped, continuations joined)."""
    import shlex

    found = []
    for page in pages:
        for block in (m.group(2) for m in FENCE.finditer(_text(page))):
            for line in block.replace("\\\n", " ").splitlines():
                if not line.lstrip().startswith("longred-bench "):
                    continue
                words = shlex.split(line, comments=True)
                if words[:1] == ["longred-bench"] and "$(" not in line:
                    found.append((f"{page.relative_to(ROOT)}: {line.strip()}", words[1:]))
    return found


def test_documented_command_lines_parse() -> None:
    """Every ``longred-bench`` command written out in a code block is accepted by the parser
    as written (arguments, choices, required options)."""
    from longred_bench.cli import build_parser

    lines = _command_lines(PAGES)
    assert len(lines) > 10, "found too few command lines: the extractor is broken"
    bad = []
    for where, argv in lines:
        try:
            build_parser().parse_args(argv)
        except SystemExit:
            bad.append(where)
    assert not bad, f"command lines the parser refuses: {bad}"


def test_help_and_argument_errors_import_no_torch() -> None:
    """The parser is built from torch-free modules, so ``--help`` answers at once."""
    import subprocess
    import sys

    code = (
        "import sys; from longred_bench.cli import build_parser; build_parser(); "
        "heavy = [m for m in ('torch', 'transformers', 'lm_eval', 'pandas') if m in sys.modules]; "
        "print(heavy); sys.exit(1 if heavy else 0)"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
