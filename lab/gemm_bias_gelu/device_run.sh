#!/bin/bash
# gemm_bias_gelu on the GPU machine (issue 35). Run from the repository root; each mode fits one 10-minute device
# call (every step's timeout is cut to what is left of a 580-second budget, and steps that no longer fit are
# skipped, saying so in log.txt):
#   bash lab/gemm_bias_gelu/device_run.sh dev [K]     K (default versions/v4_stages5.cu): check_shapes.py --quick
#                                                     (stops here on a hang), the full check_shapes.py, the harness
#                                                     on the quick set and on the full set against every library
#                                                     (best_library) and the naive kernel, compute-sanitizer
#                                                     (memcheck, racecheck, synccheck) on check_shapes.py --quick
#   bash lab/gemm_bias_gelu/device_run.sh screen [K]  K with its knobs set by #define lines (the variants below):
#                                                     the full check_shapes.py on c0 (K as it is), then for each
#                                                     variant the quick check and the harness on SUBSET against
#                                                     eager (F.linear + F.gelu) and epilogue (cuBLASLt's fused
#                                                     bias + GELU), ranked by the geomean against eager in rank.txt
#   bash lab/gemm_bias_gelu/device_run.sh round [K]   K's full check, the harness's full set on K (best_library,
#                                                     naive), the sanitizers, then the screen with what is left
#   bash lab/gemm_bias_gelu/device_run.sh full [K]    only the harness's full set (best_library, naive)
#   bash lab/gemm_bias_gelu/device_run.sh san [K]     only the sanitizers
#   bash lab/gemm_bias_gelu/device_run.sh release K   K copied over kernels/gemm_bias_gelu/gemm_bias_gelu.cu (in the
#                                                     device's copy), then its full check, full set, sanitizers and
#                                                     the kernels.load GPU tests (pytest_gpu.txt): a release's evidence
#   bash lab/gemm_bias_gelu/device_run.sh ncu K... -- MxNxK...   Nsight Compute's main sections for the GEMM kernel of
#                                                     each kernel on each shape (its second call), in ncu.txt (a K
#                                                     of cublas:linear or cublas:epilogue: that path's kernel); with
#                                                     SCREEN=1 the screen runs first, on the first kernel
# QUESTION=KEY (a key of questionbank/bank.toml; any other is refused before any work, lab/tools/bank_key.py) ends
# every evaluation's note with "; question KEY": the kernel's development run then shows that bank question at the
# step it moved.
# Files land in $OUT, at most 8 of them (the device tool returns no more): log.txt, check.txt, eval_quick.txt/.json,
# eval_full.txt/.json, trace.jsonl, sanitizer.txt (screen: log.txt, screen.txt, rank.txt, trace.jsonl).
set -u
export PYTHONUNBUFFERED=1
# a QUESTION that is not a key of questionbank/bank.toml would end every note and show nothing on the dashboard
if [ -n "${QUESTION:-}" ]; then python3 "$(dirname "$0")/../tools/bank_key.py" "$QUESTION" || exit 2; fi
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
MODE=${1:-dev}
K=${2:-lab/gemm_bias_gelu/versions/v5_cluster.cu}
CHECK=lab/gemm_bias_gelu/tools/check_shapes.py
# the screen's scenarios: the aligned squares, the odd shapes, the MLP shapes, decode-like m (KSEEK_SMALL_M's), and
# the mid-size ones that take the narrow tile (KSEEK_NARROW_TILES's)
SUBSET=m128_n128_k128,m4096_n4096_k4096,m8192_n8192_k8192,m4095_n4095_k4095,m4096_n4097_k4096,m333_n777_k999,m1000_n1000_k1000,m1024_n1024_k1024,m2048_n2048_k2048,m8192_n3072_k768,m4096_n11008_k4096,m2048_n8192_k2048,m1_n4096_k4096,m16_n4096_k4096
# screen variants, most telling first (the budget may cut the last): the #define lines a candidate gets in front of
# K, '|' between two (c0: K's defaults)
VARIANTS=(
  ""
  "KSEEK_CLUSTER 1"
  "KSEEK_PINGPONG 0|KSEEK_BN 256"
  "KSEEK_TMA_STORE 1"
  "KSEEK_PINGPONG 0|KSEEK_BN 256|KSEEK_TMA_STORE 1"
  "KSEEK_PINGPONG 0|KSEEK_BN 256|KSEEK_CLUSTER 1"
  "KSEEK_GROUP_M 8"
  "KSEEK_STAGES 4"
)
# VARIANTS_LIST="A 1|B 2;C 3" replaces them: candidates split by ';' (an empty first one keeps c0 = K as it is)
[ -n "${VARIANTS_LIST:-}" ] && IFS=';' read -ra VARIANTS <<< "$VARIANTS_LIST"
T0=$(date +%s)
BUDGET=${BUDGET:-580}  # seconds for the whole call (the device tool allows 600)
log() { echo "$@" | tee -a "$OUT/log.txt"; }
left() { echo $((BUDGET - ($(date +%s) - T0))); }
# cap SECONDS [RESERVE]: the timeout a step gets, its cap or what is left after RESERVE seconds, whichever is less
cap() { local l=$(($(left) - ${2:-0})); [ "$l" -lt "$1" ] && echo "$l" || echo "$1"; }

