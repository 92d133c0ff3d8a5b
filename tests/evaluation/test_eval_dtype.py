"""The dtype an evaluation runs its model in: bfloat16 on a CUDA device, float32 elsewhere, or
``--dtype``; keys and response caches keep their earlier values where the dtype is the one they
were computed in, and records say which ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from longred_bench.errors import UserError
from longred_bench.evaluation.config import EvalConfig, describe
from longred_bench.jobs.resume import REQUESTS, request_cache
from longred_bench.jobs.units import stored_config
from longred_bench.results import config_hash


def test_default_is_bfloat16_on_cuda_and_float32_elsewhere() -> None:
    def resolved(**kw) -> str:
        return EvalConfig(model="tiny-random", **kw).resolved_dtype()

    assert resolved() == "float32"
    assert resolved(device="cuda") == resolved(device="cuda:1") == "bfloat16"
    assert resolved(device="cuda", dtype="float32") == "float32"
    assert resolved(dtype="float16") == "float16"
    assert resolved(device="cuda", backend="vllm") == "float32"


def test_dtype_enters_the_config_only_when_given() -> None:
    assert "dtype" not in EvalConfig(model="tiny-random", device="cuda").to_dict()
    given = EvalConfig(model="tiny-random", dtype="bfloat16")
    assert given.to_dict()["dtype"] == "bfloat16"
    assert EvalConfig.from_dict(given.to_dict()) == given


def test_an_unknown_eval_config_key_is_one_line() -> None:
    """A cached unit's or a file's eval config with a key no field has (a TypeError before),
    with the key meant."""
    data = {**EvalConfig(model="tiny-random").to_dict(), "lenghts": [512]}
    with pytest.raises(UserError, match=r"unknown eval config key\(s\) lenghts \(lenghts: did "
                       r"you mean lengths\?\); known: "):  # fmt: skip
        EvalConfig.from_dict(data)


@pytest.mark.parametrize(
    ("kw", "message"),
    [
        ({"dtype": "float64"}, "--dtype 'float64': use one of float32, bfloat16, float16"),
        ({"dtype": "bfloat16", "backend": "vllm"}, "--dtype is for the hf backend"),
        ({"dtype": "float16", "backend": "vllm"}, "the vllm backend runs float32"),
    ],
)
def test_bad_dtype_is_one_line(kw: dict, message: str) -> None:
    with pytest.raises(UserError, match=message) as info:
        EvalConfig(model="tiny-random", **kw)
    assert "\n" not in str(info.value)


def test_dry_run_names_the_dtype() -> None:
    def printed(**kw) -> str:
        line = describe(EvalConfig(model="tiny-random", **kw)).splitlines()[0]
        return json.loads(line.removeprefix("config: "))["dtype"]

    assert (printed(device="cuda"), printed(), printed(dtype="float16")) == (
        "bfloat16", "float32", "float16"
    )  # fmt: skip


def _before_dtypes(root: Path, cfg: EvalConfig) -> Path:
    """The response-cache prefix as it was computed before evaluations had a dtype."""
    keys = ("model", "rope", "backend", "device", "decoding", "pcd", "seed", "batch_size",
            "max_length")  # fmt: skip
    kept = {k: v for k, v in cfg.to_dict().items() if k in keys}
    return root / REQUESTS / config_hash(stored_config(kept))


def test_responses_are_reused_only_in_the_dtype_they_were_computed_in(tmp_path: Path) -> None:
    cpu = EvalConfig(model="tiny-random")
    cuda = EvalConfig(model="tiny-random", device="cuda")
    # float32 on the CPU, as before: its responses stay; CUDA ran float32 before, now bfloat16
    assert request_cache(tmp_path, cpu) == _before_dtypes(tmp_path, cpu)
    assert request_cache(tmp_path, cuda) != _before_dtypes(tmp_path, cuda)
    fp32 = EvalConfig(model="tiny-random", device="cuda", dtype="float32")
    assert request_cache(tmp_path, fp32) != request_cache(tmp_path, cuda)
    # float32 given or by default: the same responses
    assert request_cache(tmp_path, fp32) == _before_dtypes(tmp_path, cuda)
    given = EvalConfig(model="tiny-random", dtype="float32")
    assert request_cache(tmp_path, given) == request_cache(tmp_path, cpu)
    bf16 = EvalConfig(model="tiny-random", device="cuda", dtype="bfloat16")
    assert request_cache(tmp_path, bf16) != request_cache(tmp_path, fp32)


def test_the_model_is_loaded_in_the_resolved_dtype() -> None:
    from longred_bench.evaluation.lm import open_model

    for dtype, want in ((None, torch.float32), ("bfloat16", torch.bfloat16)):
        model = open_model(EvalConfig(model="tiny-random", dtype=dtype))
        assert {p.dtype for p in model.loaded.model.parameters()} == {want}
        assert model.dtype == str(want).removeprefix("torch.")


def test_position_ppl_runs_and_records_its_dtype() -> None:
    from longred_bench.evaluation.ppl import run_position_ppl

    args = dict(corpus="random", length=64, num_windows=1, bucket=32, progress=False)
    fp32 = run_position_ppl("tiny-random", **args)
    bf16 = run_position_ppl("tiny-random", dtype="bfloat16", **args)
    assert {r["dtype"] for r in fp32} == {"float32"} and {r["dtype"] for r in bf16} == {"bfloat16"}
    assert [r["nll"] for r in fp32] != [r["nll"] for r in bf16]
    assert [r["nll"] for r in bf16] == pytest.approx([r["nll"] for r in fp32], rel=0.05)


def test_an_out_folder_of_results_in_another_dtype_is_refused(tmp_path: Path) -> None:
    """Its results would be replaced by ones of another precision: the dtype counts as a
    setting of the results there, whether given or the device's default; results written
    before evaluations had a dtype ran float32."""
    from longred_bench.cli.outputs import check_eval_out

    def saved(config: dict) -> None:
        record = {"kind": "eval", "provenance": {"config": {"command": "eval", **config}}}
        (tmp_path / "eval.jsonl").write_text(json.dumps(record) + "\n")

    def mine(**kw) -> dict:
        return EvalConfig(model="tiny-random", suite="short_tiny", **kw).ran_dict()

    saved(mine(dtype="bfloat16"))
    with pytest.raises(UserError, match=r"another config \(differs in dtype\)"):
        check_eval_out(tmp_path, mine())
    check_eval_out(tmp_path, mine(device="cuda"))  # bfloat16 too: the device alone is free
    old = EvalConfig(model="tiny-random", suite="short_tiny").to_dict()  # no dtype: float32
    saved(old)
    check_eval_out(tmp_path, mine())
    check_eval_out(tmp_path, mine(device="cuda", dtype="float32"))
    with pytest.raises(UserError, match=r"differs in dtype"):
        check_eval_out(tmp_path, mine(device="cuda"))


def test_one_extension_spelled_otherwise_reuses_its_responses(tmp_path: Path) -> None:
    """``--rope abf:theta=4e5`` and ``abf:theta=400000`` (or its JSON form) are one extension:
    one request cache, so the second spelling's run answers from the first's responses."""
    spellings = ["abf:theta=4e5", "abf:theta=400000", '{"method": "abf", "theta": 4e5}']
    keys = {request_cache(tmp_path, EvalConfig(model="tiny-random", rope=r)) for r in spellings}
    assert len(keys) == 1
    other = request_cache(tmp_path, EvalConfig(model="tiny-random", rope="abf:theta=5e5"))
    assert other not in keys
    assert request_cache(tmp_path, EvalConfig(model="tiny-random")) not in keys | {other}
