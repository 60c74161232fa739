#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Guest side of test-vm-bitmap.sh: md write-intent bitmaps between the
# kernel's md, mdadm and the plugin.  /arrays.txt, one array a line (disks
# with virtio serials NAME-d0 .. NAME-d<N-1>, in role order):
#
#   create NAME LEVEL N CHUNK_KIB BITMAP_CHUNK
#       mdadm --create with --bitmap=internal (BITMAP_CHUNK "default":
#       mdadm's choice, else --bitmap-chunk=BITMAP_CHUNK), wait for the
#       initial sync, write pattern seed 1 over all of it, stop cleanly.
#       Saved in /out: NAME-size.txt, NAME-X.txt (mdadm -X of the members).
#
#   check NAME N KIND SECTORS CHUNK_BYTES MIN_DIRTY MM_RESYNC MM_CHECK
#       KIND clean: the bitmap on every member must be valid, current and
#       have no bit set; md must assemble it with no resync.
#       KIND unclean (the plugin was killed): the bitmap must be valid and
#       current with at least MIN_DIRTY bits set and not all; md must
#       assemble it (plain, or with --run: said which), resync, and its
#       resync must count MM_RESYNC mismatched sectors.
#       Both: "Intent Bitmap : Internal" in --detail, no bitmap complaint
#       in dmesg, /NAME-writes.txt reads back (patgen -l), an md check
#       counts MM_CHECK, and after mdadm --stop every member's bitmap is
#       clean again.  CHUNK_BYTES "-": any bitmap chunk, the same on all.
#       Saved in /out: NAME-X-dI.txt and NAME-examine-dI.txt (before),
#       NAME-X-after-dI.txt and NAME-examine-after-dI.txt, NAME-detail.txt,
#       NAME-dmesg.txt, NAME-assemble.txt.
. /guest-lib.sh
mdadm --version 2>&1 | sed 's/^/RAIDVM: /'

# field FILE NAME: a "   Name : value" line's value (first one).
field () { sed -n "s/^ *$2 : //p" "$1" | head -n 1 | sed 's/ *$//'; }
# bytes "64 KB": mdadm -X's chunk size in bytes.
bytes () {
	set -- $1
	case "$2" in
	B) echo "$1" ;; KB) echo $(($1 << 10)) ;; MB) echo $(($1 << 20)) ;;
	GB) echo $(($1 << 30)) ;; *) echo "?$1$2" ;;
	esac
}
hex () { echo "$1" | tr -cd '0-9a-fA-F' | tr A-F a-f; }
# members NAME N: the member devices, in role order, in $devs.
members () {
	devs=""
	i=0
	while [ $i -lt "$2" ]; do devs="$devs $(dev "$1-d$i")"; i=$((i + 1)); done
}

