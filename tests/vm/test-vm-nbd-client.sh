#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The Linux kernel's NBD client uses the plugin's export as a disk.
#
# Here the plugin serves two RAID-6 arrays of six sparse files on
# 127.0.0.1 (free ports): one whole, one with a member "missing".  In a
# guest (tests/vm/build-guest.sh; user networking, where the host's
# loopback is 10.0.2.2 and nothing else is reachable) nbd-client attaches
# each, mkfs.ext4, mount, files of known content are written, unmounted,
# e2fsck -n passes, they read back after a remount, nbd-client -d.
#
# Then, here: raidcheck.py checks the parity of every row of the whole
# array and rebuilds its image; for the degraded one, fill-missing.py
# derives the missing member from one of P or Q and raidcheck.py checks
# the other, and the image is read back through the plugin.  Each image must pass e2fsck -fn, and every
# file, dumped with debugfs, must have the checksum the guest computed.

source "$(dirname "$0")/../lib/functions.sh"
source "$(dirname "$0")/common.sh"
requires nbdsh e2fsck debugfs sha256sum
vm_setup

MEMBER_SIZE=${MEMBER_SIZE:-32M}
CHUNK=64K
geometry=(metadata=none level=6 chunk=$CHUNK layout=left-symmetric)

free_port ()
{
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# serve NAME NBDKIT-ARGS...: the plugin on 127.0.0.1:$port, in the
# background (cleanup stops it).
serve ()
{
    local name=$1 i
    shift
    for (( try = 0; try < 5; try++ )); do
        port=$(free_port)
        start_bg nbdkit -f --exit-with-parent -i 127.0.0.1 -p "$port" \
            "$RAID_PLUGIN" "$@"
        for (( i = 0; i < 100; i++ )); do
            if python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 1)" 2>/dev/null; then
                echo "$name $port" >> "$tmpdir/exports.txt"
                echo "$name: nbdkit on 127.0.0.1:$port"
                return 0
            fi
            kill -0 "${_bg_pids[-1]}" 2>/dev/null || break
            sleep 0.1
        done
    done
    echo "$0: nbdkit did not start for $name"
    return 1
}

: > "$tmpdir/exports.txt"
make_members 6 "$MEMBER_SIZE" whole
whole=("${members[@]}")
serve whole "${geometry[@]}" "${whole[@]/#/disk=}"
make_members 6 "$MEMBER_SIZE" deg
deg=("${members[@]}")
deg_disks=("${deg[@]/#/disk=}")
deg_disks[2]=disk=missing
rm -f "${deg[2]}"
serve degraded "${geometry[@]}" "${deg_disks[@]}"

vm_args+=(-netdev user,id=n0,ipv6=off -device virtio-net-pci,netdev=n0,romfile=)
vm_results_disk nbd
vm_initrd "$tmpdir/initrd" "$vm_dir/guest-nbd.sh" "$tmpdir/exports.txt"
run_vm nbd "$tmpdir/initrd" "${vm_args[@]}"
vm_results nbd "$tmpdir/out" || exit 1
vm_result nbd || exit 1
echo "guest: $(vm_elapsed)"

# Stop the servers: everything is on the files now.
for pid in "${_bg_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
for pid in "${_bg_pids[@]}"; do wait "$pid" 2>/dev/null || true; done


# check_fs NAME IMAGE: e2fsck -fn, then every file's checksum.
check_fs ()
{
    local name=$1 img=$2 sum path
    if e2fsck -fn "$img"; then
        echo "$name: e2fsck -fn on the host: clean"
    else
        fail "$name: e2fsck -fn on the host"
    fi
    while read -r sum path; do
        path=${path#./}
        rm -f "$tmpdir/file"
        debugfs -R "dump /$path $tmpdir/file" "$img" 2>/dev/null
        if [ "$(sha256sum < "$tmpdir/file" | cut -d' ' -f1)" = "$sum" ]; then
            echo "$name: /$path: checksum ok"
        else
            fail "$name: /$path: checksum differs from the guest's"
        fi
    done < "$tmpdir/out/$name-sums.txt"
    [ -s "$tmpdir/out/$name-sums.txt" ] || fail "$name: the guest wrote no files"
}

echo "== whole: raidcheck (every row's P and Q) and the image it rebuilds"
if raidcheck --level 6 --layout left-symmetric --chunk "$CHUNK" \
        --image "$tmpdir/whole.img" "${whole[@]}"; then
    echo "whole: parity good"
else
    fail "whole: raidcheck found bad parity"
fi
check_fs whole "$tmpdir/whole.img"
rm -f "$tmpdir/whole.img"

echo "== degraded: survivors consistent (member 2 derived from P or the data, then raidcheck)"
if python3 "$vm_dir/fill-missing.py" left-symmetric "$CHUNK" 0 2 "${deg[2]}" "${deg[@]}" &&
    raidcheck --level 6 --layout left-symmetric --chunk "$CHUNK" "${deg[@]}"; then
    echo "degraded: parity consistent"
else
    fail "degraded: the survivors' parity is inconsistent"
fi
rm -f "${deg[2]}"

echo "== degraded: the image read back through the plugin"
OUT=$tmpdir/deg.img raid_nbdkit "${geometry[@]}" "${deg_disks[@]}" --run '
    nbdsh -u "$uri" -c "
import os
size = h.get_size()
with open(os.environ[\"OUT\"], \"wb\") as f:
    for off in range(0, size, 4 << 20):
        f.write(h.pread(min(4 << 20, size - off), off))
"' || fail "degraded: reading the array back"
check_fs degraded "$tmpdir/deg.img"
rm -f "$tmpdir/deg.img"

vm_finish
