"""RULER with greedy decoding and with Positional Contrastive Decoding at long lengths, without
lm-eval: the protocol of ``reproduce pcd`` for a GPU machine whose image has torch and
transformers but not lm-eval's import chain (datasets, pyarrow, pandas).

What it shares with ``longred-bench eval --suite ruler`` (checked against it on CPU by
``tests/pcd/test_pcd_long.py``, sample by sample):

- the samples: the suite's seeded RULER generator (:mod:`longred_bench.taskdata.ruler`), sized
  with the model's tokenizer;
- the prompt: the sample's ``input``, tokenized with the tokenizer's default special tokens, as
  lm-eval's ``hf`` model does;
- the generation budget: the task's ``max_gen_toks`` from its YAML in the suite's task registry;
- decoding: transformers' ``generate`` (greedy) or ``PcdModel.generate``, stopping at the
  end-of-text token; the response is the decoded continuation (special tokens skipped), cut at
  the end-of-text string;
- the scorer: :func:`longred_bench.taskdata.ruler.score`.

The protocol is ``reproduce pcd``'s: PCD's ``alpha`` and local fraction are chosen on dev
samples (generator seed 1) by :func:`longred_bench.pcd.selection.choose` over every line, then
greedy decoding and PCD at the chosen setting run on test samples (seed 0). One line per model
and RoPE extension (``--rope``, ``none`` for the model as saved)::

    python benchmarks/pcd_long.py run --model tiny-base --rope abf:theta=4e7 yarn:factor=16 \\
        --lengths 4096 8192 --samples 24 --dev-samples 6 --device cuda --out OUT
    python benchmarks/pcd_long.py report OUT/pcd_long.csv   # Markdown with paired intervals

Across processes: ``--shard I/N`` keeps every N-th sample from the I-th (each shard with its own
``--out``); ``--part dev`` stops after the grid; ``merge`` joins shards' CSVs (a sample computed
twice must agree); ``--part test`` then chooses from the merged dev rows, which must be there::

    python benchmarks/pcd_long.py run ... --part dev --shard 3/16 --out dev3
    python benchmarks/pcd_long.py merge ALL/pcd_long.csv dev*/pcd_long.csv

``run`` writes ``OUT/pcd_long.csv`` (one row per line, part, setting, task, length and sample,
with the response) after every line and part, and skips what the CSV already holds, so a killed
run resumes. ``report`` writes ``pcd_long.md`` beside the CSV: the dev grid, RULER by line and
length for both decodings, and PCD - greedy with a 95% paired bootstrap interval over samples.
"""

from __future__ import annotations

import argparse
import csv
import functools
import re
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_common import loadavg, provenance, provenance_lines, run_script, write_csv

import longred_bench.jobs  # noqa: F401  (registers tiny-base, which these runs load by name)
from longred_bench.errors import UserError

FIELDS = (
    "line",
    "part",
    "alpha",
    "local_fraction",
    "task",
    "length",
    "sample",
    "score",
    "response",
    "prompt_tokens",
    "local_base",
    "seconds",
)
TASKS = ("niah_single_1", "niah_single_2", "niah_multikey_1", "vt")
ALPHAS = (0.5, 1.5, 3.0)
FRACTIONS = (0.125, 0.25, 0.5)
DEV_SEED, TEST_SEED = 1, 0


@functools.cache
def generation_budget(task: str) -> int:
    """``max_gen_toks`` of RULER ``task`` in the suite's lm-eval task registry."""
    from longred_bench.evaluation.harness import tasks_dir

    text = (tasks_dir() / f"longred_ruler_{task}.yaml").read_text(encoding="utf-8")
    found = re.search(r"^\s*max_gen_toks:\s*(\d+)\s*$", text, re.MULTILINE)
    if found is None:
        raise ValueError(f"longred_ruler_{task}.yaml sets no max_gen_toks")
    return int(found.group(1))


def response_text(tokenizer: Any, new_ids: list[int]) -> str:
    """The decoded continuation, special tokens skipped, cut at the end-of-text string."""
    text = tokenizer.decode(new_ids, skip_special_tokens=True)
    eos = tokenizer.decode([tokenizer.eos_token_id], skip_special_tokens=False)
    return text.split(eos)[0] if eos else text


