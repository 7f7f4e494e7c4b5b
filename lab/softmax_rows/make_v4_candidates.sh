#!/bin/bash
# v4 candidates (versions/v4.cu: v1 with one ex2 a reduction level and the cluster's merge by st.async) with
# knobs set by #define lines put before the file; round 1 also writes v1, the first release, for reference.
#   [ROUND=1|2|3] bash lab/softmax_rows/make_v4_candidates.sh OUTDIR     (then: device_run.sh screen OUTDIR)
# ROUND=3 writes versions/v4.cu and versions/v5.cu alone, unchanged: the screen that chose the release, whose
# winner `device_run.sh release` then takes from the same machine's /tmp/screen/rank.txt. ROUND=6 writes the
# release (v4) beside versions/v6_persist.cu with its persistent lanes-per-row grid on and off. ROUND=7 writes the
# release beside versions/v7.cu's row loop (softmax_cluster_rows) in three grids, and with the loop off; ROUND=8
# the loop bounded to a few rows a cluster (KSEEK_ROWS_MAXPER), after round 7's screen; ROUND=9 that bound
# only where a row spans 2 or more CTAs (KSEEK_ROWS_MINCTAS), after round 8's. ROUND=10 writes the release beside
# versions/v8_warp_rows.cu (one warp a row up to 256 vectors) with its wide instance's two register plans;
# ROUND=11 beside versions/v9_staged.cu (softmax_cluster's slice staged in shared memory by cp.async); ROUND=12
# v9 with QuACK's split held to QuACK's 3 CTAs an SM (round 11's profile); ROUND=13 the release beside v4 with
# QuACK's split and occupancy through registers alone, holding the input (two ex2 an element) instead of the
# exponentials; ROUND=14 the release beside versions/v10_xchg_cta.cu (the exchange's wait at CTA scope); ROUND=15
# beside versions/v11_whole_vectors.cu (softmax_cluster's threads whose vectors are all whole skip the edge tests).
set -eu
V=lab/softmax_rows/versions/v4.cu; out=${1:?OUTDIR}; mkdir -p "$out"
gen() {  # NAME DEFINES...   (the file after the #define lines: $V)
  name=$1; shift; : > "$out/$name.cu"
  for d in "$@"; do echo "#define ${d%%=*} ${d#*=}" >> "$out/$name.cu"; done
  cat "$V" >> "$out/$name.cu"
}
case "${ROUND:-1}" in
6)  # v6: softmax_subwarp's grid the CTAs that fit at once (r8192_c512 ran 1.29 waves at 0.916x QuACK)
  cp lab/softmax_rows/versions/v4.cu "$out/v4.cu"
  V=lab/softmax_rows/versions/v6_persist.cu
  gen v6a                                             # persistent (the file's default)
  gen v6b KSEEK_SUBWARP_PERSIST=0                     # a CTA per group of rows, as v4: the loop alone
  ;;
7)  # v7: a cluster takes several rows, each thread's next row issued before the current one's reduction
  cp lab/softmax_rows/versions/v4.cu "$out/v4.cu"
  V=lab/softmax_rows/versions/v7.cu
  gen v7a                                             # as few clusters as keep one wave (the file's default)
  gen v7b KSEEK_ROWS_CAP=2                            # at most 2 rows a cluster: more clusters, several waves
  gen v7c KSEEK_ROWS_CAP=4                            # at most 4 rows a cluster
  gen v7d KSEEK_ROWS_LOOP=0                           # the loop off: v4's kernels from v7's file (the same-build noise)
  ;;
8)  # after round 7's H100 screen: the loop only where a cluster takes at most 4 (or 6) rows, else v4's kernel
  cp lab/softmax_rows/versions/v4.cu "$out/v4.cu"
  V=lab/softmax_rows/versions/v7.cu
  gen v7a                                             # round 7's v7a again (the loop wherever it engages)
  gen v7d KSEEK_ROWS_LOOP=0                           # the loop off (the noise)
  gen v7e KSEEK_ROWS_MAXPER=4                         # the loop only at 4 rows a cluster or fewer
  gen v7f KSEEK_ROWS_MAXPER=6                         # ... 6 or fewer
  ;;
9)  # after round 8's H100 screen: the loop bounded to 4 rows a cluster, and only where a row spans 2 or more CTAs
  cp lab/softmax_rows/versions/v4.cu "$out/v4.cu"
  V=lab/softmax_rows/versions/v7.cu
  gen v7d KSEEK_ROWS_LOOP=0                           # the loop off (the noise)
  gen v7e KSEEK_ROWS_MAXPER=4                         # round 8's v7e again
  gen v7g KSEEK_ROWS_MAXPER=4 KSEEK_ROWS_MINCTAS=2    # ... not where a row is one CTA
  ;;
10)  # v8: one warp a row up to 256 vectors (4096 x 2048: QuACK's lead at 0.903x on the H200 in session 53)
  cp lab/softmax_rows/versions/v4.cu "$out/v4.cu"
  V=lab/softmax_rows/versions/v8_warp_rows.cu
  gen v8a                                             # 8 vectors a lane keeping the input (the file's default)
  gen v8b KSEEK_WIDE_KEEP=1                           # ... keeping the exponentials (122 registers, not 80)
  gen v8c KSEEK_SUBWARP_MAXVEC=128                    # v4's dispatch from v8's file (the same-build noise)
  ;;
