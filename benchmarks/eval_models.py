"""The models ``bench_eval.py`` evaluates: a name ``run_eval`` loads as it is, or ``shape:NAME``,
a randomly initialised model of a built-in shape (``training/shapes.py``) written once as a model
folder with a carried tokenizer, so real shapes run at real lengths where the weights cannot
travel."""

from __future__ import annotations

import argparse
from pathlib import Path

SHAPE_PREFIX = "shape:"


def shape_model(name: str, args: argparse.Namespace) -> str:
    """The folder of the random-init model of shape ``name`` (written once under ``--work``, in
    bfloat16, with the tokenizer files of ``--tokenizer``)."""
    import shutil

    import torch

    from longred_bench.cache import cache_dir
    from longred_bench.training.shapes import random_model, shape

    folder = args.work / name
    if (folder / "config.json").is_file():
        return str(folder)
    tokenizer = args.tokenizer or cache_dir() / "models" / "smollm2-135m"
    if not (Path(tokenizer) / "tokenizer.json").is_file():
        raise SystemExit(f"--tokenizer {tokenizer}: no tokenizer.json there; name a model folder")
    model = random_model(shape(name), dtype=torch.bfloat16)
    model.save_pretrained(folder)
    for file in Path(tokenizer).glob("*.json*"):
        if file.name.startswith(("tokenizer", "special_tokens", "chat_template")):
            shutil.copy(file, folder / file.name)
    return str(folder)


def model_path(model: str, args: argparse.Namespace) -> str:
    """What ``run_eval`` loads for ``model``: a ``shape:NAME`` model's folder, else the name."""
    if model.startswith(SHAPE_PREFIX):
        return shape_model(model.removeprefix(SHAPE_PREFIX), args)
    return model
