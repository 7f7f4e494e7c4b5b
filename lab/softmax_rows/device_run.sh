#!/bin/bash
# softmax_rows on the GPU machine (issue 35). Run from the repository root (or a copy of it such as .hw):
#   bash lab/softmax_rows/device_run.sh dev       correctness (check_shapes.py), a full eval without QuACK,
#                                                 variants on the large scenarios, compute-sanitizer
#   bash lab/softmax_rows/device_run.sh release   the full eval with every library (QuACK installed), sanitizer
# Files land in $OUT (at most 8 come back from the device tool, so logs are grouped).
set -u
export PYTHONUNBUFFERED=1
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
K=kernels/softmax_rows/softmax_rows.cu
LARGE=r8192_c8192,r1024_c32000,r2048_c4096,r1024_c8192,r512_c16384,r256_c32768,r64_c65536,r1_c65536,r16384_c128,r65536_c31
log() { echo "$@" | tee -a "$OUT/log.txt"; }

sanitize() {
  lib=$(python3 -c "from kernels.load import build, SOFTMAX_ROWS; print(build(SOFTMAX_ROWS))")
  for tool in memcheck racecheck synccheck; do
    timeout 240 compute-sanitizer --tool "$tool" --kernel-name 'regex:softmax_(subwarp|cluster|online)' \
      python3 lab/softmax_rows/tools/check_shapes.py "$lib" --quick > "$OUT/san_$tool.txt" 2>&1
    log "sanitizer $tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|checked' "$OUT/san_$tool.txt" | tr '\n' ' ')"
  done
  cat "$OUT"/san_*.txt > "$OUT/sanitizer.txt"; rm -f "$OUT"/san_*.txt
}

evaluate() {  # NAME SCENARIOS BASELINES KERNEL NOTE
  timeout 280 python3 -m gpu_harness eval softmax_rows "$4" --scenarios "$2" --baselines "$3" --timeout 270 \
    --json "$OUT/$1.json" --trace "$OUT/trace.jsonl" --note "$5" > "$OUT/$1.txt" 2> "$OUT/$1.log"
  log "$1 rc=$?"; tail -n 40 "$OUT/$1.txt" | tee -a "$OUT/log.txt"
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv | tee -a "$OUT/log.txt"
timeout 200 python3 lab/softmax_rows/tools/check_shapes.py > "$OUT/check.txt" 2>&1
log "check_shapes rc=$?: $(tail -n 1 "$OUT/check.txt")"; grep FAIL "$OUT/check.txt" | head -20 | tee -a "$OUT/log.txt"

if [ "${1:-dev}" = dev ]; then
  evaluate eval_dev full eager,compile,naive $K "v1: row in registers (lanes / CTA clusters / two-pass); does one read per element reach QuACK's 3.9 TB/s at 8192x8192?"
  mkdir -p /tmp/variants
  for v in "base" "l2_256B:-DKSEEK_LOAD_HINT=1" "store_cs:-DKSEEK_STORE_CS=1" "cta512:-DKSEEK_CTA_TARGET=512" "cta1024:-DKSEEK_CTA_TARGET=1024"; do
    name=${v%%:*}; defs=${v#*:}; f=/tmp/variants/$name.cu; : > "$f"
    if [ "$name" != base ]; then for d in $defs; do d=${d#-D}; echo "#define ${d%%=*} ${d#*=}" >> "$f"; done; fi
    cat $K >> "$f"
    timeout 120 python3 -m gpu_harness eval softmax_rows "$f" --scenarios $LARGE --baselines eager --timeout 110 \
      > /tmp/variants/$name.txt 2>&1
    echo "== $name ($defs)" >> "$OUT/variants.txt"; cat /tmp/variants/$name.txt >> "$OUT/variants.txt"
    log "variant $name: $(tail -n 1 /tmp/variants/$name.txt | cut -c1-200)"
  done
  sanitize
else
  evaluate eval_full full best_library,naive $K "release candidate: full set against every library (QuACK installed)"
  sanitize
fi
