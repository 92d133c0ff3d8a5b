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
# Every wheel of a carried wheel folder ($WHEELS), where one is given: Liger-Kernel, and the
# packages lm-eval's RULER path needs that the image lacks (benchmarks/gpu_stage.sh).
install_wheels() {
  if [ -n "${WHEELS:-}" ]; then
    run $PY -m pip install -q --no-deps --no-index "$WHEELS"/*.whl
  fi
}
# G1: the relation-KL kernel tests on the GPU.
check_g1() {
  stage "G1 relation-KL kernel tests on the GPU"
  run timeout "${G1_S:-150}" $PY -m pytest -q -p no:cacheprovider -rs \
    tests/kernels/test_relation_kl_triton.py tests/kernels/test_relation_kl_triton_gpu.py
}
# G2: the kernel's speed and memory at d=128, n 1K to 32K, then the baselines; into folder $1.
check_g2() {
  stage "G2 relation-KL speed and memory: triton, n 1K to 32K"
  run timeout "${G2_S:-120}" $PY benchmarks/bench_relation_kl_gpu.py --dims 128 \
    --lengths 1024 2048 4096 8192 16384 32768 --impls triton --out "$1"
  stage "G2 baselines: chunked, eager and torch.compile at 4K, eager at 2K and 8K"
  run timeout "${G2B_S:-120}" $PY benchmarks/bench_relation_kl_gpu.py --dims 128 --lengths 4096 \
    --impls chunked eager compiled --no-check --append --out "$1"
  run timeout 40 $PY benchmarks/bench_relation_kl_gpu.py --dims 128 --lengths 2048 8192 \
    --impls eager --no-check --append --out "$1"
}
# G3: tiny-base training steps on CUDA (bf16), impl=triton then chunked; into $1/triton, $1/chunked.
check_g3() {
  stage "G3 training steps on CUDA (bf16): impl=triton, then impl=chunked"
  run timeout "${G3_S:-100}" $PY benchmarks/bench_train.py --device cuda --impl triton --steps 4 \
    --recipes cpt longred linearard --skip-memory --out "$1/triton"
  run timeout "${G3_S:-100}" $PY benchmarks/bench_train.py --device cuda --impl chunked --steps 4 \
    --recipes cpt linearard --skip-memory --out "$1/chunked"
}
