#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest side of test-vm-md-removes-readd.sh.  /arrays.txt, one array a line
# (disks with virtio serials NAME-d0 .. NAME-d<N-1>, in role order, made
# by the plugin with a write-intent bitmap; /NAME-writes.txt: the pattern,
# "SEED FIRST N" lines for patgen -l):
#
#   remove NAME N ROLE SECTORS
#       assemble it (clean, no resync), fail and remove role ROLE, write
#       the last line of /NAME-writes.txt while it is out, read all of the
#       pattern back degraded, stop.  mdadm -X shows the bits md left set
#       for the member's return.
#   check NAME N SECTORS
#       every superblock clean at one events count, every bitmap clean;
#       mdadm --assemble (no --run) must bring it up with every member
#       active, clean, no resync or recovery; the pattern reads back; md's
#       check counts no mismatch.
#
# Saved in /out: NAME-ACTION-examine.txt, NAME-ACTION-X.txt,
# NAME-check-detail.txt, NAME-check-dmesg.txt.
. /guest-lib.sh
mdadm --version 2>&1 | sed 's/^/RAIDVM: /'

# field FILE NAME: the first "   NAME : value" line's value.
field () { sed -n "s/^ *$2 : //p" "$1" | head -n 1 | sed 's/ *$//'; }
# summary FILE: mdadm -E's identifying lines, one member a line, for the log.
summary () {
	awk '/^\/dev\// { d = $1 }
	     /Device Role|Events :|Array State|^ *State :|Update Time/ {
		sub(/^ */, ""); line[d] = line[d] " | " $0 }
	     END { for (d in line) print "RAIDVM:   " d line[d] }' "$1" | sort
}

while read -r action name n a1 a2; do
	[ -n "$name" ] || continue
	devs=""
	i=0
	while [ $i -lt "$n" ]; do devs="$devs $(dev "$name-d$i")"; i=$((i + 1)); done
	step "$name: $action"
	if [ "$action" = remove ]; then
		role=$a1 sectors=$a2
		fd=$(echo $devs | cut -d' ' -f$((role + 1)))
		run mdadm --assemble /dev/md0 $devs || continue
		md_idle
		run mdadm /dev/md0 --fail "$fd" --remove "$fd"
		grep -A3 '^md0' /proc/mdstat
		[ "$(cat /sys/block/md0/md/degraded)" = 1 ] ||
			fail "$name: degraded $(cat /sys/block/md0/md/degraded) after the removal"
		set -- $(tail -n 1 "/$name-writes.txt")
		run patgen "$1" "$2" "$3" /dev/md0
		sync
		run patgen -l "/$name-writes.txt" "$sectors" /dev/md0
		run mdadm --stop /dev/md0
	else
		sectors=$a1
		mdadm --examine $devs > "/out/$name-check-examine.txt" 2>&1
		mdadm -X $devs > "/out/$name-check-X.txt" 2>&1
		echo "RAIDVM: $name: the superblocks before assembly:"
		summary "/out/$name-check-examine.txt"
		nclean=$(grep -c '^ *State : clean *$' "/out/$name-check-examine.txt")
		[ "$nclean" = "$n" ] && ok "$name: $n superblocks say clean" ||
			fail "$name: $nclean of $n superblocks say clean"
		nev=$(sed -n 's/^ *Events : //p' "/out/$name-check-examine.txt" | sort -u | wc -l)
		[ "$nev" = 1 ] && ok "$name: one events count on every member" ||
			fail "$name: the members' events differ: $(sed -n 's/^ *Events : //p' "/out/$name-check-examine.txt" | tr '\n' ' ')"
		dirty=$(sed -n 's/.*bits (chunks), \([0-9]*\) dirty.*/\1/p' "/out/$name-check-X.txt" | sort -u | tr '\n' ' ')
		[ "$dirty" = "0 " ] && ok "$name: no dirty bit in any member's bitmap" ||
			fail "$name: dirty bits in the bitmaps: '$dirty'"
		mark=$(dmesg | wc -l)
		run mdadm --assemble /dev/md0 $devs || continue
		# md starts a resync or recovery from its thread, a moment
		# after assembly: give it the time to show.
		sleep 3
		grep -A3 '^md0' /proc/mdstat
		grep -A3 '^md0' /proc/mdstat | grep -q 'resync\|recover' &&
			fail "$name: md resyncs or recovers after assembly"
		mdadm --detail /dev/md0 > "/out/$name-check-detail.txt" 2>&1
		sed 's/^/    /' "/out/$name-check-detail.txt"
		st=$(field "/out/$name-check-detail.txt" State)
		[ "$st" = clean ] && ok "$name: state clean" || fail "$name: state '$st', not clean"
		for f in "Active Devices:$n" "Working Devices:$n" "Failed Devices:0" "Spare Devices:0"; do
			v=$(field "/out/$name-check-detail.txt" "${f%:*}")
			[ "$v" = "${f#*:}" ] || fail "$name: --detail: ${f%:*} $v, want ${f#*:}"
		done
		md_idle
		dmesg | tail -n +$((mark + 1)) > "/out/$name-check-dmesg.txt"
		sed 's/^/    dmesg: /' "/out/$name-check-dmesg.txt"
		if grep -q 'of RAID array\|not clean' "/out/$name-check-dmesg.txt"; then
			fail "$name: md resynced or recovered: $(grep 'of RAID array\|not clean' "/out/$name-check-dmesg.txt" | head -n 1)"
		else
			ok "$name: every member active, clean, no resync or recovery"
		fi
		step "$name: read the pattern"
		run patgen -l "/$name-writes.txt" "$sectors" /dev/md0
		step "$name: check"
		echo check > /sys/block/md0/md/sync_action
		md_idle
		mm=$(cat /sys/block/md0/md/mismatch_cnt)
		[ "$mm" = 0 ] && ok "$name: check: mismatch_cnt 0" || fail "$name: check: mismatch_cnt $mm"
		run mdadm --stop /dev/md0
		continue
	fi
	# What md left on the members, for the log and the host.
	mdadm --examine $devs > "/out/$name-remove-examine.txt" 2>&1
	mdadm -X $devs > "/out/$name-remove-X.txt" 2>&1
	echo "RAIDVM: $name: the superblocks md left (role $role, $fd, removed):"
	summary "/out/$name-remove-examine.txt"
	sed -n 's/^ *Bitmap : /RAIDVM:   bitmap: /p' "/out/$name-remove-X.txt" | sort | uniq -c
	ok "$name: role $role failed, removed, written around"
done < /arrays.txt
result
