# Sourced on the GPU machine after the last part of lab/tools/pack_baselines.sh was copied into /tmp/bl:
#   source lab/tools/unpack_baselines.sh
# Checks every part against .bl1's MANIFEST (the count and each sha256: a part missing because its call came
# after the machine was handed back, or left from an older pack, stops it here with a line saying which), then
# unpacks them into /tmp/bwsite once and puts it on PYTHONPATH (flash_attn.cute, quack, fa3_fwd_interface).
# Returns non-zero, and leaves PYTHONPATH as it was, where a part is missing or differs.
unpack_baselines() {
  local dir=${BL_DIR:-/tmp/bl} site=${BL_SITE:-/tmp/bwsite}
  if [ ! -f "$dir/MANIFEST" ]; then
    echo "unpack_baselines: no $dir/MANIFEST (copy .bl1 first)" >&2
    return 1
  fi
  local want have
  want=$(awk '$1 == "parts" { print $2 }' "$dir/MANIFEST")
  have=$(find "$dir" -maxdepth 1 -name 'part.*' | wc -l)
  if [ "$have" != "$want" ]; then
    echo "unpack_baselines: $have of $want parts in $dir (the machine keeps them only while it stays warm)" >&2
    return 1
  fi
  if ! (cd "$dir" && grep -v '^parts ' MANIFEST | sha256sum --check --quiet); then
    echo "unpack_baselines: a part in $dir is not the packed one (an older pack's?)" >&2
    return 1
  fi
  if [ ! -f "$site/.unpacked" ]; then
    mkdir -p "$site"
    # tarfile's 'data' filter (no paths outside the folder, no device files) where this Python has it (3.11.4 on)
    cat "$dir"/part.* | python3 -c "import sys, tarfile
safe = {'filter': 'data'} if hasattr(tarfile, 'data_filter') else {}
tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall(sys.argv[1], **safe)" "$site" ||
      { echo "unpack_baselines: the archive did not unpack" >&2; return 1; }
    touch "$site/.unpacked"
  fi
  # the CuTe DSL's .pth is not read from a folder on PYTHONPATH, so its packages' folder is named too
  export PYTHONPATH="$site:$site/nvidia_cutlass_dsl/dsl_packages${PYTHONPATH:+:$PYTHONPATH}"
  echo "unpack_baselines: $want parts unpacked in $site, on PYTHONPATH"
}
unpack_baselines
