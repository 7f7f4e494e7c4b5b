#!/bin/bash
# One device call: build several variants of the kernel, check the candidates with bench.py check, time all of
# them against cuDNN on the same inputs (bench.py compare), then optionally evaluate one source through the
# harness's full grid and run compute-sanitizer on one build.
# Usage (repo root, GPU machine):
#   BUILDS="v5=kernels/attention_fwd_sm90/attention_fwd_sm90.cu v6=path/v6.cu:-DKSEEK_PINGPONG=0" \
#   CHECK="v6" GRID=harness DTYPES=bf16 [EVAL_KERNEL=path.cu NOTE="question / prediction"] [SANITIZE=v6] \
#   bash lab/attention_fwd_sm90/device_compare.sh
# Each build is label=source[:flag[:flag...]]; the first is the base the others are compared with.
# NOTE's "question KEY" words must name keys of questionbank/bank.toml (lab/tools/bank_key.py refuses others).
# At most 8 files come back from $OUT: gpu.txt, check_<label>.log, compare.{log,json}, eval.json,
# eval_table.txt, trace.jsonl, sanitize.log.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
# a note's "question KEY" whose KEY the bank lacks would show nothing on the dashboard: refused before any work
if [ -n "${NOTE:-}" ]; then python3 "$(dirname "$0")/../tools/bank_key.py" --note "$NOTE" || exit 2; fi
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
declare -A LIB
LIBS=""
# Builds run side by side (nvcc is single-threaded; the machine has 16 cores), each into its own log.
t0=$(date +%s)
for b in $BUILDS; do
  label=${b%%=*}; rest=${b#*=}; src=${rest%%:*}; flags=""
  [[ $rest == *:* ]] && flags=$(echo "${rest#*:}" | tr ':' ' ')
  python3 -c "import sys; from kernels.load import build; print(build(sys.argv[1], extra=tuple(sys.argv[2:])))" \
    "$src" $flags > "/tmp/build_$label.out" 2> "/tmp/build_$label.log" &
done
wait
for b in $BUILDS; do
  label=${b%%=*}
  lib=$(tail -1 "/tmp/build_$label.out")
  [ -n "$lib" ] || { echo "build $label failed"; tail -30 "/tmp/build_$label.log"; exit 1; }
  LIB[$label]=$lib; LIBS="$LIBS,$label=$lib"
done
echo "built ${!LIB[*]} in $(( $(date +%s) - t0 ))s"
for c in ${CHECK:-}; do
  timeout ${CHECK_TIMEOUT:-150} python3 lab/attention_fwd_sm90/bench.py check --lib "${LIB[$c]}" --variant 0 \
    --out "/tmp/check_$c.json" > "$OUT/check_$c.log" 2>&1
  echo "check $c rc=$? $(tail -1 "$OUT/check_$c.log")"; grep "^BAD" "$OUT/check_$c.log" | head -5
done
if [ -n "${GRID:-}" ]; then
  timeout ${TIME_TIMEOUT:-300} python3 lab/attention_fwd_sm90/bench.py compare --libs "${LIBS#,}" \
    --grid $GRID --dtypes ${DTYPES:-bf16} --out "$OUT/compare.json" > "$OUT/compare.log" 2>&1
  echo "compare rc=$?"; grep -v Warning "$OUT/compare.log" | grep -v "return F\.\|return Causal" | tail -${TAIL:-60}
fi
if [ -n "${EVAL_KERNEL:-}" ]; then
  t0=$(date +%s)
  timeout ${EVAL_TIMEOUT:-300} python3 -m gpu_harness eval attention_fwd "$EVAL_KERNEL" --scenarios full \
    --baselines ${BASELINES:-flash,cudnn} --json "$OUT/eval.json" --trace "$OUT/trace.jsonl" --note "${NOTE:-}" \
    > "$OUT/eval_table.txt" 2> /tmp/eval_progress.log
  echo "eval rc=$? in $(( $(date +%s) - t0 ))s"; tail -3 /tmp/eval_progress.log
  python3 lab/attention_fwd_sm90/tools/group_table.py "$OUT/eval.json"
fi
if [ -n "${SANITIZE:-}" ]; then
  for tool in ${SAN_TOOLS:-memcheck racecheck synccheck}; do
    echo "== $tool" >> "$OUT/sanitize.log"
    timeout ${SAN_TIMEOUT:-120} compute-sanitizer --tool $tool --kernel-name kns=attn_ \
      python3 lab/attention_fwd_sm90/tools/sanitize_shapes.py "${LIB[$SANITIZE]}" >> "$OUT/sanitize.log" 2>&1
    echo "sanitize $tool rc=$?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|error' "$OUT/sanitize.log" | tail -1)"
  done
fi
