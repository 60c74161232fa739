#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest side of test-vm-md-spares.sh: md's hot spares both ways.
#
# pm-d0 .. pm-d2 (by role) and pm-s0: a RAID-5 the plugin made with a
# spare, seed 1 of patgen over all of it (/pm-size.txt sectors).  mdadm
# --examine must show pm-s0 as a spare and the others in their roles;
# md assembles all four, and --detail must list pm-s0 as a spare, not
# degraded; the pattern reads back; mdadm --fail pm-d0, and md must
# rebuild role 0 onto pm-s0 by itself; then --detail must show pm-s0
# active in role 0 and pm-d0 faulty, the pattern read back, and md's
# check count no mismatch.
#
# md-d0 .. md-d2 and md-s0: blank.  mdadm creates a RAID-5 of the three
# with md-s0 as a spare (-x 1), waits for the initial recovery, writes
# seed 1 over all of it and stops it.
#
# Saved in /out: pm-examine-X.txt (X: d0 d1 d2 s0), pm-detail.txt,
# pm-detail-rebuilt.txt, pm-examine-s0-rebuilt.txt, pm-mismatch_cnt.txt;
# md-examine-X.txt, md-detail.txt, md-size.txt.
. /guest-lib.sh
mdadm --version 2>&1 | sed 's/^/RAIDVM: /'
DISKS="d0 d1 d2 s0"

# devs NAME: NAME's disks, in the order of $DISKS.
devs () {
	for x in $DISKS; do dev "$1-$x"; done | tr '\n' ' '
}
# examine NAME [SUFFIX]: mdadm --examine of each of NAME's disks, saved
# as NAME-examine-X[SUFFIX].txt; each must say the role it has.
examine () {
	role=0
	for x in $DISKS; do
		e=/out/$1-examine-$x$2.txt
		mdadm --examine "$(dev "$1-$x")" > "$e" 2>&1
		r=$(sed -n 's/^ *Device Role : //p' "$e")
		want="Active device $role"
		[ "$x" = s0 ] && want=spare
		[ "$r" = "$want" ] && ok "$1-$x: Device Role : $r" ||
			fail "$1-$x: Device Role : '$r', not '$want'"
		role=$((role + 1))
	done
}
# detail NAME FILE: mdadm --detail of md0, saved and shown.
detail () {
	mdadm --detail /dev/md0 > "/out/$2" 2>&1
	sed "s/^/RAIDVM: $1: /" "/out/$2"
}
# listed FILE DEV STATE: --detail in FILE lists DEV in STATE ("spare",
# "active sync", "faulty").
listed () {
	grep -q " $3 *$2\$" "$1"
}

if [ -s /pm-size.txt ]; then
	step "pm: the plugin's array"
	size=$(cat /pm-size.txt)
	examine pm
	if run mdadm --assemble /dev/md0 $(devs pm); then
		detail pm pm-detail.txt
		s0=$(dev pm-s0)
		d0=$(dev pm-d0)
		listed /out/pm-detail.txt "$s0" spare &&
			ok "pm: md lists pm-s0 ($s0) as a spare" ||
			fail "pm: md does not list pm-s0 ($s0) as a spare"
		[ "$(cat /sys/block/md0/md/degraded)" = 0 ] ||
			fail "pm: assembled degraded"
		run patgen -v 1 0 "$size" /dev/md0 &&
			ok "pm: the pattern reads back"
		step "pm: md fails pm-d0 ($d0)"
		run mdadm /dev/md0 --fail "$d0"
		md_idle
		detail pm pm-detail-rebuilt.txt
		listed /out/pm-detail-rebuilt.txt "$s0" "active sync" &&
			listed /out/pm-detail-rebuilt.txt "$d0" faulty &&
			ok "pm: md rebuilt onto pm-s0, pm-d0 faulty" ||
			fail "pm: md did not rebuild onto pm-s0"
		run patgen -v 1 0 "$size" /dev/md0 &&
			ok "pm: after the rebuild, the pattern reads back"
		echo check > /sys/block/md0/md/sync_action
		md_idle
		mm=$(cat /sys/block/md0/md/mismatch_cnt)
		echo "$mm" > /out/pm-mismatch_cnt.txt
		[ "$mm" = 0 ] && ok "pm: check: mismatch_cnt 0" ||
			fail "pm: check: mismatch_cnt $mm"
		run mdadm --stop /dev/md0
		mdadm --examine "$s0" > /out/pm-examine-s0-rebuilt.txt 2>&1
	fi
fi

step "md: create with a spare"
if run mdadm --create /dev/md0 --run --metadata=1.2 --level=5 \
	--raid-devices=3 --spare-devices=1 --chunk=64 $(devs md); then
	md_idle
	size=$(blockdev --getsz /dev/md0)
	echo "$size" > /out/md-size.txt
	run patgen 1 0 "$size" /dev/md0
	sync
	detail md md-detail.txt
	listed /out/md-detail.txt "$(dev md-s0)" spare &&
		ok "md: md-s0 is a spare" || fail "md: md-s0 is not a spare"
	run mdadm --stop /dev/md0
	examine md
fi
result
