"""A damaged request cache set aside a second time keeps the first one set aside, and its
SQLite side files go with it; configs refuse a ppl run on vLLM and a boolean seed, and runs that
differ only in ``log_samples`` share their settings; only ``longred_`` names are checked against
the registry."""

from __future__ import annotations

from pathlib import Path

import pytest

from longred_bench.errors import UserError
from longred_bench.evaluation.config import EvalConfig, check_seed
from longred_bench.evaluation.request_db import set_aside_damaged


def test_a_second_damaged_cache_is_set_aside_beside_the_first(tmp_path: Path) -> None:
    db = Path(f"{tmp_path / 'abc'}_rank0.db")
    db.write_bytes(b"not a database" * 100)
    (first,) = set_aside_damaged(tmp_path / "abc")
    db.write_bytes(b"damaged again" * 100)
    Path(f"{db}-journal").write_bytes(b"journal")
    (second,) = set_aside_damaged(tmp_path / "abc")
    assert (first.name, second.name) == ("abc_rank0.db.damaged", "abc_rank0.db.damaged-2")
    assert first.read_bytes().startswith(b"not a database")
    assert Path(f"{second}-journal").read_bytes() == b"journal"
    assert not db.exists() and not Path(f"{db}-journal").exists()


def test_the_ppl_suite_is_refused_on_vllm() -> None:
    with pytest.raises(UserError, match="do not apply to it"):
        EvalConfig(model="tiny-random", suite="ppl", backend="vllm")


def test_a_boolean_seed_is_refused() -> None:
    with pytest.raises(UserError, match="--seed must be a whole number"):
        check_seed(True)
    check_seed(0)


def test_log_samples_changes_no_run_setting() -> None:
    plain = EvalConfig(model="tiny-random", suite="short_tiny")
    logged = EvalConfig(model="tiny-random", suite="short_tiny", log_samples=True)
    assert logged.run_settings() == plain.run_settings()


def test_only_longred_task_names_are_checked_against_the_registry() -> None:
    from longred_bench.evaluation.task_names import check_own_task

    check_own_task("mmlu", "profile")  # lm-eval's own: checked when the evaluation starts
    with pytest.raises(UserError, match="profile: 'longred_nope' is none of the suite's"):
        check_own_task("longred_nope", "profile")
