#!/usr/bin/env bash
# Stage what the GPU check scripts need on a machine that reaches no registry and no hub, in
# .gpu-carry/ (git-ignored; name it in the device call's carry). The tree and the carry share
# one 64 MiB limit a call, so there are two sets, one per call:
#   bash benchmarks/gpu_stage.sh          # "training": the run cache's tiny-base (final weights
#                                         # and its run record) and the corpora, which G3's
#                                         # training steps read, and the Liger-Kernel wheel
#   bash benchmarks/gpu_stage.sh ruler    # G5's RULER part (STAGES=g5r): tiny-base, the Brown
#                                         # corpus (RULER's haystack), SmolLM2's tokenizer files
#                                         # (tokenizer-smollm2/) and the wheels lm-eval's RULER
#                                         # path imports that the GPU image lacks (LMEVAL_WHEELS)
# Then, on the GPU machine, from the repository root:
#   LONGRED_CACHE=$PWD/.gpu-carry/cache WHEELS=.gpu-carry env $(python -m longred_bench.source_tree) \
#     bash benchmarks/gpu_pending.sh
# (the source_tree variables computed here, in the checkout the tree is copied from).
# LMEVAL_WHEELS was found by running that path on a CPU through benchmarks/probe_image_imports.py
# (imports limited to the image's package list): lm-eval's evaluator imports dill and datasets,
# datasets multiprocess and httpx2, and this machine's huggingface_hub truststore.
set -eu -o pipefail
SRC=${LONGRED_CACHE:-$HOME/.cache/longred-bench}
DST=.gpu-carry
SET=${1:-training}
case $SET in training|ruler) ;; *) echo "gpu_stage.sh: unknown set '$SET' (training or ruler)" >&2; exit 2 ;; esac
grep -qx "/$DST/" .git/info/exclude 2>/dev/null || echo "/$DST/" >> .git/info/exclude
rm -rf "$DST" && mkdir -p "$DST/cache/models"
for run in "$SRC"/models/tiny-base-*/; do
  name=$(basename "$run")
  mkdir -p "$DST/cache/models/$name"
  cp -r "$run/final" "$DST/cache/models/$name/"
  cp "$run"/run.json "$run"/config.yaml "$DST/cache/models/$name/" 2>/dev/null || true
done
case $SET in
  training)
    cp -r "$SRC/corpora" "$DST/cache/"
    python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
      --implementation cp --platform manylinux_2_17_x86_64 -d "$DST" liger-kernel==0.8.5 ;;
  ruler)
    mkdir -p "$DST/cache/corpora" "$DST/tokenizer-smollm2"
    cp -r "$SRC/corpora/brown" "$DST/cache/corpora/"
    cp "$SRC"/models/smollm2-135m/tokenizer*.json "$DST/tokenizer-smollm2/"
    LMEVAL_WHEELS=${LMEVAL_WHEELS:-lm_eval==0.4.13 datasets==5.2.0 dill==0.4.1
      multiprocess==0.70.19 httpx2==2.16.2 httpcore2==2.16.2 truststore==0.10.5}
    python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
      --implementation cp --platform manylinux_2_17_x86_64 -d "$DST" $LMEVAL_WHEELS ;;
esac
du -sh "$DST"
