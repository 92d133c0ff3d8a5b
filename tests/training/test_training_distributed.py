"""Data-parallel training under torchrun on 2 CPU processes (gloo) against one process: the same
global batch gives the same loss curve within fp32 tolerance (DDP; FSDP2 with a sharded teacher),
and within bf16 tolerance under FSDP2's mixed-precision policy (one process wrapped alike)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import yaml


def _curve(out: Path, key: str = "loss") -> list[float]:
    return [json.loads(x)[key] for x in (out / "metrics.jsonl").read_text().splitlines()]


def _train(out: Path, recipe: str, nproc: int, *settings: str) -> None:
    settings = settings or ("steps=3", "tokens_per_step=4096")
    args = ["train", "--recipe", recipe, "--profile", "smoke", "--set", *settings,
            "--out", str(out), "--quiet"]  # fmt: skip
    if nproc == 1:
        cmd = [sys.executable, "-m", "longred_bench", *args]
    else:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone",
               f"--nproc_per_node={nproc}", "-m", "longred_bench", *args]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.integration
@pytest.mark.parametrize("recipe", ["cpt", "longred"])
def test_two_processes_follow_the_one_process_curve(recipe: str, tmp_path: Path) -> None:
    _train(tmp_path / "one", recipe, 1)
    _train(tmp_path / "two", recipe, 2)
    one, two = _curve(tmp_path / "one"), _curve(tmp_path / "two")
    assert len(one) == len(two) == 3
    assert two == pytest.approx(one, rel=1e-4, abs=1e-6)
    assert (tmp_path / "two" / "final" / "config.json").is_file()
    # run.json's tokens a step are every process's (it said one process's share)
    info = [json.loads((tmp_path / n / "run.json").read_text()) for n in ("one", "two")]
    assert info[0]["tokens_per_step"] == info[1]["tokens_per_step"] == info[1]["tokens"] // 3


@pytest.mark.integration
@pytest.mark.parametrize(
    ("recipe", "extra"),
    [
        ("longred", ("teacher_placement=shard",)),
        # every weight trained (LoRA: test_a_lora_student_under_fsdp_saves_...)
        ("linearard", ("activation_checkpointing=true", "lora_rank=0")),
    ],
)
def test_fsdp_follows_the_one_process_curve(recipe: str, extra: tuple, tmp_path: Path) -> None:
    settings = ("steps=3", "tokens_per_step=4096", "distributed=fsdp", *extra)
    _train(tmp_path / "one", recipe, 1, *settings)
    _train(tmp_path / "two", recipe, 2, *settings)
    assert _curve(tmp_path / "two") == pytest.approx(_curve(tmp_path / "one"), rel=1e-4, abs=1e-6)
    # checkpoints of a sharded student hold its whole weights (gathered by both processes)
    from longred_bench.training.checkpoint import latest_checkpoint, load_checkpoint

    weights, state = load_checkpoint(latest_checkpoint(tmp_path / "two"))
    one, _ = load_checkpoint(latest_checkpoint(tmp_path / "one"))
    assert weights.keys() == one.keys() and state["step"] == 3
    assert all(weights[k].shape == one[k].shape for k in one)


BF16_STEPS = ("steps=5", "tokens_per_step=2048", "lr=1e-3", "checkpoint_every=2",
              "distributed=fsdp", "mixed_precision=fsdp", "dtype=bfloat16",
              "lm_loss=chunked")  # fmt: skip


@pytest.mark.integration
def test_fsdp_mixed_precision_on_two_processes_matches_one_within_bf16(tmp_path: Path) -> None:
    _train(tmp_path / "one", "cpt", 1, *BF16_STEPS)
    _train(tmp_path / "two", "cpt", 2, *BF16_STEPS)
    _train(tmp_path / "fp32", "cpt", 1, *BF16_STEPS[:4])
    one, two, fp32 = (_curve(tmp_path / n) for n in ("one", "two", "fp32"))
    assert len(one) == len(two) == 5
    # bf16 keeps 8 bits of mantissa (eps 2**-7); the curves agree far inside that
    assert two == pytest.approx(one, rel=2**-9)
    norms = [_curve(tmp_path / n, "grad_norm") for n in ("one", "two")]
    assert norms[1] == pytest.approx(norms[0], rel=2**-6)
    assert one != fp32  # the policy took effect: bf16 compute is not the fp32 run
    assert one == pytest.approx(fp32, rel=2**-7)
    assert (tmp_path / "two" / "final" / "model.safetensors").is_file()


@pytest.mark.integration
@pytest.mark.parametrize("distributed", ["ddp", "fsdp"])
def test_longrecipe_on_two_processes_is_the_one_process_run(distributed: str, tmp_path: Path):
    """LongRecipe's sentence-gap ids are drawn for the global batch (each process its own rows,
    not the same draws on every process), and its final merge with the original reads the
    gathered weights under FSDP2: the same curve and the same merged weights as one process."""
    from safetensors.torch import load_file

    settings = ("steps=2", "replay_steps=1", "tokens_per_step=4096", f"distributed={distributed}")
    _train(tmp_path / "one", "longrecipe", 1, *settings)
    _train(tmp_path / "two", "longrecipe", 2, *settings)
    assert _curve(tmp_path / "two") == pytest.approx(_curve(tmp_path / "one"), rel=1e-4, abs=1e-6)
    one, two = (load_file(tmp_path / n / "final" / "model.safetensors") for n in ("one", "two"))
    assert one.keys() == two.keys()
    assert all(torch.allclose(two[k], one[k], atol=1e-5) for k in one)
    # the saved model is the merge of the last step's weights with the original's
    from longred_bench.models.loading import load
    from longred_bench.training.checkpoint import latest_checkpoint, load_checkpoint
    from longred_bench.training.config import TrainConfig

    cfg = yaml.safe_load((tmp_path / "two" / "config.yaml").read_text())
    trained, state = load_checkpoint(latest_checkpoint(tmp_path / "two"))
    original = load(cfg["model"]).model.state_dict()
    w = cfg.get("merge_weight", TrainConfig.merge_weight)  # omitted from the file at its default
    assert state["step"] == 3 and 0 < w < 1
    merged = {k: w * trained[k] + (1 - w) * original[k] for k in two}
    assert all(torch.allclose(two[k], merged[k], atol=1e-6) for k in two)


@pytest.mark.integration
def test_longrecipe_measured_anchors_on_two_processes_are_the_one_process_measurement(
    tmp_path: Path,
) -> None:
    """LongRecipe's default ``anchors: [measured]`` under torchrun: the processes train the brief
    run together (process 0 writes it), each measures its share of the windows, and process 0
    alone writes ``impact.json`` (every process wrote the same brief folder, and one loaded a
    model another was still saving); the same anchors and curve as one process."""
    settings = ("steps=2", "replay_steps=1", "tokens_per_step=8192", "impact_steps=2",
                "anchors=[measured]")  # fmt: skip
    _train(tmp_path / "one", "longrecipe", 1, *settings)
    _train(tmp_path / "two", "longrecipe", 2, *settings)
    one, two = (json.loads((tmp_path / n / "impact.json").read_text()) for n in ("one", "two"))
    assert two["anchors"] == one["anchors"] and two["windows"] == one["windows"] == 32
    assert two["lifts"] == pytest.approx(one["lifts"], abs=2e-4)
    assert two["shares"] == pytest.approx(one["shares"], abs=2e-4)
    assert two["brief_tokens"] == one["brief_tokens"] and two["config"] == one["config"]
    assert _curve(tmp_path / "two") == pytest.approx(_curve(tmp_path / "one"), rel=1e-4, abs=1e-6)
    brief = [_curve(tmp_path / n / "impact") for n in ("one", "two")]
    assert len(brief[0]) == 2 and brief[1] == pytest.approx(brief[0], rel=1e-4, abs=1e-6)


@pytest.mark.integration
def test_a_merge_on_two_processes_is_the_one_process_merge(tmp_path: Path) -> None:
    from safetensors.torch import load_file

    _train(tmp_path / "cpt", "cpt", 1)
    merge = (f"merge_with={tmp_path / 'cpt' / 'final'}", "merge_weight=0.25")
    _train(tmp_path / "one", "merge", 1, *merge)
    _train(tmp_path / "two", "merge", 2, *merge)
    one, two = (load_file(tmp_path / n / "final" / "model.safetensors") for n in ("one", "two"))
    assert one.keys() == two.keys() and all(torch.equal(one[k], two[k]) for k in one)


@pytest.mark.integration
def test_a_lora_student_under_fsdp_saves_the_one_process_merged_model(tmp_path: Path) -> None:
    """LinearARD's default LoRA student under FSDP2: the gathered adapters merged into the
    gathered weights (``merge_and_unload`` fails on shards: the run crashed after its last step),
    the one-process model; a sharded run's config names its class, as save_pretrained writes."""
    from safetensors.torch import load_file

    settings = ("steps=2", "tokens_per_step=4096", "lora_rank=4", "distributed=fsdp")
    _train(tmp_path / "one", "linearard", 1, *settings)
    _train(tmp_path / "two", "linearard", 2, *settings)
    one, two = (load_file(tmp_path / n / "final" / "model.safetensors") for n in ("one", "two"))
    assert one.keys() == two.keys() and not any("lora" in k for k in two)
    assert all(torch.allclose(two[k], one[k], atol=1e-6) for k in one)
    config = json.loads((tmp_path / "two" / "final" / "config.json").read_text())
    assert config["architectures"] == ["LlamaForCausalLM"]


