#!/bin/bash
# The screened candidates: the released file with its knobs' default values changed (c0 is the file as it is).
# Usage: bash lab/rmsnorm/make_candidates.sh DIR   (run from the repository root)
set -eu
dir=$1; mkdir -p "$dir"
src=kernels/rmsnorm/rmsnorm.cu
knobs() {  # NAME SMALL_MINB WEIGHT_LATE BLOCK_VPT
  sed -e "s/^#define KSEEK_SMALL_MINB .*/#define KSEEK_SMALL_MINB $2/" \
      -e "s/^#define KSEEK_WEIGHT_LATE .*/#define KSEEK_WEIGHT_LATE $3/" \
      -e "s/^#define KSEEK_BLOCK_VPT .*/#define KSEEK_BLOCK_VPT $4/" "$src" > "$dir/$1.cu"
}
cp "$src" "$dir/c0.cu"
knobs c1 5 0 4
knobs c2 6 1 4
knobs c3 0 1 4
knobs c4 8 1 4
knobs c5 6 0 4
