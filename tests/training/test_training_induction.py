"""The copy warm-up of pretraining (``longred_bench.training.pretrain.induction``): the copy rows,
the accuracy, the stop rule, reuse of a finished warm-up, and its records in a smoke pretraining
run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from longred_bench.errors import UserError
from longred_bench.training.config import resolve_config
from longred_bench.training.pretrain.induction import (
    alphabet,
    copy_accuracy,
    copy_rows,
    copy_warmup,
    stages,
)


def _smoke(**overrides):
    return resolve_config("pretrain", profile="smoke", overrides=overrides)


def test_copy_rows_repeat_each_sequence_and_score_the_predictable_tokens() -> None:
    ids = torch.arange(10, 60)
    gen = torch.Generator().manual_seed(0)
    rows, scored = copy_rows(5, 1 + 3 * 8, (4, 4), ids, 1, gen)
    assert rows.shape == scored.shape == (5, 25)
    assert (rows[:, 0] == 1).all() and not scored[:, 0].any()
    body, marks = rows[:, 1:].reshape(5, 3, 8), scored[:, 1:].reshape(5, 3, 8)
    assert torch.equal(body[..., :4], body[..., 4:])  # each episode is s s
    assert ((body >= 10) & (body < 60)).all()
    expected = torch.tensor([False] * 5 + [True] * 3)
    assert (marks == expected).all()


def test_copy_rows_vary_the_offset_within_the_lengths() -> None:
    gen = torch.Generator().manual_seed(3)
    rows, scored = copy_rows(64, 40, (2, 6), torch.arange(1000, 5000), None, gen)
    offsets = set()
    for row, marks in zip(rows.tolist(), scored.tolist(), strict=True):
        for t, mark in enumerate(marks):
            if mark:  # the token repeats one 2..6 back, the nearest such match
                offsets.add(next(k for k in range(2, 7) if row[t - k] == row[t]))
    assert offsets == {2, 3, 4, 5, 6}


class _Oracle(torch.nn.Module):
    """Predicts the token ``size`` back (a perfect copier for fixed-size episodes)."""

    def __init__(self, size: int, vocab: int) -> None:
        super().__init__()
        self.size, self.vocab = size, vocab
        self.w = torch.nn.Parameter(torch.zeros(1))

    def forward(self, ids):
        shifted = torch.roll(ids, self.size - 1, dims=1)  # position t predicts ids[t + 1 - size]
        logits = torch.nn.functional.one_hot(shifted, self.vocab).float()
        return type("Out", (), {"logits": logits})()


def test_copy_accuracy_is_one_for_a_copier_and_low_for_a_constant() -> None:
    gen = torch.Generator().manual_seed(1)
    rows, scored = copy_rows(8, 1 + 6 * 5, (3, 3), torch.arange(5, 50), 0, gen)
    assert copy_accuracy(_Oracle(3, 50), rows, scored) == 1.0
    assert copy_accuracy(_Oracle(2, 50), rows, scored) < 0.2


def test_alphabet_leaves_out_special_tokens() -> None:
    from longred_bench.models.zoo import byte_tokenizer

    tok = byte_tokenizer()
    ids = set(alphabet(tok).tolist())
    assert ids and not ids & set(tok.all_special_ids)
    assert len(ids) == len(tok) - len(set(tok.all_special_ids))


def test_stages_keep_the_tokens_per_step_and_fit_the_window() -> None:
    cfg = resolve_config(
        "pretrain",
        profile="tiny",
        overrides={"copy_stages": [8, 64, 200], "copy_row_len": 64, "copy_batch": 64},
    )
    got = [(s.shortest, s.longest, s.row_len, s.batch) for s in stages(cfg)]
    assert got == [(2, 8, 64, 64), (2, 64, 256, 16), (2, 200, 256, 16)]


def test_config_checks_the_warmup_keys() -> None:
    with pytest.raises(UserError, match="copy_warmup_steps is for recipe pretrain"):
        resolve_config("cpt", profile="smoke", overrides={"copy_warmup_steps": 5})
    with pytest.raises(UserError, match=r"copy_stages=\[8, 1\] needs"):
        _smoke(copy_stages=[8, 1])
    with pytest.raises(UserError, match=r"copy_stages=\[\] needs"):
        _smoke(copy_stages=[])
    with pytest.raises(UserError, match="copy_until in"):
        _smoke(copy_until=1.5)


@pytest.mark.integration
def test_warmup_is_deterministic_stops_at_the_threshold_and_is_reused(tmp_path: Path) -> None:
    from longred_bench.training.build import _pretrain_models

    cfg = _smoke(copy_warmup_steps=4, copy_eval_every=1, copy_stages=[8])
    model, tok = _pretrain_models(cfg)
    first = copy_warmup(model, tok, cfg, tmp_path / "a", device=torch.device("cpu"), progress=False)
    records = [json.loads(x) for x in (tmp_path / "a" / "warmup.jsonl").read_text().splitlines()]
    assert [r["step"] for r in records] == [1, 2, 3, 4] and first["steps"] == 4
    assert [r["stage"] for r in records] == [1, 1, 1, 1] and len(first["stages"]) == 1
    assert first["reached"] is False  # a random tiny model does not copy after 4 steps
    again, _ = _pretrain_models(cfg)
    copy_warmup(again, tok, cfg, tmp_path / "b", device=torch.device("cpu"), progress=False)
    assert all(
        torch.equal(a, b)
        for a, b in zip(model.state_dict().values(), again.state_dict().values(), strict=True)
    )
    # A threshold the first evaluation meets stops the warm-up there.
    low = cfg.replace(copy_until=1e-9)
    fresh, _ = _pretrain_models(low)
    stopped = copy_warmup(
        fresh, tok, low, tmp_path / "c", device=torch.device("cpu"), progress=False
    )
    kept = [json.loads(x) for x in (tmp_path / "c" / "warmup.jsonl").read_text().splitlines()]
    first_met = next(r["step"] for r in kept if r["copy_accuracy"] >= 1e-9)
    assert stopped["steps"] == first_met == kept[-1]["step"] and stopped["reached"]
    # A finished warm-up in the directory is loaded, not trained again.
    other, _ = _pretrain_models(cfg.replace(seed=5))
    summary = copy_warmup(
        other, tok, cfg, tmp_path / "a", device=torch.device("cpu"), progress=False
    )
    assert summary == first
    saved = load_file(str(tmp_path / "a" / "warmup" / "student.safetensors"))
    assert all(torch.equal(other.state_dict()[k], saved[k]) for k in saved)
    assert all(torch.equal(model.state_dict()[k], saved[k]) for k in saved)


@pytest.mark.integration
def test_pretraining_records_the_warmup_and_final_copy_accuracy(tmp_path: Path) -> None:
    from longred_bench.jobs.train import run_training as train

    train(_smoke(), tmp_path / "pt", progress=False)
    info = json.loads((tmp_path / "pt" / "run.json").read_text())
    assert [s["longest"] for s in info["warmup"]["stages"]] == [4, 8]
    assert info["warmup"]["steps"] == 6 and 0 <= info["copy_accuracy"] <= 1
    records = (tmp_path / "pt" / "warmup.jsonl").read_text().splitlines()
    assert [json.loads(r)["stage"] for r in records] == [1, 1, 2, 2]  # every 2 steps and last
    assert (tmp_path / "pt" / "warmup.jsonl").is_file()
