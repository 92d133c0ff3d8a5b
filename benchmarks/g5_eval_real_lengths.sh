#!/usr/bin/env bash
# GPU check G5 (evaluation at real lengths), its drift part, in one run on a CUDA machine whose
# Python already has torch, triton and transformers (nothing is fetched):
#   G5a  drift against two plain forwards on a random-init SmolLM2-135M shape at 8,192 tokens,
#        with the eager-maps check (every layer's attention map kept: ~36 GB in bf16)
#   G5b  the same at 32,768 tokens (no eager maps: ~600 GB), peak GPU memory of each
#   G5c  tiny-base (its final/ folder, $TINY_BASE) at 32,768 tokens
# bf16, SDPA, the median of --repeats after a warm-up; target: drift within 1.2x two plain
# forwards. RULER at 32K through lm-eval (not in the GPU image) is not part of this script.
# Everything lands in $OUT (default ./g5): g5.log and drift_cost_*_cuda.csv/.md. Each stage has
# its own time limit (seconds: G5A_S, G5B_S, G5C_S). Usage:
#   TINY_BASE=path/to/tiny-base/final env $(python -m longred_bench.source_tree) \
#     benchmarks/g5_eval_real_lengths.sh
set -u -o pipefail
source "$(dirname "$0")/gpu_common.sh"
begin_checks g5 g5.log

DRIFT="benchmarks/bench_drift_cost.py --device cuda --no-profile --repeats 3 --out $OUT"
stage "G5a drift, SmolLM2-135M shape (random init), 8K tokens, with eager maps"
run timeout "${G5A_S:-60}" $PY $DRIFT --shape smollm2-135m --seq-len 8192
stage "G5b drift, SmolLM2-135M shape (random init), 32K tokens"
run timeout "${G5B_S:-60}" $PY $DRIFT --shape smollm2-135m --seq-len 32768 --no-eager
if [ -n "${TINY_BASE:-}" ]; then
  stage "G5c drift, tiny-base, 32K tokens"
  run timeout "${G5C_S:-40}" $PY $DRIFT --model "$TINY_BASE" --seq-len 32768 --no-eager
fi
stage done
