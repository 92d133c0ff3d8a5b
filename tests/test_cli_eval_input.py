"""Bad input to ``eval`` ends in one line before any model loads: its few-shot count, options
its suite would ignore, a long-context task in a short suite, a task lm-eval does not know, and
what the run refuses of a zoo model or an extension, refused at the dry run too (the other
commands' in ``test_cli_bad_input.py``; what they share in ``cli_helpers.py``)."""

from __future__ import annotations

import pytest
from cli_helpers import one_line_error as _one_line_error

from longred_bench.cli import main
from longred_bench.errors import UserError


def test_a_negative_few_shot_count_is_refused() -> None:
    from longred_bench.evaluation.config import EvalConfig

    with pytest.raises(UserError, match="--num-fewshot must be 0 or more, got -1"):
        EvalConfig(model="tiny-random", suite="short_tiny", num_fewshot=-1)
    assert EvalConfig(model="tiny-random", suite="short_tiny", num_fewshot=0).num_fewshot == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--rope", "abf:theta=5e3", "--suite", "ppl"],
         "--rope abf:theta=5e3 does not apply to tiny-random: ABF needs theta above the original"),
        (["--suite", "ppl", "--corpus", "nosuch"], "--corpus 'nosuch' is neither a corpus"),
    ],
)  # fmt: skip
def test_an_eval_dry_run_refuses_what_the_run_refuses_of_a_zoo_model(capsys, argv, message):
    """A zoo model's ABF base below its own, and a corpus that names none, passed the dry run
    (exit 0) and were refused by the run."""
    _one_line_error(capsys, ["eval", "--model", "tiny-random", *argv, "--dry-run"], message)


def test_dynamic_rope_through_vllm_is_refused_at_the_dry_run(capsys) -> None:
    argv = ["eval", "--model", "tiny-random", "--suite", "ruler", "--rope", "dynamic:factor=2"]
    _one_line_error(capsys, [*argv, "--backend", "vllm", "--dry-run"],
                    "--rope dynamic:factor=2: vLLM's dynamic NTK is not transformers'")  # fmt: skip
    assert main([*argv, "--backend", "hf", "--dry-run"]) == 0
    assert main([*argv[:-2], "--rope", "yarn:factor=2", "--backend", "vllm", "--dry-run"]) == 0


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--suite", "ppl", "--max-length", "100"], "--max-length and --backend vllm do not apply"),
        (["--suite", "ppl", "--backend", "vllm"], "--max-length and --backend vllm do not apply"),
        (["--suite", "short_tiny", "--max-length", "0"], "--max-length must be at least 1, got 0"),
        (["--suite", "ppl", "--tasks", "longred_short"], "--tasks is for the lm-eval suites"),
        (["--suite", "ppl", "--num-fewshot", "3"], "--num-fewshot is for the lm-eval suites"),
        (["--suite", "ruler", "--tasks", "longred_ruler_vt", "longred_tiny_lastword"],
         "longred_tiny_lastword is not a RULER task"),
        (["--suite", "niah", "--tasks", "longred_ruler_vt"],
         "the niah suite runs one task, longred_niah (the needle grid over --lengths and "
         "--depths), not longred_ruler_vt"),
        (["--suite", "niah", "--tasks", "longred_niah", "longred_tiny_swap"],
         "not longred_tiny_swap: run that with its own suite"),
        (["--suite", "ruler", "--num-fewshot", "2"], "--num-fewshot above 0 is for the short "
         "suites; the ruler suite's prompts are built at each length"),
        (["--suite", "niah", "--num-fewshot", "1"], "--num-fewshot above 0 is for the short"),
        (["--decoding", "pcd", "--pcd-top-k", "10"],
         "--pcd-top-k is for --pcd-plausibility topk, not adaptive"),
        (["--decoding", "pcd", "--pcd-plausibility", "topk", "--pcd-beta", "0.3"],
         "--pcd-beta is for --pcd-plausibility adaptive, not topk"),
    ],
)  # fmt: skip
def test_eval_options_that_would_be_ignored_are_refused(tmp_path, capsys, flags, message) -> None:
    """ppl ran without a word with a --max-length, --backend, --tasks or --num-fewshot it never
    reads; ruler ran a short task whole, without its --lengths and --samples; niah ran another
    task whole, then failed in its grid's report with nothing written; --num-fewshot with ruler
    ended in a traceback after loading; a PCD cut of the other plausibility rule was recorded and
    not used."""
    _one_line_error(capsys, ["eval", "--model", "tiny-random", *flags, "--out",
                             str(tmp_path / "o")], message)  # fmt: skip


def test_the_flags_eval_refuses_pass_where_they_apply(capsys) -> None:
    """The refusals above leave the flags' own uses alone: RULER tasks and lm-eval's NIAH under
    ruler, --num-fewshot 0 with the long suites (it ran as without it), and each PCD cut with its
    own rule."""
    for flags in (["--suite", "ruler", "--tasks", "longred_ruler_vt",
                   "longred_lmeval_niah_single_1"], ["--suite", "ruler", "--num-fewshot", "0"],
                  ["--suite", "niah", "--tasks", "longred_niah", "--num-fewshot", "0"],
                  ["--decoding", "pcd", "--pcd-plausibility", "topk", "--pcd-top-k", "5"],
                  ["--decoding", "pcd", "--pcd-beta", "0.2"]):  # fmt: skip
        assert main(["eval", "--model", "tiny-random", *flags, "--dry-run"]) == 0, flags
    capsys.readouterr()


