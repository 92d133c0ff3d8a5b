"""A unit's cache key holds the hash of the code its kind depends on
(:data:`longred_bench.jobs.units.UNIT_CODE`): a training run is keyed anew when a file under
``training/`` changes and not when a report builder does; an evaluation follows ``tasks/``, a
drift measurement does not; and each kind's list covers every module its code imports."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from longred_bench import source_tree
from longred_bench.jobs import units
from longred_bench.source_tree import tree_hash


@pytest.fixture
def blobs(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """The running source's blob ids as a dict the test edits; unit keys hash it."""
    edited = dict(source_tree.source_blobs())
    monkeypatch.setattr(units, "source_hash", lambda prefixes=None: tree_hash(edited, prefixes))
    return edited


def test_training_key_follows_training_code_not_reports(blobs: dict[str, str]) -> None:
    from longred_bench.training.config import resolve_config

    cfg = resolve_config("cpt", profile="smoke")
    key = units.train_key(cfg)
    blobs["longred_bench/reports/table3.py"] = "0" * 40  # a report builder changed
    blobs["longred_bench/cli/commands.py"] = "0" * 40
    assert units.train_key(cfg) == key
    blobs["training/loop.py"] = "1" * 40
    changed = units.train_key(cfg)
    assert changed != key and units.train_unit(cfg).folder == f"runs/train-cpt-{changed}"
    blobs["kernels/chunked.py"] = "2" * 40
    assert units.train_key(cfg) != changed


def test_evaluation_configs_follow_their_own_code(blobs: dict[str, str]) -> None:
    configs = {
        "eval": {"model": "m", "suite": "short_tiny"},
        "ppl": {"model": "m", "suite": "ppl"},
        "drift": {"original": "m", "rope": ["pi:factor=2"]},
        "psa": {"psa": {"models": ["m"]}, "pcd": None},
    }
    assert {k: units.unit_kind(c) for k, c in configs.items()} == {k: k for k in configs}
    before = {k: units.stored_config(c) for k, c in configs.items()}
    assert all(s["code"] for s in before.values())
    blobs["tasks/longred_tiny_swap.yaml"] = "0" * 40
    after = {k: units.stored_config(c) for k, c in configs.items()}
    assert [k for k in configs if after[k] != before[k]] == ["eval"]
    blobs["longred_bench/metrics/drift.py"] = "1" * 40
    again = {k: units.stored_config(c) for k, c in configs.items()}
    assert [k for k in configs if again[k] != after[k]] == list(configs)
    blobs["longred_bench/reports/drift_report.py"] = "2" * 40
    assert {k: units.stored_config(c) for k, c in configs.items()} == again
    # The kind a unit names wins over the one its config suggests.
    assert units.stored_config(configs["drift"], "psa")["code"] == again["psa"]["code"]


def test_a_cached_result_of_other_code_is_measured_again(
    tmp_path: Path, blobs: dict[str, str]
) -> None:
    unit = units.CachedUnit("eval", "runs/t/a", {"model": "m", "suite": "ruler"})
    path = tmp_path / "eval.jsonl"
    units.save_records(path, unit.config, [{"score": 1.0}], 0, "cpu", kind="eval")
    assert units.cached_records(path, unit.config, "eval")[0]["score"] == 1.0
    blobs["longred_bench/reports/ruler_plot.py"] = "0" * 40
    assert units.cached_records(path, unit.config, "eval") is not None
    blobs["longred_bench/taskdata/ruler/niah.py"] = "1" * 40
    assert units.cached_records(path, unit.config, "eval") is None


# The static import graph of each kind's code, from the modules that compute it. Not followed
# (they do not change what a unit computes, see UNIT_CODE): the report builders, the command
# line, the table plans, the run cache and ground floor, the profiles; and, for a unit that is
# not a training run, the model builds (tiny-base is keyed by its build).
ENTRIES = {
    "train": ["longred_bench.jobs.train", "longred_bench.jobs.tiny_base"],
    "eval": ["longred_bench.evaluation.harness", "longred_bench.evaluation.lm",
             "longred_bench.tasks.utils", "longred_bench.tasks.ruler_utils",
             "longred_bench.tasks.niah_utils", "longred_bench.tasks.tiny_utils",
             "longred_bench.tasks.lmeval_ruler_utils"],
    "ppl": ["longred_bench.evaluation.ppl"],
    "drift": ["longred_bench.jobs.drift"],
    "psa": ["longred_bench.jobs.psa"],
}  # fmt: skip
NOT_FOLLOWED = ("longred_bench.reports", "longred_bench.cli", "longred_bench.reproduce",
                "longred_bench.results", "longred_bench.cache", "longred_bench.errors",
                "longred_bench.heap", "longred_bench.source_tree", "longred_bench.profiles",
                "longred_bench.jobs.units", "longred_bench.jobs.heartbeat",
                "longred_bench.jobs.builds", "longred_bench.jobs.local_files")  # fmt: skip
