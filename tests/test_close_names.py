"""The name a refusal offers for a mistyped one (:func:`longred_bench.errors.close_name`):
two neighbouring letters swapped, the start of exactly one name, or a close spelling; none
where nothing is close or the start is shared."""

from __future__ import annotations

import pytest

from longred_bench.errors import close_name, meant_note

TABLES = ("table1", "table2", "pcd", "fig2", "kernel")
MODELS = ("tiny-random", "smollm2-135m", "tiny-base")


@pytest.mark.parametrize(
    ("word", "choices", "meant"),
    [
        ("pdc", TABLES, "pcd"),  # neighbours swapped: difflib's ratio is 0.67 for three letters
        ("smollm2", MODELS, "smollm2-135m"),  # the only name it begins
        ("brwn", ("brown", "austen", "kjv"), "brown"),
        ("xyz", TABLES, None),
    ],
)
def test_the_name_offered_for_a_mistyped_one(word, choices, meant) -> None:
    assert close_name(word, choices) == meant


def test_a_start_shared_by_two_names_or_too_short_is_no_guess() -> None:
    """At the model names' strict cutoff, ``tiny`` begins two names and ``sm`` is too short."""
    assert close_name("tiny", MODELS, cutoff=0.8) is None
    assert close_name("sm", MODELS, cutoff=0.8) is None
    assert close_name("smo", MODELS, cutoff=0.8) == "smollm2-135m"


def test_a_swap_needs_the_two_letters_exchanged_side_by_side() -> None:
    """``pcx`` is no swap of ``pcd``; ``dcp`` swaps letters that are not neighbours."""
    assert close_name("dcp", ("pcd",), cutoff=0.99) is None
    assert close_name("pcx", ("pcd",), cutoff=0.99) is None
    assert meant_note("pdc", TABLES) == " (did you mean pcd?)"


def test_the_command_line_offers_the_name_meant(tmp_path, capsys) -> None:
    """``reproduce pdc``, ``--texts brwn`` and ``models --model smollm2`` offered nothing."""
    from longred_bench.cli import main

    with pytest.raises(SystemExit):
        main(["reproduce", "pdc"])
    assert capsys.readouterr().err.rstrip().endswith("(did you mean pcd?)")
    drift = ["drift", "--original", "tiny-random", "--rope", "pi:factor=2", "--texts", "brwn"]
    assert main([*drift, "--out", str(tmp_path / "d")]) == 2
    assert capsys.readouterr().err.rstrip().endswith("nor a file (did you mean brown?)")
    from longred_bench.models.names import _meant

    assert _meant("smollm2") == " (did you mean smollm2-135m?)"
