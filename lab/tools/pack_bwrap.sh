#!/bin/bash
# Debian 12's bubblewrap for a GPU host that has none: there a GPU task's child runs uncontained (the verdict's
# `child_sandbox` says "none"). Run from the repository root on a Debian machine with apt:
#   bash lab/tools/pack_bwrap.sh
# It makes .bw/ (about 1.2 MB, git-ignored through .git/info/exclude): the unpacked packages under root/, and
# bin/bwrap, which runs the binary through the loader with the packages' libraries, so that no LD_LIBRARY_PATH
# reaches the sandboxed child. Carry `.bw` with a device call and put it first on PATH there:
#   PATH=$PWD/.bw/bin:$PATH python3 -m gpu_harness eval softmax_rows kernels/softmax_rows/softmax_rows.cu ...
set -euo pipefail
tmp=$(mktemp -d)
(cd "$tmp" && apt-get download -q bubblewrap libselinux1 libcap2 libpcre2-8-0 2> /dev/null)
rm -rf .bw; mkdir -p .bw/root .bw/bin
for deb in "$tmp"/*.deb; do dpkg -x "$deb" .bw/root; done
rm -rf "$tmp"
cat > .bw/bin/bwrap <<'WRAP'
#!/bin/sh
root=$(dirname "$(readlink -f "$0")")/../root
exec /lib64/ld-linux-x86-64.so.2 --library-path "$root/lib/x86_64-linux-gnu:$root/usr/lib/x86_64-linux-gnu" \
  "$root/usr/bin/bwrap" "$@"
WRAP
chmod +x .bw/bin/bwrap
grep -qxF /.bw/ .git/info/exclude 2> /dev/null || echo /.bw/ >> .git/info/exclude
.bw/bin/bwrap --version
