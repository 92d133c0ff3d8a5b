"""What :func:`adapt_student` makes of the student: LinearARD's LoRA adapters on q/k/v, without
the deprecation warning PEFT's wrapping raises through transformers on every run."""

from __future__ import annotations

import warnings

from train_helpers import smoke, tiny_llama

from longred_bench.training.build import adapt_student


def test_linearard_wraps_q_k_v_in_lora_without_a_library_deprecation_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        student = adapt_student(tiny_llama(), smoke("linearard", lora_rank=4))
    trainable = {n for n, p in student.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    assert {n.split(".")[-4] for n in trainable} == {"q_proj", "k_proj", "v_proj"}
