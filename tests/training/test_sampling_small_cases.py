"""Small cases of the position-id samplers and of LongRecipe's anchor measurement worked out by
hand (``training/position_transforms.py``, ``training/anchors.py``,
``training/impactful_tokens.py``): two- and three-token samples stretched over the window, the
windows measured and where each process's share lands, and sentences kept for a digit only
when the digit anchor is asked for."""

from __future__ import annotations

import json
import random

import pytest
import torch
from train_helpers import smoke, stand_in_measurement

from longred_bench.training.impactful_tokens import select_sentences, word_type
from longred_bench.training.position_transforms import sentence_gap_position_ids


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------- LongRecipe's sentence gaps


def test_a_two_token_sample_spans_the_whole_window() -> None:
    """Length 2: the head is token 0 alone (r = 1), token 1 is the one segment after it and
    takes every skipped id, so each row is [0, target - 1]."""
    ids = sentence_gap_position_ids(torch.zeros(20, 2, dtype=torch.bool), 10, generator=_gen(0))
    assert ids.tolist() == [[0, 9]] * 20


def test_a_three_token_sample_ends_at_the_window_end_for_either_head() -> None:
    """Length 3, no sentence starts: a head of 1 gives [0, 1 + g, 2 + g] or a head of 2 gives
    [0, 1, 9] (one segment, all 7 skipped ids before it); with one segment after the head, the
    last id is 9 either way."""
    ids = sentence_gap_position_ids(torch.zeros(200, 3, dtype=torch.bool), 10, generator=_gen(1))
    assert set(map(tuple, ids.tolist())) == {(0, 8, 9), (0, 1, 9)}


# ---------------------------------------------------------------- the anchor measurement


def _measure(monkeypatch, tmp_path, *, windows: int, rank: int, world: int):
    """Run :func:`measure_anchors` for process ``rank`` of ``world`` on ``windows`` windows of
    6 tokens (window ``i`` holds the id ``i`` throughout); the logit change of a window is its
    ids, and the other processes send the change of their share. Returns what the anchors were
    computed from: ``(change, ids)``."""
    import longred_bench.training.anchors as anchors

    target = 6
    all_ids = torch.arange(windows)[:, None].expand(windows, target).contiguous()
    measured = all_ids[: anchors.IMPACT_WINDOWS]

    def gathered(value, world):
        if isinstance(value, torch.Tensor):
            return [value if r == rank else measured[r::world].float() for r in range(world)]
        return [value] * world

    stand_in_measurement(monkeypatch, all_ids, target, gathered, lambda a, b, ids: ids.float())
    seen = []

    def written(out, key, cfg, change, ids, *rest):
        seen.append((change, ids))
        return {"anchors": []}

    monkeypatch.setattr(anchors, "_written", written)
    (tmp_path / "impact").mkdir()
    (tmp_path / "impact" / "run.json").write_text(json.dumps({"tokens": 1, "seconds": 1.0}))
    cfg = smoke("longrecipe", anchors=["measured"], impact_steps=1)
    got = anchors.measure_anchors(
        cfg, tmp_path, train=lambda *a, **k: tmp_path / "impact", progress=False,
        rank=rank, world=world,
    )  # fmt: skip
    assert got == {"anchors": []}
    ((change, ids),) = seen
    return change, ids


def test_the_measurement_reads_the_first_windows_only(monkeypatch, tmp_path) -> None:
    change, ids = _measure(monkeypatch, tmp_path, windows=40, rank=0, world=1)
    assert ids.shape == (32, 6) and ids[:, 0].tolist() == list(range(32))
    assert torch.equal(change, ids.float())


@pytest.mark.parametrize("world", [2, 3])
def test_each_processs_share_lands_on_its_own_windows(monkeypatch, tmp_path, world) -> None:
    """Process ``r`` measures windows ``r, r + world, ...``: gathered, window ``i``'s change is
    in row ``i`` (here the change of window ``i`` is ``i`` throughout)."""
    change, ids = _measure(monkeypatch, tmp_path, windows=7, rank=0, world=world)
    assert change[:, 0].tolist() == [float(i) for i in range(7)]
    assert torch.equal(change, ids.float())


# ---------------------------------------------------------------- sentence selection


def test_a_digit_counts_only_for_the_digit_or_numeral_anchor() -> None:
    sentences = ["She left in 1801.", "Rain fell 3 days.", "They came."]
    assert select_sentences(sentences, ["pronoun"], 0.0, random.Random(0)) == [
        sentences[0],
        sentences[2],
    ]
    assert select_sentences(sentences, ["determiner"], 0.0, random.Random(0)) == []
    assert select_sentences(sentences, ["digit"], 0.0, random.Random(0)) == sentences[:2]
    assert select_sentences(sentences, ["numeral"], 0.0, random.Random(0)) == sentences[:2]


def test_a_token_of_whitespace_is_no_word_and_a_word_after_a_tab_is_that_word() -> None:
    assert word_type("\n") == word_type(" \t ") == "other"  # whitespace: no punctuation
    assert word_type("\tthe") == "determiner" and word_type("7\n") == "numeral"


def test_a_set_aside_measurement_comes_back_only_for_its_own_config(tmp_path) -> None:
    """Set-asides are found by the first 12 hex digits of a config's key; one whose recorded
    config is another key with those digits, or that cannot be read, stays where it is and the
    anchors are measured."""
    from longred_bench.training.anchors import _settled, brief_config, brief_key

    cfg = smoke("longrecipe", impact_steps=1)
    brief = brief_config(cfg, 1024)
    key = brief_key(brief)
    other = key[:12] + ("0" if key[12] != "0" else "1") + key[13:]
    out = tmp_path / "run"
    out.mkdir()
    aside = out / f"impact.{key[:12]}.json"
    aside.write_text(json.dumps({"anchors": ["digit"], "config": other}))
    (out / f"impact.{key[:12]}-2.json").write_text('{"anchors": [')
    assert _settled(out, key, cfg, brief, progress=False) is None
    assert json.loads(aside.read_text())["config"] == other
    assert {p.name for p in out.iterdir()} == {aside.name, f"impact.{key[:12]}-2.json"}


def test_a_set_aside_name_taken_by_a_file_alone_is_not_reused(tmp_path) -> None:
    from longred_bench.training.anchors import _aside_tag

    key = "0123456789ab" + "c" * 52
    assert _aside_tag(tmp_path, key) == "impact.0123456789ab"
    (tmp_path / "impact.0123456789ab.json").write_text("{}")
    assert _aside_tag(tmp_path, key) == "impact.0123456789ab-2"
    (tmp_path / "impact.0123456789ab-2").mkdir()
    assert _aside_tag(tmp_path, key) == "impact.0123456789ab-3"
