"""Provenance of the source that ran (:mod:`longred_bench.source_tree`): its content hash follows
the bytes of the package's source files and nothing else, and the dirty flag compares them with
the named commit's, in a checkout and in a copy without ``.git`` (unknown where the commit's
files cannot be read)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from longred_bench import source_tree
from longred_bench.source_tree import (
    COMMIT_VAR,
    HASH_VAR,
    checkout_root,
    commit_blobs,
    mixed_sources,
    scan,
    state_of,
    tree_hash,
)

FILES = {
    "longred_bench/__init__.py": "",
    "longred_bench/jobs/train.py": "STEPS = 1\n",
    "longred_bench/profiles/tiny.yaml": "name: tiny\n",
    "training/__init__.py": "",
    "training/loop.py": "def train(): ...\n",
    "training/recipes/cpt.yaml": "recipe: cpt\n",
    "kernels/__init__.py": "",
    "tasks/__init__.py": "",
    "tasks/_ruler_template_yaml": "task: x\n",
    "tasks/README.md": "docs\n",
    "reports/tiny/table3.md": "a report\n",
    "tests/test_x.py": "def test(): ...\n",
}


def _tree(root: Path) -> dict[str, Path]:
    """A checkout-like tree under ``root``: the package's four folders, plus ``reports/`` and
    ``tests/``; returns the folders as :func:`scan` takes them."""
    for name, text in FILES.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return {folder: root / folder for folder in source_tree.SOURCE_DIRS}


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
        check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


def _repo(root: Path) -> dict[str, Path]:
    dirs = _tree(root)
    _git(root, "init", "-q")
    _git(root, "add", ".")
    _git(root, "commit", "-qm", "c")
    return dirs


def test_blob_ids_are_gits_own(tmp_path: Path) -> None:
    path = tmp_path / "x.py"
    path.write_bytes(b"print('hi')\n\x00\xff")
    want = subprocess.run(["git", "hash-object", str(path)], capture_output=True, text=True)
    assert source_tree.blob_id(path.read_bytes()) == want.stdout.strip()


def test_hash_follows_source_bytes_only(tmp_path: Path) -> None:
    dirs = _tree(tmp_path)
    blobs = scan(dirs)
    assert sorted(blobs) == [
        "kernels/__init__.py", "longred_bench/__init__.py", "longred_bench/jobs/train.py",
        "longred_bench/profiles/tiny.yaml", "tasks/__init__.py", "tasks/_ruler_template_yaml",
        "training/__init__.py", "training/loop.py", "training/recipes/cpt.yaml",
    ]  # fmt: skip
    first = tree_hash(blobs)
    # Not source: caches, docs, hidden files, anything outside the four folders.
    (tmp_path / "training/__pycache__").mkdir()
    (tmp_path / "training/__pycache__/loop.cpython-312.pyc").write_bytes(b"\0")
    (tmp_path / "training/.#loop.py").write_text("lock\n")
    (tmp_path / "tasks/README.md").write_text("more docs\n")
    (tmp_path / "reports/tiny/table3.md").write_text("regenerated\n")
    (tmp_path / "tests/test_x.py").write_text("changed\n")
    assert tree_hash(scan(dirs)) == first
    (tmp_path / "training/loop.py").write_text("def train(): return 1\n")
    changed = scan(dirs)
    assert tree_hash(changed) != first
    # A subset's hash moves only with a file under it.
    assert tree_hash(changed, ["kernels/", "tasks/"]) == tree_hash(blobs, ["kernels/", "tasks/"])
    assert tree_hash(changed, ["training/"]) != tree_hash(blobs, ["training/"])
    (tmp_path / "training/loop.py").write_text(FILES["training/loop.py"])
    (tmp_path / "kernels/new.py").write_text("")  # an untracked module runs too
    assert tree_hash(scan(dirs)) != first


def test_installed_layout_hashes_as_the_checkout(tmp_path: Path) -> None:
    """An installed package keeps training/ inside longred_bench/: the same files under the
    same names, so the same hash."""
    flat = scan(_tree(tmp_path / "checkout"))
    site = tmp_path / "site" / "longred_bench"
    shutil.copytree(tmp_path / "checkout" / "longred_bench", site)
    for folder in ("training", "kernels", "tasks"):
        shutil.copytree(tmp_path / "checkout" / folder, site / folder)
    nested = {"longred_bench": site, **{f: site / f for f in ("training", "kernels", "tasks")}}
    assert scan(nested) == flat
    assert checkout_root(nested) is None


def test_folders_from_two_trees_are_named_and_warned_of(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``longred_bench`` from one checkout (``PYTHONPATH``) and ``training``, ``kernels``,
    ``tasks`` from another (an editable install of it): that mixture would run, so every
    command says so first; one checkout or one installed package says nothing."""
    from longred_bench.cli import main

    one, other = tmp_path / "one", tmp_path / "other"
    checkout = {f: one / f for f in source_tree.SOURCE_DIRS}
    site = {f: one / "longred_bench" / f for f in source_tree.SOURCE_DIRS}
    assert mixed_sources(checkout) is None
    assert mixed_sources({**site, "longred_bench": one / "longred_bench"}) is None
    mixed = {**checkout, "training": other / "training"}
    assert mixed_sources(mixed) == (f"longred_bench/ from {one / 'longred_bench'}; training/ "
                                    f"from {other / 'training'}; kernels/ from {one / 'kernels'}; "
                                    f"tasks/ from {one / 'tasks'}")  # fmt: skip
    monkeypatch.setattr(source_tree, "imported_dirs", lambda: mixed)
    assert main(["tasks-path"]) == 0
    err = capsys.readouterr().err
    assert err.startswith("warning: the package runs from two trees (longred_bench/ from ")
    assert err.rstrip().endswith("unset PYTHONPATH, or install the tree you mean to run "
                                 "(pip install -e DIR)")  # fmt: skip
    monkeypatch.setattr(source_tree, "imported_dirs", lambda: checkout)
    assert main(["tasks-path"]) == 0
    assert capsys.readouterr().err == ""


