#!/bin/bash
# rmsnorm on the GPU machine (issue 35). Run from the repository root:
#   bash lab/rmsnorm/device_run.sh dev             check_shapes.py, a full eval against torch's paths, the knob
#                                                  variants on the large and mid scenarios, sanitizers
#   bash lab/rmsnorm/device_run.sh screen [MAKER]  the files MAKER writes (default make_candidates.sh): quick shape check and the subset
#                                                  against torch's fused path; ranked in /tmp/screen/rank.txt
#   bash lab/rmsnorm/device_run.sh release [K]     the best screened candidate (else K, else the released file):
#                                                  full check, full eval against every library (QuACK from
#                                                  lab/tools/pack_baselines.sh's parts in /tmp/bl, or
#                                                  ../shared/tools/baseline-wheels.sh's in /tmp/bw: unpack_baselines.sh),
#                                                  sanitizers; the candidate comes back as candidate.cu
#   bash lab/rmsnorm/device_run.sh ncu [K] RxH...  Nsight Compute's main sections for K (default the released file)
#                                                  on each shape's second call, the lines worth reading in ncu.txt
# Files land in $OUT (at most 8 come back from the device tool, so logs are grouped).
# QUESTION=KEY (a key of questionbank/bank.toml; another is refused, lab/tools/bank_key.py) ends every evaluation's note with "; question KEY": the kernel's
# development run then shows that bank question at the step it moved.
set -u
export PYTHONUNBUFFERED=1
# a QUESTION that is not a key of questionbank/bank.toml would end every note and show nothing on the dashboard
if [ -n "${QUESTION:-}" ]; then python3 "$(dirname "$0")/../tools/bank_key.py" "$QUESTION" || exit 2; fi
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
K=kernels/rmsnorm/rmsnorm.cu
SUBSET=r32768_h4096,r16384_h8192,r4096_h4096,r4096_h8192,r4096_h1024,r4096_h2048,r4096_h5120,r65536_h128,r4096_h512,r2048_h4095,r4097_h4097,r1000_h1000
log() { echo "$@" | tee -a "$OUT/log.txt"; }

sanitize() {  # KERNEL
  lib=$(python3 -c "import sys; from pathlib import Path; from kernels.load import build; print(build(Path(sys.argv[1])))" "$1")
  for tool in memcheck racecheck synccheck; do
    timeout 120 compute-sanitizer --tool "$tool" python3 lab/rmsnorm/tools/check_shapes.py "$lib" --quick \
      > "$OUT/san_$tool.txt" 2>&1
    log "sanitizer $tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|checked' "$OUT/san_$tool.txt" | tr '\n' ' ')"
  done
  cat "$OUT"/san_*.txt > "$OUT/sanitizer.txt"; rm -f "$OUT"/san_*.txt
}

# A candidate's knobs: the #define lines put before its source (make_v3_candidates.sh), else every KSEEK knob's
# line (make_candidates.sh edits them in place)
knobs_of() {
  local lead; lead=$(awk '/^#define KSEEK/ { print; next } { exit }' "$1" | tr '\n' ' ')
  [ -n "$lead" ] && echo "$lead" || grep '^#define KSEEK' "$1" | tr '\n' ' '
}

evaluate() {  # NAME SCENARIOS BASELINES KERNEL NOTE
  timeout 280 python3 -m gpu_harness eval rmsnorm "$4" --scenarios "$2" --baselines "$3" --timeout 270 \
    --json "$OUT/$1.json" --trace "$OUT/trace.jsonl" --note "$5${QUESTION:+; question $QUESTION}" > "$OUT/$1.txt" 2> "$OUT/$1.log"
  log "$1 rc=$?"; tail -n 30 "$OUT/$1.txt" | tee -a "$OUT/log.txt"
}

