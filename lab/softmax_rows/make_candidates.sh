#!/bin/bash
# The candidates screened on 2026-12-04 (lab/softmax_rows/results/screen_candidates_h200_2026-12-04.txt): the
# released file with its knobs' default #define lines changed. c0 is the released file byte for byte.
#   bash lab/softmax_rows/make_candidates.sh OUTDIR      (then: device_run.sh screen OUTDIR)
set -eu
K=kernels/softmax_rows/softmax_rows.cu; out=${1:?OUTDIR}; mkdir -p "$out"
gen() {  # NAME CLUSTER_MODE CTA_TARGET SUBWARP_KEEP CLUSTER_MAXT CLUSTER_MINB
  sed -e "s/^#define KSEEK_CLUSTER_MODE 0 /#define KSEEK_CLUSTER_MODE $2 /" \
      -e "s/^#define KSEEK_CTA_TARGET 256$/#define KSEEK_CTA_TARGET $3/" \
      -e "s/^#define KSEEK_SUBWARP_KEEP 1$/#define KSEEK_SUBWARP_KEEP $4/" \
      -e "s/^#define KSEEK_CLUSTER_MAXT 1024 /#define KSEEK_CLUSTER_MAXT $5 /" \
      -e "s/^#define KSEEK_CLUSTER_MINB 1$/#define KSEEK_CLUSTER_MINB $6/" "$K" > "$out/$1.cu"
}
gen c0 0 256 1 1024 1  # released: fp32 exponentials kept, 4 vectors a thread, 256-thread CTAs
gen c1 1 256 1 512 3   # bf16 input kept (exponentials computed twice), <= 40 registers
gen c2 1 256 1 512 4   # likewise, <= 32 registers
gen c3 1 128 1 512 3   # c1 with 128-thread CTAs
gen c4 1 256 0 512 3   # c1, and the lanes-per-row kernel keeps its input too
gen c5 2 256 1 512 2   # input kept, 8 vectors a thread
