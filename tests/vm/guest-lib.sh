# SPDX-License-Identifier: BSD-3-Clause
# Sourced by the guest scenarios (busybox sh).  Every step and check is a
# "RAIDVM: ..." console line; RAIDVM: RESULT PASS|FAIL ends the run.
FAILS=0
up () { cut -d' ' -f1 /proc/uptime; }
step () { echo "RAIDVM: step $* (uptime $(up))"; }
ok () { echo "RAIDVM: ok $*"; }
fail () { echo "RAIDVM: FAIL $*"; FAILS=$((FAILS + 1)); }
# run CMD...: log the command and its status; a failure counts.
run () {
	echo "+ $*"
	"$@"
	rc=$?
	[ $rc -eq 0 ] || fail "$* (exit status $rc)"
	return $rc
}
# dev SERIAL: the /dev/vdX whose virtio serial is SERIAL.
dev () {
	for b in /sys/block/vd*; do
		[ "$(cat "$b/serial" 2>/dev/null)" = "$1" ] && { echo "/dev/${b##*/}"; return 0; }
	done
	fail "no disk with serial $1"
	return 1
}
result () {
	if [ $FAILS -eq 0 ]; then echo "RAIDVM: RESULT PASS"; else echo "RAIDVM: RESULT FAIL ($FAILS failures)"; fi
}
net_up () {
	# Only slirp's 10.0.2.0/24 and no default route: 10.0.2.2 is the
	# host's 127.0.0.1, and nothing else is reachable.
	ip link set lo up
	ip link set eth0 up
	ip addr add 10.0.2.15/24 dev eth0
}
# md_idle: wait until md0 runs no sync and has none to run: sync_action
# idle, resync_start "none" (no region left to resync) and no member
# missing.  sync_action alone is not enough: a resync md has yet to start
# (after an unclean assembly, or --create) reads "idle" until md's thread
# starts it, which a loaded host can delay past any fixed sleep.
md_idle () {
	w=0
	while [ $w -lt 600 ]; do
		a=$(cat /sys/block/md0/md/sync_action)
		r=$(cat /sys/block/md0/md/resync_start)
		g=$(cat /sys/block/md0/md/degraded)
		[ "$a" = idle ] && [ "$r" = none ] && [ "$g" = 0 ] && return 0
		sleep 1
		w=$((w + 1))
	done
	fail "md0 still not idle after $w s: sync_action $a, resync_start $r, degraded $g"
	return 1
}