variants() {  # each knob setting as its own file, on the subset against torch's fused path
  mkdir -p /tmp/variants
  for v in "KSEEK_BLOCK_VPT 2" "KSEEK_BLOCK_VPT 8" "KSEEK_STORE_CS 1"; do
    name=$(echo "$v" | tr ' ' '_')
    { echo "#define $v"; cat $K; } > /tmp/variants/$name.cu
    timeout 120 python3 -m gpu_harness eval rmsnorm /tmp/variants/$name.cu --scenarios $SUBSET --baselines functional \
      --timeout 110 --trace "$OUT/trace.jsonl" --note "variant $v" > /tmp/variants/$name.txt 2>&1
    { echo "== $v"; grep -E '^r[0-9]' /tmp/variants/$name.txt; tail -n 1 /tmp/variants/$name.txt; } >> "$OUT/variants.txt"
  done
  timeout 120 python3 -m gpu_harness eval rmsnorm $K --scenarios $SUBSET --baselines functional --timeout 110 \
    --trace "$OUT/trace.jsonl" --note "variant: the defaults" > /tmp/variants/default.txt 2>&1
  { echo "== defaults"; grep -E '^r[0-9]' /tmp/variants/default.txt; tail -n 1 /tmp/variants/default.txt; } >> "$OUT/variants.txt"
  grep -E '^==|vs functional' "$OUT/variants.txt" | tee -a "$OUT/log.txt"
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$OUT/log.txt"
case "${1:-dev}" in
ncu)
  shift
  k=$K; case "${1:-}" in *.cu) k=$1; shift ;; esac
  for shape in "${@:-32768x4096 16384x8192 4096x512}"; do
    for one in $shape; do
      timeout 120 ncu --clock-control none --section SpeedOfLight --section MemoryWorkloadAnalysis \
        --section WarpStateStats --section Occupancy --section LaunchStats -k regex:rmsnorm --launch-skip 1 \
        --launch-count 1 python3 lab/rmsnorm/tools/run_shapes.py "$k" 2 "$one" > /tmp/ncu_one.txt 2>&1
      rc=$?
      { echo "== $(basename "$k") $one rc=$rc"
        grep -E "rmsnorm|Duration|Elapsed Cycles|DRAM Throughput|Memory Throughput|L2 Cache Throughput|L1/TEX Cache Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Waves Per SM|Grid Size|Block Size|Mem Busy|Max Bandwidth|Warp Cycles Per Issued|Stall|max abs error|==ERR|ERROR" /tmp/ncu_one.txt | head -60
      } >> "$OUT/ncu.txt"
      log "ncu $(basename "$k") $one rc=$rc"
    done
  done ;;
dev)
  timeout 200 python3 lab/rmsnorm/tools/check_shapes.py > "$OUT/check.txt" 2>&1
  log "check_shapes rc=$?: $(tail -n 1 "$OUT/check.txt")"; grep FAIL "$OUT/check.txt" | head -20 | tee -a "$OUT/log.txt"
  evaluate eval_dev full eager,compile,functional,naive $K "dev: full set against torch's paths (QuACK not installed)"
  variants
  sanitize $K ;;
screen)
  bash "${2:-lab/rmsnorm/make_candidates.sh}" /tmp/screen; : > /tmp/screen/rank.txt
  for f in /tmp/screen/c*.cu; do
    name=$(basename "$f" .cu)
    timeout 90 python3 lab/rmsnorm/tools/check_shapes.py "$f" --quick > /tmp/screen/$name.check 2>&1
    chk=$?
    timeout 120 python3 -m gpu_harness eval rmsnorm "$f" --scenarios $SUBSET --baselines functional --timeout 110 \
      --trace "$OUT/trace.jsonl" --note "screen $name: $(knobs_of "$f")${QUESTION:+; question $QUESTION}" > /tmp/screen/$name.txt 2>&1
    gm=$(grep -o 'vs functional: [0-9.]*x' /tmp/screen/$name.txt | head -1 | grep -o '[0-9.]*[0-9]')
    [ $chk -eq 0 ] && grep -q 'CORRECT' /tmp/screen/$name.txt && echo "${gm:-0} $f" >> /tmp/screen/rank.txt
    log "$name check_rc=$chk $(tail -n 1 /tmp/screen/$name.txt | cut -c1-160)"
    { echo "== $name"; grep '^#define KSEEK' "$f"; tail -n 1 /tmp/screen/$name.check; grep -E '^r[0-9]' /tmp/screen/$name.txt; } >> "$OUT/screen.txt"
  done
  sort -rn /tmp/screen/rank.txt | tee -a "$OUT/log.txt" ;;
release)
  # the baselines from /tmp/bl (lab/tools/pack_baselines.sh's parts) or /tmp/bw (../shared/tools/baseline-wheels.sh's)
  source "$(dirname "$0")/../tools/unpack_baselines.sh" 2>> "$OUT/log.txt" || log "no library baselines (log.txt says why)"
  python3 -c "import quack.rmsnorm; print('quack imports')" 2>&1 | tail -n 1 | tee -a "$OUT/log.txt"
  cands=$( (sort -rn /tmp/screen/rank.txt 2>/dev/null | awk '{print $2}'; echo "${2:-$K}") )
  [ -f /tmp/screen/rank.txt ] && cp /tmp/screen/rank.txt "$OUT/rank.txt"
  for f in $cands; do
    timeout 200 python3 lab/rmsnorm/tools/check_shapes.py "$f" > "$OUT/check.txt" 2>&1
    rc=$?; log "check_shapes $f rc=$rc: $(tail -n 1 "$OUT/check.txt")"
    [ $rc -eq 0 ] && break
  done
  log "release candidate: $f sha256 $(sha256sum "$f" | cut -c1-64)"
  cp "$f" "$OUT/candidate.cu"
  evaluate eval_full full best_library,naive "$f" "release candidate $(basename "$f"): full set against every library (QuACK installed)"
  sanitize "$f" ;;
esac
