"""``benchmarks/short_task_tokens.py``: a task's requests counted at a given few-shot count, as
``paper_short``'s members are (``TASK@N``). Needs the cached State of the Union addresses
(``--run-network`` fetches them)."""

from __future__ import annotations

import pytest
from data_helpers import ensure_cached
from script_loader import load_script

from longred_bench.taskdata import tiny_tasks

TASK = "longred_tiny_lastword"


@pytest.mark.integration
def test_a_task_counted_at_two_shots_reads_its_documents_with_two_examples_each(request):
    ensure_cached(request, *tiny_tasks.DEFAULT_CORPORA)
    from longred_bench.models.zoo import byte_tokenizer

    script = load_script("short_task_tokens")
    tokenizer = byte_tokenizer()
    own = script.count(TASK, tokenizer)
    zero = script.count(TASK, tokenizer, 0)
    two = script.count(TASK, tokenizer, 2)
    assert own == zero  # the task's own count is 0 shots
    assert two["docs"] == zero["docs"] > 0 and two["requests"] == zero["requests"]
    # each prompt gains two solved examples: more than twice the tokens of the bare prompts
    assert two["prompt_tokens"] > 2 * zero["prompt_tokens"]
    assert two["generated_tokens"] == zero["generated_tokens"] == 0


def test_counting_paper_short_without_the_hub_fails_in_one_line():
    import os
    import subprocess
    import sys

    from script_loader import BENCHMARKS

    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, str(BENCHMARKS / "short_task_tokens.py"), "--suite", "paper_short"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert out.returncode == 1
    assert out.stderr.strip().splitlines() == [
        "error: the paper_short suite needs Hugging Face hub access (HF_HUB_OFFLINE is set); "
        "without --suite this script counts the offline tasks"
    ]


def test_paper_short_counts_allow_code_evals_self_check_and_keep_each_task_before_a_failure(
    monkeypatch, tmp_path
):
    import json
    import os

    from longred_bench.evaluation import paper_suite
    from longred_bench.models import loading
    from longred_bench.reproduce.costs import counted_key

    script = load_script("short_task_tokens")
    out = tmp_path / "short_tokens.json"
    monkeypatch.setattr(script, "SHORT_TOKENS", out)
    monkeypatch.setattr(paper_suite, "require_hub", lambda instead: None)
    monkeypatch.setattr(loading, "load_tokenizer", lambda name: None)
    monkeypatch.delenv("HF_ALLOW_CODE_EVAL", raising=False)
    monkeypatch.setattr("sys.argv", ["short_task_tokens.py", "--suite", "paper_short"])
    members = paper_suite.MEMBERS
    fail_at = 3
    seen = []

    def count(name, tokenizer, shots):
        # lm-eval's HumanEval/MBPP task files refuse to load unless this is exactly "1"
        seen.append(os.environ.get("HF_ALLOW_CODE_EVAL"))
        if len(seen) > fail_at:
            raise RuntimeError("the hub dropped the connection")
        return {"docs": len(seen)}

    monkeypatch.setattr(script, "count", count)
    with pytest.raises(RuntimeError):
        script.main()
    assert seen == ["1"] * (fail_at + 1)
    kept = json.loads(out.read_text())["tasks"]
    first = [counted_key(m.task, m.num_fewshot) for m in members[:fail_at]]
    assert sorted(kept) == sorted(first) and kept[first[0]] == {"docs": 1}
