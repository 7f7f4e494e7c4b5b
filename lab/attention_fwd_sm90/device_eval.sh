#!/bin/bash
# One device call: check the kernel with bench.py, then evaluate it through the harness on the full grid.
# Usage (repo root, GPU machine): NOTE="question / prediction" bash lab/attention_fwd_sm90/device_eval.sh KERNEL.cu [FALLBACK.cu]
# NOTE's "question KEY" words must name keys of questionbank/bank.toml (lab/tools/bank_key.py refuses others).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# a note's "question KEY" whose KEY the bank lacks would show nothing on the dashboard: refused before any work
if [ -n "${NOTE:-}" ]; then python3 "$(dirname "$0")/../tools/bank_key.py" --note "$NOTE" || exit 2; fi
cd "$(dirname "$0")/../.."
KERNEL=$1; FALLBACK=${2:-}
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
LIB=$(python3 -c "from kernels.load import build; print(build('$KERNEL'))" 2> "$OUT/build.log") || { cat "$OUT/build.log"; exit 1; }
timeout ${CHECK_TIMEOUT:-150} python3 lab/attention_fwd_sm90/bench.py check --lib "$LIB" --variant 0 --out "$OUT/check.json" > "$OUT/check.log" 2>&1
rc=$?; echo "check rc=$rc"; tail -1 "$OUT/check.log"
# bench.py check ends "check v0: N/M ok"; pass only when every shape is ok (N = M), whatever the shape count.
if [ $rc -ne 0 ] || ! tail -1 "$OUT/check.log" | grep -Eq "check v0: ([0-9]+)/\1 ok$"; then
  grep "^BAD" "$OUT/check.log" | head -5
  [ -n "$FALLBACK" ] || exit 1
  echo "falling back to $FALLBACK"; KERNEL=$FALLBACK
fi
timeout ${EVAL_TIMEOUT:-420} python3 -m gpu_harness eval attention_fwd "$KERNEL" --scenarios ${SCENARIOS:-full} \
  --baselines ${BASELINES:-flash,cudnn} --json "$OUT/eval.json" --trace "$OUT/trace.jsonl" --note "${NOTE:-}" \
  > "$OUT/eval_table.txt" 2> "$OUT/eval_progress.log"
echo "eval rc=$?"; tail -4 "$OUT/eval_progress.log"; tail -25 "$OUT/eval_table.txt"