def test_dirty_in_a_checkout_is_a_change_to_the_source(tmp_path: Path) -> None:
    dirs = _repo(tmp_path)
    head = _git(tmp_path, "rev-parse", "HEAD")
    assert checkout_root(dirs) == tmp_path
    clean = state_of(scan(dirs), checkout_root(dirs), {})
    assert (clean.commit, clean.dirty, clean.label) == (head, False, head)
    assert clean.source_hash == tree_hash(commit_blobs(tmp_path, head))
    (tmp_path / "reports/tiny/table3.md").write_text("regenerated\n")
    (tmp_path / "tests/test_x.py").write_text("changed\n")
    assert state_of(scan(dirs), tmp_path, {}).dirty is False
    (tmp_path / "training/loop.py").write_text("changed\n")
    dirty = state_of(scan(dirs), tmp_path, {})
    assert (dirty.dirty, dirty.label, dirty.dirty_flag) == (True, head + "+dirty", True)
    assert dirty.source_hash != clean.source_hash
    _git(tmp_path, "commit", "-qam", "d")
    assert state_of(scan(dirs), tmp_path, {}).dirty is False
    # $LONGRED_SOURCE_COMMIT names the commit compared with, where the checkout has it.
    assert state_of(scan(dirs), tmp_path, {COMMIT_VAR: head}).dirty is True


