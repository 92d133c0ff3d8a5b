"""How the RULER registry draws and records samples, on stand-in builders and the corpus-free
tasks (vt, fwe): the name each sample's random stream is seeded from, how many fresh draws a
sample gets and which refusal is reported when none fits, what the metadata records, the
counts and lengths refused, which data a task preloads, and the phrasing a length check gives
the tasks without phrasing families."""

from __future__ import annotations

import random

import pytest

from longred_bench.errors import UserError
from longred_bench.models.zoo import byte_tokenizer
from longred_bench.taskdata.ruler import haystack, qa, registry
from longred_bench.taskdata.ruler.registry import check_fits_all, check_lengths, generate, preload
from longred_bench.taskdata.ruler.sizing import Draft, Misfit, Rendered


def _recording_builder(seen: list[float], fits_from: int = 0):
    """A builder that records its stream's first draw; its draft fits only from the
    ``fits_from``-th call on (earlier ones need 2,000 tokens and more)."""

    def builder(task, rng, length, seed, corpus, state):
        seen.append(rng.random())
        word = "w" * (2000 + len(seen) if len(seen) <= fits_from else 4)
        yield Draft(render=lambda n: Rendered(f"{word}{' x' * n} A:", ("x",)), upper=20)

    return builder


def test_each_sample_draws_from_a_stream_named_by_its_task_length_seed_and_index(
    monkeypatch,
) -> None:
    """Sample ``i`` of a call is seeded by ``ruler/<task>/<length>/<seed>/<i>``, with the
    phrasing family appended where it is not the standard one."""
    seen: list[float] = []
    monkeypatch.setitem(registry.BUILDERS, "vt", _recording_builder(seen))
    generate("vt", byte_tokenizer(), 256, 2, 7)
    generate("vt", byte_tokenizer(), 256, 1, 7, phrasing="heldout")
    names = ["ruler/vt/256/7/0", "ruler/vt/256/7/1", "ruler/vt/256/7/0/heldout"]
    assert seen == [random.Random(name).random() for name in names]


def test_a_sample_is_drawn_again_up_to_eight_times_from_streams_of_its_own(monkeypatch) -> None:
    """Redraw ``k`` is seeded by the sample's name plus ``/redraw<k>`` and recorded; a sample
    that fits only on its ninth draw is generated, one that would need a tenth is refused with
    its first draw's misfit (the tokens that draw needs)."""
    seen: list[float] = []
    monkeypatch.setitem(registry.BUILDERS, "vt", _recording_builder(seen, fits_from=8))
    (sample,) = generate("vt", byte_tokenizer(), 256, 1, 0)
    assert sample.metadata["redraw"] == 8 and len(seen) == 9
    names = ["ruler/vt/256/0/0"] + [f"ruler/vt/256/0/0/redraw{k}" for k in range(1, 9)]
    assert seen == [random.Random(name).random() for name in names]
    seen.clear()
    monkeypatch.setitem(registry.BUILDERS, "vt", _recording_builder(seen, fits_from=9))
    with pytest.raises(Misfit) as caught:
        generate("vt", byte_tokenizer(), 256, 1, 0)
    assert len(seen) == 9 and caught.value.needed == 2001 + len(" A:") + len(" x")


def test_a_sample_records_its_seed_corpus_fill_and_non_standard_phrasing() -> None:
    """The metadata adds the seed, the corpus and the haystack size to the task's own; the
    phrasing only where it is a family's, and no redraw for a first draw."""
    tok = byte_tokenizer()
    (standard,) = generate("vt", tok, 512, 1, 4, corpus="pg19")
    meta = standard.metadata
    assert (meta["seed"], meta["corpus"]) == (4, "pg19")
    assert meta["haystack_units"] > 0 and "phrasing" not in meta and "redraw" not in meta
    (heldout,) = generate("vt", tok, 512, 1, 4, phrasing="heldout")
    assert heldout.metadata["phrasing"] == "heldout" and heldout.input != standard.input


def test_no_samples_are_an_empty_list_and_a_length_below_one_is_refused() -> None:
    """Zero samples is a valid request; a negative count or a length under one token is not."""
    assert generate("fwe", byte_tokenizer(), 512, 0, 0) == []
    for length, count in ((0, 1), (512, -1)):
        with pytest.raises(UserError, match="length must be >= 1 and num_samples >= 0"):
            generate("fwe", byte_tokenizer(), length, count, 0)


def test_no_lengths_at_all_are_refused() -> None:
    """An empty list of RULER lengths is refused, naming the lengths that are supported."""
    with pytest.raises(UserError, match=r"RULER lengths \[\] not supported: use powers of two"):
        check_lengths([])
    check_lengths([256, 131072])


def test_preloading_reads_only_the_data_a_task_draws_from(monkeypatch) -> None:
    """vt and fwe draw their words themselves: preloading them reads nothing; cwe and the NIAH
    tasks read their corpus's vocabulary, and a QA task its own questions (no vocabulary)."""
    read: list[str] = []
    monkeypatch.setattr(haystack, "vocabulary", lambda corpus: read.append(corpus) or ())
    monkeypatch.setattr(qa, "load", lambda task: read.append(task))
    preload("vt")
    preload("fwe")
    assert read == []
    preload("cwe", "pg19")
    preload("niah_single_2")
    preload("qa_2")
    assert read == ["pg19", "brown", "qa_2"]


def test_a_length_check_in_a_family_phrasing_gives_the_other_tasks_rulers(monkeypatch) -> None:
    """Checked in a phrasing family, the tasks that have one are measured in it and the others
    in RULER's own strings (not refused for lacking the family)."""
    asked: list[tuple[str, str]] = []

    def least(task, tokenizer, seed, *, corpus="brown", phrasing="standard"):
        asked.append((task, phrasing))
        raise Misfit("too long", 10)

    monkeypatch.setattr(registry, "least_misfit", least)
    check_fits_all(["vt", "fwe", "niah_single_1"], byte_tokenizer(), 256, 0, phrasing="heldout")
    assert asked == [("vt", "heldout"), ("fwe", "standard"), ("niah_single_1", "heldout")]


def test_a_task_with_no_sample_of_known_need_is_named_by_the_check(monkeypatch) -> None:
    """A task whose first sample fits no unambiguous rendering (fwe's refusal, its need not
    known) passed the up-front check, and the run stopped on it after the tasks before it."""

    def least(task, tokenizer, seed, *, corpus="brown", phrasing="standard"):
        raise Misfit("too long", 300 if task == "vt" else 400)

    def first(task, tokenizer, length, samples, seed, *, corpus="brown", phrasing="standard"):
        if task == "fwe":
            raise Misfit(f"RULER task 'fwe': no unambiguous sample fits in {length} tokens")
        raise Misfit("too long", 300)

    monkeypatch.setattr(registry, "least_misfit", least)
    monkeypatch.setattr(registry, "generate", first)
    with pytest.raises(Misfit) as refused:
        check_fits_all(["vt", "fwe"], byte_tokenizer(), 256, 0)
    assert "2 task(s) need more tokens with this tokenizer (vt 300, fwe more than 256;" in str(
        refused.value
    )
    assert refused.value.needed == 300
