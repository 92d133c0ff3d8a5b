"""Property tests of the PoSE, RPES and LongRecipe position samplers
(``training/position_transforms.py``)."""

from __future__ import annotations

import pytest
import torch

from longred_bench.errors import UserError
from longred_bench.models.zoo import byte_tokenizer
from longred_bench.training.position_transforms import (
    _composition,
    pose_position_ids,
    rpes_position_ids,
    sentence_delimiter_ids,
    sentence_gap_position_ids,
    sentence_starts,
)

SHAPES = [(16, 64), (64, 256), (100, 1000), (7, 7)]


def _gen(seed: int = 0) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _random_starts(batch: int, length: int, every: int, seed: int) -> torch.Tensor:
    starts = torch.rand(batch, length, generator=_gen(seed)) < 1 / every
    starts[:, 0] = False
    return starts


def _check_common(ids: torch.Tensor, batch: int, length: int, target: int) -> None:
    assert ids.shape == (batch, length) and ids.dtype == torch.long
    assert bool((ids.diff(dim=1) > 0).all())  # strictly increasing
    assert int(ids.min()) >= 0 and int(ids.max()) < target


@pytest.mark.parametrize("length,target", SHAPES)
def test_pose_two_chunks(length: int, target: int) -> None:
    ids = pose_position_ids(length, target, 200, generator=_gen())
    _check_common(ids, 200, length, target)
    assert bool((ids[:, 0] == 0).all())
    steps = ids.diff(dim=1)
    jumps = (steps > 1).sum(dim=1)
    assert int(jumps.max()) <= 1  # one skip at most: head, then one contiguous chunk
    skipped = jumps > 0
    heads = (steps > 1).int().argmax(dim=1) + 1  # length of the head where there is a skip
    assert all(h <= (length + 1) // 2 for h in heads[skipped].tolist())
    if target > length:
        assert bool(skipped.any())


def test_pose_shift_is_uniform_over_the_window() -> None:
    length, target = 16, 80
    ids = pose_position_ids(length, target, 4000, generator=_gen(1))
    shift = ids[:, -1] - (length - 1)
    counts = torch.bincount(shift, minlength=target - length + 1).float()
    assert len(counts) == target - length + 1 and bool((counts > 0).all())
    assert float(counts.std() / counts.mean()) < 0.25


@pytest.mark.parametrize("length,target", SHAPES)
def test_rpes_sorted_subset_covering_the_window(length: int, target: int) -> None:
    ids = rpes_position_ids(length, target, 300, generator=_gen())
    _check_common(ids, 300, length, target)
    counts = torch.bincount(ids.flatten(), minlength=target).float()
    assert bool((counts > 0).all())  # every position is drawn over many rows
    # Uniform: each position is in a row with probability p = length / target, so its count is
    # Binomial(300, p); a sampler that favours some positions spreads the counts wider and
    # moves the mean id off the window's middle.
    p = length / target
    assert float(counts.std() / counts.mean()) <= 1.5 * ((1 - p) / (300 * p)) ** 0.5 + 1e-9
    mean_error = 6 * target / (12 * 300 * length) ** 0.5  # six standard errors of the mean id
    assert abs(float(ids.double().mean()) - (target - 1) / 2) < mean_error


@pytest.mark.parametrize("length,target", SHAPES)
@pytest.mark.parametrize("every", [5, 30])
def test_sentence_gaps_layout(length: int, target: int, every: int) -> None:
    starts = _random_starts(100, length, every, seed=length + every)
    ids = sentence_gap_position_ids(starts, target, generator=_gen())
    _check_common(ids, 100, length, target)
    steps = ids.diff(dim=1)
    for b in range(100):
        head = int((steps[b] > 1).int().argmax()) + 1 if bool((steps[b] > 1).any()) else length
        jumps = torch.nonzero(steps[b] > 1).flatten() + 1
        # a skip happens only where a segment starts: the head's end or a sentence start
        assert all(bool(starts[b, j]) or j == jumps.min() for j in jumps.tolist())
        assert torch.equal(ids[b, :head], torch.arange(head))  # contiguous head prefix
        if length > 1:
            assert int(ids[b, -1]) == target - 1  # gaps sum to the skipped positions
            assert int((steps[b] - 1).sum()) == target - length


def test_sentence_gaps_head_length_and_coverage() -> None:
    length, target = 64, 640
    starts = _random_starts(2000, length, 8, seed=3)
    ids = sentence_gap_position_ids(starts, target, generator=_gen(5))
    assert bool((ids[:, 0] == 0).all())  # every row has a head, at position 0
    first_jump = (ids.diff(dim=1) > 1).int().argmax(dim=1) + 1
    # The head is U{1, ..., 32}; the first skip falls at its end unless the composition gives
    # that gap nothing (about 1% of rows here), then at a later sentence start.
    half = (length + 1) // 2
    at_head = first_jump[first_jump <= half]
    assert len(at_head) >= 0.95 * len(first_jump)
    assert set(at_head.tolist()) == set(range(1, half + 1))
    assert abs(float(at_head.double().mean()) - (half + 1) / 2) < 1.0
    counts = torch.bincount(ids.flatten(), minlength=target)
    tenths = counts.reshape(10, -1).sum(dim=1).float()
    assert bool((tenths > 0).all())  # the whole target window is used
    assert float(tenths[1:].std() / tenths[1:].mean()) < 0.5


def test_composition_is_uniform_and_sums() -> None:
    parts = torch.stack([_composition(12, 4, _gen(s)) for s in range(3000)])
    assert bool((parts >= 0).all()) and bool((parts.sum(dim=1) == 12).all())
    assert torch.allclose(parts.float().mean(dim=0), torch.full((4,), 3.0), atol=0.2)
    # uniform over compositions: (12 + 3 choose 3) = 455 outcomes, all seen, none piled up
    seen = {tuple(p.tolist()) for p in parts}
    assert len(seen) > 400


def test_sentence_starts_follow_delimiters() -> None:
    tok = byte_tokenizer()
    delims = sentence_delimiter_ids(tok)
    text = "One. Two words! And three?\nNext"
    ids = torch.tensor([tok(text, add_special_tokens=False)["input_ids"]])
    starts = sentence_starts(ids, delims)
    pieces = [tok.decode(ids[0, i:].tolist()) for i in torch.nonzero(starts[0]).flatten()]
    assert [p.lstrip()[:3] for p in pieces] == ["Two", "And", "Nex"]


def test_same_seed_same_ids() -> None:
    starts = _random_starts(4, 32, 6, seed=0)
    for fn in (
        lambda g: pose_position_ids(32, 128, 4, generator=g),
        lambda g: rpes_position_ids(32, 128, 4, generator=g),
        lambda g: sentence_gap_position_ids(starts, 128, generator=g),
    ):
        assert torch.equal(fn(_gen(9)), fn(_gen(9)))
        assert not torch.equal(fn(_gen(9)), fn(_gen(10)))


def test_bad_input() -> None:
    with pytest.raises(UserError, match="shorter than the sample"):
        pose_position_ids(64, 32, 2)
    with pytest.raises(UserError, match="batch >= 1"):
        rpes_position_ids(8, 32, 0)
