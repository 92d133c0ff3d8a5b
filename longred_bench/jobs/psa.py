"""A PSA run: teacher-force the gold answer of RULER retrieval samples and record, at every
answer token, the gold token's rank, probability and reciprocal rank, plus where the needle sits.

Samples come from the suite's RULER generator (:mod:`longred_bench.taskdata.ruler`), sized with each
model's tokenizer and cached. Only the NIAH tasks with one gold value are used
(:data:`RETRIEVAL_TASKS`): ``niah_single_1..3`` and ``niah_multikey_1..3``
(``niah_multikey_3`` is RULER's key-value retrieval: UUID keys to UUID values, the haystack made
of other key-value needles). The generator has no passkey task.

Per model and extension the model is loaded (or extended) once; each sample costs one forward
of ``prompt + " " + answer``, keeping only the logits that predict the answer tokens.

The scores of an answer (ranks, probabilities, the gold step) are
:func:`longred_bench.metrics.psa.answer_scores`.

Needle placement (token indices in the prompt, counted with the tokenizer's special tokens):
``needle_start`` is the needle sentence's first token; ``question_start`` the first token of the
needle-free tail (the question and the answer prefix); ``needle_depth`` is
``100 * (needle_start - context_start) / (question_start - context_start)``, the needle's depth in
the haystack in tokens; ``needle_distance = (prompt_tokens - 1) - needle_start``, the RoPE distance
from the query that predicts the first answer token back to the needle.

With ``pcd`` (:mod:`longred_bench.pcd.model`) ranks and probabilities are those of the distribution
PCD decodes from: the calibrated logits on the plausible tokens of the standard ones (a gold
token outside that set has probability 0 and rank one past the set's size), the local base that
of the prompt's length; lines are labelled ``<label> +pcd``.
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from longred_bench.errors import UserError
from longred_bench.jobs.builds import result_builds
from longred_bench.jobs.configs import ORIGINAL, PsaConfig
from longred_bench.jobs.heartbeat import heartbeat
from longred_bench.metrics.psa import answer_scores
from longred_bench.models.loading import extend, load
from longred_bench.pcd.config import PcdConfig
from longred_bench.results import Provenance
from longred_bench.taskdata.ruler import Sample, load_or_generate
from longred_bench.taskdata.ruler.niah import NEEDLE, TEMPLATE


def label(model: str, rope: str, config: PsaConfig) -> str:
    """The name of one measured line: the model, with its extension in brackets."""
    if rope == ORIGINAL:
        return model
    return rope if len(config.models) == 1 and config.models[0] == model else f"{model} [{rope}]"


def _token_index(offsets: list[tuple[int, int]], char: int) -> int:
    """Index of the first token that ends after character ``char`` (offsets from the tokenizer)."""
    for i, (_, end) in enumerate(offsets):
        if end > char:
            return i
    return len(offsets)


def needle_placement(sample: Sample, tokenizer: Any) -> dict[str, Any]:
    """Where the gold needle and the question sit in ``sample``'s prompt, in tokens."""
    from longred_bench.taskdata.ruler.niah import CONFIGS

    kind = CONFIGS[sample.task].values
    key = sample.metadata["keys"][0]
    needle = NEEDLE.format(kind=kind, key=key, value=sample.outputs[0])
    prompt = sample.input
    head, tail = TEMPLATE.split("{context}")
    tail = tail.format(kind=kind, query=key) + sample.metadata["answer_prefix"]
    head = head.format(kind=kind)
    at = prompt.find(needle)
    if at < 0 or prompt.find(needle, at + 1) >= 0 or not prompt.endswith(tail):
        raise UserError(
            f"psa: {sample.task} sample {sample.index} does not hold its needle exactly once "
            "before the question (has the RULER template changed?)"
        )
    enc = tokenizer(prompt, return_offsets_mapping=True)
    offsets = [tuple(o) for o in enc["offset_mapping"]]
    context_start = _token_index(offsets, len(head))
    needle_start = _token_index(offsets, at)
    question_start = _token_index(offsets, len(prompt) - len(tail) + 1)  # after the "\n"
    n = len(enc["input_ids"])
    drawn = sample.metadata.get("depth_percent") or []
    return {
        "prompt_tokens": n,
        "needle_start": needle_start,
        "question_start": question_start,
        "needle_depth": 100.0
        * (needle_start - context_start)
        / max(1, question_start - context_start),
        "needle_depth_drawn": float(drawn[0]) if len(drawn) == 1 else None,
        "needle_distance": n - 1 - needle_start,
    }


