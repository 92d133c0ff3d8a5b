"""``reproduce kernel``: the relation-KL kernel table from the committed benchmark CSVs
(``nox -s bench_kernels`` writes them); the same at every profile."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from longred_bench.errors import UserError
from longred_bench.reproduce.spec import Context, Step, TableSpec


@dataclass(frozen=True)
class KernelSettings:
    """``tables.kernel``: the folder of the benchmark CSVs."""

    csv_dir: str = "reports/kernels"


def csv_folder(csv_dir: str) -> Path:
    """``csv_dir`` as given where it holds the CPU CSV (absolute, or relative to the current
    folder), else relative to the checkout this package runs from: the committed CSVs are found
    from any folder."""
    given = Path(csv_dir).expanduser()
    checkout = Path(__file__).resolve().parents[2] / csv_dir
    if given.is_absolute() or (given / "relation_kl_cpu.csv").is_file():
        return given
    return checkout if (checkout / "relation_kl_cpu.csv").is_file() else given


def _steps(ctx: Context) -> list[Step]:
    return []


def _note(ctx: Context) -> str | None:
    return f"reads the committed benchmark CSVs in {ctx.settings.csv_dir} (seconds)"


def _write(ctx: Context, records: list[dict[str, Any]], out: Path, report: dict[str, Any]
           ) -> list[Path]:  # fmt: skip
    from longred_bench.reports.kernel import build_kernel_report

    bench = csv_folder(ctx.settings.csv_dir)
    cpu_csv = bench / "relation_kl_cpu.csv"
    if not cpu_csv.is_file():
        raise UserError(f"{cpu_csv} is missing: run `nox -s bench_kernels` first")
    return build_kernel_report(
        cpu_csv, bench / "relation_kl_gpu.csv", out, compile_csv=bench / "compile_sm90.csv"
    )


SPEC = TableSpec(
    "kernel", "The relation-KL kernel: exactness, speed and memory", KernelSettings, _steps,
    write=_write, note=_note, parallel=False,
)  # fmt: skip
