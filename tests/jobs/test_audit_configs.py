"""What the job configs refuse before anything loads: a drift file's unknown key, PCD's
parameters without PCD among the decodings, a decoding listed twice, ``true`` for a count, a
needle depth outside 0..100; PSA's repeated extensions (however spelled), models and lengths,
tasks without one gold answer, and the cache key of a PSA config without depths."""

from __future__ import annotations

import pytest

from longred_bench.errors import UserError
from longred_bench.jobs.configs import CompareConfig, DriftConfig, PsaConfig
from longred_bench.pcd.config import PcdConfig


def test_a_drift_file_with_an_unknown_key_is_refused() -> None:
    with pytest.raises(UserError, match="seq_length"):
        DriftConfig.from_dict({"original": "tiny-random", "rope": ["pi:factor=2"],
                               "seq_length": 64})  # fmt: skip
    cfg = DriftConfig.from_dict({"original": "tiny-random", "rope": ["pi:factor=2"]})
    assert cfg.rope == ("pi:factor=2",) and cfg.to_dict()["rope"] == ["pi:factor=2"]


BASE = {"original": "tiny-random", "rope": ("pi:factor=2",)}


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"pcd": PcdConfig()}, "PCD parameters given without pcd in --decoding"),
        ({"decoding": ("greedy", "greedy")}, "decoding must list some of greedy, pcd once each"),
        ({"decoding": ()}, "decoding must list some of greedy, pcd once each"),
        ({"ruler_samples": True}, "ruler_samples (--ruler-samples) must be a whole number"),
        ({"batch_size": 2.0}, "batch_size (--batch-size) must be a whole number"),
        ({"niah_depths": (0, 101)}, "niah_depths (--niah-depths) must be percents from 0 to 100"),
        ({"niah_depths": (-1,)}, "niah_depths (--niah-depths) must be percents from 0 to 100"),
        ({"suites": ("drift", "ppl")}, "unknown suite(s) ppl"),
        ({"lengths": (1000,)}, "RULER lengths [1000] not supported"),
        ({"drift_texts": "no-such-corpus"}, "text source 'no-such-corpus' is neither"),
    ],
)
def test_compare_refuses_before_anything_loads(changes, said) -> None:
    with pytest.raises(UserError) as caught:
        CompareConfig(**{**BASE, **changes})
    assert said in str(caught.value)


def test_compare_takes_the_whole_range_of_depths_and_pcd_with_its_parameters() -> None:
    cfg = CompareConfig(**BASE, niah_depths=(0, 100), decoding=("greedy", "pcd"), pcd=PcdConfig())
    assert cfg.niah_depths == (0, 100) and cfg.pcd == PcdConfig()
    # lengths and texts are checked only for the suites that use them
    assert CompareConfig(**BASE, suites=("drift",), lengths=(1000,)).lengths == (1000,)
    assert CompareConfig(**BASE, suites=("ruler",), drift_texts="no-such-corpus")


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"ropes": ("pi:factor=2", '{"method": "pi", "factor": 2}')}, "psa --rope"),
        ({"models": ("tiny-random", "tiny-random")}, "psa --model"),
        ({"lengths": (512, 512)}, "psa --lengths"),
        ({"lengths": (0, 512)}, "lengths and --samples must be >= 1"),
        ({"tasks": ("vt",)}, "has no single gold answer"),
        ({"models": ()}, "give at least one --model"),
        ({"depths": (50.0, 150.0)}, "are percents in [0, 100], got"),
    ],
)
def test_psa_refuses_before_anything_loads(changes, said) -> None:
    with pytest.raises(UserError) as caught:
        PsaConfig(**{"models": ("tiny-random",), **changes}).check()
    assert said in str(caught.value)


def test_a_psa_config_without_depths_keeps_the_key_it_had_before_depths() -> None:
    assert "depths" not in PsaConfig(models=("tiny-random",)).to_dict()
    assert PsaConfig(models=("tiny-random",), depths=(50.0,)).to_dict()["depths"] == [50.0]