def decode(
    model: Any, tokenizer: Any, prompt: list[int], budget: int, pcd: Any | None
) -> list[int]:
    """The new token ids of one greedy (``pcd`` None) or PCD continuation of the ``prompt`` ids."""
    ids = torch.tensor([prompt], device=model.device)
    mask = torch.ones_like(ids)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    with torch.no_grad():
        if pcd is None:
            out = model.generate(
                input_ids=ids,
                attention_mask=mask,
                max_length=ids.shape[1] + budget,
                do_sample=False,
                pad_token_id=pad,
                use_cache=True,
            )
        else:
            eos = tokenizer.eos_token_id
            out = pcd.generate(
                ids,
                mask,
                max_new_tokens=budget,
                pad_token_id=pad,
                is_done=lambda got: got[-1] == eos,
            )
    return out[0, ids.shape[1] :].tolist()


def score_samples(
    loaded: Any, samples: list[tuple[str, Any]], pcd_cfg: Any | None, **row: Any
) -> list[dict[str, Any]]:
    """One CSV row per ``(task, sample)``: greedy when ``pcd_cfg`` is None, else PCD with it."""
    from longred_bench.pcd.model import PcdModel
    from longred_bench.taskdata.ruler import score

    pcd = None if pcd_cfg is None else PcdModel(loaded.model, pcd_cfg)
    rows = []
    for task, sample in samples:
        start = time.perf_counter()
        prompt = loaded.tokenizer.encode(sample.input)
        new = decode(loaded.model, loaded.tokenizer, prompt, generation_budget(task), pcd)
        text = response_text(loaded.tokenizer, new)
        prompt_tokens = len(prompt)
        base = None if pcd is None else pcd.base_for(prompt_tokens)
        rows.append(
            {
                **row,
                "task": task,
                "length": sample.length,
                "sample": sample.index,
                "score": score(task, text, list(sample.outputs)),
                "response": text,
                "prompt_tokens": prompt_tokens,
                "local_base": base,
                "seconds": round(time.perf_counter() - start, 3),
            }
        )
    return rows


def ruler_samples(
    tokenizer: Any, tasks: list[str], lengths: list[int], n: int, seed: int, phrasing: str
) -> list[tuple[str, Any]]:
    """``(task, sample)`` for every task and length, from the suite's generator and store."""
    from longred_bench.taskdata.ruler import load_or_generate
    from longred_bench.taskdata.ruler.registry import PHRASED_TASKS

    out = []
    for task in tasks:
        use = phrasing if task in PHRASED_TASKS else "standard"
        for length in lengths:
            for sample in load_or_generate(task, tokenizer, length, n, seed, phrasing=use):
                out.append((task, sample))
    return out