# FILES...: into the harness's build cache (as `eval` builds: arch left to its default, which is part of the cache
# key) and kernels.load's (check_shapes.py), in parallel; the harness's ptxas report goes to log.txt
prebuild() {
  for f in "$@"; do
    timeout 150 python3 -c "import sys; from gpu_harness.build import build; b = build(sys.argv[1], 'cuda')
print(sys.argv[1], 'OK' if b.ok else 'FAILED: %s' % b.reason)
for name, k in (b.kernels or {}).items(): print('  registers', k, name)" "$f" > "/tmp/compile_$(basename "$f" .cu).txt" 2>&1 &
    timeout 150 python3 -c "import sys; from pathlib import Path; from kernels.load import build; build(Path(sys.argv[1]))" \
      "$f" > /dev/null 2>&1 &
  done
  wait
  for f in "$@"; do tail -n 8 "/tmp/compile_$(basename "$f" .cu).txt" | tee -a "$OUT/log.txt"; done
}

sanitize() {  # KERNEL
  lib=$(python3 -c "import sys; from pathlib import Path; from kernels.load import build; print(build(Path(sys.argv[1])))" "$1")
  : > "$OUT/sanitizer.txt"
  for tool in memcheck racecheck synccheck; do
    t=$(cap 90 5)
    if [ "$t" -lt 20 ]; then log "sanitizer $tool skipped: ${t}s left"; continue; fi
    timeout "$t" compute-sanitizer --tool "$tool" python3 $CHECK "$lib" --quick > /tmp/san_$tool.txt 2>&1
    log "sanitizer $tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|checked' /tmp/san_$tool.txt | tr '\n' ' ')"
    { echo "== $tool"; head -c 200000 /tmp/san_$tool.txt; } >> "$OUT/sanitizer.txt"
  done
}

evaluate() {  # NAME SCENARIOS BASELINES KERNEL NOTE CAP RESERVE
  t=$(cap "$6" "$7")
  if [ "$t" -lt 40 ]; then log "$1 skipped: ${t}s left"; return; fi
  timeout "$t" python3 -m gpu_harness eval gemm_bias_gelu "$4" --scenarios "$2" --baselines "$3" --timeout $((t - 10)) \
    --json "$OUT/$1.json" --trace "$OUT/trace.jsonl" --note "$5${QUESTION:+; question $QUESTION}" > "$OUT/$1.txt" 2>&1
  log "$1 rc=$? (timeout ${t}s)"; grep -E '^m[0-9]|CORRECT|WRONG|FAIL|vs ' "$OUT/$1.txt" | tail -n 30 | tee -a "$OUT/log.txt"
}

