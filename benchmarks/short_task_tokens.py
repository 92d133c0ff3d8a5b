"""Count the tokens a short-suite evaluation feeds its model, per task, for the plans' estimates.

For each offline short task (``tasks/``, read from the local cache) every document's requests
are built as lm-eval builds them (its few-shot count included) and tokenized with the SmolLM2
tokenizer: the requests per document, the prompt tokens a model reads (context and continuation
of each ``loglikelihood`` request, the context of each ``generate_until`` one) and the tokens a
generation may add (``max_gen_toks``). The figures are written to
``longred_bench/reproduce/short_tokens.json``, where :mod:`longred_bench.reproduce.costs` reads
them (another tokenizer gives other counts: the plan says whose these are).

``--suite paper_short`` counts LongReD's 17 benchmarks instead, each the stock lm-eval task at
the member's own few-shot count, under the key ``TASK@N``; their data come from the Hugging Face
hub, so this needs it (it fails at once, in one line, where the hub cannot be reached). Building
the requests runs no model and no model-written code; lm-eval's HumanEval and MBPP task files,
when they load, run the ``code_eval`` metric on a fixed two-line program of lm-eval's own as a
self-check, which ``code_eval`` refuses unless ``HF_ALLOW_CODE_EVAL=1``, so the script sets it for
itself. Each task's figures are written as soon as it is counted (a later failure keeps them).
After it, ``reproduce ... --dry-run`` at a ``paper*`` profile estimates the ``paper_short`` units
too.

    python benchmarks/short_task_tokens.py [--tasks T ...]
    python benchmarks/short_task_tokens.py --suite paper_short
"""

from __future__ import annotations

import argparse
import json
import os
import time

from longred_bench.reproduce.costs import SHORT_TOKENS, counted_key
from longred_bench.results import git_commit
from longred_bench.source_tree import source_hash

TASKS = ("longred_mmlu", "longred_lambada_openai", "longred_triviaqa", "longred_squad",
         "longred_boolq", "longred_piqa", "longred_hellaswag", "longred_winogrande",
         "longred_arc_easy", "longred_arc_challenge")  # fmt: skip
TOKENIZER = "smollm2-135m"
GENERATE_DEFAULT = 256  # lm-eval's max_gen_toks when a task does not set it


def count(task_name: str, tokenizer, num_fewshot: int | None = None) -> dict:
    """Documents, requests, prompt tokens and generation budget of one task (a group: of all
    its tasks), at ``num_fewshot`` shots where given, else at the task's own count."""
    from longred_bench.evaluation.harness import task_manager
    from longred_bench.evaluation.paper_suite import load_tasks

    manager = task_manager(names=[task_name])
    loaded = load_tasks(manager, [task_name])["tasks"]  # a hub failure: one line
    docs = requests = prompt = generated = 0
    for task in loaded.values():  # a group's leaves (MMLU's subjects), else the task itself
        if num_fewshot is not None:
            task.set_config(key="num_fewshot", value=num_fewshot)
        task.build_all_requests(limit=None, rank=0, world_size=1)
        docs += len({i.doc_id for i in task.instances})
        for inst in task.instances:
            requests += 1
            if inst.request_type == "generate_until":
                context, gen_kwargs = inst.args[0], inst.args[1]
                prompt += len(tokenizer(context, add_special_tokens=False)["input_ids"])
                generated += int(gen_kwargs.get("max_gen_toks", GENERATE_DEFAULT))
            else:
                text = "".join(inst.args[:2])
                prompt += len(tokenizer(text, add_special_tokens=False)["input_ids"])
    return {"docs": docs, "requests": requests, "prompt_tokens": prompt,
            "generated_tokens": generated}  # fmt: skip


def main() -> None:
    from longred_bench.models.loading import load_tokenizer

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", default=list(TASKS))
    parser.add_argument(
        "--suite", choices=["paper_short"], help="count this suite's members instead (the hub)"
    )
    args = parser.parse_args()
    if args.suite:
        from longred_bench.evaluation.paper_suite import MEMBERS, require_hub

        require_hub(instead="without --suite this script counts the offline tasks")
        # the code members' task files self-check code_eval on lm-eval's own program at load
        os.environ["HF_ALLOW_CODE_EVAL"] = "1"
        jobs = [(counted_key(m.task, m.num_fewshot), m.task, m.num_fewshot) for m in MEMBERS]
    else:
        jobs = [(name, name, None) for name in args.tasks]
    tokenizer = load_tokenizer(TOKENIZER)
    out = json.loads(SHORT_TOKENS.read_text()) if SHORT_TOKENS.is_file() else {"tasks": {}}
    out["about"] = (
        f"Tokens of every request of each short task with the {TOKENIZER} tokenizer: the offline "
        "tasks at their own few-shot counts, paper_short's members as TASK@N (N shots)."
    )
    runs, run_key = out.setdefault("runs", {}), "paper_short" if args.suite else "offline"
    runs.pop(run_key, None)  # until this count is whole
    start = time.perf_counter()
    for key, name, shots in jobs:
        out["tasks"][key] = count(name, tokenizer, shots)
        print(key, out["tasks"][key], flush=True)
        write(out)  # a later task's failure keeps this one's figures
    runs[run_key] = (
        f"counted by `python benchmarks/short_task_tokens.py"
        f"{' --suite paper_short' if args.suite else ''}` at commit {git_commit()} "
        f"(source `{source_hash()[:12]}`) "
        f"({time.perf_counter() - start:.0f} s)"
    )
    write(out)
    print(f"wrote {SHORT_TOKENS}")


def write(out: dict) -> None:
    """Write ``out`` to :data:`SHORT_TOKENS` whole (never half a file)."""
    from longred_bench.cache import atomic_write_text

    atomic_write_text(SHORT_TOKENS, json.dumps(out, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    from longred_bench.errors import UserError

    try:
        main()
    except UserError as exc:
        raise SystemExit(f"error: {exc}") from None
