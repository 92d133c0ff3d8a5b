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
    assert any(line.startswith(f"export {hub_corpora.DATA_FALLBACK}=1") for line in offline)
    assert not any("HF_" in line for line in offline)  # paper_short's datasets need the hub
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


def test_the_data_pin_trains_on_the_fallback_and_leaves_the_hub_to_paper_short(
    hub: dict, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """What a job planned on the fallbacks exports (``LONGRED_DATA_FALLBACK=1``) trains on the
    fallback though the hub answers, and leaves the hub open to ``paper_short`` (the
    ``HF_DATASETS_OFFLINE=1`` the jobs exported before refused it on every node)."""
    from longred_bench.evaluation import paper_suite
    from longred_bench.models import loading

    for module in (names, loading):  # the hub answers
        monkeypatch.setattr(module, "hub_unreachable", lambda: None)
    monkeypatch.setenv(hub_corpora.DATA_FALLBACK, "1")
    assert resolve_source(SPEC).record["fallback"]["used"] == "austen+kjv"
    assert hub["load"] == []  # no hub rows read
    paper_suite.require_hub()  # the hub is not refused to paper_short's datasets
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    with pytest.raises(paper_suite.UserError, match="HF_DATASETS_OFFLINE is set"):
        paper_suite.require_hub()
    capsys.readouterr()


def test_a_hub_model_pins_the_hub_data_where_the_emitting_node_has_no_hub(
    hub: dict, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """A login node without the hub pinned a run of a hub model onto the small offline corpora,
    though every node reads that model from the hub anyway: the jobs read the hub's rows, and
    an offline variable set where they are emitted still asks for the fallbacks."""
    monkeypatch.setattr(names, "hub_unreachable", lambda: "huggingface.co is unreachable")
    profile = tmp_path / "hubmodel.yaml"
    profile.write_text(f'extends: smoke\nmodel: {{name: org/base-model, window: 256}}\n'
                       f'training:\n  cpt:\n    long_data: "{SPEC}"\n')  # fmt: skip
    argv = ["reproduce", "table3", "--profile", str(profile), "--quiet", "--emit-slurm"]
    assert main([*argv, str(tmp_path / "a")]) == 0
    exports = (tmp_path / "a" / "array-1.sbatch").read_text()
    assert f"export {hub_corpora.NO_FALLBACK}=1" in exports and "FALLBACK=1  # the data" not in (
        exports
    )
    assert "the nodes read the model org/base-model from the hub anyway" in capsys.readouterr().out
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")  # asked for where they are emitted
    assert main([*argv, str(tmp_path / "b")]) == 0
    assert (
        f"export {hub_corpora.DATA_FALLBACK}=1" in (tmp_path / "b" / "array-1.sbatch").read_text()
    )
    capsys.readouterr()