@pytest.mark.integration
def test_longrecipe_measures_on_more_processes_than_windows(tmp_path: Path) -> None:
    """A text of one anchor window on two processes: the second has no window to measure (its
    empty share crashed inside the model while the first waited)."""
    text = tmp_path / "one_window.txt"  # about 1,700 tokens: one window of the 1,024 measured
    text.write_text(" ".join(f"Sentence {i} has {i % 7} words, and it ends." for i in range(40)))
    _train(tmp_path / "two", "longrecipe", 2, "steps=2", "replay_steps=1", "tokens_per_step=8192",
           "impact_steps=1", "anchors=[measured]", f"long_data={text}")  # fmt: skip
    impact = json.loads((tmp_path / "two" / "impact.json").read_text())
    assert impact["windows"] == 1 and (tmp_path / "two" / "final" / "config.json").is_file()


_SLOW_MERGE = """
import sys, time
from datetime import timedelta
from pathlib import Path
import torch.distributed as dist
from longred_bench.errors import UserError
from longred_bench.jobs.train import run_training
from longred_bench.training.config import resolve_config
from longred_bench.training.distributed import leave_distributed
from longred_bench.training.methods import METHODS
# a short default timeout, once the imports are done (the processes join within it under load)
dist.init_process_group("gloo", timeout=timedelta(seconds=5))

def produce(cls, cfg, out, progress):
    time.sleep(12)  # over twice the default group's timeout
    if sys.argv[2] == "fail":
        raise UserError("the merge failed")
    return out

METHODS["merge"].produce = classmethod(produce)
cfg = resolve_config("merge", profile="smoke", overrides={"merge_with": sys.argv[1]})
rank = dist.get_rank()
folder = run_training(cfg, Path(sys.argv[1]) / "m", rank=rank, world=2)
leave_distributed(2)  # as train_command does
sys.stdout.write(f"rank {rank}: {folder}\\n")  # one write: print's two interleaved across ranks
sys.stdout.flush()
"""


