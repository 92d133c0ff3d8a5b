"""How exactly a model copies a 7-digit number from its context (teacher-forced, greedy).

Each of ``--n`` prompts states a random 7-digit number after "The special magic number is",
adds four filler sentences, and repeats the lead-in; the number follows. For each digit the
model's greedy next-token prediction is compared with the true one, split by whether the digit
before it already occurred earlier in the number (then the previous token alone does not say
where to copy from: 94% of 7-digit numbers repeat a digit). Prints the share of numbers copied
whole and the per-digit accuracy of each kind::

    python benchmarks/probe_digit_copy.py tiny-base
    python benchmarks/probe_digit_copy.py ~/.cache/longred-bench/models/tiny-base-<key>/final
"""

from __future__ import annotations

import argparse

import torch

import longred_bench.jobs  # noqa: F401  (registers tiny-base, which these runs load by name)
from longred_bench.models.loading import load

LEAD = "The special magic number is"
FILLER = " The weather was calm and the sea was grey."


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="zoo name or Hugging Face directory")
    parser.add_argument("--n", type=int, default=200, help="numbers to copy")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    loaded = load(args.model)
    model, tok = loaded.model.eval(), loaded.tokenizer
    gen = torch.Generator().manual_seed(args.seed)

    def encode(text: str) -> list[int]:
        return tok(text, add_special_tokens=False)["input_ids"]

    bos = [] if tok.bos_token_id is None else [tok.bos_token_id]
    lead, filler, stop = encode(LEAD), encode(FILLER), encode(".")
    whole = 0
    hits = {"repeated": 0, "new": 0}
    counts = {"repeated": 0, "new": 0}
    for _ in range(args.n):
        digits = "".join(str(int(d)) for d in torch.randint(0, 10, (7,), generator=gen))
        value = encode(" " + digits)
        prompt = bos + lead + value + stop + filler * 4 + lead
        ids = torch.tensor([prompt + value])
        with torch.no_grad():
            pred = model(ids).logits[0, len(prompt) - 1 : -1].argmax(-1).tolist()
        ok = [p == t for p, t in zip(pred, value, strict=True)]
        whole += all(ok)
        for j in range(1, len(value)):
            kind = "repeated" if value[j - 1] in value[: j - 1] else "new"
            counts[kind] += 1
            hits[kind] += ok[j]
    print(f"model {args.model}; {args.n} numbers, seed {args.seed}")
    print(f"numbers copied whole: {whole / args.n:.3f}")
    for kind in ("new", "repeated"):
        print(
            f"next digit after a {kind} digit: {hits[kind] / max(counts[kind], 1):.3f} "
            f"(n={counts[kind]})"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
