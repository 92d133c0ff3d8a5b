"""The line ``eval`` prints before it runs where its ``--out`` holds saved model responses: a
resumed run (responses of an interrupted call) says it resumes; a run whose finished results
are there says so, where it read as a resume of an interrupted run."""

from __future__ import annotations

from pathlib import Path

import pytest

from longred_bench.evaluation.config import EvalConfig
from longred_bench.jobs import eval as eval_job


class _Stop(Exception):
    """Raised in place of the evaluation: only the line before it is under test."""


@pytest.fixture
def saved(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three saved responses, and an evaluation that stops at once."""
    monkeypatch.setattr(eval_job, "saved_responses", lambda cache: 3)

    def stop(*args, **kwargs):
        raise _Stop

    monkeypatch.setattr(eval_job, "run_eval", stop)


@pytest.mark.parametrize("finished", [False, True])
def test_saved_responses_are_said_as_a_resume_or_as_a_finished_run(
    tmp_path: Path, capsys, saved, finished: bool
) -> None:
    """Without results in ``--out`` the responses are an interrupted call's: a resume; beside
    its finished results, the same command writes them again from its responses."""
    out = tmp_path / "out"
    out.mkdir()
    if finished:
        (out / "eval.jsonl").write_text("{}\n")
    cfg = EvalConfig(model="tiny-random", suite="short_tiny", limit=1)
    with pytest.raises(_Stop):
        eval_job.eval_command(cfg, out, progress=False)
    said = capsys.readouterr().out
    if finished:
        assert said == (f"[eval] {out} holds this evaluation's results: its 3 saved model "
                        f"response(s) (under {out / 'requests'}) are reused and the results "
                        "written again\n")  # fmt: skip
    else:
        assert said.startswith(f"[eval] resuming: 3 model response(s) saved under {out}")
