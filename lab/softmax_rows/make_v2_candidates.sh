#!/bin/bash
# v2 candidates (the streaming kernel, versions/v2.cu) with knobs set by #define lines put before the file;
# v1 is the released v1 file (kernels/softmax_rows/softmax_rows.cu at d1da0d1) for a same-call reference;
# v3 candidates: versions/v3.cu (v2 with the cluster's per-row merge by st.async, no cluster barrier a row).
#   bash lab/softmax_rows/make_v2_candidates.sh OUTDIR     (then: device_run.sh screen OUTDIR)
set -eu
V=lab/softmax_rows/versions/v2.cu; out=${1:?OUTDIR}; mkdir -p "$out"
gen() {  # NAME DEFINES...   (the file after the #define lines: $V)
  name=$1; shift; : > "$out/$name.cu"
  for d in "$@"; do echo "#define ${d%%=*} ${d#*=}" >> "$out/$name.cu"; done
  cat "$V" >> "$out/$name.cu"
}
cp kernels/softmax_rows/softmax_rows.cu "$out/v1.cu"  # (v1 while it is the release)
gen v2a                                             # 16 KB slices, 256 threads x 4 vectors, 32 KB a CTA in flight
gen v2b KSEEK_SLICE_VEC=2048 KSEEK_STREAM_VPT=8     # 32 KB slices, 256 threads x 8 (QuACK's split at 32K)
gen v2c KSEEK_STAGE_BYTES=65536                     # more rows in flight a CTA
gen v2d KSEEK_STREAM_CMAX=16 KSEEK_SPREAD=528       # few rows: up to 16 CTAs a row
gen v2e KSEEK_SLICE_VEC=512                         # 8 KB slices, 128 threads
gen v2f KSEEK_STAGE_BYTES=16384                     # fewer rows in flight (2 stages of 8 KB .. 16 KB)
V=lab/softmax_rows/versions/v3.cu                   # from here on, v3
gen v3a                                             # v2a's knobs: v3a against v2a is the per-row merge alone
gen v3c KSEEK_STAGE_BYTES=65536                     # v2c's knobs: more rows in flight a CTA
