#!/bin/bash
# softmax_rows on the GPU machine (issue 35). Run from the repository root (or a copy of it such as .hw):
#   bash lab/softmax_rows/device_run.sh dev            check_shapes.py, a full eval without QuACK, sanitizers
#   bash lab/softmax_rows/device_run.sh screen CANDS   each CANDS/*.cu: quick shape check + eval of the large and
#                                                      mid scenarios against eager; ranked in /tmp/screen/rank.txt
#   bash lab/softmax_rows/device_run.sh release [K]    the best screened candidate (else K, else the released
#                                                      file): full check, full eval against every library
#                                                      (QuACK installed, PYTHONPATH set), compute-sanitizer
#   bash lab/softmax_rows/device_run.sh ncu K RxC...    Nsight Compute's main sections for K on each shape (K quack:
#                                                      QuACK's, its parts in /tmp/bl or /tmp/bw as for release)
#                                                      (NCU_SASS=1: and the per-instruction stall samples, sass_*.csv.gz)
# QUESTION=KEY (a key of questionbank/bank.toml; another is refused, lab/tools/bank_key.py) ends every evaluation's note with "; question KEY": the kernel's
# development run then shows that bank question at the step it moved.
# Files land in $OUT (at most 8 come back from the device tool, so logs are grouped).
set -u
export PYTHONUNBUFFERED=1
# a QUESTION that is not a key of questionbank/bank.toml would end every note and show nothing on the dashboard
if [ -n "${QUESTION:-}" ]; then python3 "$(dirname "$0")/../tools/bank_key.py" "$QUESTION" || exit 2; fi
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
K=kernels/softmax_rows/softmax_rows.cu
SUBSET=${SUBSET:-r8192_c8192,r1024_c32000,r2048_c4096,r1024_c8192,r512_c16384,r256_c32768,r64_c65536,r1_c65536,r16384_c128,r65536_c31,r8192_c512,r4096_c1024,r4096_c2048,r1000_c1000}  # the screen's scenarios (SUBSET=... to screen others)
log() { echo "$@" | tee -a "$OUT/log.txt"; }
t0=$(date +%s)  # the call's start: screen's deadline counts from here

sanitize() {  # KERNEL
  lib=$(python3 -c "import sys; from pathlib import Path; from kernels.load import build; print(build(Path(sys.argv[1])))" "$1")
  for tool in memcheck racecheck synccheck; do
    timeout 90 compute-sanitizer --tool "$tool" python3 lab/softmax_rows/tools/check_shapes.py "$lib" --quick \
      > "$OUT/san_$tool.txt" 2>&1
    log "sanitizer $tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|checked' "$OUT/san_$tool.txt" | tr '\n' ' ')"
  done
  cat "$OUT"/san_*.txt > "$OUT/sanitizer.txt"; rm -f "$OUT"/san_*.txt
}

evaluate() {  # NAME SCENARIOS BASELINES KERNEL NOTE
  timeout 280 python3 -m gpu_harness eval softmax_rows "$4" --scenarios "$2" --baselines "$3" --timeout 270 \
    --json "$OUT/$1.json" --trace "$OUT/trace.jsonl" --note "$5${QUESTION:+; question $QUESTION}" > "$OUT/$1.txt" 2> "$OUT/$1.log"
  log "$1 rc=$?"; tail -n 40 "$OUT/$1.txt" | tee -a "$OUT/log.txt"
}

timeout -k 5 30 nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$OUT/log.txt"
case "${1:-dev}" in
dev)
  timeout 300 python3 lab/softmax_rows/tools/check_shapes.py > "$OUT/check.txt" 2>&1
  log "check_shapes rc=$?: $(tail -n 1 "$OUT/check.txt")"; grep FAIL "$OUT/check.txt" | head -20 | tee -a "$OUT/log.txt"
  evaluate eval_dev full eager,compile,naive $K "dev: full set against torch's paths (QuACK not installed)"
  sanitize $K ;;