_SLOW_WRITE = """
import sys, time
from pathlib import Path
import torch.distributed as dist
dist.init_process_group("gloo")
from longred_bench.jobs import train as job
from longred_bench.training.config import resolve_config

def plot_curves(*args, **kwargs):  # rank 0's last write
    time.sleep(3)
    Path(sys.argv[1], "written").write_text(str(time.time()))

job.plot_curves = plot_curves
cfg = resolve_config("cpt", profile="smoke", overrides={"steps": 1, "tokens_per_step": 2048})
rank = dist.get_rank()
job.train_command(cfg, Path(sys.argv[1]) / "run", resume=False, progress=False)
sys.stdout.write(f"rank {rank} {time.time()} {dist.is_initialized()}\\n")
sys.stdout.flush()
"""


@pytest.mark.integration
def test_every_process_of_a_run_leaves_its_group_once_process_0_wrote_the_run(
    tmp_path: Path,
) -> None:
    """A process done before process 0 finished writing exited with its process group open,
    where gloo's threads could abort it (SIGABRT) as the interpreter shut down, and torchrun
    then stopped process 0 midway through its writing. Every process now waits for process 0
    (on a group of a day's timeout: test_distributed_helpers) and leaves with its groups
    closed."""
    script = tmp_path / "slow_write.py"
    script.write_text(_SLOW_WRITE)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           str(script), str(tmp_path)]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    left = sorted(line.split() for line in done.stdout.splitlines() if line.startswith("rank "))
    assert [(r, joined) for _, r, _, joined in left] == [("0", "False"), ("1", "False")]
    written = float((tmp_path / "written").read_text())
    assert float(left[1][2]) >= written  # process 1 left after process 0's last write
    assert (tmp_path / "run" / "final" / "config.json").is_file()


@pytest.mark.integration
@pytest.mark.parametrize("outcome", ["done", "fail"])
def test_the_processes_a_merge_leaves_waiting_outlast_the_groups_timeout(
    outcome: str, tmp_path: Path
) -> None:
    """Process 0 merges past the process group's timeout (30 min for gloo, 10 for NCCL by
    default; 5 s here): the others still get its folder, not a timeout; when it fails, they
    stop too."""
    script = tmp_path / "slow_merge.py"
    script.write_text(_SLOW_MERGE)
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
           str(script), str(tmp_path), outcome]  # fmt: skip
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if outcome == "done":
        assert done.returncode == 0, done.stderr[-3000:]
        assert sorted(done.stdout.split("\n"))[-2:] == [
            f"rank {r}: {tmp_path / 'm'}" for r in (0, 1)
        ]
    else:
        assert done.returncode != 0 and "the merge failed" in done.stderr
        assert "Timed out" not in done.stderr, done.stderr[-3000:]
