#!/bin/bash
# QuACK 0.6.5 and the CuTe DSL it needs (no flash-attn, no fa3: ../shared/tools/baseline-wheels.sh packs those
# too, in four 40 MiB parts) as one xz tar of the unpacked wheels, 68.6 MB, split in two parts that each travel
# beside the ~16 MB working tree (.qk1/, .qk2/, git-ignored through .git/info/exclude). Run from the root:
#   bash lab/softmax_rows/tools/pack_quack.sh          (about 5 minutes: xz -9e)
# On the GPU machine, within its warm window (30 s between calls):
#   call 1, carry .qk1:  mkdir -p /tmp/qk && cp .qk1/* /tmp/qk/ && ...
#   call 2, carry .qk2:  cp .qk2/* /tmp/qk/ && bash lab/softmax_rows/device_run.sh release
# (device_run.sh release unpacks /tmp/qk/part.* into /tmp/bwsite and sets PYTHONPATH.)
set -euo pipefail
tmp=$(mktemp -d)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_24_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 --platform any -d "$tmp/w" \
  nvidia-cutlass-dsl==4.8.1 nvidia-cutlass-dsl-libs-base==4.8.1 nvidia-cutlass-dsl-libs-core==4.8.1 \
  nvidia-cutlass-dsl-libs-cu13==4.8.1 apache-tvm-ffi==0.1.15.post2 torch-c-dlpack-ext==0.1.5 quack-kernels==0.6.5
for w in "$tmp"/w/*.whl; do unzip -q -o "$w" -d "$tmp/site"; done
(cd "$tmp/site" && tar -cf - . | xz -9e -T0 > "$tmp/site.tar.xz")
split -b 34400000 -d -a 2 "$tmp/site.tar.xz" "$tmp/part."
rm -rf .qk1 .qk2; mkdir -p .qk1 .qk2; mv "$tmp/part.00" .qk1/; mv "$tmp/part.01" .qk2/
for d in /.qk1/ /.qk2/; do grep -qxF "$d" .git/info/exclude 2>/dev/null || echo "$d" >> .git/info/exclude; done
rm -rf "$tmp"; du -sh .qk1 .qk2
