"""``--emit-slurm`` and hub data: every job reads what the emitting process would, the hub's rows
or every source's offline fallback, so no two units of a table train on different data."""

from __future__ import annotations

from pathlib import Path

import pytest

from longred_bench.cli import main
from longred_bench.data import hub_corpora
from longred_bench.data.source_documents import resolve_source
from longred_bench.models import names

SPEC = "hf:org/books:field=body:docs=3|austen+kjv"


def _emit(tmp_path: Path, name: str) -> list[str]:
    """The export lines of every script ``--emit-slurm`` writes for Table 3 on a profile whose
    CPT reads ``SPEC``."""
    profile = tmp_path / "hubdata.yaml"
    profile.write_text(f'extends: smoke\ntraining:\n  cpt:\n    long_data: "{SPEC}"\n')
    out = tmp_path / name
    assert main(["reproduce", "table3", "--profile", str(profile), "--quiet",
                 "--emit-slurm", str(out)]) == 0  # fmt: skip
    scripts = sorted(out.glob("*.sbatch"))
    assert len(scripts) > 1
    exports = [{line for line in p.read_text().splitlines() if line.startswith("export ")}
               for p in scripts]  # fmt: skip
    assert all(lines == exports[0] for lines in exports)  # every job alike
    return sorted(exports[0])


def test_jobs_read_the_hub_data_the_emitting_process_would(
    hub: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    monkeypatch.setattr(names, "hub_unreachable", lambda: "huggingface.co is unreachable")
    offline = _emit(tmp_path, "offline")
    assert any(line.startswith("export HF_DATASETS_OFFLINE=1") for line in offline)
    assert not any(hub_corpora.NO_FALLBACK in line for line in offline)
    assert "train on the offline fallbacks of org/books" in capsys.readouterr().out

    monkeypatch.setattr(names, "hub_unreachable", lambda: None)
    online = _emit(tmp_path, "online")
    assert any(line.startswith(f"export {hub_corpora.NO_FALLBACK}=1  # the hub's data")
               for line in online)  # fmt: skip
    assert not any("OFFLINE" in line for line in online)
    assert "read org/books from the hub (not cached yet)" in capsys.readouterr().out

    resolve_source(SPEC)  # the rows fetched into the cache: every node reads them there
    cached = _emit(tmp_path, "cached")
    assert not any("OFFLINE" in line or hub_corpora.NO_FALLBACK in line for line in cached)
    assert "org/books" not in capsys.readouterr().out
