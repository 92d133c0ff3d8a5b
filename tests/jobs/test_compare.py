"""``longred-bench compare``: config checks, the tokenizer rule, the report's arithmetic, and an
end-to-end run on the tiny model that resumes from its saved units."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from data_helpers import ensure_cached

from longred_bench import cli
from longred_bench.errors import UserError
from longred_bench.jobs import compare
from longred_bench.jobs.compare import check_tokenizers, entries
from longred_bench.jobs.configs import CompareConfig
from longred_bench.metrics.retention import longred_avg
from longred_bench.reports import compare_report as report
from longred_bench.reports import short_avg


def test_config_rejects_unknown_keys_and_suites() -> None:
    with pytest.raises(UserError, match="unknown compare config key"):
        CompareConfig.from_dict({"original": "m", "rope": ["pi:factor=2"], "lenghts": [1]})
    with pytest.raises(UserError, match="unknown suite"):
        CompareConfig(original="m", rope=("pi:factor=2",), suites=("drift", "longbench"))
    with pytest.raises(UserError, match="needs --extended"):
        CompareConfig(original="m")
    with pytest.raises(UserError, match=r"RULER lengths \[300\] not supported"):
        CompareConfig(original="m", rope=("pi:factor=2",), lengths=(300,))  # before any unit runs
    CompareConfig(original="m", rope=("pi:factor=2",), suites=("drift",), lengths=(300,))


def test_entries_order_and_duplicates() -> None:
    cfg = CompareConfig(original="m", extended=("ckpt",), rope=("pi:factor=2",))
    assert [(e.label, e.spec, e.rope) for e in entries(cfg)] == [
        ("original", "m", None),
        ("ckpt", "ckpt", None),
        ("pi:factor=2", "m", "pi:factor=2"),
    ]
    with pytest.raises(UserError, match="listed twice"):
        entries(CompareConfig(original="m", rope=("pi:factor=2", "pi:factor=2")))


def test_one_folder_spelled_twice_is_refused_before_any_unit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """``--extended ck ./ck`` measured one checkpoint twice, as two rows; refused in one line
    before anything runs, as the same spelling twice is. One folder at two extensions is two
    models."""
    from longred_bench.cli import main

    _save_tiny(tmp_path / "ck")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    for twice in (["ck", "./ck"], ["ck", str(tmp_path / "ck")]):
        argv = ["compare", "--original", "tiny-random", "--extended", *twice, "--out", "o"]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"a model is listed twice: ck and {twice[1]} are one model" in err
        assert err.count("\n") == 1 and not (tmp_path / "o").exists()
    cfg = CompareConfig(original=str(tmp_path / "ck"), rope=("pi:factor=2",))
    assert len(entries(cfg)) == 2


@pytest.mark.parametrize("command", ["compare", "drift"])
def test_the_original_as_a_checkpoint_and_an_extension_spelled_twice_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, command: str
) -> None:
    """drift measured the original against itself (cosine 1, KL 0) and one extension twice, as
    two rows, without a word; compare measured the extension twice."""
    from longred_bench.cli import main

    _save_tiny(tmp_path / "ck")
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    cases = [
        (["--extended", "./ck"], "a model is listed twice: the original and "),
        (["--rope", "pi:factor=4", "pi:factor=4.0"], "an extension is listed twice: pi:factor=4 "
         "and pi:factor=4.0 are one extension (pi:factor=4); give it once"),
    ]  # fmt: skip
    for flags, message in cases:
        assert main([command, "--original", "ck", *flags, "--out", "o"]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1 and not (tmp_path / "o").exists()
        assert "ck are one model" in err or "extension" in message


def _save_tiny(path: Path, extra_token: str | None = None) -> Path:
    from longred_bench.models.loading import load

    loaded = load("tiny-random")
    if extra_token is not None:
        loaded.tokenizer.add_tokens([extra_token])
    loaded.model.save_pretrained(path)
    loaded.tokenizer.save_pretrained(path)
    return path


def test_tokenizer_mismatch_names_both_tokenizers(tmp_path: Path) -> None:
    same = _save_tiny(tmp_path / "same")
    other = _save_tiny(tmp_path / "other", extra_token="<needle>")
    check_tokenizers(CompareConfig(original="tiny-random", extended=(str(same),)))
    cfg = CompareConfig(original="tiny-random", extended=(str(same), str(other)))
    with pytest.raises(UserError) as exc:
        check_tokenizers(cfg)
    message = str(exc.value)
    assert "tokenizer mismatch" in message and "\n" not in message
    assert str(other) in message and "'tiny-random'" in message
    assert "260 tokens" in message and "259 tokens" in message


def _eval(label: str, task: str, metric: str, value: float, group: str | None, n=4) -> dict:
    return {
        "kind": "eval",
        "suite": "short",
        "label": label,
        "task": task,
        "metric": metric,
        "value": value,
        "group": group,
        "n_samples": n,
        "length": None,
    }


def test_report_arithmetic_short_avg_ruler_and_avg() -> None:
    records = []
    for label, scale in (("original", 1.0), ("ext", 0.5)):
        records += [
            _eval(label, "a", "acc", 0.8 * scale, "g1"),
            _eval(label, "a", "acc_norm", 0.1, "g1"),  # not the headline metric
            _eval(label, "b", "exact_match,remove_whitespace", 0.4 * scale, "g1"),
            _eval(label, "c", "acc", 0.3 * scale, "g2"),
            _eval(label, "c", "perplexity", 12.0, "g2"),
            _eval(label, "g1", "acc", 0.99, "short", n=None),  # a group: ignored
        ]
        for length, value in ((1024, 90.0 * scale), (2048, 70.0 * scale), (None, 80.0 * scale)):
            records.append(
                {
                    "kind": "eval",
                    "suite": "ruler",
                    "label": label,
                    "task": "longred_ruler",
                    "metric": "score",
                    "length": length,
                    "value": value,
                }
            )
    short = report.short_scores(records)
    assert short["original"] == pytest.approx({"a": 80.0, "b": 40.0, "c": 30.0})
    cats = short_avg.short_categories(records)
    assert cats == {"g1": ("a", "b"), "g2": ("c",)}
    # Short Avg is the mean of the category means: ((80 + 40) / 2 + 30) / 2 = 45.
    assert short_avg.short_avg(short["original"], cats) == pytest.approx(45.0)
    assert longred_avg(45.0, 80.0) == pytest.approx((5 * 45.0 + 80.0) / 6)
    ruler = report.ruler_scores(records)
    assert ruler["ext"] == {1024: 45.0, 2048: 35.0, None: 40.0}


TINY_SCORES = {  # short_tiny: four averaged tasks, the passkey (retrieval) and the ppl task
    "longred_tiny_lastword": 0.50,
    "longred_tiny_nextsent": 0.90,
    "longred_tiny_swap": 0.80,
    "longred_tiny_replace": 0.60,
    "longred_tiny_passkey": 1.00,
}


def _tiny_records() -> list[dict]:
    records = []
    for label, scale in (("original", 1.0), ("pi:factor=4", 0.9)):
        for task, value in TINY_SCORES.items():
            group = None if task == "longred_tiny_passkey" else "longred_short_tiny"
            records.append(
                {**_eval(label, task, "acc", value * scale, group), "suite": "short_tiny"}
            )
        ppl = _eval(label, "longred_tiny_ppl", "word_perplexity", 80.0, "longred_short_tiny")
        records.append({**ppl, "suite": "short_tiny"})
    return records


def _table(md: str, heading: str) -> list[list[str]]:
    """The rows (cells) of the Markdown table under ``heading``."""
    lines = md.split(heading, 1)[1].splitlines()
    end = next((i for i, line in enumerate(lines[1:]) if line.startswith("#")), len(lines))
    rows = [line for line in lines[1 : end + 1] if line.startswith("|")]
    return [[c.strip() for c in row.strip("|").split("|")] for row in rows[2:]]


def _column(md: str, header: str) -> dict[str, str]:
    """``{model: cell}`` of the Summary's column ``header`` (its columns are the suites')."""
    lines = md.split("## Summary", 1)[1].strip().splitlines()
    heads = [c.strip() for c in lines[0].strip("|").split("|")]
    return {row[0]: row[heads.index(header)] for row in _table(md, "## Summary")}


def test_compare_short_avg_is_the_mean_of_the_categories_it_shows(tmp_path: Path) -> None:
    records = _tiny_records()
    labels = ["original", "pi:factor=4"]
    report.build_compare_report(records, labels, tmp_path, title="t", command="c")
    md = (tmp_path / "compare.md").read_text()
    summary = {row[0]: float(row[1]) for row in _table(md, "## Summary")}
    by_category = _table(md, "### Short Avg by category")
    assert [row[0] for row in by_category] == ["Language", "General", "RC", "**Short Avg**"]
    for i, label in enumerate(labels, start=2):
        means = [float(row[i]) for row in by_category[:-1]]
        assert summary[label] == pytest.approx(sum(means) / len(means), abs=0.051)
        assert float(by_category[-1][i]) == summary[label]
    # original: (70 + 50 + 90) / 3 = 70.0; with the passkey counted it would be 80.0
    assert summary["original"] == 70.0
    passkey = next(r for r in _table(md, "## Short-text benchmarks") if r[0].endswith("passkey"))
    assert passkey[1] == "not averaged (retrieval)"


def test_compare_and_the_table_reports_compute_one_short_avg() -> None:
    from longred_bench.reports.runs import collect_runs, short_avg_cell

    records = [
        {**r, "row": "original", "seed": 0, "extension": None}
        for r in _tiny_records()
        if r["label"] == "original"
    ]
    cats = short_avg.short_categories(records)
    run = next(iter(collect_runs(records).values()))
    compare_value = short_avg.short_avg(report.short_scores(records)["original"], cats)
    assert short_avg_cell(run, cats).value == pytest.approx(compare_value) == pytest.approx(70.0)


@pytest.mark.integration
def test_compare_tiny_end_to_end_and_resume(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture,
) -> None:
    ensure_cached(request, "brown", "austen", "sotu")
    out = tmp_path / "cmp"
    argv = ["compare", "--original", "tiny-random", "--rope", "pi:factor=4"]
    argv += ["--suites", "short", "niah", "drift", "--short-suite", "short_tiny"]
    argv += ["--short-tasks", "longred_tiny_nextsent", "--short-limit", "3"]
    argv += ["--lengths", "1024", "--niah-depths", "0", "100"]
    argv += ["--drift-num-texts", "2", "--drift-seq-len", "64", "--out", str(out), "--quiet"]
    assert cli.main(argv) == 0
    md = (out / "compare.md").read_text()
    assert "| pi:factor=4 |" in md and "| original |" in md
    for png in ("retention.png", "niah.png", "drift.png"):
        assert (out / png).stat().st_size > 0
    assert (out / "runs" / "original" / "short_tiny" / "eval.jsonl").is_file()
    assert (out / "runs" / "pi_factor=4" / "niah" / "eval.jsonl").is_file()
    first = md

    # A second run with the same settings measures nothing again.
    def fail(*args, **kwargs):
        raise AssertionError("a saved unit was measured again")

    monkeypatch.setattr(compare, "run_eval_unit", fail)
    monkeypatch.setattr("longred_bench.jobs.drift.run_drift", fail)
    capsys.readouterr()
    assert cli.main(argv) == 0
    assert (out / "compare.md").read_text() == first
    assert f"[compare] 5 of 5 unit(s) reused from {out / 'runs'}, 0 measured" in (
        capsys.readouterr().out
    )
    # A zoo name standing for registry weights (smollm2-135m's 4-bit GGUF) is said in the title.
    monkeypatch.setattr("longred_bench.data.sources.zoo_weights", lambda name: f"{name} weights")
    assert cli.main(argv) == 0
    title = (out / "compare.md").read_text().splitlines()[0]
    assert title == "# `tiny-random` (tiny-random weights) and its extensions"

    # Changing one setting reruns only the units it touches (here: NIAH).
    calls: list[str] = []
    monkeypatch.undo()
    original_unit = compare.run_eval_unit

    def spy(unit, progress, **kwargs):
        calls.append(unit["suite"])
        return original_unit(unit, progress, **kwargs)

    monkeypatch.setattr(compare, "run_eval_unit", spy)
    monkeypatch.setattr("longred_bench.jobs.drift.run_drift", fail)
    argv[argv.index("100")] = "50"
    assert cli.main(argv) == 0
    assert calls == ["niah", "niah"]
    printed = capsys.readouterr().out  # the units measured again, said even under --quiet
    assert "[compare] original: niah: measured again; " in printed
    assert "set aside as niah." in printed and "held records of other settings" in printed
    assert "3 of 5 unit(s) reused" in printed and "2 measured (2 again: their settings" in printed
    # the earlier settings' records were set aside, not replaced: back to them, nothing is
    # measured (each unit's records swap places with the other settings')
    monkeypatch.setattr(compare, "run_eval_unit", fail)
    argv[argv.index("50")] = "100"
    assert cli.main(argv) == 0
    assert "[compare] 5 of 5 unit(s) reused" in capsys.readouterr().out
    assert (out / "compare.md").read_text() == first  # the first report again
    assert len(list((out / "runs" / "original").glob("niah.*"))) == 1  # depth 50's, aside
    argv[argv.index("100")] = "50"
    assert cli.main(argv) == 0  # and back again, measuring nothing
    cosine = _column((out / "compare.md").read_text(), "hidden cosine")["pi:factor=4"]
    assert not math.isnan(float(cosine))  # hidden cosine is reported


def test_tasks_run_on_their_own_get_one_short_avg_line_not_a_category_table(
    tmp_path: Path,
) -> None:
    scores = {"longred_mmlu": 0.5, "longred_piqa": 0.9, "longred_boolq": 0.8,
              "longred_arc_easy": 0.6}  # fmt: skip
    records = [_eval(label, task, "acc", value * scale, None)
               for label, scale in (("original", 1.0), ("pi:factor=4", 0.9))
               for task, value in scores.items()]  # fmt: skip
    report.build_compare_report(records, ["original", "pi:factor=4"], tmp_path, title="t",
                                command="c")  # fmt: skip
    md = (tmp_path / "compare.md").read_text()
    assert "### Short Avg by category" not in md
    assert "Short Avg: the mean of the 4 benchmarks above" in md
    summary = {row[0]: float(row[1]) for row in _table(md, "## Summary")}
    assert summary["original"] == pytest.approx((50 + 90 + 80 + 60) / 4, abs=0.051)


def test_over_length_documents_are_counted_per_model() -> None:
    """The per-model sentence said "20 document(s) skipped" where 2, 3, 5 and 10 were, one count
    per model: the sum over all of them."""

    def task(label: str, over: int) -> dict:
        return {"kind": "eval", "label": label, "suite": "short_tiny", "task": "t",
                "metric": "acc", "length": None, "n_samples": 4, "n_over_length": over}  # fmt: skip

    uneven = [task("original", 2), task("a", 3), task("b", 5), task("c", 10)]
    from longred_bench.results import over_length_documents

    group = {**task("original", 2), "task": "group", "n_samples": None}  # carries the total
    assert over_length_documents([task("original", 2), group]) == 2  # counted once
    assert (
        over_length_documents([task("original", 2), {**task("original", 2), "metric": "f1"}]) == 2
    )
    line = report.sample_sizes(uneven)
    assert "document(s) skipped as over-length: 2 for original, 3 for a, 5 for b, 10 for c" in line
    assert "1 document(s) skipped as over-length" in report.sample_sizes(
        [task("original", 1), task("a", 1)]
    )


def test_the_summarys_attention_kl_keeps_its_digits_as_drift_md_does() -> None:
    assert report._kl(2.566e-04) == "2.566e-04" and report._kl(None) == ""


def test_a_figure_the_report_no_longer_shows_is_not_left_beside_it(tmp_path: Path) -> None:
    """A compare of fewer suites into a folder of an earlier one (the same units reused) left its
    RULER and NIAH figures beside a compare.md without those sections."""
    for name in ("ruler_lengths.png", "niah.png", "drift.png", "notes.png"):
        (tmp_path / name).write_bytes(b"old")
    paths = report.build_compare_report(_tiny_records(), ["original", "pi:factor=4"], tmp_path,
                                        title="t", command="c")  # fmt: skip
    assert {p.name for p in paths} == {"compare.md", "retention.png"}
    left = {p.name for p in tmp_path.iterdir()}
    assert left == {"compare.md", "retention.png", "notes.png"}  # not compare's: kept


def test_near_one_cosines_keep_the_digits_that_tell_extensions_apart(tmp_path: Path) -> None:
    """compare.md's Summary printed 1.0000 for both of two extensions of cosine 0.999993 and
    0.999991; it writes them as drift.md does."""
    labels = ["original", "pi:factor=4", "pi:factor=2"]
    records = _tiny_records() + [
        {**r, "label": "pi:factor=2"} for r in _tiny_records() if r["label"] == "pi:factor=4"
    ]
    for label, cos in (("pi:factor=4", 0.999991), ("pi:factor=2", 0.999993)):
        common = {"label": label, "original": "m", "extension": label, "texts": "brown",
                  "seq_len": 64, "num_texts": 2, "num_tokens": 128}  # fmt: skip
        records += [
            {"kind": "drift_layer", **common, "layer": 1, "hidden_cosine": cos,
             "attention_kl": 1e-4},
            {"kind": "drift_summary", **common, "mean_hidden_cosine": cos,
             "last_hidden_cosine": cos, "mean_attention_kl": 1e-4, "top_m": 1,
             "selected_layers": [1]},
        ]  # fmt: skip
    report.build_compare_report(records, labels, tmp_path, title="t", command="c")
    summary = _column((tmp_path / "compare.md").read_text(), "hidden cosine")
    assert summary == {"original": "", "pi:factor=4": "0.999991", "pi:factor=2": "0.999993"}
    # a cosine that could not be measured (NaN) is left blank, not "nan", as before
    for r in records:
        if r["kind"] == "drift_summary" and r["label"] == "pi:factor=2":
            r["mean_hidden_cosine"] = float("nan")
    report.build_compare_report(records, labels, tmp_path, title="t", command="c")
    summary = _column((tmp_path / "compare.md").read_text(), "hidden cosine")
    assert summary == {"original": "", "pi:factor=4": "0.99999", "pi:factor=2": ""}  # alone


def test_each_model_has_its_own_unit_folder() -> None:
    """Two checkpoints whose paths share their first 80 characters shared one unit folder: each
    measured over the other's records on every call, nothing reused. Short names keep their
    folders (earlier comparisons are reused); a long one ends with its hash."""
    from longred_bench.jobs.compare import slug, unit_folders

    stem = "long/" + "a" * 84
    a, b = f"{stem}/ckpt-A", f"{stem}/ckpt-B"
    assert slug(a) != slug(b) and len(slug(a)) == len(slug(b)) == 80
    assert slug(a).startswith("long_" + "a" * 66) and slug(a) == slug(a)  # the same each call
    assert slug("pi:factor=4") == "pi_factor=4" and slug("original") == "original"
    labels = ["original", a, b, "out/m", "out_m", "x +pcd", "x_pcd", "drift", "requests", "m"]
    folders = unit_folders(labels)
    assert len(set(folders.values())) == len(labels)
    assert folders["original"] == "original" and folders["m"] == "m"
    assert folders[a] == slug(a) and folders[b] == slug(b)
    for clash in ("out/m", "out_m", "x +pcd", "x_pcd", "drift", "requests"):
        assert folders[clash] != slug(clash) and folders[clash].startswith(slug(clash) + "-")


def test_a_relative_model_path_makes_a_plain_folder_inside_runs() -> None:
    """``./m`` made a hidden folder ``._m``, and ``..`` or ``.`` (a model given from inside its
    folder) named the folder above ``runs/`` or ``runs/`` itself: each is a plain folder now."""
    from longred_bench.jobs.compare import slug, unit_folders

    assert slug("./base") == "base" and slug("../ckpt/") == "ckpt" and slug(".hidden") == "hidden"
    assert slug("..") == slug(".") == "model" and slug("/abs/m") == "abs_m"
    folders = unit_folders(["original", ".", ".."])
    assert len(set(folders.values())) == 3
    assert all(not name.startswith(".") and name.strip(".") for name in folders.values())


def test_pcd_rows_alone_show_their_models_drift(tmp_path: Path) -> None:
    """``--decoding pcd`` without greedy: drift, keyed by the model's own label, was on no row
    of the summary (every cell blank); with a greedy row it stays there, once."""
    pcd = {"alpha": 3.0, "plausibility": "topk", "top_k": 20, "window_rule": "window 64",
           "first_pair": 0, "local": [{"window": 64, "base": 12.5}]}  # fmt: skip
    records = [{**r, "label": f"{r['label']} +pcd", "pcd": pcd} for r in _tiny_records()]
    common = {"label": "pi:factor=4", "original": "m", "extension": "pi:factor=4",
              "texts": "brown", "seq_len": 64, "num_texts": 2, "num_tokens": 128}  # fmt: skip
    records += [
        {"kind": "drift_layer", **common, "layer": 1, "hidden_cosine": 0.95, "attention_kl": 0.2},
        {"kind": "drift_summary", **common, "mean_hidden_cosine": 0.95, "last_hidden_cosine": 0.95,
         "mean_attention_kl": 0.2, "top_m": 1, "selected_layers": [1]},
    ]  # fmt: skip
    labels = ["original +pcd", "pi:factor=4 +pcd"]
    report.build_compare_report(records, labels, tmp_path, title="t", command="c")
    md = (tmp_path / "compare.md").read_text()
    summary = _column(md, "hidden cosine")
    assert summary == {"original +pcd": "", "pi:factor=4 +pcd": "0.9500"}
    # the settings, not one model's local windows
    assert "PCD: alpha 3.0, plausible tokens top-20, local window window 64, first pair 0.\n" in md
    records += [{**r, "label": r["label"].removesuffix(" +pcd")} for r in _tiny_records()]
    labels = ["original", "original +pcd", "pi:factor=4", "pi:factor=4 +pcd"]
    report.build_compare_report(records, labels, tmp_path, title="t", command="c")
    summary = _column((tmp_path / "compare.md").read_text(), "hidden cosine")
    assert summary["pi:factor=4"] == "0.9500" and summary["pi:factor=4 +pcd"] == ""


def test_the_summary_shows_the_columns_of_the_suites_compared(tmp_path: Path) -> None:
    """A drift-only comparison had six empty columns (Short, RULER, NIAH, Avg, retentions); the
    summary shows the suites compared (smol's committed drift records, alone)."""
    from longred_bench.results import read_records

    runs = Path(__file__).resolve().parents[2] / "reports/smol/compare/runs"
    records = [{**r, "label": r["extension"]}  # compare labels a RoPE row by its spec
               for unit in ("abf_theta=1e7", "yarn_factor=4")
               for r in read_records(runs / "drift" / unit / "drift.jsonl")]  # fmt: skip
    labels = ["original", *dict.fromkeys(r["label"] for r in records)]
    report.build_compare_report(records, labels, tmp_path, title="t", command="c")
    md = (tmp_path / "compare.md").read_text()
    head = md.split("## Summary", 1)[1].strip().splitlines()[0]
    assert head == "| model | hidden cosine | attention KL (nats/row) |"
    rows = _table(md, "## Summary")
    assert [row[0] for row in rows] == labels and rows[0] == ["original", "", ""]
    assert all(len(row) == 3 and row[1] and row[2] for row in rows[1:])
