#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest side of test-vm-plugin-to-mdadm.sh.  For each line
#   NAME N LEVEL LAYOUT CHUNK_KIB SECTORS [corrupt]
# of /arrays.txt (disks with virtio serials NAME-d0 .. NAME-d<N-1>, made
# by the plugin with create=true): mdadm --assemble must accept them,
# --detail must show a clean array of that geometry and size, the
# pattern in /NAME-writes.txt must read back, and an md "check" pass must
# find no mismatches (with "corrupt", the host flipped a parity byte: the
# check must find it, which shows that it ran; with "recovering", the
# plugin was stopped while it re-added a member: mdadm --examine must show
# its recovery offset, and md must finish the recovery before the rest).
# Saved in /out: NAME-detail.txt, NAME-examine.txt,
# NAME-mismatch_cnt.txt.
. /guest-lib.sh
mdadm --version 2>&1 | sed 's/^/RAIDVM: /'
while read -r name n level layout chunk sectors corrupt; do
	[ -n "$name" ] || continue
	step "$name: assemble"
	devs=""
	i=0
	while [ $i -lt "$n" ]; do devs="$devs $(dev "$name-d$i")"; i=$((i + 1)); done
	mdadm --examine $devs > "/out/$name-examine.txt" 2>&1
	# What the plugin left, before md touches it: every member's
	# superblock says clean.
	nclean=$(grep -c '^ *State : clean *$' "/out/$name-examine.txt")
	[ "$nclean" = "$n" ] && ok "$name: $n superblocks say clean" ||
		fail "$name: $nclean of $n superblocks say clean"
	run mdadm --assemble /dev/md0 $devs || { cat "/out/$name-examine.txt"; continue; }
	if [ "$corrupt" = recovering ]; then
		grep -q "Recovery Offset" "/out/$name-examine.txt" &&
			ok "$name: a member is recovering, as the plugin left it" ||
			fail "$name: mdadm --examine shows no member recovering"
		echo "RAIDVM: $name: degraded $(cat /sys/block/md0/md/degraded), sync_action $(cat /sys/block/md0/md/sync_action)"
		step "$name: md finishes the recovery"
		md_idle
		corrupt=
	fi
	# md's own state: "active" while it has writes of its own in flight,
	# clean again after safe_mode_delay (0.2 s) without; a slow guest
	# can be caught in between, so give it 10 s to settle.  (The larger
	# stripe cache comes after: writing stripe_cache_size marks the array
	# active (md_allow_write), and nothing may wake md's thread to mark
	# it clean again; CI once saw p6b still 'active' after the 10 s.)
	w=0
	while [ $w -lt 10 ] && [ "$(cat /sys/block/md0/md/array_state)" != clean ]; do
		sleep 1; w=$((w + 1))
	done
	echo "RAIDVM: $name: array_state $(cat /sys/block/md0/md/array_state) after $w s"
	mdadm --detail /dev/md0 > "/out/$name-detail.txt" 2>&1
	cat "/out/$name-detail.txt"
	d () { sed -n "s/^ *$1 : //p" "/out/$name-detail.txt" | head -n 1; }
	st=$(d State | sed 's/ *$//')
	[ "$st" = clean ] && ok "$name: state clean" || fail "$name: state '$st', not clean"
	[ "$(d 'Raid Level')" = "raid$level" ] || fail "$name: level $(d 'Raid Level')"
	[ "$(d Layout)" = "$layout" ] || fail "$name: layout $(d Layout)"
	[ "$(d 'Chunk Size')" = "${chunk}K" ] || fail "$name: chunk $(d 'Chunk Size')"
	[ "$(d 'Active Devices')" = "$n" ] || fail "$name: active devices $(d 'Active Devices')"
	sz=$(blockdev --getsz /dev/md0)
	[ "$sz" = "$sectors" ] && ok "$name: $sz sectors, as the plugin served" ||
		fail "$name: md has $sz sectors, the plugin served $sectors"
	echo "RAIDVM: $name: sync_action $(cat /sys/block/md0/md/sync_action)"
	step "$name: read the pattern"
	run patgen -l "/$name-writes.txt" "$sectors" /dev/md0
	step "$name: check"
	echo 4096 > /sys/block/md0/md/stripe_cache_size
	echo check > /sys/block/md0/md/sync_action
	md_idle
	mm=$(cat /sys/block/md0/md/mismatch_cnt)
	echo "$mm" > "/out/$name-mismatch_cnt.txt"
	if [ -n "$corrupt" ]; then
		[ "$mm" != 0 ] && ok "$name: check found the flipped parity byte: mismatch_cnt $mm" ||
			fail "$name: check missed the flipped parity byte"
	else
		[ "$mm" = 0 ] && ok "$name: check: mismatch_cnt 0" || fail "$name: check: mismatch_cnt $mm"
	fi
	run mdadm --stop /dev/md0
done < /arrays.txt
result
