#!/bin/bash
# Every library baseline the GPU tasks measure against that the GPU machine lacks (flash-attn-4 with the CuTe
# DSL, QuACK, FlashAttention-3's forward), as one xz tar of the unpacked wheels, split into parts that each travel
# beside the working tree in one device call (.bl1/, .bl2/, ...: git-ignored through .git/info/exclude). The
# device tool carries at most 64 MiB a call, working tree included; the wheels as they come (zip) take four
# 40 MiB parts (../shared/tools/baseline-wheels.sh), the unpacked files under xz -9e fewer.
# Run from the repository root (about 10 minutes on two cores):
#   bash lab/tools/pack_baselines.sh [PART_BYTES]    (default: 64 MiB less the working tree and 4 MiB of margin)
# .bl1/ also holds MANIFEST: the parts' count and sha256, which lab/tools/unpack_baselines.sh checks.
# On the GPU machine, one part a call, in order, within the machine's warm window (30 s between calls):
#   call k < N:  mkdir -p /tmp/bl && cp .blK/* /tmp/bl/
#   call N:      mkdir -p /tmp/bl && cp .blN/* /tmp/bl/ && source lab/tools/unpack_baselines.sh && ...
set -euo pipefail
cd "$(dirname "$0")/../.."
tree_bytes=$(git ls-files -z | xargs -0 du -cb 2> /dev/null | tail -1 | cut -f1)
part_bytes=${1:-$((64 * 1048576 - tree_bytes - 4 * 1048576))}
if [ "$part_bytes" -lt 8388608 ]; then
  echo "pack_baselines: parts of $part_bytes bytes (the working tree takes $tree_bytes of the 64 MiB): too small" >&2
  exit 2
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any -d "$tmp/w" \
  flash-attn-4==4.0.0b36 nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 \
  nvidia-cutlass-dsl-libs-core==4.8.1 nvidia-cutlass-dsl-libs-cu13==4.8.1 apache-tvm-ffi==0.1.15.post2 \
  torch-c-dlpack-ext==0.1.5 quack-kernels==0.6.5 fa3-fwd==0.0.3
for w in "$tmp"/w/*.whl; do unzip -q -o "$w" -d "$tmp/site"; done
(cd "$tmp/site" && tar -cf - . | xz -9e -T0 > "$tmp/site.tar.xz")
split -b "$part_bytes" -d -a 2 "$tmp/site.tar.xz" "$tmp/part."
rm -rf .bl[0-9]*
parts=("$tmp"/part.*)
i=0
for f in "${parts[@]}"; do
  i=$((i + 1))
  mkdir -p ".bl$i" && mv "$f" ".bl$i/"
  grep -qxF "/.bl$i/" .git/info/exclude 2> /dev/null || echo "/.bl$i/" >> .git/info/exclude
done
{
  echo "parts ${#parts[@]}"
  for d in $(seq 1 "$i"); do (cd ".bl$d" && sha256sum part.*); done
} > .bl1/MANIFEST
du -sh .bl[0-9]*
echo "carry .bl1 ... .bl$i one per call, in order; the last call sources lab/tools/unpack_baselines.sh"
