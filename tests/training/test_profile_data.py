"""The data the built-in GPU profiles train on: hub corpora with an offline fallback, and a
fallback that a run without the hub can train on (every stream of every recipe at ``smol`` has
rows of its length: a short-to-long stream of Brown, whose texts are shorter than SmolLM2's
8,192-token window, had none; nor had Table 6's whole-window short rows before the short
stream was packed)."""

from __future__ import annotations

import pytest
from data_helpers import ensure_cached

from longred_bench.data.corpus_spec import parse_source
from longred_bench.training.config import RECIPES, resolve_config

TRAINED = [r for r in RECIPES if r not in ("pretrain", "merge")]


@pytest.mark.parametrize("profile", ["smol", "paper", "paper-128k", "paper-mistral",
                                     "paper-linearard"])  # fmt: skip
def test_gpu_profiles_read_hub_data_with_an_offline_fallback(profile: str) -> None:
    for recipe in TRAINED:
        cfg = resolve_config(recipe, profile=profile)
        for stream in ("long_data", "short_data", "s2l_data"):
            source = parse_source(getattr(cfg, stream))
            assert any(m.kind == "hf" for m in source.members), (recipe, stream)
            assert source.fallback and all(m.offline for m in source.fallback)
            assert any(m.kind == "corpus" for m in source.fallback), (recipe, stream)


@pytest.mark.integration
def test_table6_whole_window_row_trains_offline_at_smol(
    request: pytest.FixtureRequest, capsys: pytest.CaptureFixture
) -> None:
    """Every row of Table 6 at ``smol`` reads the same packed short data (the fallback's Brown
    offline), so the three short lengths read about the same epochs."""
    import re

    from longred_bench.cli import main

    ensure_cached(request, "smollm2", "austen", "kjv", "brown")
    assert main(["reproduce", "table6", "--profile", "smol", "--dry-run"]) == 0
    out = capsys.readouterr().out
    short = [line for line in out.splitlines() if "data short" in line]
    assert not [line for line in out.splitlines() if "not counted" in line]
    epochs = {re.search(r"rows of (\d+) tokens", line)[1]: float(re.search(r": ([\d.]+) epochs",
              line)[1]) for line in short}  # fmt: skip
    assert set(epochs) == {"1024", "2048", "8192"}, short
    assert max(epochs.values()) < 1.1 * min(epochs.values()), epochs


@pytest.mark.integration
@pytest.mark.parametrize("recipe", TRAINED)
def test_every_smol_stream_has_rows_offline(recipe: str, request: pytest.FixtureRequest) -> None:
    from longred_bench.models.loading import load_tokenizer
    from longred_bench.training.data_plan import data_lines

    ensure_cached(request, "smollm2", "austen", "kjv", "brown")
    cfg = resolve_config(recipe, profile="smol")  # offline (tests): the fallback's rows
    lines = data_lines(cfg, 8192, load_tokenizer("smollm2-135m"))
    assert not [line for line in lines if "not counted" in line], lines


def test_a_dry_run_of_a_built_zoo_model_says_it_builds_nothing() -> None:
    """``train --recipe cpt --profile tiny --dry-run``'s epochs line read "zoo model tiny-base is
    built, not loaded, by a dry run", as if the dry run built it; it says the opposite now."""
    import longred_bench.jobs  # noqa: F401  (registers tiny-base, as the command line does)
    from longred_bench.training.config import resolve_config
    from longred_bench.training.data_plan import describe_plan_with_data

    cfg = resolve_config("cpt", profile="tiny")
    lines = [x for x in describe_plan_with_data(cfg, 256).splitlines() if "epochs" in x]
    assert lines and all("which a dry run does not build" in x for x in lines), lines
    assert not any("is built" in x for x in lines)
