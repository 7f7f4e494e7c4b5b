# Sourced on the GPU machine to put the library baselines (flash_attn.cute, quack, fa3_fwd_interface) on PYTHONPATH:
#   source lab/tools/unpack_baselines.sh
# From lab/tools/pack_baselines.sh's parts, copied into /tmp/bl one a call: every part is checked against .bl1's
# MANIFEST (the count and each sha256: a part missing because its call came after the machine was handed back, or
# left from an older pack, stops it here with a line saying which), then they are unpacked into /tmp/bwsite once.
# Where /tmp/bl holds no MANIFEST but /tmp/bw holds the parts of ../shared/tools/baseline-wheels.sh (one tar of the
# wheels), those wheels are installed into /tmp/bwsite instead. The device scripts (softmax's and rmsnorm's
# `release`, softmax's `ncu quack`) take the baselines only through here.
# Returns non-zero, and leaves PYTHONPATH as it was, where neither is there or a part is missing or differs.
unpack_baselines() {
  local dir=${BL_DIR:-/tmp/bl} site=${BL_SITE:-/tmp/bwsite} wheels=${BW_DIR:-/tmp/bw}
  if [ ! -f "$dir/MANIFEST" ]; then
    if ls "$wheels"/part.* > /dev/null 2>&1; then
      _install_wheel_parts "$wheels" "$site" || return 1
    else
      echo "unpack_baselines: no $dir/MANIFEST (copy .bl1 first)" >&2
      return 1
    fi
  else
    _unpack_pack "$dir" "$site" || return 1
  fi
  # the CuTe DSL's .pth is not read from a folder on PYTHONPATH, so its packages' folder is named too
  export PYTHONPATH="$site:$site/nvidia_cutlass_dsl/dsl_packages${PYTHONPATH:+:$PYTHONPATH}"
  echo "unpack_baselines: the baselines in $site, on PYTHONPATH"
}

_unpack_pack() {  # DIR SITE: pack_baselines.sh's parts, checked, unpacked once
  local dir=$1 site=$2 want have
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
  [ -f "$site/.unpacked" ] && return 0
  mkdir -p "$site"
  # tarfile's 'data' filter (no paths outside the folder, no device files) where this Python has it (3.11.4 on)
  cat "$dir"/part.* | python3 -c "import sys, tarfile
safe = {'filter': 'data'} if hasattr(tarfile, 'data_filter') else {}
tarfile.open(fileobj=sys.stdin.buffer, mode='r|xz').extractall(sys.argv[1], **safe)" "$site" ||
    { echo "unpack_baselines: the archive did not unpack" >&2; return 1; }
  echo "$want parts of $dir" > "$site/.unpacked"
}

_install_wheel_parts() {  # WHEELS SITE: baseline-wheels.sh's parts (one tar of the wheels), installed once
  local wheels=$1 site=$2
  [ -f "$site/.unpacked" ] && return 0
  cat "$wheels"/part.* > "$wheels/all.tar" && tar -xf "$wheels/all.tar" -C "$wheels" &&
    python3 -m pip install -q --no-index --no-deps --target "$site" "$wheels"/*.whl ||
    { echo "unpack_baselines: the wheels in $wheels did not install" >&2; return 1; }
  echo "the wheels of $wheels" > "$site/.unpacked"
}

unpack_baselines
