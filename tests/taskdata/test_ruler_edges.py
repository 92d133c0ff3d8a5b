"""RULER samples on the cached corpora (fixtures in ``conftest.py``): the order in which a
length refusal names its tasks, how the NIAH prompts list their keys and place their needles,
and token counts of text beyond ASCII."""

from __future__ import annotations

import re

import pytest

from longred_bench.taskdata.ruler.registry import check_fits_all
from longred_bench.taskdata.ruler.sizing import Misfit


def test_a_length_refusal_names_the_tasks_from_the_most_tokens_needed(byte_tok) -> None:
    """Each task that does not fit is named with its tokens, the neediest first."""
    with pytest.raises(Misfit) as caught:
        check_fits_all(["niah_single_1", "vt", "fwe", "niah_multikey_1"], byte_tok, 256, 0)
    listed = re.search(r"tokenizer \(([^;]*);", str(caught.value)).group(1)
    needs = [(name, int(n)) for name, n in (item.split() for item in listed.split(", "))]
    assert len(needs) == 4
    assert [n for _, n in needs] == sorted((n for _, n in needs), reverse=True)
    assert len({n for _, n in needs}) > 1  # the order is not a tie
    assert caught.value.needed == needs[0][1]


def test_several_queried_keys_are_listed_with_a_final_and(byte_tok) -> None:
    """The multi-query question lists its keys as ``a, b, c, and d``; one key stands alone."""
    from longred_bench.taskdata.ruler import generate

    for sample in generate("niah_multiquery", byte_tok, 1024, 3, 0):
        keys = sample.metadata["keys"]
        assert len(keys) == 4
        query = f"{keys[0]}, {keys[1]}, {keys[2]}, and {keys[3]}"
        assert f"magic numbers for {query} mentioned" in sample.input
    (single,) = generate("niah_single_2", byte_tok, 1024, 1, 0)
    assert f"magic numbers for {single.metadata['keys'][0]} mentioned" in single.input


def test_the_queried_needle_is_not_always_the_first_in_the_haystack(byte_tok) -> None:
    """Which needle sits at which drawn depth is shuffled: over a dozen samples of a task with
    distractor keys the queried key's needle comes first in some and later in others."""
    from longred_bench.taskdata.ruler import generate

    firsts = []
    for sample in generate("niah_multikey_1", byte_tok, 1024, 12, 0):
        (key,) = sample.metadata["keys"]
        needles = [m.start() for m in re.finditer("One of the special magic numbers", sample.input)]
        assert len(needles) == 4
        firsts.append(sample.input.index(f"numbers for {key} is:") < needles[1])
    assert any(firsts) and not all(firsts)


def test_a_haystack_of_needles_has_one_needle_a_line(byte_tok) -> None:
    """In the tasks whose haystack is other keys' needles, each needle is a line of its own."""
    from longred_bench.taskdata.ruler import generate

    for task in ("niah_multikey_2", "niah_multikey_3"):
        (sample,) = generate(task, byte_tok, 1024, 1, 0)
        lines = sample.input.split("\n")
        needles = [line for line in lines if line.startswith("One of the special magic")]
        assert len(needles) == sample.metadata["haystack_units"] + 1 > 3
        assert all(line.endswith(".") and line.count("One of the") == 1 for line in needles)


def test_an_essay_needle_does_not_split_a_sentence(byte_tok) -> None:
    """In an essay haystack the needle goes in after a sentence end, not inside a sentence."""
    from longred_bench.taskdata.ruler import generate

    ends = (".", "!", "?", '."', ".'", '?"', '!"')
    for sample in generate("niah_single_2", byte_tok, 2048, 8, 0):
        before = sample.input[: sample.input.index("One of the special magic")].rstrip()
        assert before.endswith(ends), before[-60:]


def test_text_beyond_ascii_is_counted_as_the_tokenizer_counts_it(smol_tok) -> None:
    """Accents, dashes and curly quotes fall outside the pre-token pattern's ASCII classes:
    such a text is counted whole, by the tokenizer."""
    from longred_bench.taskdata.ruler.sizing import count_many, count_tokens

    texts = ["naïve café", "a — b “quoted” déjà vu", "plain ascii"]
    expected = [len(smol_tok(t, add_special_tokens=False).input_ids) for t in texts]
    assert count_many(smol_tok, texts) == expected
    assert count_tokens(smol_tok, texts[1]) == len(smol_tok(texts[1]).input_ids)


def test_the_least_tokens_a_task_needs_are_read_from_its_first_draft(byte_tok, monkeypatch):
    """A run's fit check measured each task's least sample by generating it at length 1, which
    tried every draft and redraw before its error (a QA task: 450 drafts, each shuffling its
    distractor pools, 1.5 s per RULER evaluation); the first draft's error names the same
    tokens, and only it is drawn."""
    from longred_bench.taskdata.ruler import registry
    from longred_bench.taskdata.ruler.registry import generate, least_misfit

    for task, phrasing in [(t, "standard") for t in registry.TASKS] + [("vt", "heldout")]:
        with pytest.raises(Misfit) as whole:
            generate(task, byte_tok, 1, 1, 3, phrasing=phrasing)
        with pytest.raises(Misfit) as first:
            least_misfit(task, byte_tok, 3, phrasing=phrasing)
        assert first.value.needed == whole.value.needed > 1, task
    drawn = []
    builder = registry.BUILDERS["qa_1"]

    def counting(*args):
        for draft in builder(*args):
            drawn.append(draft)
            yield draft

    monkeypatch.setitem(registry.BUILDERS, "qa_1", counting)
    check_fits_all(["qa_1"], byte_tok, 4096, 0)
    assert len(drawn) == 1  # the least measure's first draft: it fits, so nothing more