@torch.no_grad()
def score_sample(
    model: torch.nn.Module,
    tokenizer: Any,
    sample: Sample,
    device: str = "cpu",
    pcd: Any = None,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """One forward of ``sample`` with its gold answer appended: (sample record, token records);
    with ``pcd`` (a :class:`longred_bench.pcd.model.PcdModel` of ``model``) two, scored under
    PCD."""
    place = needle_placement(sample, tokenizer)
    prompt_ids = list(tokenizer(sample.input)["input_ids"])
    answer_ids = list(tokenizer(" " + sample.outputs[0], add_special_tokens=False)["input_ids"])
    ids = torch.tensor([prompt_ids + answer_ids], device=device)
    t = len(answer_ids)
    if pcd is None:
        logits = model(input_ids=ids, logits_to_keep=t + 1).logits[0, :t]  # [T, V]
    else:
        from longred_bench.pcd.model import pcd_logits

        base, local = pcd.logits_pair(ids, len(prompt_ids), logits_to_keep=t + 1)
        logits = pcd_logits(base[0, :t], local[0, :t], pcd.config)
    if logits.isnan().any():  # no rank exists: one line, not a ValueError's traceback
        raise UserError(f"psa: the model's logits hold NaN on {sample.task} sample "
                        f"{sample.index} at length {sample.length}: its forward pass failed "
                        "(an overflow of its dtype?); run it in fp32")  # fmt: skip
    gold = torch.tensor(answer_ids, device=logits.device)
    texts = [tokenizer.decode([i]) for i in answer_ids]
    summary, tokens = answer_scores(logits, gold, texts)
    record = {**place, "answer": sample.outputs[0], **summary}
    return record, tokens


def _progress(total: int, desc: str, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, leave=False)


def run_psa(
    cfg: PsaConfig,
    *,
    progress: bool = True,
    pcd: PcdConfig | None = None,
    scored: Callable[[str], None] | None = None,
) -> tuple[list[dict[str, Any]], Provenance]:
    """Measure ``cfg``: records of kind ``psa_sample`` (one per sample and line) and
    ``psa_token`` (one per answer token), and the run's provenance; with ``pcd``, under PCD
    with those parameters. ``scored(line)`` is called after each sample, with its line's name."""
    cfg.check()
    start = time.perf_counter()
    records: list[dict[str, Any]] = []
    for spec in cfg.models:
        base = load(spec, device=cfg.device)
        samples = [
            s
            for task in cfg.tasks
            for length in cfg.lengths
            for s in load_or_generate(
                task,
                base.tokenizer,
                length,
                cfg.samples,
                cfg.seed,
                corpus=cfg.corpus,
                depths=cfg.depths,
            )
        ]
        for rope in cfg.ropes:
            model = base.model if rope == ORIGINAL else extend(base.model, rope).eval()
            name = label(spec, rope, cfg)
            scorer = None
            if pcd is not None:
                from longred_bench.pcd.model import PcdModel

                scorer = PcdModel(model, pcd)
                name += " +pcd"
            window = int(model.config.max_position_embeddings)
            bar = _progress(len(samples), f"psa {name}", progress)
            for sample in samples:
                common = {
                    "extension": name,
                    "model": spec,
                    "rope": rope,
                    "task": sample.task,
                    "length": sample.length,
                    "sample": sample.index,
                }
                record, tokens = score_sample(model, base.tokenizer, sample, cfg.device, scorer)
                total = record["prompt_tokens"] + record["answer_tokens"]
                records.append(
                    {"kind": "psa_sample", **common, **record, "window": window,
                     "beyond_window": total > window}
                )  # fmt: skip
                records.extend({"kind": "psa_token", **common, **tok} for tok in tokens)
                bar.update(1)
                if scored is not None:
                    scored(name)
            bar.close()
            if model is not base.model:
                del model
                gc.collect()
        del base
        gc.collect()
    config = {**cfg.to_dict(), "seconds": round(time.perf_counter() - start, 2)}
    if pcd is not None:
        config["pcd"] = pcd.as_dict()
    builds = result_builds(config)
    return records, Provenance.collect(config, seed=cfg.seed, device=cfg.device, builds=builds)


def psa_command(
    cfg: PsaConfig,
    out: Path,
    *,
    decodings: tuple[str, ...] = ("greedy",),
    pcd: PcdConfig | None = None,
    top_k: int,
    command: str,
    progress: bool = True,
) -> list[Path]:
    """``psa``: one line per model, extension and decoding (``pcd``: PCD with ``pcd``'s
    parameters, defaults when ``None``), written to ``out/psa.jsonl`` under one provenance that
    names every decoding, then ``psa.md`` and ``psa.png``."""
    from dataclasses import asdict

    from longred_bench.reports.psa_report import (
        REPORT_FILES,
        check_top_k,
        measured_line,
        psa_title,
        write_psa_report,
    )
    from longred_bench.results import write_records

    check_top_k(top_k)
    if pcd is not None and "pcd" not in decodings:
        raise UserError("psa: PCD parameters given without pcd in --decoding")
    records: list[dict[str, Any]] = []
    lines = len(cfg.models) * len(cfg.ropes) * len(dict.fromkeys(decodings))
    total = lines * len(cfg.tasks) * len(cfg.lengths) * cfg.samples
    state = {"done": 0, "line": ""}

    def scored(line: str) -> None:
        state["done"] += 1
        state["line"] = line

    def describe() -> str:
        now = state["line"] or "loading"
        return f"[psa] {state['done']} of {total} sample(s) scored; now {now}"

    with heartbeat(describe, enabled=not progress):
        for decoding in dict.fromkeys(decodings):
            use = (pcd or PcdConfig()) if decoding == "pcd" else None
            got, _ = run_psa(cfg, progress=progress, pcd=use, scored=scored)
            records += got
    config = {
        "command": "psa", **cfg.to_dict(), "decoding": list(dict.fromkeys(decodings)),
        "pcd": (pcd or PcdConfig()).as_dict() if "pcd" in decodings else None,
    }  # fmt: skip
    provenance = Provenance.collect(
        config, seed=cfg.seed, device=cfg.device, builds=result_builds(config)
    )
    out.mkdir(parents=True, exist_ok=True)
    for name in REPORT_FILES:  # an earlier run's: stopped before the new ones, the same
        (out / name).unlink(missing_ok=True)  # command writes them from the new records
    paths = [write_records(out / "psa.jsonl", records, provenance)]
    measured = measured_line(asdict(provenance), cfg.models)
    return paths + write_psa_report(
        records, out, psa_title(cfg.models), top_k=top_k, command=command, measured=measured
    )