# examine_bitmaps NAME N SUFFIX KIND CHUNK_BYTES MIN_DIRTY: mdadm -X of
# every member ($devs), checked against its superblock (--examine).
examine_bitmaps () {
	name=$1 n=$2 sfx=$3 kind=$4 want_chunk=$5 min_dirty=$6
	i=0 ref=""
	# One mdadm of each kind for all members (under TCG each start
	# costs up to a second), split by member.
	mdadm -X $devs > /tmp/X.all 2>&1
	mdadm --examine $devs > /tmp/examine.all 2>&1
	for d in $devs; do
		x=/out/$name-X$sfx-d$i.txt e=/out/$name-examine$sfx-d$i.txt
		awk -v d="$d" '$1 == "Filename" { on = $3 == d } on' /tmp/X.all > "$x"
		awk -v d="$d:" '/^\/dev\// { on = $1 == d } on' /tmp/examine.all > "$e"
		tag="$name d$i${sfx:+ ($sfx)}"
		[ $i -eq 0 ] && { echo "RAIDVM: $tag: mdadm -X:"; sed 's/^/    /' "$x"; }
		[ "$(field "$x" Magic)" = 6d746962 ] || fail "$tag: bitmap magic '$(field "$x" Magic)'"
		grep -qi 'invalid\|corrupt\|unknown' "$x" && fail "$tag: mdadm -X: $(grep -i 'invalid\|corrupt\|unknown' "$x" | head -n 1)"
		[ "$(field "$e" 'Internal Bitmap')" = "8 sectors from superblock" ] ||
			fail "$tag: --examine: Internal Bitmap '$(field "$e" 'Internal Bitmap')'"
		u=$(hex "$(field "$x" UUID)") au=$(hex "$(field "$e" 'Array UUID')")
		[ -n "$u" ] && [ "$u" = "$au" ] || fail "$tag: bitmap UUID $u, array UUID $au"
		[ "$(field "$x" State)" = OK ] || fail "$tag: bitmap state '$(field "$x" State)'"
		be=$(field "$x" Events) se=$(field "$e" Events)
		# md loads a bitmap whose events are not older than the array's
		# (md_bitmap_read_sb); md itself keeps them equal.  Events
		# cleared: md advances it only on writes, so it may lag.
		bc=$(field "$x" 'Events Cleared')
		if { [ "$be" = "$se" ] || [ "$be" = $((se + 1)) ]; } && [ "$bc" -le "$be" ]; then
			ok "$tag: bitmap events $be (cleared $bc), superblock events $se"
		else
			fail "$tag: bitmap events $be (cleared $bc), superblock events $se"
		fi
		c=$(bytes "$(field "$x" Chunksize)")
		[ "$want_chunk" = - ] || [ "$c" = "$want_chunk" ] || fail "$tag: bitmap chunk $c, want $want_chunk"
		bm=$(field "$x" Bitmap)          # "176 bits (chunks), 0 dirty (0.0%)"
		bits=${bm%% bits*} dirty=$(echo "$bm" | sed -n 's/.*, \([0-9]*\) dirty.*/\1/p')
		[ -n "$dirty" ] || { fail "$tag: cannot read the dirty count in '$bm'"; dirty=-1; }
		case "$kind" in
		clean)
			[ "$dirty" = 0 ] || fail "$tag: $dirty of $bits bits dirty, want 0" ;;
		unclean)
			if [ "$dirty" -ge "$min_dirty" ] && [ "$dirty" -gt 0 ] && [ "$dirty" -lt "$bits" ]; then
				ok "$tag: $dirty of $bits bits dirty (the host wrote to $min_dirty regions)"
			else
				fail "$tag: $dirty of $bits bits dirty, want $min_dirty or more, not all"
			fi ;;
		esac
		# Every member holds the same bitmap.
		sig=$(grep -v Filename "$x" | md5sum)
		[ -z "$ref" ] || [ "$sig" = "$ref" ] || fail "$tag: mdadm -X differs from d0's"
		ref=$sig
		i=$((i + 1))
	done
}

