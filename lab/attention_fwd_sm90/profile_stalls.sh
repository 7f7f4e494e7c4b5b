#!/bin/bash
# One device call: Nsight Compute's per-instruction stall samples of the wgmma kernel on a few bf16 shapes,
# exported as CSV (source page, SASS) so the hot loop's waits can be read here without the GUI.
# Usage (repo root, GPU machine): SHAPES="2:8192:16:128:0 2:8192:8:256:0" bash lab/attention_fwd_sm90/profile_stalls.sh [KERNEL.cu|fa3]
#   [FLAGS="-DKNOB=V ..." PREFIX=name_] for a build of KERNEL.cu with those nvcc flags, its files named name_<shape>_*
# `fa3`: FlashAttention-3's forward instead (the task's fa3 baseline, its wheel installed and on PYTHONPATH), its
# files named fa3_<shape>_*, so that its stalls and tensor-pipe share stand beside this kernel's.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
SRC=${1:-kernels/attention_fwd_sm90/attention_fwd_sm90.cu}
if [ "$SRC" = fa3 ]; then
  LIB=fa3; prefix=fa3_; pick=(--kernel-name-base demangled -k regex:FlashAttnFwd)  # cutlass::device_kernel<flash::...>
else
  # FLAGS (e.g. FLAGS="-DKSEEK_PINGPONG=0x1f"): the build's extra nvcc flags; PREFIX names the files apart
  LIB=$(python3 -c "import sys; from kernels.load import build; print(build(sys.argv[1], extra=tuple(sys.argv[2:])))" \
    "$SRC" ${FLAGS:-} 2> /tmp/build.log) || { tail -20 /tmp/build.log; exit 1; }
  prefix=${PREFIX:-}; pick=(-k regex:attn_wgmma)
fi
for shp in ${SHAPES:-2:8192:16:128:0}; do
  IFS=: read B S H D C <<< "$shp"; tag=${prefix}d${D}_s${S}_c${C}
  timeout ${NCU_TIMEOUT:-60} ncu --clock-control none --section WarpStateStats --section SourceCounters \
    --section SpeedOfLight "${pick[@]}" --launch-skip 2 --launch-count 1 -o "/tmp/$tag" -f \
    python3 lab/attention_fwd_sm90/tools/run_shape.py "$LIB" $B $S $H $D $C 3 > "/tmp/$tag.log" 2>&1
  echo "ncu $tag rc=$?"; tail -2 "/tmp/$tag.log"
  ncu --import "/tmp/$tag.ncu-rep" --page source --csv --print-source sass > "$OUT/${tag}_sass.csv" 2> /dev/null
  ncu --import "/tmp/$tag.ncu-rep" --page details > "$OUT/${tag}_details.txt" 2>&1
  ls -la "$OUT/${tag}_sass.csv"; grep -E "Duration|SM Busy|Warp Cycles Per Issued|Stall" "$OUT/${tag}_details.txt" | head -12
done
