#!/usr/bin/env bash
# Stage what the GPU check scripts need on a machine that reaches no registry and no hub, in
# .gpu-carry/ (git-ignored; name it in the device call's carry): the run cache's tiny-base
# (final weights and its run record) and the corpora, which G3's training steps read, and the
# Liger-Kernel wheel. Then, on the GPU machine, from the repository root:
#   LONGRED_CACHE=$PWD/.gpu-carry/cache WHEELS=.gpu-carry env $(python -m longred_bench.source_tree) \
#     bash benchmarks/gpu_pending.sh
# (the source_tree variables computed here, in the checkout the tree is copied from).
set -eu -o pipefail
SRC=${LONGRED_CACHE:-$HOME/.cache/longred-bench}
DST=.gpu-carry
grep -qx "/$DST/" .git/info/exclude 2>/dev/null || echo "/$DST/" >> .git/info/exclude
rm -rf "$DST" && mkdir -p "$DST/cache/models"
for run in "$SRC"/models/tiny-base-*/; do
  name=$(basename "$run")
  mkdir -p "$DST/cache/models/$name"
  cp -r "$run/final" "$DST/cache/models/$name/"
  cp "$run"/run.json "$run"/config.yaml "$DST/cache/models/$name/" 2>/dev/null || true
done
cp -r "$SRC/corpora" "$DST/cache/"
python -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp --platform manylinux_2_17_x86_64 -d "$DST" liger-kernel==0.8.5
du -sh "$DST"
