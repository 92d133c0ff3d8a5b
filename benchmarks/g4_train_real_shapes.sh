#!/usr/bin/env bash
# GPU check G4 (training at real shapes) in one run on a CUDA machine whose Python already has
# torch, triton and transformers (nothing is fetched; Liger-Kernel only from a carried wheel):
#   G4a  tests/kernels/test_linear_ce.py with its gpu tier (chunked and, where installed, Liger's
#        fused linear CE in bf16 against the plain form), and the training tests of the LM loss
#        and of FSDP2's mixed-precision policy on one process
#   G4b  a random-init 1B Llama (Llama-3.2-1B's shape) at 8,192-token rows: cpt, longred and
#        linearard (Triton relation KL), FSDP2 with bf16 mixed precision on one GPU, activation
#        checkpointing per decoder layer, compile off: tokens/s, MFU (attention counted), peak
#        GPU memory beside the memory model's figure
#   G4c  the same at 32,768-token rows (does a 1B model train on 32K rows in 80 GB?), then with
#        activation offload (the checkpointed layer inputs in pinned host memory)
#   G4d  the 8K run again with each decoder layer compiled (torch.compile on against off)
#   G4e  the memory model's per-GPU figures for Llama-3-8B at 32K and 128K on 8 GPUs (printed)
# Targets: CPT >= 40% MFU at 8K; LongReD <= 1.3x and LinearARD <= 1.5x CPT per token (the
# cost_vs_first column); 32K rows fit. Everything lands in $OUT (default ./g4): g4.log and
# g4_8k/, g4_32k/, g4_32k_offload/, g4_8k_compiled/ (train_shapes_cuda.csv/.md each). Each stage
# has its own time limit (seconds: G4A_S, G4B_S, G4C_S, G4C2_S, G4D_S). Expected wall time on an
# H100/H200: about 9 min (tests 1 min, 8K 1.5 min, 32K 2 min twice, compiled 8K 2.5 min). Usage:
#   env $(python -m longred_bench.source_tree) [WHEELS=dir holding liger_kernel-*.whl] \
#     benchmarks/g4_train_real_shapes.sh
# (the commit and its source hash computed in the checkout this tree was copied from)
set -u -o pipefail
source "$(dirname "$0")/gpu_common.sh"
begin_checks g4 g4.log
install_wheels
run $PY -c "from longred_bench.kernels.linear_ce import liger_available as a; print('liger', a())"

stage "G4a linear CE on CUDA; LM loss and mixed-precision tests"
run timeout "${G4A_S:-90}" $PY -m pytest -q -p no:cacheprovider -rs tests/kernels/test_linear_ce.py \
  tests/training/test_lm_loss.py tests/training/test_fit_options.py tests/training/test_offload.py \
  -m "not integration"

SHAPE="--device cuda --shape llama-1b --recipes cpt longred linearard --impl triton --steps 6"
stage "G4b 1B Llama shape, 8K rows, FSDP2 bf16, checkpointing, compile off"
run timeout "${G4B_S:-150}" $PY benchmarks/bench_train.py $SHAPE --seq-len 8192 \
  --out "$OUT/g4_8k"
stage "G4c 1B Llama shape, 32K rows"
run timeout "${G4C_S:-180}" $PY benchmarks/bench_train.py $SHAPE --seq-len 32768 \
  --out "$OUT/g4_32k"
stage "G4c2 1B Llama shape, 32K rows, activation offload (peak and tokens/s against G4c)"
run timeout "${G4C2_S:-180}" $PY benchmarks/bench_train.py $SHAPE --seq-len 32768 --offload \
  --out "$OUT/g4_32k_offload"
stage "G4d 1B Llama shape, 8K rows, compiled decoder layers"
run timeout "${G4D_S:-240}" $PY benchmarks/bench_train.py $SHAPE --seq-len 8192 --compile on \
  --out "$OUT/g4_8k_compiled"
stage "G4e memory model: Llama-3-8B per GPU (8 GPUs) at 32K and 128K"
run $PY -c "
import sys; sys.path.insert(0, 'benchmarks')
from bench_memory_model import plan_rows
for r in plan_rows(): print(r)"
stage done
