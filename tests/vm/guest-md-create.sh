#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest side of test-vm-mdadm-to-plugin.sh (and test-vm-md-versions.sh).
# For each line of /arrays.txt
#   NAME LEVEL N CHUNK_KIB LAYOUT FAIL_ROLE ORDER [METADATA [BITMAP]]
# (disks with virtio serials NAME-d0 .. NAME-d<N-1>; ORDER: the disk
# indices, comma-separated, in the order given to mdadm --create, so that
# roles differ from disk numbers; FAIL_ROLE: "-" or the role to fail;
# METADATA: mdadm's --metadata, 1.2 if not given; BITMAP: its --bitmap):
# create the array, let it sync, write the pattern over all of it plus
# some unaligned overwrites, fail and remove a member and keep writing
# when asked, stop it and save mdadm --examine of every disk.
# Saved in /out: NAME-writes.txt ("SEED FIRST N" in write order, for
# patgen -l), NAME-size.txt, NAME-detail.txt, NAME-examine-dI.txt.
. /guest-lib.sh
mdadm --version 2>&1 | sed 's/^/RAIDVM: /'
while read -r name level n chunk layout failrole order meta bitmap; do
	[ -n "$name" ] || continue
	step "$name: RAID-$level, $n members, chunk ${chunk}K, $layout, fail $failrole, order $order, metadata ${meta:-1.2}${bitmap:+, bitmap $bitmap}"
	devs=""
	for i in $(echo "$order" | tr , ' '); do
		devs="$devs $(dev "$name-d$i")"
	done
	run mdadm --create /dev/md0 --run --metadata="${meta:-1.2}" \
		${bitmap:+--bitmap="$bitmap"} --level="$level" \
		--raid-devices="$n" --chunk="$chunk" --layout="$layout" $devs ||
		continue
	echo 4096 > /sys/block/md0/md/stripe_cache_size
	# Let the initial resync/recovery finish: parity must be right before
	# the host checks it.
	md_idle
	grep -A3 '^md0' /proc/mdstat
	size=$(blockdev --getsz /dev/md0)
	echo "$size" > "/out/$name-size.txt"
	w=/out/$name-writes.txt
	: > "$w"
	cs=$((chunk * 2))                      # chunk in sectors
	dd=$((n - level + 4))                  # data members
	# patw SEED FIRST N: write and record
	patw () {
		run patgen "$1" "$2" "$3" /dev/md0 && echo "$1 $2 $3" >> "$w"
	}
	patw 1 0 "$size"
	patw 2 $((size / 3 + 7)) $((size / 5))             # unaligned, many stripes
	patw 3 $((cs * dd + 5)) 3                          # a few sectors
	if [ "$failrole" != - ]; then
		fd=$(echo $devs | cut -d' ' -f$((failrole + 1)))
		step "$name: fail and remove role $failrole ($fd)"
		run mdadm /dev/md0 --fail "$fd"
		run mdadm /dev/md0 --remove "$fd"
		grep -A3 '^md0' /proc/mdstat
		patw 4 11 $((cs * 3 + 1))                  # partial stripes
		patw 5 $((cs * dd * 4)) $((cs * dd * 2))   # two full stripes
		patw 6 $((size - 1)) 1                     # the last sector
		patw 7 $((size / 2 + 1)) $((cs * dd * 3))  # across rotations
	fi
	sync
	mdadm --detail /dev/md0 > "/out/$name-detail.txt" 2>&1
	cat /sys/block/md0/md/array_state
	run mdadm --stop /dev/md0
	i=0
	while [ $i -lt "$n" ]; do
		mdadm --examine "$(dev "$name-d$i")" > "/out/$name-examine-d$i.txt" 2>&1
		i=$((i + 1))
	done
	ok "$name done"
done < /arrays.txt
result
