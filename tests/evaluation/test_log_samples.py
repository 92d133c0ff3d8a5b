"""``eval --log-samples``: every scored document in ``samples/<task>.jsonl.gz``
(:mod:`longred_bench.evaluation.samples`).

Unit tests of the record layout on hand-made lm-eval samples and of the config flag (off, it is
absent from the saved config, so cache keys do not move); integration runs of the command on
``tiny-random``: one record per scored document with every field, per-document metrics whose
mean is the reported score, nothing written without the flag, a resumed run that still logs
every task, and an earlier run's samples kept by a run without the flag only where they are
its documents (else set aside, never deleted).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from data_helpers import ensure_cached

from longred_bench import cli
from longred_bench.errors import UserError
from longred_bench.evaluation.config import EvalConfig
from longred_bench.evaluation.samples import read_samples, sample_records, write_samples

FIELDS = {"task", "doc_id", "decoding", "arguments", "resps", "filtered_resps", "metrics",
          "target", "doc_hash", "prompt_hash", "target_hash"}  # fmt: skip


def _entry(doc_id: int, filt: str, **metrics: object) -> dict:
    return {
        "doc_id": doc_id, "filter": filt, "metrics": list(metrics), **metrics,
        "arguments": [["ctx", {"until": ["\n"]}]], "resps": [[" 42 and"]],
        "filtered_resps": [" 42" if filt == "strip" else " 42 and"], "target": "42",
        "doc_hash": "d", "prompt_hash": "p", "target_hash": "t", "doc": {"big": "x"},
    }  # fmt: skip


def test_one_record_per_document_across_filters() -> None:
    samples = {
        "gen": [
            _entry(3, "none", exact_match=0.0),
            _entry(5, "none", exact_match=1.0),
            _entry(3, "strip", exact_match=1.0),
            _entry(5, "strip", exact_match=1.0),
        ],
        "rul": [_entry(0, "none", score=40.0, **{"512": 40.0, "1024": None})],
    }
    records = sample_records(samples, decoding="pcd")
    assert [r["doc_id"] for r in records["gen"]] == [3, 5]
    first = records["gen"][0]
    assert set(first) == FIELDS  # lm-eval's doc is left out: the prompt holds it
    assert first["metrics"] == {"exact_match": 0.0, "exact_match,strip": 1.0}
    assert first["filtered_resps"] == {"none": [" 42 and"], "strip": [" 42"]}
    assert (first["resps"], first["target"], first["decoding"]) == ([[" 42 and"]], "42", "pcd")
    assert records["rul"][0]["metrics"] == {"score": 40.0, "512": 40.0}  # not its other length


def test_written_samples_read_back(tmp_path: Path) -> None:
    records = {"b": [{"doc_id": 1, "resps": [[[-1.5, True]]]}], "a": [{"doc_id": 0}]}
    paths = write_samples(tmp_path, records, run="r1")
    assert list(paths) == ["a", "b"]
    folder = tmp_path / "samples"
    assert paths["b"] == folder / "b.jsonl.gz"
    assert list(read_samples(paths["b"])) == records["b"]
    assert not list(folder.glob("*.tmp"))
    assert json.loads((folder / "run.json").read_text()) == {
        "run": "r1",
        "documents": {"a.jsonl.gz": 1, "b.jsonl.gz": 1},
    }
    # A run that logs another task sets the earlier run's files aside, by that run's key.
    assert write_samples(tmp_path, {"c": [{"doc_id": 2}], "b": []}, run="r2")
    assert sorted(p.name for p in folder.glob("*.jsonl.gz")) == ["b.jsonl.gz", "c.jsonl.gz"]
    assert [p.name for p in (folder / "earlier-r1").iterdir()] == ["a.jsonl.gz"]
    assert json.loads((folder / "run.json").read_text())["run"] == "r2"


def test_a_run_without_the_flag_keeps_only_samples_of_its_own_run(tmp_path: Path) -> None:
    """Samples of another run (other weights at the same path, another batch size) describe no
    result in the folder once its eval.jsonl is replaced: they are set aside, by the key of the
    run that wrote them, never deleted; those of the same run are this run's documents and
    stay, with the counts run.json records."""
    from longred_bench.evaluation.samples import keep_samples

    folder = tmp_path / "samples"
    assert keep_samples(tmp_path, run="r1") == ({}, None)  # nothing there
    write_samples(tmp_path, {"a": [{"doc_id": 0}, {"doc_id": 1}], "b": [{}]}, run="r1")
    assert keep_samples(tmp_path, run="r1") == (
        {folder / "a.jsonl.gz": 2, folder / "b.jsonl.gz": 1},
        None,
    )
    assert keep_samples(tmp_path, run="r2") == ({}, folder / "earlier-r1")
    assert sorted(p.name for p in folder.iterdir()) == ["earlier-r1"]
    aside = sorted(p.name for p in (folder / "earlier-r1").iterdir())
    assert aside == ["a.jsonl.gz", "b.jsonl.gz", "run.json"]
    write_samples(tmp_path, {"a": [{}]}, run="r1")
    (folder / "run.json").unlink()  # files written before run.json existed: whose is not known
    assert keep_samples(tmp_path, run="r1") == ({}, folder / "earlier-unrecorded")
    assert (folder / "earlier-unrecorded" / "a.jsonl.gz").is_file()


def test_the_flag_is_absent_from_a_saved_config_when_off() -> None:
    assert "log_samples" not in EvalConfig("tiny-random", suite="short_tiny").to_dict()
    on = EvalConfig("tiny-random", suite="short_tiny", log_samples=True)
    assert on.to_dict()["log_samples"] is True
    assert EvalConfig.from_dict(on.to_dict()) == on
    with pytest.raises(UserError, match="ppl suite has no documents"):
        EvalConfig("tiny-random", suite="ppl", log_samples=True)


def test_the_request_cache_key_ignores_the_flag(tmp_path: Path) -> None:
    from longred_bench.jobs.resume import request_cache

    off = EvalConfig("tiny-random", suite="ruler")
    on = EvalConfig("tiny-random", suite="ruler", log_samples=True)
    assert request_cache(tmp_path, off) == request_cache(tmp_path, on)


def _tidy(out: Path) -> dict[tuple, dict]:
    from longred_bench.results import read_records

    return {(r["task"], r["metric"], r["length"]): r for r in read_records(out / "eval.jsonl")}


def _check_means(out: Path, tasks: list[str], metrics: dict[str, tuple]) -> dict[str, list]:
    """Every task's file holds one record per scored document, with every field, and the mean
    of each per-document metric is the reported value; returns the records by task."""
    tidy = _tidy(out)
    by_task = {}
    for task in tasks:
        records = list(read_samples(out / "samples" / f"{task}.jsonl.gz"))
        by_task[task] = records
        assert all(set(r) == FIELDS and r["task"] == task for r in records)
        ids = [r["doc_id"] for r in records]
        assert len(ids) == len(set(ids)) == tidy[(task, metrics[task][0][0], None)]["n_samples"]
        for metric, length in metrics[task]:
            key = metric if length is None else str(length)
            values = [float(r["metrics"][key]) for r in records if key in r["metrics"]]
            assert values, (task, key)
            mean = sum(values) / len(values)
            assert mean == pytest.approx(tidy[(task, metric, length)]["value"], abs=1e-12)
    return by_task


@pytest.mark.integration
def test_ruler_samples_resume_and_agree_with_the_scores(
    tmp_path: Path, capsys, request: pytest.FixtureRequest
) -> None:
    ensure_cached(request, "brown")  # the haystack
    out = tmp_path / "run"
    tasks = ["longred_ruler_vt", "longred_ruler_niah_single_1"]
    argv = ["eval", "--model", "tiny-random", "--suite", "ruler", "--tasks", *tasks,
            "--lengths", "512", "1024", "--samples", "2", "--out", str(out), "--quiet"]  # fmt: skip
    assert cli.main(argv) == 0
    assert not (out / "samples").exists()  # without the flag nothing is logged
    assert ".jsonl.gz" not in capsys.readouterr().out
    before = _tidy(out)
    for task in tasks:  # a length's record counts its own documents (it counted all lengths')
        assert [before[(task, "score", n)]["n_samples"] for n in (None, 512, 1024)] == [4, 2, 2]
    # Run again with the flag: every response comes from the request cache (the finished
    # run's), and every task's documents are still logged.
    assert cli.main([*argv, "--log-samples"]) == 0
    printed = capsys.readouterr().out
    assert f"[eval] {out} holds this evaluation's results: its " in printed
    assert {k: r["value"] for k, r in _tidy(out).items()} == {
        k: r["value"] for k, r in before.items()
    }
    lengths = [("score", None), ("score", 512), ("score", 1024)]
    by_task = _check_means(out, tasks, {t: lengths for t in tasks})
    for task, records in by_task.items():
        assert len(records) == 4  # two per length
        path = f"samples/{task}.jsonl.gz"
        assert str(out / path) in printed
        assert f"| `{path}` | 4 |" in (out / "eval.md").read_text()
        for r in records:
            prompt, gen_kwargs = r["arguments"][0]
            assert isinstance(prompt, str) and len(prompt) > 200  # the haystack and question
            assert "max_gen_toks" in gen_kwargs
            assert isinstance(r["resps"][0][0], str) and r["decoding"] == "greedy"
            assert r["target"]
    # Again without the flag: the same run, so the logged documents are this run's too and stay
    # listed; with another batch size (other responses) they are set aside.
    assert cli.main(argv) == 0
    assert f"| `samples/{tasks[0]}.jsonl.gz` | 4 |" in (out / "eval.md").read_text()
    assert "moved" not in capsys.readouterr().out
    assert cli.main([*argv, "--batch-size", "2"]) == 0
    assert "an earlier run's documents, of other responses" in capsys.readouterr().out
    assert not list((out / "samples").glob("*.jsonl.gz"))
    assert len(list((out / "samples").glob("earlier-*/*.jsonl.gz"))) == len(tasks)
    assert "Logged samples" not in (out / "eval.md").read_text()


@pytest.mark.integration
@pytest.mark.parametrize("decoding", ["greedy", "pcd"])
def test_loglikelihood_samples_carry_scores_and_greedy_flags(
    decoding: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    ensure_cached(request, "brown", "austen", "sotu")
    out = tmp_path / "run"
    task = "longred_tiny_nextsent"
    argv = ["eval", "--model", "tiny-random", "--suite", "short_tiny", "--tasks", task,
            "--limit", "6", "--log-samples", "--decoding", decoding, "--out", str(out),
            "--quiet"]  # fmt: skip
    assert cli.main(argv) == 0
    records = _check_means(out, [task], {task: [("acc", None)]})[task]
    for r in records:
        assert r["decoding"] == decoding
        assert len(r["arguments"]) == len(r["resps"]) > 1  # one request per choice
        for (context, continuation), [(loglikelihood, is_greedy)] in zip(
            r["arguments"], r["resps"], strict=True
        ):
            assert isinstance(context, str) and isinstance(continuation, str)
            assert isinstance(loglikelihood, float) and isinstance(is_greedy, bool)
            if decoding == "greedy":  # under PCD a contrast of two passes, of either sign
                assert loglikelihood < 0


def test_the_samples_key_holds_the_config_beside_the_responses(tmp_path: Path) -> None:
    """Two evaluations of the same model share their responses' key (a rerun with more tasks
    reuses them) but not their documents: their samples' keys differ; the flag itself changes
    no document."""
    import dataclasses

    from longred_bench.jobs.eval import samples_run
    from longred_bench.jobs.resume import request_cache

    ruler = EvalConfig("tiny-random", suite="ruler", tasks=("longred_ruler_vt",))
    short = EvalConfig("tiny-random", suite="short_tiny", tasks=("longred_tiny_swap",), limit=8)
    cache = request_cache(tmp_path, ruler)
    assert cache == request_cache(tmp_path, short)
    assert samples_run(cache, ruler) != samples_run(cache, short)
    assert samples_run(cache, short) != samples_run(cache, dataclasses.replace(short, limit=4))
    two = EvalConfig("tiny-random", suite="ruler", tasks=("a", "b"), lengths=(512, 1024))
    again = dataclasses.replace(two, tasks=("b", "a"), lengths=(1024, 512))  # the same documents
    assert samples_run(cache, two) == samples_run(cache, again)
    logged = dataclasses.replace(ruler, log_samples=True)
    assert samples_run(cache, ruler) == samples_run(request_cache(tmp_path, logged), logged)
