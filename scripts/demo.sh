#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# The main job on a built-in default: a new md RAID-6 (create=true: md
# v1.2 superblocks and a write-intent bitmap, which mdadm also accepts) of
# six sparse 256 MiB members in a temporary folder, served over NBD on
# localhost until interrupted, with a control socket for nbdkit-raid-ctl.
# Usage: scripts/demo.sh [PORT]  (run from a built tree).
set -e

top=$(cd "$(dirname "$0")/.." && pwd)
plugin="$top/plugin/.libs/nbdkit-raid-plugin.so"
port=${1:-10809}
dir=$(mktemp -d /tmp/nbdkit-raid-demo.XXXXXX)
trap 'rm -rf "$dir"' EXIT INT TERM

[ -f "$plugin" ] || { echo "demo: build first (make)" >&2; exit 1; }
# The nbdkit configure found (RAID_NBDKIT, from make demo; else this
# tree's Makefile): Debian 12's aborts when a client hangs up early.
nbdkit=${RAID_NBDKIT:-$(sed -n 's/^NBDKIT = //p' "$top/Makefile" 2>/dev/null || true)}
case $nbdkit in /*) ;; *) nbdkit=nbdkit ;; esac

disks=
for i in 0 1 2 3 4 5; do
  truncate -s 256M "$dir/member$i.img"
  disks="$disks disk=$dir/member$i.img"
done
truncate -s 256M "$dir/spare.img"

cat <<EOT
nbdkit-raid demo: a new md RAID-6, 6 members of 256 MiB (sparse) in $dir
Serving the 1020 MiB array on nbd://localhost:$port.  Connect with, e.g.:
  nbdsh -u nbd://localhost:$port -c 'print(h.get_size())'
  qemu-img info nbd://localhost:$port
  nbd-client localhost $port /dev/nbd0        (Linux, as root)
See and steer it:
  $top/tools/nbdkit-raid-ctl $dir/ctl show
  $top/tools/nbdkit-raid-ctl $dir/ctl fail 2
  $top/tools/nbdkit-raid-ctl $dir/ctl replace 2 $dir/spare.img
Press Ctrl-C to stop; the members are deleted on exit.
EOT
# shellcheck disable=SC2086
"$nbdkit" -f -i 127.0.0.1 -p "$port" "$plugin" create=true level=6 chunk=512K \
  control="$dir/ctl" $disks
