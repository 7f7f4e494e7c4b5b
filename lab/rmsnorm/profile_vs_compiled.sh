#!/bin/bash
# One device call: Nsight Compute on the released rmsnorm and on torch.compile's Triton kernel for the same shapes
# (the two largest scenarios, where torch.compile and QuACK reach 4.0 to 4.2 TB/s and v1 3.85), and the Triton
# source inductor generated for them. Run from the repository root on the GPU machine:
#   bash lab/rmsnorm/profile_vs_compiled.sh [K] [ROWSxHIDDEN ...]
# Out: $OUT/ncu_vs_compiled.txt (the lines worth reading, per kernel and shape), $OUT/triton_source.txt.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
K=kernels/rmsnorm/rmsnorm.cu; case "${1:-}" in *.cu) K=$1; shift ;; esac
SHAPES=${*:-16384x8192 32768x4096}
METRICS=dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for shape in $SHAPES; do
  for who in "$K:rmsnorm" "compile:triton"; do
    target=${who%%:*}; name=${who##*:}
    timeout 150 ncu --clock-control none --profile-from-start off --launch-count 1 -k "regex:$name" \
      --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
      --section WarpStateStats --metrics "$METRICS" \
      python3 lab/rmsnorm/tools/run_shapes.py "$target" 3 "$shape" > /tmp/ncu_one.txt 2>&1
    rc=$?
    { echo "== $target $shape rc=$rc"
      grep -E "  [a-z_]*(rmsnorm|triton)|Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|L1/TEX Hit|L2 Hit|Achieved Occupancy|Theoretical Occupancy|Registers Per|Block Limit|Waves Per SM|Grid Size|Block Size|Shared Memory Configuration Size|Dynamic Shared|Static Shared|Mem Busy|Max Bandwidth|Warp Cycles Per Issued|Issued Warp|dram__|lts__|sm__warps|smsp__inst|max abs error|==ERR|ERROR" /tmp/ncu_one.txt | head -70
    } >> "$OUT/ncu_vs_compiled.txt"
    echo "ncu $target $shape rc=$rc"
  done
done
# inductor's generated kernel for the first shape (TORCH_LOGS prints it while compiling)
TORCH_LOGS=output_code timeout 120 python3 lab/rmsnorm/tools/run_shapes.py compile 1 ${SHAPES%% *} > "$OUT/triton_source.txt" 2>&1
echo "triton source rc=$? lines=$(wc -l < "$OUT/triton_source.txt")"