1)
  cp lab/softmax_rows/versions/v1.cu "$out/v1.cu"  # the first release, for a same-call reference
  gen v4a                                             # v1's shapes (4 vectors, 256-thread CTAs), st.async merge
  gen v4b KSEEK_CLUSTER_XCHG=0                        # v4a with v1's cluster barriers: the reductions alone
  gen v4c KSEEK_CLUSTER_VPT=8 KSEEK_CLUSTER_MAXT=256  # 8 vectors, 256 threads: half the CTAs a row (QuACK's)
  gen v4d KSEEK_CTA_TARGET=1024                       # 4 vectors, up to 1024 threads: no cluster below 32768
  gen v4e KSEEK_CLUSTER_VPT=8 KSEEK_CLUSTER_MAXT=512 KSEEK_CTA_TARGET=512  # 8 vectors, up to 512 threads
  gen v4f KSEEK_CLUSTER_VPT=8 KSEEK_CLUSTER_MAXT=256 KSEEK_CTA_TARGET=128  # 8 vectors, 128 threads (8192: QuACK's)
  ;;
2)  # after v4a led round 1: occupancy, hints and CTA size around v4a
  gen v4a
  gen v4g KSEEK_CLUSTER_VPT=2 KSEEK_CTA_TARGET=512 KSEEK_CLUSTER_MAXT=512 KSEEK_CLUSTER_MINB=3  # 39 regs, 3 CTAs an SM
  gen v4h KSEEK_LOAD_HINT=1                           # v4a with the L2::256B prefetch hint on loads
  gen v4i KSEEK_STORE_CS=1                            # v4a with streaming stores
  gen v4k KSEEK_CTA_TARGET=512                        # v4a with up to 512 threads a CTA (half the CTAs a row)
  ;;
3) cp lab/softmax_rows/versions/v4.cu lab/softmax_rows/versions/v5.cu "$out/" ;;
11)  # v9: softmax_cluster stages its slice in shared memory by cp.async (QuACK's profile beside v4, an H100)
  cp lab/softmax_rows/versions/v4.cu "$out/v4.cu"
  V=lab/softmax_rows/versions/v9_staged.cu
  gen v9a                                             # staged, v4's split (4 vectors a thread): the staging alone
  gen v9b KSEEK_CLUSTER_VPT=8 KSEEK_CLUSTER_MAXT=256  # staged, QuACK's split (8 vectors, 2 CTAs a row at 32000)
  gen v9c KSEEK_CLUSTER_STAGE=0                       # the staging off: v4's code from v9's file (the noise)
  ;;
12)  # after round 11: v9b (QuACK's split, staged) ran 2 CTAs an SM at 90 registers where QuACK runs 3 at 80
  cp lab/softmax_rows/versions/v4.cu "$out/v4.cu"
  V=lab/softmax_rows/versions/v9_staged.cu
  gen v9b KSEEK_CLUSTER_VPT=8 KSEEK_CLUSTER_MAXT=256                         # round 11's v9b again
  gen v9d KSEEK_CLUSTER_VPT=8 KSEEK_CLUSTER_MAXT=256 KSEEK_CLUSTER_MINB=3    # v9b held to 3 CTAs an SM (QuACK's)
  # (v9d without the staging spills at 80 registers, 120 bytes, nvcc 13.0: no fair control, not screened)
  ;;
13)  # after round 12: QuACK's 128 bytes in flight a thread at 3 CTAs an SM, without the staging. Keeping the
  # exponentials (v4c's plan) needs 120 bytes of spills at 80 registers; keeping the bf16 input needs 12 (nvcc 13.0)
  cp lab/softmax_rows/versions/v4.cu "$out/v4.cu"
  gen v4m KSEEK_CLUSTER_VPT=8 KSEEK_CLUSTER_KEEP=0 KSEEK_CLUSTER_MAXT=256 KSEEK_CLUSTER_MINB=3
  gen v4n KSEEK_CLUSTER_KEEP=0                                                 # v4 keeping the input: its cost alone
  ;;
14)  # v10: the cluster exchange's wait without the L1 invalidation (round 13's profile: 11-12% of the samples on it)
  cp lab/softmax_rows/versions/v4.cu "$out/v4.cu"
  V=lab/softmax_rows/versions/v10_xchg_cta.cu
  gen v10a                                            # the wait at CTA scope (the file's default)
  gen v10b KSEEK_XCHG_ACQUIRE=1                       # at cluster scope: v4's code from v10's file (the noise)
  ;;
15)  # v11: no per-vector edge test where a thread's vectors are all whole (rounds 13-14: 1.5-1.7x QuACK's instructions)
  cp lab/softmax_rows/versions/v4.cu "$out/v4.cu"
  V=lab/softmax_rows/versions/v11_whole_vectors.cu
  gen v11a                                            # the whole-vector path (the file's default)
  gen v11b KSEEK_CLUSTER_WHOLE=0                      # off: v4's code from v11's file (the noise)
  ;;
*) echo "ROUND is 1, 2, 3, 6, 7, 8, 9, 10, 11, 12, 13, 14 or 15" >&2; exit 2 ;;
esac