screen)  # every step's timeout is cut to what is left of SCREEN_BUDGET s (540: one device call ends at 600 s, and
         # then nothing comes back); no candidate starts after SCREEN_STOP s (480); each candidate's result line
         # goes to $OUT/screen.txt and $OUT/log.txt as soon as it is known, so a killed call still returns them
  mkdir -p /tmp/screen; : > /tmp/screen/rank.txt
  budget=${SCREEN_BUDGET:-540}; stop=${SCREEN_STOP:-480}
  gone() { echo $(( $(date +%s) - t0 )); }
  bound() { l=$(( budget - $(gone) - 5 )); [ "$1" -lt "$l" ] && echo "$1" || echo "$l"; }  # NOMINAL, or what is left (less the -k 5)
  n=$(ls "$2"/*.cu | wc -l)
  log "screen: $n candidates, $(( n * 180 )) s of nominal timeouts, deadline ${budget} s (none started after ${stop} s)"
  for f in "$2"/*.cu; do
    name=$(basename "$f" .cu)
    if [ "$(gone)" -ge "$stop" ] || [ "$(bound 60)" -lt 30 ]; then
      log "$name skipped: $(gone) s of the screen gone (deadline ${budget} s, none started after ${stop} s)"
      echo "== $name skipped at $(gone) s (screen deadline)" >> "$OUT/screen.txt"; continue
    fi
    timeout -k 5 "$(bound 60)" python3 lab/softmax_rows/tools/check_shapes.py "$f" --quick > /tmp/screen/$name.check 2>&1
    chk=$?
    te=$(bound 120)
    if [ $chk -eq 124 ] || [ $chk -eq 137 ]; then  # the quick check hung: its eval would hang too (120 s lost)
      echo "eval skipped: the quick check timed out" > /tmp/screen/$name.txt; ev=skipped
    elif [ "$te" -ge 30 ]; then
      timeout -k 5 "$te" python3 -m gpu_harness eval softmax_rows "$f" --scenarios $SUBSET --baselines eager --timeout $(( te - 10 )) \
        --trace "$OUT/trace.jsonl" --note "screen $name: $(grep '^#define KSEEK' "$f" | tr '\n' ' ')${QUESTION:+; question $QUESTION}" > /tmp/screen/$name.txt 2>&1
      ev=$?
    else
      echo "eval skipped: $te s left of the screen's ${budget} s" > /tmp/screen/$name.txt; ev=skipped
    fi
    gm=$(grep -o 'vs eager: [0-9.]*x' /tmp/screen/$name.txt | head -1 | grep -o '[0-9.]*[0-9]')
    [ $chk -eq 0 ] && grep -q 'CORRECT' /tmp/screen/$name.txt && echo "${gm:-0} $f" >> /tmp/screen/rank.txt
    line="$name at $(gone) s: check_rc=$chk ($(tail -n 1 /tmp/screen/$name.check | cut -c1-100)) eval_rc=$ev gm=${gm:-none} $(tail -n 1 /tmp/screen/$name.txt | cut -c1-160)"
    log "$line"
    { echo "== $line"; grep '^#define KSEEK' "$f"; grep -E '^r[0-9]' /tmp/screen/$name.txt; } >> "$OUT/screen.txt"
  done
  sort -rn /tmp/screen/rank.txt | tee -a "$OUT/log.txt" ;;
ncu)  # KERNEL ROWSxCOLS...: a few Nsight Compute sections of each shape's second call, summed up in ncu.txt
  # (KERNEL quack: QuACK's softmax, its parts in /tmp/bl or /tmp/bw as for release; its y.copy_ is not a softmax kernel)
  k=$2; shift 2
  if [ "$k" = quack ]; then
    source "$(dirname "$0")/../tools/unpack_baselines.sh" 2>> "$OUT/log.txt" || log "no library baselines (log.txt says why)"
  fi
  # NCU_SASS=1: also the per-instruction stall samples (SourceCounters), each shape's SASS page as
  # $OUT/sass_<kernel>_<shape>.csv.gz, which lab/attention_fwd_sm90/tools/stall_classes.py reads
  sass=(); [ "${NCU_SASS:-0}" = 1 ] && sass=(--section SourceCounters -o /tmp/ncu_rep -f)
  for shape in "$@"; do
    timeout 120 ncu --clock-control none --section SpeedOfLight --section Occupancy --section LaunchStats \
      --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats "${sass[@]}" -k regex:softmax --launch-skip 1 --launch-count 1 \
      python3 lab/softmax_rows/tools/run_shapes.py "$k" 2 "$shape" > /tmp/ncu_one.txt 2>&1
    rc=$?
    if [ ${#sass[@]} -gt 0 ]; then  # with -o the sections go to the report: print them from it
      ncu --import /tmp/ncu_rep.ncu-rep --page details >> /tmp/ncu_one.txt 2>&1
      ncu --import /tmp/ncu_rep.ncu-rep --page source --csv --print-source sass 2> /dev/null |
        gzip -9 > "$OUT/sass_$(basename "$k" .cu)_$shape.csv.gz"
    fi
    { echo "== $(basename "$k") $shape rc=$rc"; grep -E "softmax_|Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Waves Per SM|Grid Size|Block Size|Dynamic Shared|Mem Busy|Max Bandwidth|Cluster Size|Elapsed Cycles|Issue Slots Busy|Warp Cycles Per Issued|Eligible Warps|No Eligible|==ERR|ERROR" /tmp/ncu_one.txt | head -50; } >> "$OUT/ncu.txt"
    { echo "== $(basename "$k") $shape"; cat /tmp/ncu_one.txt; } >> "$OUT/ncu_full.txt"  # the stall reasons, in full
  done
  tail -n 400 "$OUT/ncu.txt" | cut -c1-150 ;;
release)
  # the baselines from /tmp/bl (lab/tools/pack_baselines.sh's parts) or /tmp/bw (../shared/tools/baseline-wheels.sh's)
  source "$(dirname "$0")/../tools/unpack_baselines.sh" 2>> "$OUT/log.txt" || log "no library baselines (log.txt says why)"
  python3 -c "import quack.softmax; print('quack imports')" 2>&1 | tail -n 1 | tee -a "$OUT/log.txt"
  cands=$( (sort -rn /tmp/screen/rank.txt 2>/dev/null | awk '{print $2}'; echo "${2:-$K}") )
  [ -f /tmp/screen/rank.txt ] && cp /tmp/screen/rank.txt "$OUT/rank.txt"
  for f in $cands; do
    timeout 300 python3 lab/softmax_rows/tools/check_shapes.py "$f" > "$OUT/check.txt" 2>&1
    rc=$?; log "check_shapes $f rc=$rc: $(tail -n 1 "$OUT/check.txt")"
    [ $rc -eq 0 ] && break
  done
  log "release candidate: $f sha256 $(sha256sum "$f" | cut -c1-64)"
  cp "$f" "$OUT/candidate.cu"
  evaluate eval_full full best_library,naive "$f" "release candidate $(basename "$f"): full set against every library (QuACK installed)"
  sanitize "$f" ;;
esac
