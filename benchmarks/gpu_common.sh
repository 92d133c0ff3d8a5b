# Shared by the GPU check scripts (sourced; begin_checks sets OUT and LOG): the stage banner, a logged
# command, and the set-up every run starts with (the GPU, this checkout installed without
# fetching anything, the versions, and the commit with the source hash and whether the tree is
# that commit's: a copy compares itself with $LONGRED_SOURCE_HASH, given beside
# $LONGRED_SOURCE_COMMIT by `python -m longred_bench.source_tree` in the checkout it came from).
export PYTHONUNBUFFERED=1
PY=${PYTHON:-python3}
stage() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$LOG"; }
run() { "$@" 2>&1 | tee -a "$LOG"; }
setup_checkout() {
  stage setup
  run nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  run $PY -m pip install -q --no-deps --no-build-isolation --no-index -e . || exit 1
  run $PY -c "import torch, triton, transformers; print('torch', torch.__version__, 'triton',
triton.__version__, 'transformers', transformers.__version__, torch.cuda.get_device_name())"
  run $PY -m longred_bench.source_tree --state
}
# The start of every check script: $OUT (default ./$1), its log $OUT/$2, then setup_checkout.
begin_checks() {
  OUT=${OUT:-$PWD/$1}
  mkdir -p "$OUT"
  LOG="$OUT/$2"
  setup_checkout
}