while read -r action name a1 a2 a3 a4 a5 a6 a7; do
	[ -n "$name" ] || continue
	if [ "$action" = create ]; then
		level=$a1 n=$a2 chunk=$a3 bchunk=$a4
		step "$name: mdadm --create RAID-$level, $n members, chunk ${chunk}K, bitmap chunk $bchunk"
		members "$name" "$n"
		bopt=""
		[ "$bchunk" = default ] || bopt="--bitmap-chunk=$bchunk"
		run mdadm --create /dev/md0 --run --metadata=1.2 --level="$level" \
			--raid-devices="$n" --chunk="$chunk" --bitmap=internal $bopt $devs ||
			continue
		echo 4096 > /sys/block/md0/md/stripe_cache_size
		md_idle
		size=$(blockdev --getsz /dev/md0)
		echo "$size" > "/out/$name-size.txt"
		run patgen 1 0 "$size" /dev/md0
		run mdadm --stop /dev/md0
		mdadm -X $devs > "/out/$name-X.txt" 2>&1
		echo "RAIDVM: $name: mdadm's bitmap: $(field "/out/$name-X.txt" Chunksize) chunks, $(field "/out/$name-X.txt" Bitmap)"
		ok "$name created"
		continue
	fi
	n=$a1 kind=$a2 sectors=$a3 want_chunk=$a4 min_dirty=$a5 mm_resync=$a6 mm_check=$a7
	step "$name: $kind, $n members"
	members "$name" "$n"
	examine_bitmaps "$name" "$n" "" "$kind" "$want_chunk" "$min_dirty"
	mark=$(dmesg | wc -l)
	if mdadm --assemble /dev/md0 $devs > "/out/$name-assemble.txt" 2>&1; then
		ok "$name: mdadm --assemble (without --run): $(tr '\n' ' ' < "/out/$name-assemble.txt")"
	else
		echo "RAIDVM: $name: mdadm --assemble refused: $(tr '\n' ' ' < "/out/$name-assemble.txt")"
		[ "$kind" = unclean ] || { fail "$name: mdadm --assemble"; continue; }
		mdadm --stop /dev/md0 > /dev/null 2>&1
		run mdadm --assemble --run /dev/md0 $devs || continue
		ok "$name: assembled with --run"
	fi
	# --detail first: a new stripe_cache_size marks the array active
	# (md_allow_write) until md's safe mode makes it clean again.
	mdadm --detail /dev/md0 > "/out/$name-detail.txt" 2>&1
	echo 4096 > /sys/block/md0/md/stripe_cache_size
	sed 's/^/    /' "/out/$name-detail.txt"
	[ "$(field "/out/$name-detail.txt" 'Intent Bitmap')" = Internal ] ||
		fail "$name: --detail: Intent Bitmap '$(field "/out/$name-detail.txt" 'Intent Bitmap')'"
	# The bitmap covers what md resyncs: sync size = used device size (KiB).
	ss=$(field "/out/$name-X-d0.txt" 'Sync Size' | cut -d' ' -f1)
	us=$(field "/out/$name-detail.txt" 'Used Dev Size' | cut -d' ' -f1)
	[ "$ss" = "$us" ] || fail "$name: bitmap sync size $ss KiB, md's used device size $us KiB"
	[ "$(field "/out/$name-detail.txt" 'Active Devices')" = "$n" ] ||
		fail "$name: --detail: $(field "/out/$name-detail.txt" 'Active Devices') active devices"
	act=$(cat /sys/block/md0/md/sync_action)
	echo "RAIDVM: $name: after assembly: sync_action $act, sync_completed $(cat /sys/block/md0/md/sync_completed)"
	md_idle
	mm=$(cat /sys/block/md0/md/mismatch_cnt)
	dmesg | tail -n +$((mark + 1)) > "/out/$name-dmesg.txt"
	sed 's/^/    dmesg: /' "/out/$name-dmesg.txt"
	if grep -i -E 'invalid bitmap|bitmap.*(mismatch|out of date|full recovery|failed|error|corrupt|stale)' \
		"/out/$name-dmesg.txt" > /tmp/complaints; then
		fail "$name: the kernel complains about the bitmap: $(head -n 1 /tmp/complaints)"
	fi
	if [ "$kind" = clean ]; then
		st=$(field "/out/$name-detail.txt" State)
		[ "$st" = clean ] || fail "$name: --detail: state '$st', not clean"
		if grep -q 'resync of RAID array\|not clean' "/out/$name-dmesg.txt"; then
			fail "$name: md resynced a clean array: $(grep 'resync of RAID array\|not clean' "/out/$name-dmesg.txt" | head -n 1)"
		else
			ok "$name: clean, assembled with no resync"
		fi
	else
		if grep -q 'resync of RAID array' "/out/$name-dmesg.txt" &&
			grep -q 'resync done' "/out/$name-dmesg.txt"; then
			ok "$name: md resynced (dmesg: $(grep 'not clean\|resync of RAID\|resync done' "/out/$name-dmesg.txt" | sed 's/^\[[^]]*\] //' | tr '\n' ';'))"
		else
			fail "$name: no resync in dmesg after an unclean shutdown"
		fi
		[ "$mm" = "$mm_resync" ] && ok "$name: the resync counted $mm mismatched sectors, as expected" ||
			fail "$name: the resync counted $mm mismatched sectors, want $mm_resync"
		st=$(field "/out/$name-detail.txt" State)
		echo "RAIDVM: $name: state at assembly '$st', now '$(cat /sys/block/md0/md/array_state)'"
	fi
	step "$name: read the pattern"
	run patgen -l "/$name-writes.txt" "$sectors" /dev/md0
	step "$name: check"
	echo check > /sys/block/md0/md/sync_action
	md_idle
	mm=$(cat /sys/block/md0/md/mismatch_cnt)
	[ "$mm" = "$mm_check" ] && ok "$name: check: mismatch_cnt $mm" ||
		fail "$name: check: mismatch_cnt $mm, want $mm_check"
	run mdadm --stop /dev/md0
	# md maintained the bitmap it was given: clean again after the stop.
	examine_bitmaps "$name" "$n" -after clean "$want_chunk" 0
done < /arrays.txt
result