def test_a_copy_without_git_is_compared_where_the_commits_hash_is_given(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    dirs = _repo(tmp_path / "repo")
    head = _git(tmp_path / "repo", "rev-parse", "HEAD")
    shutil.copytree(tmp_path / "repo", tmp_path / "copy", ignore=shutil.ignore_patterns(".git"))
    copy = {folder: tmp_path / "copy" / folder for folder in dirs}
    assert checkout_root(copy) is None
    unknown = state_of(scan(copy), None, {COMMIT_VAR: head})
    assert (unknown.commit, unknown.dirty, unknown.dirty_flag) == (head, None, "unknown")
    assert unknown.label == f"{head} (dirty unknown)" and "(copy)" not in unknown.label
    given = {COMMIT_VAR: head, HASH_VAR: tree_hash(commit_blobs(tmp_path / "repo", head))}
    assert state_of(scan(copy), None, given).label == head
    (tmp_path / "copy/kernels/__init__.py").write_text("x = 1\n")
    assert state_of(scan(copy), None, given).dirty is True
    # A stale .git that lacks the named commit falls back on the given hash too.
    assert state_of(scan(copy), tmp_path / "repo", {**given, COMMIT_VAR: "f" * 40}).dirty is True
    assert state_of(scan(copy), tmp_path / "repo", {COMMIT_VAR: "f" * 40}).dirty is None
    assert capfd.readouterr().err == ""  # git's complaints stay off the terminal


def test_a_hash_without_the_commit_it_belongs_to_decides_nothing(tmp_path: Path,
                                                                 monkeypatch) -> None:  # fmt: skip
    """$LONGRED_SOURCE_HASH is the hash of the commit $LONGRED_SOURCE_COMMIT names: left over in
    an environment without it, it does not decide whether a checkout whose files git cannot
    list is dirty; and a commit that reads as an option names no files."""
    dirs = _repo(tmp_path)
    assert commit_blobs(tmp_path, "--help") is None
    monkeypatch.setattr(source_tree, "commit_blobs", lambda repo, commit: None)  # unreadable
    stray = {HASH_VAR: "0" * 40}
    assert state_of(scan(dirs), tmp_path, stray).dirty is None
    head = _git(tmp_path, "rev-parse", "HEAD")
    assert state_of(scan(dirs), tmp_path, {**stray, COMMIT_VAR: head}).dirty is True


def test_no_commit_at_all_is_said(tmp_path: Path) -> None:
    state = state_of(scan(_tree(tmp_path)), None, {})
    assert state.commit is None and state.dirty is None
    assert re.fullmatch(r"no git checkout \(longred-bench .+\)", state.label)


def test_the_running_source(capsys: pytest.CaptureFixture[str]) -> None:
    from longred_bench.results import Provenance, git_commit

    blobs = scan(source_tree.imported_dirs())
    assert len(blobs) > 100 and "longred_bench/source_tree.py" in blobs
    assert "training/loop.py" in blobs and "tasks/_longred_short.yaml" in blobs
    assert source_tree.source_hash() == tree_hash(blobs)
    prov = Provenance.collect({}, seed=0, device="cpu")
    assert re.fullmatch(r"[0-9a-f]{64}", prov.source_hash)
    assert prov.dirty in (True, False, "unknown") and prov.git_commit == git_commit()
    assert "(copy)" not in prov.git_commit
    assert source_tree.main(["--state"]) == 0
    assert f"source {prov.source_hash}; dirty: " in capsys.readouterr().out


def test_the_variables_for_a_copy_name_a_commit_and_its_hash(
    capsys: pytest.CaptureFixture[str],
) -> None:
    dirs = source_tree.imported_dirs()
    repo = checkout_root(dirs)
    if repo is None:
        pytest.skip("not run from a git checkout")
    assert source_tree.main(["HEAD"]) == 0
    words = dict(w.split("=", 1) for w in capsys.readouterr().out.split())
    assert set(words) == {COMMIT_VAR, HASH_VAR}
    head = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True,
                          text=True).stdout.strip()  # fmt: skip
    assert words[COMMIT_VAR] == head
    state = state_of(source_tree.source_blobs(), None, words)  # as a copy sees it
    assert state.dirty == (state.source_hash != words[HASH_VAR])
    assert state.dirty == state_of(source_tree.source_blobs(), repo, {}).dirty
    assert source_tree.main(["no-such-commit"]) == 1


def test_benchmark_reports_name_the_source_hash_beside_the_commit():
    from script_loader import load_script

    from longred_bench.source_tree import source_hash

    common = load_script("bench_common")
    info = common.provenance()
    assert info["source"] == source_hash()[:12]
    head = common.provenance_lines(info, "cmd")
    assert f"- commit `{info['commit']}` (source `{info['source']}`), " in head


def test_a_cpu_is_named_with_its_torch_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    """A record's device read "CPU <model> x1 threads"; it counts torch's threads in words."""
    import torch

    from longred_bench.results import device_name

    monkeypatch.setattr(torch, "get_num_threads", lambda: 1)
    assert re.fullmatch(r"CPU .+, 1 torch thread", device_name("cpu"))
    monkeypatch.setattr(torch, "get_num_threads", lambda: 4)
    assert device_name("cpu").endswith(", 4 torch threads")
