#!/bin/sh
# The main job on a built-in default: a RAID-6 of six sparse 256 MiB
# members in a temporary folder, served over NBD on localhost until
# interrupted.  Usage: scripts/demo.sh [PORT]  (run from a built tree).
set -e

top=$(cd "$(dirname "$0")/.." && pwd)
plugin="$top/plugin/.libs/nbdkit-raid-plugin.so"
port=${1:-10809}
dir=$(mktemp -d /tmp/nbdkit-raid-demo.XXXXXX)
trap 'rm -rf "$dir"' EXIT INT TERM

[ -f "$plugin" ] || { echo "demo: build first (make)" >&2; exit 1; }

disks=
for i in 0 1 2 3 4 5; do
  truncate -s 256M "$dir/member$i.img"
  disks="$disks disk=$dir/member$i.img"
done

cat <<EOT
nbdkit-raid demo: RAID-6, 6 members of 256 MiB (sparse) in $dir
Serving a 1 GiB array on nbd://localhost:$port.  Connect with, e.g.:
  nbdsh -u nbd://localhost:$port -c 'print(h.get_size())'
  qemu-img info nbd://localhost:$port
  nbd-client localhost $port /dev/nbd0        (Linux, as root)
Press Ctrl-C to stop; the members are deleted on exit.
EOT
# shellcheck disable=SC2086
nbdkit -f -i 127.0.0.1 -p "$port" "$plugin" level=6 chunk=512K $disks
