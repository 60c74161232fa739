#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest side of test-vm-nbd-client.sh.  For each line "NAME PORT" of
# /exports.txt: attach the host's nbdkit at 10.0.2.2:PORT with the
# kernel's NBD client, make an ext4 file system, write files of known
# content, unmount, fsck -n, read them back after a remount, detach.
# Saved in /out: NAME-sums.txt (sha256sum of each file, path relative to
# the file system's root).
. /guest-lib.sh
net_up
n=0
while read -r name port; do
	[ -n "$name" ] || continue
	nbd=/dev/nbd$n
	n=$((n + 1))
	step "$name: nbd-client 10.0.2.2 $port $nbd"
	run nbd-client 10.0.2.2 "$port" "$nbd" || continue
	echo "RAIDVM: $name: $nbd is $(blockdev --getsize64 "$nbd") bytes"
	run mkfs.ext4 -q -F -L "$name" "$nbd" || continue
	run mount -t ext4 "$nbd" /mnt || continue
	mkdir -p /mnt/dir/sub
	# Files of known content: pattern files of odd sizes, a copy, text.
	run patgen 11 0 16384 /mnt/big.bin                 # 8 MiB
	run patgen 12 3 6001 /mnt/dir/odd.bin               # holes + 3 MiB
	run patgen 13 0 1 /mnt/dir/sub/one.bin
	cat /mnt/big.bin /mnt/dir/odd.bin > /mnt/dir/cat.bin
	echo "$name over nbd" > /mnt/hello.txt
	run sync
	(cd /mnt && find . -type f -name '*.*' ! -path './lost+found/*' | sort |
		xargs sha256sum) > "/out/$name-sums.txt"
	cat "/out/$name-sums.txt"
	df -k /mnt | tail -n 1
	run umount /mnt
	step "$name: fsck -n"
	run e2fsck -fn "$nbd"
	echo 3 > /proc/sys/vm/drop_caches
	run mount -t ext4 -o ro "$nbd" /mnt
	cd /mnt && run sha256sum -c "/out/$name-sums.txt"
	cd /
	run umount /mnt
	step "$name: disconnect"
	run nbd-client -d "$nbd"
done < /exports.txt
result
