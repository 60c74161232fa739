#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest side of test-vm-md-badblocks.sh: md's bad-block logs both ways.
#
# pm-d0 .. pm-d3 (by role): a RAID-5 the plugin made, with seed 1 of
# patgen over all of it, and bad-block logs the plugin wrote (/pm-lost.txt:
# "FIRST N", the array sectors it lost; the host overwrote every range
# the logs list with noise).  mdadm --examine-badblocks of each, then md
# assembles it, not degraded: every sector but the lost ones must read as
# the pattern, and every lost range must fail (md cannot reconstruct a
# page two members list).
#
# md-d0 .. md-d3: blank.  mdadm creates a RAID-5 on them (v1.2, which
# reserves a log), writes seed 1 over all of it, and bad blocks go into
# md-d1's log through sysfs (/md-bad.txt: "SECTOR LENGTH" from the data
# offset; md's sysfs file takes them from the member's start); a write
# then makes md update the superblocks, which carry the log, and the array
# is stopped.
#
# Saved in /out: pm-ebb-dI.txt and md-ebb-dI.txt (mdadm
# --examine-badblocks), pm-detail.txt, md-size.txt, md-offset.txt (md-d1's
# data offset, sectors), md-sysfs-bad_blocks.txt, md-writes.txt.
. /guest-lib.sh
mdadm --version 2>&1 | sed 's/^/RAIDVM: /'

# devs NAME: the four disks NAME-d0 .. NAME-d3, in that order.
devs () {
	for i in 0 1 2 3; do dev "$1-d$i"; done | tr '\n' ' '
}
# ebb NAME: mdadm --examine-badblocks of each of NAME's disks, saved.
ebb () {
	i=0
	for d in $(devs "$1"); do
		mdadm --examine-badblocks "$d" > "/out/$1-ebb-d$i.txt" 2>&1
		sed "s/^/RAIDVM: $1-d$i: /" "/out/$1-ebb-d$i.txt"
		i=$((i + 1))
	done
}

if [ -s /pm-size.txt ]; then
	step "pm: the plugin's logs"
	ebb pm
fi
if [ -s /pm-size.txt ] && run mdadm --assemble /dev/md0 $(devs pm); then
	mdadm --detail /dev/md0 > /out/pm-detail.txt 2>&1
	cat /out/pm-detail.txt
	g=$(cat /sys/block/md0/md/degraded)
	[ "$g" = 0 ] && ok "pm: assembled, degraded 0, $(cat /sys/block/md0/md/array_state)" ||
		fail "pm: assembled degraded ($g)"
	size=$(blockdev --getsz /dev/md0)
	[ "$size" = "$(cat /pm-size.txt)" ] &&
		ok "pm: $size sectors, as the plugin served" ||
		fail "pm: md has $size sectors, the plugin served $(cat /pm-size.txt)"
	step "pm: read it"
	at=0
	while read -r first n; do
		[ "$first" -le "$at" ] || run patgen -v 1 "$at" $((first - at)) /dev/md0
		if dd if=/dev/md0 of=/dev/null bs=512 skip="$first" count="$n" \
			iflag=direct 2> /tmp/dd.err; then
			fail "pm: lost sectors $first+$n read without an error"
		else
			ok "pm: lost sectors $first+$n: $(grep -v records /tmp/dd.err | head -n 1)"
		fi
		at=$((first + n))
	done < /pm-lost.txt
	run patgen -v 1 "$at" $((size - at)) /dev/md0 &&
		ok "pm: every sector not lost reads as the pattern"
	run mdadm --stop /dev/md0
fi

step "md: create"
md=$(devs md)
if run mdadm --create /dev/md0 --run --metadata=1.2 --level=5 \
	--raid-devices=4 --chunk=64 --assume-clean $md; then
	size=$(blockdev --getsz /dev/md0)
	echo "$size" > /out/md-size.txt
	run patgen 1 0 "$size" /dev/md0 && echo "1 0 $size" > /out/md-writes.txt
	sync
	d1=$(dev md-d1)
	b=/sys/block/md0/md/dev-${d1##*/}
	doff=$(cat "$b/offset")
	echo "$doff" > /out/md-offset.txt
	step "md: bad blocks on md-d1 (data offset $doff)"
	while read -r s n; do
		echo "$((doff + s)) $n" > "$b/bad_blocks" ||
			fail "md: writing '$((doff + s)) $n' to $b/bad_blocks"
	done < /md-bad.txt
	cat "$b/bad_blocks" > /out/md-sysfs-bad_blocks.txt
	sed 's/^/RAIDVM: sysfs bad_blocks: /' /out/md-sysfs-bad_blocks.txt
	# md writes the log with the superblocks, and nothing above asked
	# for an update: a write marks the array active (an update), the
	# stop marks it clean (another).
	run patgen 1 0 8 /dev/md0 && echo "1 0 8" >> /out/md-writes.txt
	sync
	run mdadm --stop /dev/md0
	ebb md
fi
result
