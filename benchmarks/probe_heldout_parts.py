"""Which part of the held-out phrasing costs a model its retrieval: the held-out family with one
kind of string (instruction, question, answer prefix or needle sentence) swapped for the train
family's, and with one held-out needle sentence only, beside the held-out, train and standard
(RULER's) phrasings.

For each phrasing variant the probe generates ``--samples`` samples of each NIAH task at
``--length`` tokens (generator seed ``--seed``; the same keys, values and haystacks in every
variant, since a sample draws its strings first and the rest from the same stream), decodes them
greedily in batches and scores each with the suite's RULER metric. A variant that recovers most of
the gap between held-out and train points at the string kind that does not transfer. The mixed
families exist only inside this process; the suite's families are not changed.

    python benchmarks/probe_heldout_parts.py tiny-base --samples 50
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import torch
from bench_common import commit_and_source

import longred_bench.jobs  # noqa: F401  (registers tiny-base, which these runs load by name)
from longred_bench.metrics.stats import bootstrap_mean_of_means_ci
from longred_bench.models.loading import load
from longred_bench.results import device_name
from longred_bench.taskdata.ruler import phrasings, score
from longred_bench.taskdata.ruler.niah import CONFIGS
from longred_bench.taskdata.ruler.registry import generate

# A development family, for choosing the train family's strings without reading the held-out
# family's scores: written for this probe, in no training row, sharing no template with the
# other families.
DEV = phrasings.Family(
    instructions=(
        "Several {kind} are stored in the notes below; you will need them later.",
        "The following pages carry a few {kind} for you to find.",
    ),
    questions=("Report the {one} recorded for {query}.", "Which {one} was filed under {query}?"),
    answer_prefixes=(" Value:", " The {one} on file:"),
    needles=("Registry row: {key} | {value}.", "It turns out {value} was filed for {key}."),
)
KINDS = ("instructions", "questions", "answer_prefixes", "needles")
# The NIAH tasks whose prompts fit 256 tokens of tiny-base's tokenizer.
TASKS = ("niah_single_1", "niah_single_2", "niah_single_3", "niah_multikey_1", "niah_multikey_2",
         "niah_multivalue")  # fmt: skip
MAX_NEW = {"niah_multivalue": 64}


def variants() -> dict[str, str]:
    """Variant label -> phrasing name, registering the mixed families in this process."""
    held, train = phrasings.FAMILIES["heldout"], phrasings.FAMILIES["train"]
    phrasings.FAMILIES["dev"] = DEV
    names = {"standard": "standard", "held-out": "heldout", "train": "train", "dev": "dev"}
    for i, needle in enumerate(DEV.needles):
        phrasings.FAMILIES[f"dev-needle-{i}"] = replace(DEV, needles=(needle,))
        names[f"dev, only needle {needle!r}"] = f"dev-needle-{i}"
    phrasings.FAMILIES["dev+train-needles"] = replace(DEV, needles=train.needles)
    names["dev, train needles"] = "dev+train-needles"
    for kind in KINDS:
        name = f"heldout+train-{kind}"
        phrasings.FAMILIES[name] = replace(held, **{kind: getattr(train, kind)})
        names[f"held-out, train {kind.replace('_', ' ')}"] = name
    for i, needle in enumerate(held.needles):
        name = f"heldout-needle-{i}"
        phrasings.FAMILIES[name] = replace(held, needles=(needle,))
        names[f"held-out, only needle {needle!r}"] = name
    phrasings.PHRASINGS = (*phrasings.PHRASINGS, *(n for n in names.values()
                                                   if n not in phrasings.PHRASINGS))  # fmt: skip
    return names


@torch.no_grad()
def decode(model, tok, prompts: list[str], max_new: int, batch: int = 25) -> list[str]:
    """Greedy continuations of ``prompts`` (left-padded batches)."""
    out: list[str] = []
    for i in range(0, len(prompts), batch):
        enc = tok(prompts[i : i + batch], return_tensors="pt", padding=True)
        gen = model.generate(**enc, max_new_tokens=max_new, do_sample=False,
                             pad_token_id=tok.pad_token_id)  # fmt: skip
        out += tok.batch_decode(gen[:, enc.input_ids.shape[1] :], skip_special_tokens=True)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="zoo name or Hugging Face directory")
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", help="also write the table as Markdown to this file")
    args = parser.parse_args(argv)
    loaded = load(args.model)
    model, tok = loaded.model.eval(), loaded.tokenizer
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    assert set(TASKS) <= set(CONFIGS)
    lines = [
        f"# Held-out phrasing, part by part (`{args.model}`)",
        "",
        f"- Command: `python benchmarks/probe_heldout_parts.py {' '.join(sys.argv[1:])}`",
        f"- Commit {commit_and_source()}; device: {device_name('cpu')}",
        f"- {args.samples} samples per task at {args.length} tokens (generator seed {args.seed}; "
        "the same keys, values and haystacks in every row), greedy; RULER score 0-100. "
        "`mean` is over the tasks, with its 95% bootstrap interval over the samples.",
        "",
        f"| phrasing | {' | '.join(TASKS)} | mean [95% CI] |",
        "|---|" + "---:|" * (len(TASKS) + 1),
    ]
    print("\n".join(lines), flush=True)
    for label, name in variants().items():
        start, per_task = time.time(), {}
        for task in TASKS:
            samples = generate(task, tok, args.length, args.samples, args.seed, phrasing=name)
            preds = decode(model, tok, [s.input for s in samples], MAX_NEW.get(task, 32))
            per_task[task] = [
                score(task, p, s.outputs) for p, s in zip(preds, samples, strict=True)
            ]
        ci = bootstrap_mean_of_means_ci({"all": per_task})
        cells = " | ".join(f"{sum(v) / len(v):.1f}" for v in per_task.values())
        label = label.replace("|", "\\|")  # a needle of the dev family holds one
        lines.append(f"| {label} | {cells} | {ci.estimate:.1f} [{ci.low:.1f}, {ci.high:.1f}] |")
        print(f"{lines[-1]}  ({time.time() - start:.0f} s)", flush=True)
    if args.out:
        Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