check() {  # KERNEL [--quick] CAP: check_shapes.py, its summary and failures into log.txt; returns its exit code
  t=$(cap "$3")
  timeout "$t" python3 $CHECK "$1" $2 >> "$OUT/check.txt" 2>&1
  rc=$?
  log "check_shapes $2 rc=$rc (timeout ${t}s; 124: it ran out, a hang?): $(tail -n 1 "$OUT/check.txt")"
  grep FAIL "$OUT/check.txt" | head -20 | tee -a "$OUT/log.txt"
  return $rc
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$OUT/log.txt"
log "mode $MODE kernel $K sha256 $(sha256sum "$K" | cut -c1-16)"
screen_run() {  # the screen of K's VARIANTS (c0: K as it is); CHECK_C0=1: c0's full check first
  mkdir -p /tmp/screen; : > /tmp/screen/rank.txt
  files=()
  for i in "${!VARIANTS[@]}"; do
    f=/tmp/screen/c$i.cu
    { IFS='|'; for d in ${VARIANTS[$i]}; do echo "#define $d"; done; unset IFS; cat "$K"; } > "$f"
    files+=("$f")
  done
  prebuild "${files[@]}"
  hang=0  # c0's quick check ran out (a hang): only the cooperative variants ("KSEEK_PINGPONG 0") are screened
  if [ "$CHECK_C0" = 1 ]; then
    check /tmp/screen/c0.cu --quick 60
    if [ $? -eq 124 ]; then hang=1; log "c0 hangs: screening only the variants with KSEEK_PINGPONG 0";
    else check /tmp/screen/c0.cu "" 120; fi
  fi
  for i in "${!files[@]}"; do
    f=${files[$i]}
    name=$(basename "$f" .cu)
    defs=${VARIANTS[$i]//|/, }
    if [ $hang -eq 1 ] && [[ "${VARIANTS[$i]}" != *"KSEEK_PINGPONG 0"* ]]; then log "$name skipped (ping-pong)"; continue; fi
    t=$(cap 60)
    if [ "$t" -lt 30 ]; then log "$name skipped: ${t}s left"; continue; fi
    timeout "$t" python3 $CHECK "$f" --quick > /tmp/screen/$name.check 2>&1
    chk=$?
    if [ $chk -eq 124 ]; then log "$name: its quick check ran out (a hang?), no eval"; continue; fi
    t=$(cap 100)
    if [ "$t" -lt 40 ]; then log "$name eval skipped: ${t}s left"; continue; fi
    timeout "$t" python3 -m gpu_harness eval gemm_bias_gelu "$f" --scenarios $SUBSET --baselines eager,epilogue \
      --timeout $((t - 10)) --trace "$OUT/trace.jsonl" --note "screen $name: ${defs:-defaults}${QUESTION:+; question $QUESTION}" > /tmp/screen/$name.txt 2>&1
    gm=$(grep -o 'vs eager: [0-9.]*x' /tmp/screen/$name.txt | head -1 | grep -o '[0-9.]*[0-9]')
    [ $chk -eq 0 ] && grep -q 'CORRECT' /tmp/screen/$name.txt && echo "${gm:-0} $name ${defs:-defaults}" >> /tmp/screen/rank.txt
    log "$name ${defs:-defaults} check_rc=$chk $(tail -n 1 /tmp/screen/$name.txt | cut -c1-200)"
    { echo "== $name ${defs:-defaults}"; tail -n 1 /tmp/screen/$name.check; grep -E '^m[0-9]' /tmp/screen/$name.txt; } >> "$OUT/screen.txt"
  done
  sort -rn /tmp/screen/rank.txt | tee "$OUT/rank.txt" | tee -a "$OUT/log.txt"
}

# ncu KERNEL... -- MxNxK...: Nsight Compute's sections for each kernel on each shape, the lines worth reading in ncu.txt
ncu_run() {
  kernels=(); shapes=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do kernels+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  shapes=("$@")
  ours=(); for k in "${kernels[@]}"; do [ "${k#cublas:}" = "$k" ] && ours+=("$k"); done
  [ ${#ours[@]} -gt 0 ] && prebuild "${ours[@]}"
  for k in "${kernels[@]}"; do
    for shape in "${shapes[@]}"; do
      t=$(cap 90 5)
      if [ "$t" -lt 30 ]; then log "ncu $(basename "$k") $shape skipped: ${t}s left"; continue; fi
      if [ "${k#cublas:}" != "$k" ]; then  # cublas:linear or cublas:epilogue, the library's own kernel
        regex='regex:nvjet|gemm|sm90|cutlass'; cmd=(lab/gemm_bias_gelu/tools/library_kernels.py --run "${k#cublas:}" "$shape" 2)
      else
        regex='regex:gemm_wgmma|gemm_skinny|gemm_small'; cmd=(lab/gemm_bias_gelu/tools/run_shape.py "$k" ${shape//x/ } 2)
      fi
      timeout "$t" ncu --clock-control none --section SpeedOfLight --section ComputeWorkloadAnalysis \
        --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
        --section SchedulerStats --metrics "regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio" -k "$regex" --launch-skip 1 --launch-count 1 python3 "${cmd[@]}" > /tmp/ncu_one.txt 2>&1
      rc=$?
      { echo "== $(basename "$k") $shape rc=$rc"
        grep -E "nvjet|sm90|cutlass|gemm_wgmma|Duration|Elapsed Cycles|SM Busy|Compute \(SM\) Throughput|Memory Throughput|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Issue Slots Busy|Executed Ipc Active|Warp Cycles Per Issued|Avg. Active Threads|Achieved Occupancy|Grid Size|Cluster Size|Registers Per|Dynamic Shared|Mem Busy|Max Bandwidth|L2 Hit Rate|Stall|stalled|==ERR|ERROR" /tmp/ncu_one.txt | head -60
      } >> "$OUT/ncu.txt"
      { echo "== $(basename "$k") $shape rc=$rc"; cat /tmp/ncu_one.txt; } >> "$OUT/ncu_full.txt"
      log "ncu $(basename "$k") $shape rc=$rc"
    done
  done
}

case "$MODE" in
ncu)
  shift
  if [ "${SCREEN:-0}" = 1 ]; then K=$1; CHECK_C0=1 screen_run; fi
  ncu_run "$@" ;;
dev)
  prebuild "$K"
  check "$K" --quick 90
  rc=$?
  if [ $rc -eq 124 ]; then log "stopping: the quick check ran out of time (a hang: barrier phases?)"; exit 1; fi
  check "$K" "" 150
  if [ $? -eq 124 ]; then  # a shape-specific hang: the harness would wait out its call timeouts on it too
    log "the full check ran out of time (a hang on some shape?): no evaluation, sanitizers only"; sanitize "$K"; exit 1
  fi
  evaluate eval_quick quick best_library,naive "$K" "dev: $(basename "$K") quick set, every library" 100 330
  evaluate eval_full full best_library,naive "$K" "dev: $(basename "$K") full set, every library" 330 90
  sanitize "$K" ;;
full)
  prebuild "$K"
  evaluate eval_full full best_library,naive "$K" "$(basename "$K") full set, every library" 560 0 ;;
san)
  prebuild "$K"
  sanitize "$K" ;;
screen)
  CHECK_C0=${CHECK_C0:-1} screen_run ;;  # CHECK_C0=0: no full check of c0 (it ran in an earlier call)
round)
  prebuild "$K"
  check "$K" --quick 60
  if [ $? -eq 124 ]; then log "stopping: the quick check ran out of time (a hang?)"; exit 1; fi
  check "$K" "" 120
  # the full set before the rest: its reserve is the sanitizers' (~90 s), not the screen's, which takes what is
  # left (session 50's v15 round, BUDGET=200, skipped its full set to keep 200 s for both and ran the screen)
  evaluate eval_full full best_library,naive "$K" "round: $(basename "$K") full set, every library" 200 100
  sanitize "$K"
  CHECK_C0=0 screen_run ;;
