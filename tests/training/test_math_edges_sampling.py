"""Edge cases of the position-id samplers and of LongRecipe's token and sentence selection
(``training/positions.py``, ``training/position_transforms.py``,
``training/impactful_tokens.py``, ``training/anchors.py``): the exact range of CREAM's middle
end for a given scale, the defaults and the fair head-size draw of the skipped ids, PoSE's
whole head range, sentence starts at a newline, a token with a trailing space or right after
the head, one-token and empty samples, and the word-type statistics behind the anchors."""

from __future__ import annotations

import json
import math
import random
from types import SimpleNamespace

import pytest
import torch
import yaml
from train_helpers import smoke

import longred_bench.training.positions as positions
from longred_bench.errors import UserError
from longred_bench.models.zoo import byte_tokenizer
from longred_bench.training.anchors import _brief_back, _written, brief_config, brief_rows
from longred_bench.training.impactful_tokens import (
    WORD_TYPES,
    select_sentences,
    type_lifts,
    type_shares,
    word_type,
)
from longred_bench.training.position_transforms import (
    pose_position_ids,
    rpes_position_ids,
    sentence_delimiter_ids,
    sentence_gap_position_ids,
    sentence_starts,
)
from longred_bench.training.positions import skipped_position_ids


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------- skipped ids (LongReD)


def _fixed_scale(monkeypatch: pytest.MonkeyPatch, r: float, calls: list) -> None:
    """CREAM's scale ``r`` fixed for every row; the sampler's arguments recorded in ``calls``."""

    def fixed(mean, sigma, low, high, size, generator=None):
        calls.append((mean, sigma, low, high, size))
        return torch.full((size,), r, dtype=torch.float64)

    monkeypatch.setattr(positions, "truncated_normal", fixed)


def _head(ids: torch.Tensor, t: int, ls: int, sizes: tuple[int, ...]) -> int:
    """The head (= tail) size of ``sizes`` whose layout every row has, the larger if both."""
    rows = len(ids)
    return max(
        h
        for h in sizes
        if torch.equal(ids[:, :h], torch.arange(h).expand(rows, h))
        and torch.equal(ids[:, t - h :], torch.arange(ls - h, ls).expand(rows, h))
    )


