"""Why a model misses lm-eval's own ``niah_single_1``: its first answer token and first number
under the prompt as lm-eval builds it and under three edits of the prompt's end.

lm-eval's samples (its generator, used as a library through the suite's
``longred_lmeval_niah_single_1`` task) end on the answer prefix "The special magic number for
<key> mentioned in the provided text is", with no space after "is": the model has to start the
answer itself. The suite's own RULER prompts end on the prefix *and* a space. For each of
``--samples`` samples at ``--length`` tokens the probe decodes 12 tokens greedily and reports,
per variant of the prompt's end, how often the first number generated is the needle's value,
the mean probability of the bare space token (the token before a number) as the next token,
and the most frequent next tokens::

- ``as is``: lm-eval's prompt;
- ``+ space``: the same with a space appended (as the suite's own prompts end);
- ``short prefix``: lm-eval's prefix replaced by "The number for <key> is";
- ``is:``: a colon appended.

    python benchmarks/probe_lmeval_niah.py tiny-base --samples 40
"""

from __future__ import annotations

import argparse
import re
from collections import Counter

import torch

import longred_bench.jobs  # noqa: F401  (registers tiny-base, which these runs load by name)
from longred_bench.evaluation.harness import task_manager
from longred_bench.models.loading import load

TASK = "longred_lmeval_niah_single_1"
PREFIX = " The special magic number"
VARIANTS = {
    "as is": lambda ctx, key: ctx,
    "+ space": lambda ctx, key: ctx + " ",
    "short prefix": lambda ctx, key: ctx.rsplit(PREFIX, 1)[0] + f" The number for {key} is",
    "is:": lambda ctx, key: ctx + ":",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="zoo name or Hugging Face directory")
    parser.add_argument("--samples", type=int, default=40)
    parser.add_argument("--length", type=int, default=256)
    args = parser.parse_args(argv)
    manager = task_manager(
        {"tokenizer": args.model, "lengths": [args.length], "ruler_samples": args.samples}
    )
    task = manager.load([TASK])["tasks"][TASK]
    task.build_all_requests(limit=args.samples, rank=0, world_size=1)
    loaded = load(args.model)
    model, tok = loaded.model.eval(), loaded.tokenizer
    space = tok(" ", add_special_tokens=False)["input_ids"][-1]
    print(f"model {args.model}; {len(task.instances)} lm-eval niah_single_1 samples at "
          f"{args.length} tokens")  # fmt: skip
    for name, edit in VARIANTS.items():
        exact, p_space, top = 0, 0.0, Counter()
        for req in task.instances:
            context = req.args[0]
            key = re.search(r"numbers? for (\S+?) is:", context).group(1)
            ids = tok(edit(context, key), return_tensors="pt").input_ids
            with torch.no_grad():
                out = model.generate(ids, max_new_tokens=12, do_sample=False,
                                     pad_token_id=tok.pad_token_id)  # fmt: skip
                probs = model(ids).logits[0, -1].softmax(-1)
            numbers = re.findall(r"\d+", tok.decode(out[0, ids.shape[1] :]))
            exact += bool(numbers) and numbers[0] == req.doc["outputs"][0]
            p_space += float(probs[space])
            top[tok.decode([int(probs.argmax())])] += 1
        n = len(task.instances)
        common = ", ".join(f"{t!r} {c}" for t, c in top.most_common(3))
        print(f"{name:>12}: first number exact {exact}/{n} ({exact / n:.0%}); "
              f"mean P(space next) {p_space / n:.3f}; top next tokens: {common}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