release)
  # K as the released file in this copy of the tree (kernels/gemm_bias_gelu/gemm_bias_gelu.cu; the harness's
  # kernel_sha256 is the file's), then the release's evidence in one call: the full check, the full set against
  # every library (eval_full.json: the results release.toml cites), the sanitizers, the kernels.load GPU tests
  [ -n "${2:-}" ] || { echo "release: name the kernel file to release (K has no default here)"; exit 2; }
  R=kernels/gemm_bias_gelu/gemm_bias_gelu.cu
  [ "$K" -ef "$R" ] || cp "$K" "$R"
  log "release candidate: $(basename "$K") sha256 $(sha256sum "$R" | cut -c1-64)"
  prebuild "$R"
  check "$R" --quick 60
  if [ $? -eq 124 ]; then log "stopping: the quick check ran out of time (a hang?)"; exit 1; fi
  check "$R" "" 120
  evaluate eval_full full best_library,naive "$R" "release candidate $(basename "$K"): full set, every library" 200 150
  sanitize "$R"
  t=$(cap 90)
  timeout "$t" python3 -m pytest -q -p no:cacheprovider -p no:randomly -m gpu tests/harness/test_gemm_bias_gelu_load.py \
    > "$OUT/pytest_gpu.txt" 2>&1
  log "kernels.load GPU tests rc=$? (timeout ${t}s): $(tail -n 1 "$OUT/pytest_gpu.txt")" ;;
*)
  echo "usage: bash lab/gemm_bias_gelu/device_run.sh dev|screen|round|full|san|release [KERNEL.cu] | ncu KERNEL.cu... -- MxNxK..."; exit 2 ;;
esac
log "done in $(($(date +%s) - T0))s"
