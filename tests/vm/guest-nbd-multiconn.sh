#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest side of test-vm-nbd-multiconn.sh.  /port.txt: the host's nbdkit
# at 10.0.2.2:PORT.  The disk with serial "ctl" is how the host answers.
#
# 1. nbd-client -C 4 (four connections; the plugin advertises
#    multi-conn): the device must have four hardware queues; blkverify
#    (tests/vm/blkverify.c, fio's verify=crc32c) writes BLOCKS blocks
#    with four jobs, one per CPU, and reads them all back; disconnect;
#    "RAIDVM: multiconn done", and wait for GO0 on the ctl disk.
# 2. For each way of running nbd-client that is meant to ride out a
#    server restart (the default netlink interface with -persist, and
#    -nonetlink -persist, both with -timeout 30): ext4 made and mounted,
#    a file written and synced, "RAIDVM: restart-me MODE" (the host
#    stops and starts nbdkit, then writes GO<k> on the ctl disk), a pause
#    for the client to reconnect, then a second file written with fsync.
#    "RAIDVM: MODE: survived" or "RAIDVM: MODE: lost" says what
#    happened; the host judges.
. /guest-lib.sh
net_up
read -r port < /port.txt
read -r blocks < /blocks.txt
c=$(dev ctl)
# wait_word W: until the host writes W at the start of the ctl disk.
wait_word () {
	w=0
	while [ $w -lt 240 ]; do
		s=$(dd if="$c" bs=4096 count=1 iflag=direct 2>/dev/null | head -c ${#1})
		[ "$s" = "$1" ] && return 0
		sleep 0.5
		w=$((w + 1))
	done
	fail "the host never wrote $1"
	return 1
}

step "nbd-client -C 4"
echo "RAIDVM: $(grep -c ^processor /proc/cpuinfo) CPUs"
if run nbd-client 10.0.2.2 "$port" /dev/nbd0 -C 4; then
	q=$(ls /sys/block/nbd0/mq | wc -l)
	echo "RAIDVM: /dev/nbd0: $q hardware queues"
	[ "$q" -eq 4 ] || fail "/dev/nbd0 has $q hardware queues, not 4"
	run /blkverify write /dev/nbd0 "$blocks" 65536 4 16
	echo 3 > /proc/sys/vm/drop_caches
	run /blkverify verify /dev/nbd0 "$blocks" 65536 4 16
	run nbd-client -d /dev/nbd0
fi
# The host counts the connections that wrote, before any other connects.
echo "RAIDVM: multiconn done"
wait_word GO0

k=0
for mode in netlink ioctl; do
	k=$((k + 1))
	nbd=/dev/nbd$k
	opts="-persist -timeout 30"
	[ $mode = ioctl ] && opts="-nonetlink $opts"
	step "$mode: nbd-client $opts, restart under a mounted file system"
	# (-nonetlink -persist stays in the foreground's child: background it.)
	nbd-client 10.0.2.2 "$port" $nbd $opts > /tmp/nbd-client.$mode 2>&1 &
	sleep 3
	cat /tmp/nbd-client.$mode
	run mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 $nbd || continue
	run mount -t ext4 $nbd /mnt || continue
	run dd if=/dev/urandom of=/mnt/a bs=64k count=8 conv=fsync
	echo "RAIDVM: restart-me $mode"
	wait_word GO$k || break
	sleep 5
	if dd if=/dev/urandom of=/mnt/b bs=64k count=8 conv=fsync 2>/tmp/dd.err && sync; then
		echo "RAIDVM: $mode: survived"
	else
		echo "RAIDVM: $mode: lost ($(cat /tmp/dd.err))"
	fi
	echo "RAIDVM: $mode: nbd-client said: $(tr '\n' ' ' < /tmp/nbd-client.$mode)"
	dmesg | grep -E "nbd$k|EXT4-fs \(nbd$k\)" | tail -n 4 | sed "s/^/RAIDVM: $mode: /"
	umount /mnt 2>/dev/null || umount -f /mnt 2>/dev/null
	nbd-client -d $nbd > /dev/null 2>&1
done
result