@pytest.mark.parametrize("r", [2.0, 3.3, 8.0])
def test_cream_end_for_a_given_scale_spans_exactly_its_range(
    monkeypatch: pytest.MonkeyPatch, r: float
) -> None:
    """Given ``r``, the middle's exclusive end is uniform on ``{head + floor((chunk - 1) r / 2)
    + 1, ..., floor(r T / 2) - tail}`` clamped into ``{T - tail, ..., Ls - tail}``: over many
    rows it reaches both bounds and nothing outside them."""
    t, f = 64, 4
    ls = t * f
    calls: list = []
    _fixed_scale(monkeypatch, r, calls)
    seen = set()
    for seed in range(6):
        ids = skipped_position_ids(t, ls, 3000, sampler="cream", generator=_gen(seed))
        head = _head(ids, t, ls, (t // 3, 4 * f))
        seen.add(head)
        chunk = t - 2 * head
        lo = head + math.floor((chunk - 1) * r / 2) + 1
        hi = math.floor(r * t / 2) - head
        lo, hi = min(max(lo, t - head), ls - head), min(max(hi, t - head), ls - head)
        end = ids[:, t - head - 1] + 1
        assert (int(end.min()), int(end.max())) == (lo, hi), (head, r)
        mid = ids[:, head : t - head]
        assert torch.equal(mid, (end - chunk).unsqueeze(1) + torch.arange(chunk))
    assert seen == {t // 3, 4 * f}
    assert {c[:4] for c in calls} == {(1.0 + f, 3.0, 2.0, 2.0 * f)}  # CREAM's sigma by default
    assert all(c[4] == 3000 for c in calls)


def test_the_defaults_are_the_uniform_sampler_and_cream_sigma_three() -> None:
    plain = skipped_position_ids(96, 384, 64, generator=_gen(4))
    uniform = skipped_position_ids(96, 384, 64, sampler="uniform", generator=_gen(4))
    assert torch.equal(plain, uniform)
    cream = skipped_position_ids(96, 384, 64, sampler="cream", generator=_gen(4))
    three = skipped_position_ids(96, 384, 64, sampler="cream", generator=_gen(4), cream_sigma=3.0)
    assert torch.equal(cream, three)


def test_the_head_size_is_a_fair_draw() -> None:
    """One call, one draw of head = tail in {T // 3, 4 f}, each about half the time."""
    t, f = 64, 2  # heads 21 (T // 3) and 8 (4 f)
    # a row of head 8 would need its middle both un-skipped (id 20 at 20) and abutting the tail
    thirds = 0
    for seed in range(400):
        ids = skipped_position_ids(t, t * f, 1, generator=_gen(seed))
        thirds += int(ids[0, 20]) == 20 and int(ids[0, t - 21]) == t * f - 21
    assert 0.4 < thirds / 400 < 0.6


@pytest.mark.parametrize("sigma", [math.inf, math.nan, -1.0])
def test_cream_sigma_must_be_finite_and_positive(sigma: float) -> None:
    with pytest.raises(UserError, match="cream_sigma"):
        skipped_position_ids(256, 1024, 2, sampler="cream", cream_sigma=sigma)


# ---------------------------------------------------------------- PoSE, RPES, LongRecipe


def test_pose_head_takes_every_length_up_to_half_the_sample() -> None:
    length, target = 8, 200
    ids = pose_position_ids(length, target, 4000, generator=_gen(2))
    steps = ids.diff(dim=1)
    jumped = (steps > 1).any(dim=1)
    heads = (steps > 1).int().argmax(dim=1)[jumped] + 1
    assert set(heads.tolist()) == {1, 2, 3, 4}  # U{1, ..., (length + 1) // 2}


def test_empty_samples_are_refused() -> None:
    with pytest.raises(UserError, match="length >= 1"):
        rpes_position_ids(0, 8, 2)
    with pytest.raises(UserError, match="length >= 1"):
        pose_position_ids(0, 8, 2)
    with pytest.raises(UserError, match="length >= 1"):
        sentence_gap_position_ids(torch.zeros(2, 0, dtype=torch.bool), 8)


def test_a_one_token_sample_is_all_head() -> None:
    ids = sentence_gap_position_ids(torch.zeros(3, 1, dtype=torch.bool), 9, generator=_gen(0))
    assert ids.tolist() == [[0], [0], [0]]


def test_a_sentence_starting_right_after_the_head_gets_a_gap() -> None:
    """Every token starts a sentence: where the head is one token (a skip before position 1),
    the token after the head's end starts a segment of its own and gets a gap too."""
    starts = torch.ones(400, 4, dtype=torch.bool)
    starts[:, 0] = False
    ids = sentence_gap_position_ids(starts, 100, generator=_gen(1))
    steps = ids.diff(dim=1)
    one_token_head = steps[:, 0] > 1
    assert int(one_token_head.sum()) > 100
    assert float((steps[one_token_head, 1] > 1).double().mean()) > 0.8


class _Vocab:
    """A tokenizer of a few whole-text tokens."""

    def __init__(self, texts: list[str]) -> None:
        self.texts = texts

    def get_vocab(self) -> dict[str, int]:
        return {text: i for i, text in enumerate(self.texts)}

    def decode(self, ids: list[int]) -> str:
        return "".join(self.texts[i] for i in ids)


def test_delimiters_include_tokens_with_a_trailing_space_and_none_is_refused() -> None:
    tok = _Vocab(["so", ". ", "end", "?", " x", "!  "])
    assert sentence_delimiter_ids(tok).tolist() == [1, 3, 5]
    with pytest.raises(UserError, match="no token ending a sentence"):
        sentence_delimiter_ids(_Vocab(["so", "end", " x"]))


def test_a_newline_alone_ends_a_sentence() -> None:
    tok = byte_tokenizer()
    delims = sentence_delimiter_ids(tok)
    ids = torch.tensor([tok("Title\nBody text", add_special_tokens=False)["input_ids"]])
    starts = sentence_starts(ids, delims)
    assert torch.nonzero(starts[0]).flatten().tolist() == [6]  # the "B" after the newline


# ---------------------------------------------------------------- impactful tokens


def _rows(tok, *texts: str) -> torch.Tensor:
    """One row of byte ids per text (all texts of one length)."""
    return torch.tensor([tok(text, add_special_tokens=False)["input_ids"] for text in texts])


def test_words_mixing_letters_and_marks_are_other_not_punctuation() -> None:
    assert word_type("x-ray") == "other" and word_type("'s") == "other"
    assert word_type("--") == "punctuation" and word_type(" ?!") == "punctuation"


def test_shares_skip_position_zero_and_keep_a_rounded_number_of_rows() -> None:
    tok = byte_tokenizer()
    ids = _rows(tok, ".7777", ".xxxx", ".xxxx", ".xxxx")
    change = torch.zeros(4, 5)
    change[:, 0] = torch.tensor([0.0, 9.0, 9.0, 9.0])  # position 0 predicts nothing: not counted
    change[0, 1:] = 5.0
    shares = type_shares(change, ids, tok, top_fraction=0.25)  # one row of 4 at each position
    assert shares["numeral"] == 1.0 and shares["punctuation"] == 0.0
    # 3 rows x 0.5 = 1.5 rows: two at each position
    ids = _rows(tok, "a77", "axx", "a..")
    change = torch.tensor([[0.0, 3.0, 3.0], [0.0, 2.0, 2.0], [0.0, 1.0, 1.0]])
    shares = type_shares(change, ids, tok, top_fraction=0.5)
    assert (shares["numeral"], shares["other"], shares["punctuation"]) == (0.5, 0.5, 0.0)
    # all rows: the shares of the whole sample (positions 1..T-1)
    shares = type_shares(change, ids, tok, top_fraction=1.0)
    assert shares["numeral"] == shares["other"] == shares["punctuation"] == pytest.approx(1 / 3)


def test_lifts_are_the_top_share_over_the_share_of_positions_one_on() -> None:
    tok = byte_tokenizer()
    ids = _rows(tok, ".7777", ".xxxx", ".xxxx", ".xxxx")
    change = torch.zeros(4, 5)
    change[0, 1:] = 5.0
    lifts = type_lifts(change, ids, tok, top_fraction=0.25)
    assert set(lifts) == set(WORD_TYPES)
    # numeral: all of the top, a quarter of positions 1..4; other: none of the top
    assert lifts["numeral"] == pytest.approx(4.0) and lifts["other"] == 0.0
    # types absent from positions 1..4 (the pad-like "." sits at position 0 only) get 0
    assert lifts["punctuation"] == 0.0 and lifts["pronoun"] == 0.0


def test_keep_other_outside_zero_one_is_refused() -> None:
    for bad in (-0.1, 1.5):
        with pytest.raises(ValueError, match="keep_other"):
            select_sentences(["It rained."], ["numeral"], bad, random.Random(0))


# ---------------------------------------------------------------- LongRecipe's brief run


def test_the_brief_run_rounds_its_rows_to_the_nearest() -> None:
    near_three = SimpleNamespace(tokens_per_step=2765, mix={"long": 1.0})  # 2.7 rows of 1,024
    assert brief_rows(near_three, 1024) == 3
    near_two = SimpleNamespace(tokens_per_step=2355, mix={"long": 1.0})  # 2.3 rows
    assert brief_rows(near_two, 1024) == 2


def test_the_brief_run_is_cpt_on_long_rows_only_at_the_target_window() -> None:
    cfg = smoke("longrecipe", impact_steps=3, warmup_steps=1, schedule="cosine")
    target = 2 * cfg.long_len  # 3 rows: 1,536 tokens, not the run's 2,048
    brief = brief_config(cfg, target)
    rows = brief_rows(cfg, target)
    assert (brief.recipe, brief.steps, brief.long_len) == ("cpt", 3, target)
    assert brief.mix == {"long": 1.0}  # no short or s2l rows
    assert (brief.schedule, brief.warmup_steps) == ("constant", 0)
    assert rows == 3 and brief.tokens_per_step == rows * target
    assert (brief.checkpoint_every, brief.keep_checkpoints, brief.heldout_every) == (3, 1, 0)


def test_the_measurement_records_its_windows_and_the_largest_peak(tmp_path) -> None:
    tok = byte_tokenizer()
    ids = _rows(tok, ".7777", ".xxxx", ".xxxx", ".xxxx")
    change = torch.zeros(4, 5)
    change[0, 1:] = 5.0
    peaks = [
        {"peak_memory_mib": 10.0, "peak_memory_kind": "a"},
        {"peak_memory_mib": 30.0, "peak_memory_kind": "b"},
        {"peak_memory_mib": None, "peak_memory_kind": "c"},
    ]
    info = {"tokens": 2048, "seconds": 1.5}
    cfg = SimpleNamespace(impact_steps=2)
    impact = _written(tmp_path, "k" * 64, cfg, change, ids, tok, info, peaks, progress=False)
    assert impact["anchors"] == ["numeral"] and impact["lifts"]["numeral"] == 4.0
    assert (impact["windows"], impact["brief_len"], impact["brief_steps"]) == (4, 5, 2)
    assert (impact["measure_peak_memory_mib"], impact["measure_peak_memory_kind"]) == (30.0, "b")
    assert json.loads((tmp_path / "impact.json").read_text()) == impact


def test_a_brief_run_is_not_moved_onto_a_brief_run_in_place(tmp_path) -> None:
    brief = brief_config(smoke("longrecipe", impact_steps=1), 1024)
    aside = tmp_path / "impact.abc"
    aside.mkdir()
    (aside / "config.yaml").write_text(yaml.safe_dump(brief.to_dict()))
    in_place = tmp_path / "impact"
    in_place.mkdir()
    (in_place / "config.yaml").write_text("steps: 7\n")
    assert not _brief_back(tmp_path, aside, brief)
    assert (in_place / "config.yaml").read_text() == "steps: 7\n" and aside.is_dir()
    (in_place / "config.yaml").unlink()
    in_place.rmdir()
    assert _brief_back(tmp_path, aside, brief) and not aside.exists()
    assert yaml.safe_load((in_place / "config.yaml").read_text()) == brief.to_dict()


def test_a_process_without_a_window_still_joins_the_measurement(
    tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Four processes, three windows: process 3 measures nothing and sends an empty share of
    the windows' width, which takes its place among the other processes' rows."""
    import longred_bench.models.loading as loading
    import longred_bench.training.collectives as collectives
    import longred_bench.training.data as data
    import longred_bench.training.devices as devices
    import longred_bench.training.impactful_tokens as impactful_tokens
    import longred_bench.training.peak_memory as peak_memory
    from longred_bench.training.anchors import measure_anchors

    target, windows = 48, 3
    cfg = smoke("longrecipe", anchors=["measured"], impact_steps=1)
    sent = []

    def gathered(value, world):
        if isinstance(value, torch.Tensor):
            sent.append(value)
            return [torch.full((1, target), float(r)) for r in range(windows)] + [value]
        return [value] * world

    def no_window(*args, **kwargs):
        raise AssertionError("process 3 has no window to measure")

    monkeypatch.setattr(loading, "load_config", lambda model: None)
    monkeypatch.setattr(
        loading,
        "extended_config",
        lambda config, rope: SimpleNamespace(max_position_embeddings=target),
    )
    monkeypatch.setattr(loading, "load", lambda *args, **kwargs: SimpleNamespace(tokenizer=None))
    monkeypatch.setattr(collectives, "on_every_process", lambda value, world: value)
    monkeypatch.setattr(collectives, "every_process", gathered)
    monkeypatch.setattr(
        data, "window_set", lambda *args, **kwargs: (torch.zeros(windows, target).long(), None)
    )
    monkeypatch.setattr(devices, "resolve_device", lambda cfg: ("cpu", torch.float32))
    monkeypatch.setattr(peak_memory, "PeakMemory", lambda device: SimpleNamespace(info=dict))
    monkeypatch.setattr(impactful_tokens, "logit_change", no_window)
    got = measure_anchors(
        cfg, tmp_path, train=lambda *args, **kwargs: tmp_path / "brief", progress=False,
        rank=3, world=4,
    )  # fmt: skip
    assert got is None  # process 0 writes and hands out the measurement
    assert len(sent) == 1 and sent[0].shape == (0, target)