BUILDS = ("longred_bench.jobs.tiny_base", "longred_bench.jobs.train")
# Imported only to check the other jobs' configs (configs.py holds them all): a drift or PSA
# measurement does not run them.
CONFIG_ONLY = {"drift": ("longred_bench/evaluation/", "longred_bench/pcd/",
                         "longred_bench/taskdata/"),
               "psa": ("longred_bench/evaluation/",)}  # fmt: skip


def _module_file(name: str, dirs: dict[str, Path]) -> Path | None:
    for folder, package in sorted(source_tree.SOURCE_DIRS.items(), key=lambda x: -len(x[1])):
        if name == package or name.startswith(package + "."):
            base = dirs[folder].joinpath(*name[len(package) :].split(".")[1:])
            for path in (base / "__init__.py", base.with_suffix(".py")):
                if path.is_file():
                    return path
            return None
    return None


def _imports(name: str, path: Path) -> set[str]:
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up level - 1
                up = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{up}.{base}" if base else up
            found |= {base} | {f"{base}.{a.name}" for a in node.names}
    return {m for m in found if m.startswith("longred_bench")}


def _closure(entries: list[str], stop: tuple[str, ...], dirs: dict[str, Path]) -> set[str]:
    seen: set[str] = set()
    todo = list(entries)
    while todo:
        name = todo.pop()
        path = _module_file(name, dirs)
        if name in seen or path is None or name.startswith(stop):
            continue
        seen.add(name)
        todo += _imports(name, path)
        todo += [name.rsplit(".", i)[0] for i in range(1, name.count("."))]  # its packages
    return seen


@pytest.mark.parametrize("kind", list(ENTRIES))
def test_each_kinds_code_covers_what_its_code_imports(kind: str) -> None:
    dirs = source_tree.imported_dirs()
    stop = NOT_FOLLOWED + (() if kind == "train" else BUILDS)
    files = set()
    for name in _closure(ENTRIES[kind], stop, dirs):
        path = _module_file(name, dirs)
        for folder, root in dirs.items():
            if path.is_relative_to(root) and not (folder == "longred_bench" and any(
                    path.is_relative_to(dirs[f]) for f in dirs if f != folder)):  # fmt: skip
                files.add(f"{folder}/{path.relative_to(root).as_posix()}")
    skip = ("longred_bench/__init__.py", "longred_bench/jobs/__init__.py")
    missing = sorted(f for f in files if not f.startswith(units.UNIT_CODE[kind] + skip)
                     and not f.startswith(CONFIG_ONLY.get(kind, ())))  # fmt: skip
    assert missing == [], f"{kind} units import these, which UNIT_CODE[{kind!r}] leaves out"
    assert len(files) > 10


def test_profiles_that_resolve_a_run_alike_share_its_key(tmp_path: Path) -> None:
    """A profile that extends ``smoke`` and changes only its evaluation trains nothing anew
    (its runs were keyed by the profile's name, so every run trained again); one that changes a
    training setting keys its runs anew."""
    from longred_bench.training.config import resolve_config

    evals = tmp_path / "evals.yaml"
    evals.write_text("extends: smoke\nevaluation:\n  batch_size: 3\n")
    lr = tmp_path / "lr.yaml"
    lr.write_text("extends: smoke\ntraining:\n  cpt:\n    lr: 0.00123\n")
    cfg = resolve_config("cpt", profile="smoke")
    mine = resolve_config("cpt", profile=str(evals))
    assert mine.profile == "evals" and units.train_key(mine) == units.train_key(cfg)
    assert units.train_key(resolve_config("cpt", profile=str(lr))) != units.train_key(cfg)
