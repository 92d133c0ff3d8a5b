#!/usr/bin/env bash
# The GPU checks of docs/performance.md in one run on a CUDA machine whose Python already has
# torch, triton and transformers (nothing is fetched):
#   G1  tests/kernels/test_relation_kl_triton.py and its gpu tier test_relation_kl_triton_gpu.py
#   G2  with $OLD_KERNELS (a triton_kernels.py of another commit, its relative import made
#       absolute), the forward tile sweep of both kernels at n=8K; then
#       benchmarks/bench_relation_kl_gpu.py: triton at d=128, n 1K to 32K, then chunked, eager and
#       torch.compile at n=4K (the 5x target's baseline) and eager at 2K, 8K
#   G3  a few training steps of cpt, longred and linearard on tiny-base, bf16, impl=triton, and
#       of cpt and linearard with impl=chunked (LinearARD's cost per token against CPT's)
# Everything lands in $OUT (default ./gpu-checks): gpu_checks.log, fwd_tile_sweep.log,
# relation_kl_gpu.*, triton/train_throughput_cuda.*, chunked/train_throughput_cuda.*. G3 needs a
# cache holding tiny-base's final/ and the corpora, named by $LONGRED_CACHE. Each stage has its
# own time limit (seconds: G1_S, SWEEP_S, G2_S, G2B_S, G3_S), so a slow stage cannot starve the
# next; G2 writes its CSV after every row. Usage:
#   LONGRED_CACHE=/path/to/cache env $(python -m longred_bench.source_tree) benchmarks/gpu_checks.sh
# (the commit and its source hash computed in the checkout this tree was copied from)
set -u -o pipefail
source "$(dirname "$0")/gpu_common.sh"
begin_checks gpu-checks gpu_checks.log

check_g1

if [ -n "${OLD_KERNELS:-}" ]; then
  stage "G2 forward tile sweep: $OLD_KERNELS (old) against this checkout (new), n=8192"
  timeout "${SWEEP_S:-150}" $PY benchmarks/sweep_relation_kl_fwd_tiles.py 8192 "$OLD_KERNELS" \
    2>&1 | tee -a "$LOG" "$OUT/fwd_tile_sweep.log"
fi

check_g2 "$OUT"
check_g3 "$OUT"
stage done
