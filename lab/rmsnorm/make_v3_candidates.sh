#!/bin/bash
# v3's screened candidates (lab/rmsnorm/versions/v3_reread.cu: rmsnorm_block's rows re-read from L1 instead of
# held in registers), each with its knobs set by #define lines put before the file; c0 is the release as it is.
# Usage: bash lab/rmsnorm/make_v3_candidates.sh DIR   (run from the repository root)
set -eu
dir=$1; mkdir -p "$dir"
src=lab/rmsnorm/versions/v3_reread.cu
cand() {  # NAME "KNOB VALUE" ...
  local name=$1; shift
  { for knob in "$@"; do echo "#define $knob"; done; cat "$src"; } > "$dir/$name.cu"
}
cp kernels/rmsnorm/rmsnorm.cu "$dir/c0.cu"
cand c1 "KSEEK_BLOCK_REREAD 1" "KSEEK_BLOCK_VPT 4"
cand c2 "KSEEK_BLOCK_REREAD 1" "KSEEK_BLOCK_VPT 2"
cand c3 "KSEEK_BLOCK_REREAD 1" "KSEEK_BLOCK_VPT 2" "KSEEK_REREAD_MINB 2"
cand c4 "KSEEK_BLOCK_REREAD 1" "KSEEK_BLOCK_VPT 2" "KSEEK_REREAD_MINB 2" "KSEEK_REREAD_HINT 1"
cand c5 "KSEEK_BLOCK_REREAD 1" "KSEEK_BLOCK_VPT 1"
cand c6 "KSEEK_BLOCK_REREAD 0" "KSEEK_BLOCK_VPT 1"
