#!/bin/bash
# One device call: build, disassemble, check both kernels, time them against FA2 and cuDNN.
# Usage (on the GPU machine, from the repo root): bash lab/attention_fwd_sm90/device_run.sh [time-args]
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
cd "$(dirname "$0")/../.."
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv > "$OUT/gpu.txt" 2>&1
LIB=$(python3 -c "from kernels.load import build; print(build())" 2> "$OUT/build.log") || { cat "$OUT/build.log"; exit 1; }
echo "lib: $LIB"
cuobjdump -sass "$LIB" > /tmp/sass.txt 2>/dev/null
python3 - <<'PY' > "$OUT/sass_summary.txt"
import re, collections
cur, counts = None, collections.OrderedDict()
for line in open('/tmp/sass.txt'):
    m = re.search(r'Function : (\S+)', line)
    if m:
        cur = m.group(1); counts[cur] = collections.Counter(); continue
    m = re.search(r'/\*[0-9a-f]{4}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)', line)
    if m and cur:
        counts[cur][m.group(1).split('.')[0]] += 1
for f, c in counts.items():
    keys = ['HGMMA', 'HMMA', 'LDSM', 'MUFU', 'UTMALDG', 'SYNCS', 'LDL', 'STL', 'WARPGROUP', 'BAR']
    print(f[:90], {k: c[k] for k in keys if c[k]}, 'total', sum(c.values()))
PY
head -30 "$OUT/sass_summary.txt"
for v in ${CHECK_VARIANTS:-1 2}; do
  timeout ${CHECK_TIMEOUT:-150} python3 lab/attention_fwd_sm90/bench.py check --lib "$LIB" --variant $v --out "$OUT/check_v$v.json" > "$OUT/check_v$v.log" 2>&1
  echo "check v$v rc=$?"; grep -c "^OK" "$OUT/check_v$v.log"; grep -v "^OK" "$OUT/check_v$v.log" | tail -8
done
timeout ${TIME_TIMEOUT:-240} python3 lab/attention_fwd_sm90/bench.py time --lib "$LIB" --out "$OUT/time.json" "$@" 2>&1 | tee "$OUT/time.log" | tail -45
