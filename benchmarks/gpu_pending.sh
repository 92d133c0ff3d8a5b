#!/usr/bin/env bash
# The GPU checks of the training, kernel and evaluation changes (G1-G3 at a commit, G6, G7 and
# G5's RULER part), on a CUDA machine that reaches no registry:
#   g6  LinearARD's memory after the fixes of 6616ea8: benchmarks/probe_step_memory.py at 32K
#       (offload off and on: no growth between steps), then bench_train.py --shape llama-1b,
#       CPT and LinearARD at 8K and 32K (peak against the memory model)
#   g1  the relation-KL kernel tests on CUDA (its wrapper changed in 6616ea8)
#   g3  tiny-base training steps on CUDA, impl=triton and impl=chunked
#   g2  the relation-KL kernel's speed and memory (n 1K to 32K, and the 4K baselines)
#   g7  smol's own shape and settings: SmolLM2-135M at 8K and 32K rows, CPT / LongReD /
#       LinearARD, bf16 autocast, no FSDP, no checkpointing (the smol plan assumes MFU 0.25)
#   g5r G5's RULER part: benchmarks/bench_eval.py --device cuda, RULER (3 tasks, 4 samples
#       each) at 32K through lm-eval (its wheels carried) on a random-init SmolLM2-135M shape
#       (YaRN x4; SmolLM2's tokenizer carried) and on tiny-base (PI x64): samples/s, peak memory
# STAGES picks and orders them. All ran at 89a1fc4 (reports/bench/h200/README.md, run 3). Two
# changes since want g7 and g5r again: the relation KL's inputs under autocast (b7d031d; G7's
# LinearARD rows) and eval's bf16 default on CUDA (2c4bdaa; G5's RULER peak). The default, "g7"
# (at most 3 min), is the first call with the training carry; "g5r" a second with the ruler
# carry; "g3 g2 g1 g6" after any kernel or training change. Everything
# lands in $OUT (default ./gpu-pending): pending.log and a folder per stage. Needs the run cache
# staged by benchmarks/gpu_stage.sh (LONGRED_CACHE) for g3, and WHEELS for Liger. Usage:
#   LONGRED_CACHE=$PWD/.gpu-carry/cache WHEELS=.gpu-carry env $(python -m longred_bench.source_tree) \
#     STAGES="g7" bash benchmarks/gpu_pending.sh
set -u -o pipefail
source "$(dirname "$0")/gpu_common.sh"
begin_checks gpu-pending pending.log
install_wheels
SHAPE="benchmarks/bench_train.py --device cuda --shape llama-1b --impl triton --steps 6"
for s in ${STAGES:-g7}; do
  case $s in
    g6)
      stage "G6 LinearARD's step memory at 32K, offload off and on"
      run timeout 90 $PY benchmarks/probe_step_memory.py --recipe linearard --seq-len 32768 \
        --impl triton --steps 3 --out "$OUT/g6/step_memory_linearard.jsonl"
      stage "G6 CPT and LinearARD at 8K and 32K rows"
      run timeout 130 $PY $SHAPE --recipes cpt linearard --seq-len 8192 32768 --out "$OUT/g6" ;;
    g1) check_g1 ;;
    g3) check_g3 "$OUT/g3" ;;
    g2) check_g2 "$OUT/g2" ;;
    g7)
      stage "G7 SmolLM2-135M shape at 8K and 32K rows (smol's plan: MFU 0.25 assumed)"
      run timeout 150 $PY benchmarks/bench_train.py --device cuda --shape smollm2-135m \
        --impl triton --steps 6 --recipes cpt longred linearard --seq-len 8192 32768 \
        --mixed-precision autocast --no-checkpointing --out "$OUT/g7" ;;
    g5r)
      stage "G5 RULER at 32K through lm-eval: SmolLM2-135M shape (random init) and tiny-base"
      tb=$(ls -d "${LONGRED_CACHE:-.gpu-carry/cache}"/models/tiny-base-*/final 2>/dev/null | head -1)
      [ -n "$tb" ] || { echo "g5r: no tiny-base under LONGRED_CACHE (gpu_stage.sh ruler)" | tee -a "$LOG"; continue; }
      run timeout 300 $PY benchmarks/bench_eval.py --device cuda --suites ruler \
        --models shape:smollm2-135m "$tb" --ruler-lengths 32768 --ruler-samples 4 \
        --batch-sizes 1 --tokenizer .gpu-carry/tokenizer-smollm2 --work "$OUT/g5r/models" \
        --rope shape:smollm2-135m=yarn:factor=4 "$tb=pi:factor=64" --out "$OUT/g5r"
      rm -rf "$OUT/g5r/models" ;;
    *) echo "unknown stage $s (g6, g1, g3, g2, g7, g5r)" | tee -a "$LOG" ;;
  esac
done
stage done