@pytest.mark.integration  # lm-eval indexes its own tasks to name the nearest (about 10 s)
def test_eval_dry_run_refuses_a_task_lm_eval_does_not_know(capsys) -> None:
    """The dry run printed ``tasks: longred_tiny_nosuch`` with status 0; the run refused it."""
    argv = ["eval", "--model", "tiny-random", "--suite", "short_tiny", "--tasks"]
    _one_line_error(capsys, [*argv, "longred_tiny_nosuch", "--dry-run"],
                    "unknown lm-eval task(s) longred_tiny_nosuch; nearest: ")  # fmt: skip
    assert main([*argv, "longred_tiny_swap", "--dry-run"]) == 0
    code = ["eval", "--model", "tiny-random", "--suite", "short", "--allow-code-eval", "--dry-run"]
    assert main([*code, "--tasks", "humaneval"]) == 0  # lm-eval's own code task: the flag applies


def test_eval_dry_run_refuses_an_extension_the_run_refuses(tmp_path, capsys) -> None:
    """A checkpoint whose RoPE is already scaled, extended again: the dry run printed a plan the
    run refused seconds later; both refuse it now, from the model's config."""
    from longred_bench.models.loading import extend, load

    loaded = load("tiny-random")
    path = tmp_path / "pi"
    extend(loaded.model, "pi:factor=2").save_pretrained(path)
    loaded.tokenizer.save_pretrained(path)
    capsys.readouterr()  # the save's progress bar
    argv = ["eval", "--model", str(path), "--suite", "niah", "--rope", "yarn:factor=2"]
    _one_line_error(capsys, [*argv, "--dry-run"], "the model's RoPE is already scaled (linear")
    assert main([*argv[:-2], "--dry-run"]) == 0  # without --rope: its plan


def test_eval_dry_run_of_a_zoo_model_not_fetched_plans_its_extension(tmp_path, monkeypatch,
                                                                      capsys) -> None:  # fmt: skip
    """A zoo model's config is not read by the dry run (smollm2-135m may not be fetched yet,
    tiny-random would be built): its --rope plan prints as before."""
    monkeypatch.setenv("LONGRED_CACHE", str(tmp_path / "empty"))
    argv = ["eval", "--model", "smollm2-135m", "--suite", "niah", "--rope", "pi:factor=4"]
    assert main([*argv, "--dry-run"]) == 0
    assert "pi:factor=4" in capsys.readouterr().out


@pytest.mark.parametrize(("argv", "said"), [
    (["eval", "--model", "tiny-random", "--suite", "short_tiny", "--tasks",
      "longred_tiny_nextsent", "longred_ruler_vt", "--dry-run"],
     "eval: --tasks longred_ruler_vt is a long-context task, built at --lengths, not a short "
     "one: run it with the ruler suite"),
    (["eval", "--model", "tiny-random", "--suite", "short", "--tasks", "longred_niah",
      "--dry-run"], "eval: --tasks longred_niah is a long-context task"),
    (["compare", "--original", "tiny-random", "--rope", "pi:factor=2", "--short-tasks",
      "longred_ruler_vt", "--out", "OUT"], "compare: --short-tasks longred_ruler_vt is a long"),
    (["compare", "--original", "tiny-random", "--rope", "pi:factor=2", "--short-tasks",
      "niah_single_1", "--out", "OUT"], "compare: --short-tasks niah_single_1 is lm-eval's "
     "RULER task, built at lengths, not a short one: run the suite's RULER with the ruler "
     "suite (task longred_ruler_niah_single_1)"),
    (["eval", "--model", "tiny-random", "--suite", "short", "--tasks", "ruler_qa_hotpot",
      "--dry-run"], "(task longred_ruler_qa_2)"),
    (["eval", "--model", "tiny-random", "--suite", "short", "--tasks", "qa_1", "--dry-run"],
     "eval: --tasks qa_1 is a RULER task, built at lengths, not a short one: run the suite's "
     "RULER with the ruler suite (task longred_ruler_qa_1)"),
    (["eval", "--model", "tiny-random", "--suite", "short", "--tasks", "ruler", "--dry-run"],
     "eval: --tasks ruler is lm-eval's RULER task, built at lengths, not a short one: run the "
     "suite's RULER with the ruler suite (its default tasks)"),
    (["eval", "--model", "tiny-random", "--suite", "short", "--tasks", "longred_ruler",
      "--dry-run"], "eval: --tasks longred_ruler is a long-context task"),
])  # fmt: skip
def test_a_long_context_task_in_a_short_suite_is_refused(tmp_path, capsys, argv, said) -> None:
    """A RULER task among a short suite's tasks passed the dry run and failed after the model
    loaded ("no document fits ... pass --max-length 4101"): built there at one default length.
    lm-eval's own RULER (niah_single_1, ruler_qa_hotpot, its ruler group) failed after the
    model loaded too, with a traceback from reading a tokenizer by the model's name."""
    _one_line_error(capsys, [str(tmp_path / "out") if a == "OUT" else a for a in argv], said)
    assert not (tmp_path / "out").exists()
