#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest side of test-vm-qemu-drive.sh.  The disk with virtio serial
# "raid" is the plugin's export through qemu's own NBD client; the one
# with serial "ctl" is a file the host writes to tell us when to stop.
#
# Makes ext4 on it and writes files of random data, each with an fsync
# and its sha256 kept here, until the host writes STOP at the start of
# the ctl disk (read with O_DIRECT, past our page cache) or MAXFILES
# files are written (a host that never says STOP).  While it writes,
# the host fails and replaces two members and restarts nbdkit.  Files
# are written in a ring of RING names, so the file system never fills.
# "RAIDVM: progress N" every 10 files lets the host see the writes go
# on; the time of every file is kept, and the longest gap between two
# (the restart's pause) is printed.  Then: unmount, drop the caches,
# e2fsck -fn, mount read-only, every file's checksum; no I/O error and
# no ext4 error in the kernel's log.
. /guest-lib.sh
MAXFILES=3000
RING=300

d=$(dev raid) || { result; exit 0; }
c=$(dev ctl) || { result; exit 0; }
echo "RAIDVM: raid disk $d, $(blockdev --getsize64 "$d") bytes"
run mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$d" || { result; exit 0; }
run mount -t ext4 "$d" /mnt || { result; exit 0; }
mkdir -p /tmp/sums
: > /tmp/times
step writing
i=0
while :; do
	i=$((i + 1))
	n=$((i % RING))
	if ! dd if=/dev/urandom of=/mnt/f$n bs=64k count=2 conv=fsync 2>/tmp/dd.err; then
		fail "writing f$n (file $i): $(cat /tmp/dd.err)"
		break
	fi
	(cd /mnt && sha256sum f$n) > /tmp/sums/f$n
	up >> /tmp/times
	[ $((i % 10)) -ne 0 ] || echo "RAIDVM: progress $i (uptime $(up))"
	s=$(dd if="$c" bs=4096 count=1 iflag=direct 2>/dev/null | head -c 4)
	[ "$s" != STOP ] || break
	if [ $i -ge $MAXFILES ]; then
		fail "the host never said STOP ($i files)"
		break
	fi
done
echo "RAIDVM: wrote $i files (uptime $(up))"
awk 'NR > 1 && $1 - last > max { max = $1 - last; at = NR }
     { last = $1 }
     END { printf "RAIDVM: longest gap between two files: %.1f s (file %d)\n", max, at }' /tmp/times

step "unmount, drop caches, e2fsck -fn"
run umount /mnt
sync
echo 3 > /proc/sys/vm/drop_caches
run e2fsck -fn "$d"
step "every checksum"
run mount -t ext4 -o ro "$d" /mnt
cat /tmp/sums/* > /tmp/all.sums
echo "RAIDVM: $(wc -l < /tmp/all.sums) files to check"
(cd /mnt && sha256sum -c /tmp/all.sums > /tmp/check.out 2>&1) ||
	fail "checksums: $(grep -v ': OK$' /tmp/check.out | head -n 5)"
run umount /mnt
if dmesg | grep -E -i 'I/O error|EXT4-fs error|EXT4-fs warning|blk_update_request'; then
	fail "the kernel logged I/O or ext4 errors"
fi
cp /tmp/times /out/times.txt
result
