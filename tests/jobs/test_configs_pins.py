"""Pinned behaviour of ``jobs/configs.py``: what drift, compare and PSA refuse before anything
loads (a bad extension spec, an unknown text source, a count below its least, the short suite's
name, a fractional needle depth, a task the registry lacks, an empty task or length list), what
they accept at the edges (no short limit), and how compare's file form is read (lists as
tuples, ``pcd`` as its config)."""

from __future__ import annotations

import pytest

from longred_bench.errors import UserError
from longred_bench.jobs.configs import CompareConfig, DriftConfig, PsaConfig
from longred_bench.pcd.config import PcdConfig

COMPARE = {"original": "tiny-random", "rope": ("pi:factor=2",), "suites": ("drift",)}


@pytest.mark.parametrize(("changes", "said"), [
    ({"rope": ("bogus:factor=2",)}, "unknown RoPE extension method 'bogus'"),
    ({"texts": "no-such-corpus"}, "text source 'no-such-corpus' is neither"),
    ({"seq_len": 0}, "drift: seq_len (--seq-len) must be at least 1, not 0"),
])  # fmt: skip
def test_drift_refuses_before_anything_loads(changes, said) -> None:
    """A drift config with a bad extension, texts no source gives, or no token per text."""
    with pytest.raises(UserError) as caught:
        DriftConfig(**{"original": "tiny-random", **changes})
    assert said in str(caught.value)


@pytest.mark.parametrize(("changes", "said"), [
    ({"rope": ("bogus:factor=2",)}, "unknown RoPE extension method 'bogus'"),
    ({"short_suite": "long"}, "short suite must be short or short_tiny, not 'long'"),
    ({"drift_seq_len": 0}, "drift_seq_len (--drift-seq-len) must be a whole number of at least 1"),
    ({"drift_num_texts": 0}, "drift_num_texts (--drift-num-texts) must be a whole number"),
    ({"niah_depths": (50.5,)}, "niah_depths (--niah-depths) must be percents from 0 to 100"),
])  # fmt: skip
def test_compare_refuses_before_anything_loads(changes, said) -> None:
    """A compare config with a bad extension, an unknown short suite, an empty drift
    measurement or a needle depth that is no whole percent."""
    with pytest.raises(UserError) as caught:
        CompareConfig(**{**COMPARE, **changes})
    assert said in str(caught.value)


def test_compare_runs_the_whole_short_suite_without_a_limit() -> None:
    """``short_limit: null`` is every example, not a bad count."""
    assert CompareConfig(**COMPARE, short_limit=None).short_limit is None


def test_a_compare_file_reads_lists_as_tuples_and_pcd_as_its_config() -> None:
    """The file form: every list becomes a tuple (the config compares and hashes as the flags'
    one), and ``pcd``'s mapping becomes a :class:`PcdConfig`."""
    data = {"original": "tiny-random", "rope": ["pi:factor=2"], "suites": ["drift"],
            "decoding": ["greedy", "pcd"], "pcd": {}}  # fmt: skip
    cfg = CompareConfig.from_dict(data)
    assert cfg.rope == ("pi:factor=2",) and cfg.suites == ("drift",)
    assert cfg.pcd == PcdConfig()
    assert cfg == CompareConfig(**COMPARE, decoding=("greedy", "pcd"), pcd=PcdConfig())


@pytest.mark.parametrize(("changes", "said"), [
    ({"tasks": ("nope",)}, "psa: unknown task 'nope'; retrieval tasks: niah_single_1"),
    ({"tasks": ()}, "psa: give at least one task and one length"),
    ({"lengths": ()}, "psa: give at least one task and one length"),
    ({"samples": 0}, "psa: lengths and --samples must be >= 1"),
])  # fmt: skip
def test_psa_refuses_before_anything_loads(changes, said) -> None:
    """A PSA config with a task it cannot teacher-force, no task, no length or no sample."""
    with pytest.raises(UserError) as caught:
        PsaConfig(**{"models": ("tiny-random",), **changes}).check()
    assert said in str(caught.value)
