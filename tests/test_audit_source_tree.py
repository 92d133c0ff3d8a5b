"""A source hash names each file with its bytes: a file moved or renamed, or two files' contents
swapped, is other source; and a checkout is only one whose four folders are its own (folders
from two trees, one of them a checkout, name no commit)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from longred_bench.source_tree import SOURCE_DIRS, blob_id, checkout_root, scan, state_of, tree_hash


def test_a_file_moved_or_contents_swapped_is_other_source() -> None:
    a, b = blob_id(b"STEPS = 1\n"), blob_id(b"STEPS = 2\n")
    base = {"training/loop.py": a, "training/data.py": b}
    swapped = {"training/loop.py": b, "training/data.py": a}
    moved = {"training/loop.py": a, "training/streams.py": b}
    hashes = {tree_hash(base), tree_hash(swapped), tree_hash(moved)}
    assert len(hashes) == 3
    assert tree_hash(base, ["training/"]) != tree_hash(moved, ["training/"])


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                   check=True, capture_output=True)  # fmt: skip


def test_folders_of_two_trees_are_no_checkout(tmp_path: Path) -> None:
    """``longred_bench`` from a checkout and ``training`` from another tree: the commit of the
    first does not describe what runs, so no commit is named."""
    one, other = tmp_path / "one", tmp_path / "other"
    for folder in SOURCE_DIRS:
        (one / folder).mkdir(parents=True)
        (one / folder / "__init__.py").write_text("")
    shutil.copytree(one / "training", other / "training")
    (other / "training" / "loop.py").write_text("STEPS = 9\n")
    _git(one, "init", "-q")
    _git(one, "add", ".")
    _git(one, "commit", "-qm", "c")
    own = {folder: one / folder for folder in SOURCE_DIRS}
    assert checkout_root(own) == one
    mixed = {**own, "training": other / "training"}
    assert checkout_root(mixed) is None
    state = state_of(scan(mixed), checkout_root(mixed), {})
    assert state.commit is None and state.dirty is None
