#!/usr/bin/env bash
# PCD at 4K and 8K tokens on `tiny` extended 16x, in one run on a machine whose Python has torch
# and transformers (nothing is fetched; lm-eval is not needed): a CUDA GPU and many CPU cores, or
# a CPU alone (JOBS=2 TRAIN_DEVICE=cpu: 31 min on 2 cores, reports/tiny/pcd_long_x16/):
#   1. trains x16 on TRAIN_DEVICE (default cuda): `train --recipe cpt --profile tiny --set
#      rope=pi:factor=16 long_len=4096` (PI 16x, 4,096-token windows: 4K is inside its window,
#      8K twice beyond);
#      meanwhile CPU processes store the RULER samples (dev seed 1, test seed 0);
#   2. benchmarks/pcd_long.py's dev grid on JOBS CPU processes (fp32, one thread each, every
#      JOBS-th sample per process), their CSVs merged;
#   3. the choice from the merged dev rows and the test split, sharded and merged the same way;
#   4. pcd_long.md from the merged CSV.
# Needs LONGRED_CACHE holding tiny-base's final/, its tokenizer and the corpora. Writes to $OUT
# (default ./pcd-long-x16): run.log, pcd_long.csv, pcd_long_run.md, pcd_long.md, train.log,
# x16_metrics.jsonl, x16_run.json (the run's totals and provenance), x16_final.tgz, logs.tgz (the
# processes' logs). Resumes: the checkpoint and each shard's CSV are kept in
# $WORK. TASKS, LENGTHS, TRAIN_DEVICE and TRAIN_SET (more --set overrides) make a smoke run on a
# CPU possible. Usage:
#   LONGRED_CACHE=/path/to/cache env $(python -m longred_bench.source_tree) \
#     benchmarks/pcd_long_x16.sh
# (the commit and its source hash computed in the checkout this tree was copied from)
set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$PWD/pcd-long-x16}
WORK=${WORK:-/tmp/pcd-long-x16}
JOBS=${JOBS:-16}
SAMPLES=${SAMPLES:-32}
DEV_SAMPLES=${DEV_SAMPLES:-8}
PY=${PYTHON:-python3}
TASKS=${TASKS:-niah_single_1 niah_single_2 niah_multikey_1 vt}
LENGTHS=${LENGTHS:-4096 8192}
TRAIN_DEVICE=${TRAIN_DEVICE:-cuda}
TRAIN_SET=${TRAIN_SET:-}  # more overrides, e.g. steps=2 for a smoke run
mkdir -p "$OUT" "$WORK"
LOG="$OUT/run.log"
export PYTHONUNBUFFERED=1
trap 'tar czf "$OUT/logs.tgz" -C "$WORK" $(cd "$WORK" && ls *.log 2>/dev/null) 2>/dev/null' EXIT
stage() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
pcd_long() { OMP_NUM_THREADS=1 MKL_NUM_THREADS=1 $PY "$ROOT/benchmarks/pcd_long.py" "$@"; }
cd "$WORK" || exit 1

stage "train x16 on $TRAIN_DEVICE; RULER samples stored meanwhile"
if [ ! -f x16/final/model.safetensors ]; then
  $PY -m longred_bench train --recipe cpt --profile tiny --quiet \
    --set rope=pi:factor=16 long_len=4096 device="$TRAIN_DEVICE" $TRAIN_SET --out x16 > "$OUT/train.log" 2>&1 &
fi
for task in $TASKS; do
  for length in $LENGTHS; do
    OMP_NUM_THREADS=1 $PY - "$ROOT/benchmarks" "$task" "$length" "$DEV_SAMPLES" "$SAMPLES" <<'EOF' &
import sys
sys.path.insert(0, sys.argv[1])
import pcd_long
from longred_bench.models.loading import load
tok = load("tiny-base", device="cpu").tokenizer
task, length, dev, test = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
for n, seed in ((dev, pcd_long.DEV_SEED), (test, pcd_long.TEST_SEED)):
    pcd_long.ruler_samples(tok, [task], [length], n, seed, "heldout")
print("stored", task, length)
EOF
  done
done
wait
tail -3 "$OUT/train.log" | tee -a "$LOG"
[ -f x16/final/model.safetensors ] || { stage "training failed"; exit 1; }
cp x16/metrics.jsonl "$OUT/x16_metrics.jsonl"
cp x16/run.json "$OUT/x16_run.json"
tar czf "$OUT/x16_final.tgz" x16/final x16/config.yaml 2>/dev/null || tar czf "$OUT/x16_final.tgz" x16/final

common=(--model x16/final --tasks $TASKS --lengths $LENGTHS --samples "$SAMPLES" --dev-samples "$DEV_SAMPLES"
        --device cpu)
for part in dev test; do
  stage "$part on $JOBS CPU processes"
  for i in $(seq 0 $((JOBS - 1))); do
    mkdir -p "$part$i"
    if [ "$part" = test ]; then pcd_long merge "$part$i/pcd_long.csv" all/pcd_long.csv > /dev/null; fi
    pcd_long run "${common[@]}" --part "$part" --shard "$i/$JOBS" --out "$part$i" \
      > "$part$i.log" 2>&1 &
  done
  wait
  grep -h -i "error\|Traceback" "$part"*.log | sort | uniq -c | tee -a "$LOG"
  pcd_long merge all/pcd_long.csv "$part"*/pcd_long.csv | tee -a "$LOG" || exit 1
done
cp all/pcd_long.csv "$OUT/pcd_long.csv"
{ printf '%s\n' "$(cat test0/pcd_long_run.md)"  # $(...) drops its trailing blank lines
  echo "- dev and test ran in $JOBS shards each (\`--shard i/$JOBS\`), their CSVs merged: the"
  echo "  command, time and load above are the test split's shard 0's"; } > "$OUT/pcd_long_run.md"
pcd_long report "$OUT/pcd_long.csv" | tee -a "$LOG"
stage done