def read_rows(path: Path, *, must_exist: bool = False) -> list[dict[str, Any]]:
    """The CSV's rows (numbers parsed), or none when it does not exist (refused in one line
    with ``must_exist``: a mistyped path read as an empty run)."""
    if not path.is_file():
        if must_exist:
            raise UserError(f"{path}: no such file: give the pcd_long.csv a run wrote")
        return []
    with open(path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    for r in rows:
        for key in ("alpha", "score", "seconds"):
            r[key] = float(r[key])
        for key in ("length", "sample", "prompt_tokens"):
            r[key] = int(r[key])
        r["local_fraction"] = float(r["local_fraction"]) if r["local_fraction"] else None
    return rows


def dev_records(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The dev rows as the ``eval_item`` records :mod:`longred_bench.pcd.selection` reads."""
    return [
        {"part": "dev", "kind": "eval_item", "metric": "score", "value": r["score"],
         "alpha": r["alpha"], "local_fraction": r["local_fraction"]}
        for r in rows
        if r["part"] == "dev"
    ]  # fmt: skip


def sharded(items: list[Any], shard: str | None) -> list[Any]:
    """Every N-th of ``items`` from the I-th, for ``shard`` ``"I/N"`` (all for None)."""
    if shard is None:
        return items
    found = re.fullmatch(r"(\d+)/(\d+)", shard)
    if found is None or not int(found[1]) < int(found[2]):
        raise UserError(f"--shard {shard!r}: give I/N with 0 <= I < N, e.g. 0/4")
    return items[int(found[1]) :: int(found[2])]


KEY = ("line", "part", "alpha", "local_fraction", "task", "length", "sample")


def merge(out: Path, inputs: list[Path]) -> Path:
    """Write ``out`` with the rows of every CSV in ``inputs`` (and ``out``'s own, if it exists),
    each sample once; a sample in two files must have the same score and response there."""
    merged: dict[tuple, dict[str, Any]] = {}
    for path in [out, *inputs] if out.is_file() else inputs:
        if not path.is_file():
            raise UserError(f"{path}: no such CSV; give the shards' pcd_long.csv files")
        for r in read_rows(path):
            key = tuple(r[k] for k in KEY)
            seen = merged.setdefault(key, r)
            if (seen["score"], seen["response"]) != (r["score"], r["response"]):
                raise UserError(f"{path}: sample {key} differs from an earlier file's; "
                                 "the shards were not run with the same settings")  # fmt: skip
    write_csv(list(merged.values()), out, FIELDS)
    return out


def run(args: argparse.Namespace) -> Path:
    """Dev grid on every line, the choice, then the test split (see the module docstring);
    ``args.part`` ``dev`` or ``test`` runs one of them, ``args.shard`` a share of the samples."""
    from longred_bench.models.loading import load
    from longred_bench.pcd.config import PcdConfig
    from longred_bench.pcd.selection import choose

    torch.manual_seed(0)
    info = provenance(args.device)  # at the start: the header's time and load are the run's
    out = Path(args.out)
    path = out / "pcd_long.csv"
    rows = read_rows(path)
    done = {(r["line"], r["part"], r["alpha"], r["local_fraction"]) for r in rows}
    grid = [PcdConfig(alpha=a, local_fraction=f) for a in args.alphas for f in args.fractions]
    dtype = getattr(torch, args.dtype)

    def each_line(part: str, settings: list[PcdConfig | None]) -> None:
        for rope in args.rope:
            line = args.model if rope == "none" else f"{args.model} [{rope}]"
            todo = [
                c
                for c in settings
                if (line, part, c.alpha if c else 0.0, c.local_fraction if c else None) not in done
            ]
            if not todo:
                continue
            loaded = load(args.model, rope=None if rope == "none" else rope, device=args.device)
            loaded.model.to(dtype)
            seed, n = (DEV_SEED, args.dev_samples) if part == "dev" else (TEST_SEED, args.samples)
            lengths = args.dev_lengths or args.lengths if part == "dev" else args.lengths
            samples = ruler_samples(loaded.tokenizer, args.tasks, lengths, n, seed, args.phrasing)
            samples = sharded(samples, args.shard)
            for cfg in todo:
                alpha = 0.0 if cfg is None else cfg.alpha
                fraction = None if cfg is None else cfg.local_fraction
                print(f"[pcd_long] {part} {line} alpha={alpha:g} fraction={fraction}", flush=True)
                rows.extend(
                    score_samples(
                        loaded,
                        samples,
                        cfg,
                        line=line,
                        part=part,
                        alpha=alpha,
                        local_fraction=fraction,
                    )
                )
                done.add((line, part, alpha, fraction))
                write_csv(rows, path, FIELDS)
            del loaded

    sharded([], args.shard)  # a malformed --shard fails before any work
    if args.part in ("dev", "all"):
        each_line("dev", [None, *grid])
    if args.part == "dev":
        return path
    if not dev_records(rows):
        raise UserError(f"{path} holds no dev rows: run --part dev first and merge its CSVs there")
    chosen = choose(dev_records(rows), grid)
    print(f"[pcd_long] chosen on dev: alpha={chosen.alpha:g} fraction={chosen.local_fraction:g}")
    each_line("test", [None, chosen])
    info["loadavg_end"] = loadavg()
    (out / "pcd_long_run.md").write_text(provenance_lines(info, " ".join(sys.argv)) + "\n")
    return path


def report(csv_path: Path) -> Path:
    """``pcd_long.md`` beside ``csv_path``: dev grid, test scores and paired intervals."""
    from longred_bench.pcd.selection import dev_scores

    rows = read_rows(csv_path, must_exist=True)  # a mistyped path wrote an empty report over it
    lines = [f"# RULER with greedy decoding and PCD at long lengths (`{csv_path.name}`)", ""]
    run_md = csv_path.with_name("pcd_long_run.md")
    if run_md.is_file():
        lines += [run_md.read_text().strip(), ""]
    dev = dev_records(rows)
    counts = Counter((r["alpha"], r["local_fraction"]) for r in dev)
    lines += [
        "## Dev grid (mean over lines, tasks, lengths, samples)",
        "",
        "| alpha | local fraction | n | mean |",
        "|---:|---:|---:|---:|",
    ]
    for (alpha, frac), mean in sorted(
        dev_scores(dev).items(), key=lambda kv: (kv[0][0], kv[0][1] or 0)
    ):
        shown = "-" if frac is None else f"{frac:g}"
        lines.append(f"| {alpha:g} | {shown} | {counts[(alpha, frac)]} | {mean:.1f} |")
    test = [r for r in rows if r["part"] == "test"]
    if not test:
        lines += ["", "No test rows: this CSV holds the dev part only (`run --part dev`)."]
    else:
        lines += split_lines(test)
    path = csv_path.with_name("pcd_long.md")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def split_lines(test: list[dict[str, Any]]) -> list[str]:
    """The report's test-split table: per line and length, both means, PCD - greedy with its
    paired interval, and the verdict by ``reproduce pcd``'s rule."""
    from longred_bench.reports.pcd_report import ruler_verdict
    from longred_bench.reports.verdict_stats import paired_diff, shared_means
    from longred_bench.reports.verdicts import RULER_FLOOR

    lines = [
        "",
        "## Test split: PCD - greedy (95% paired bootstrap over samples)",
        "",
        "Verdict on *PCD improves long-context retrieval (RULER)* per line and length, by the rule "
        "of `reproduce pcd` (`longred_bench.reports.pcd_report.ruler_verdict`): both means (on the "
        "samples both scored) below "
        f"{RULER_FLOOR:g} points -> not comparable; else the interval entirely above 0 -> "
        "reproduced, entirely below 0 -> not reproduced, else undecided.",
        "",
        "| line | length | n | greedy | PCD | PCD - greedy | verdict |",
        "|---|---:|---:|---:|---:|---|---|",
    ]
    for line in dict.fromkeys(r["line"] for r in test):
        for length in sorted({r["length"] for r in test if r["line"] == line}):
            items: dict[str, dict] = {"greedy": {}, "pcd": {}}
            for r in test:
                if r["line"] == line and r["length"] == length:
                    dec = "greedy" if r["alpha"] == 0 else "pcd"
                    items[dec].setdefault(r["task"], {}).setdefault(length, {})[r["sample"]] = r[
                        "score"
                    ]
            interval, n = paired_diff(items["greedy"], items["pcd"])
            greedy, pcd = shared_means(items["greedy"], items["pcd"])
            if interval is None or greedy is None or pcd is None:
                lines.append(f"| {line} | {length} | {n} | - | - | - | no sample scored by both |")
                continue
            label, _ = ruler_verdict(interval, n, greedy, pcd)
            diff = f"{interval.estimate:+.2f} [{interval.low:+.2f}, {interval.high:+.2f}]"
            lines.append(
                f"| {line} | {length} | {n} | {greedy:.1f} | {pcd:.1f} | {diff} | {label} |"
            )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="dev grid, choice, test split; writes OUT/pcd_long.csv")
    r.add_argument("--model", default="tiny-base")
    r.add_argument("--rope", nargs="+", default=["none"], help="one line per spec; none: as saved")
    r.add_argument("--tasks", nargs="+", default=list(TASKS))
    r.add_argument("--lengths", nargs="+", type=int, default=[4096, 8192])
    r.add_argument("--dev-lengths", nargs="+", type=int, default=None)
    r.add_argument("--samples", type=int, default=24)
    r.add_argument("--dev-samples", type=int, default=6)
    r.add_argument("--alphas", nargs="+", type=float, default=list(ALPHAS))
    r.add_argument("--fractions", nargs="+", type=float, default=list(FRACTIONS))
    r.add_argument("--phrasing", default="heldout")
    r.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    r.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    r.add_argument("--part", choices=["all", "dev", "test"], default="all")
    r.add_argument("--shard", default=None, help="I/N: every N-th sample from the I-th")
    r.add_argument("--out", required=True)
    m = sub.add_parser("merge", help="join shards' CSVs into one, each sample once")
    m.add_argument("out")
    m.add_argument("inputs", nargs="+")
    p = sub.add_parser("report", help="pcd_long.md from a run's CSV")
    p.add_argument("csv")
    args = parser.parse_args(argv)
    if args.command == "run" and args.device.startswith("cuda") and not torch.cuda.is_available():
        raise UserError(f"--device {args.device}: this machine has no CUDA device; give --device "
                        "cpu")  # fmt: skip
    if args.command == "run":
        print(f"wrote {run(args)}")
    elif args.command == "merge":
        print(f"wrote {merge(Path(args.out), [Path(x) for x in args.inputs])}")
    else:
        print(f"wrote {report(Path(args.csv))}")
    return 0


def interrupted_line(argv: list[str]) -> str:
    """What an interrupted ``run`` kept: the rows of every finished line and part, in its CSV,
    which the same command skips."""
    if argv[:1] != ["run"]:
        return "nothing was being saved"
    out = next((argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--out"), None)
    where = f"{out}/pcd_long.csv" if out else "OUT/pcd_long.csv"
    return (
        f"every finished line and setting is in {where}, which the same command skips; "
        f"run it again with: python benchmarks/pcd_long.py {' '.join(argv)}"
    )


if __name__ == "__main__":
    run_script(main, functools.partial(interrupted_line, sys.argv[1:]))
