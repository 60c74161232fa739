#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# A resync stopped cleanly goes on where it stopped.  An array without a
# bitmap, its resync slowed down by rebuild-rate (md's sync_speed_max),
# stopped (SIGTERM) half way: the superblocks record how far it got in
# resync_offset, as md does; the next start says where the resync
# stopped and resyncs only the rest, and ends clean with good parity.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
source "$top_srcdir/tests/lib/md-functions.sh"
requires truncate

make_members 4 "$size" e
ctl=$tmpdir/e.ctl
status () { python3 "$top_srcdir/tools/nbdkit-raid-ctl" "$ctl" status; }
field () { python3 -c "import json,sys; s=json.load(sys.stdin)['scrub']; print(s['$1'])"; }
start_nbdkit "$tmpdir/e.sock" create=true bitmap=none level=5 chunk=$chunk \
    rebuild-rate=1M control="$ctl" "${members[@]}" 2> "$tmpdir/e.log"
sleep 1.5
done1=$(status | field done)
kill -TERM "${_bg_pids[-1]}"
wait "${_bg_pids[-1]}" 2>/dev/null || :
rows=$(( 4 * 1024 * 1024 / (64 * 1024) - 16 ))     # 4M members, 1M data offset
read -r resync events <<< "$(sb get "${members[0]}" resync_offset events)"
if ! [ "$resync" -gt 0 ] 2>/dev/null || [ "$resync" = $clean ] ||
        [ $(( resync * 512 )) -lt "$done1" ]; then
    fail "stopped at $done1 bytes of each member: resync_offset $resync"
fi
start_nbdkit "$tmpdir/e.sock" control="$ctl" "${members[@]}" 2> "$tmpdir/e.log"
total=$(status | field total)
[ "$total" = $(( rows * 64 * 1024 - resync * 512 )) ] ||
    fail "the second resync goes over $total bytes, not the $(( rows * 64 * 1024 - resync * 512 )) left"
grep -q "resync stopped at row" "$tmpdir/e.log" ||
    fail "the second start did not say where the resync stopped"
python3 "$top_srcdir/tools/nbdkit-raid-ctl" "$ctl" wait 60 > /dev/null ||
    fail "the second resync did not end"
wait_clean "${members[0]}" || fail "not clean after the resync"
kill -TERM "${_bg_pids[-1]}"
wait "${_bg_pids[-1]}" 2>/dev/null || :
raidcheck --level 5 --chunk $chunk --data-offset 1048576 "${members[@]}" ||
    fail "parity after two halves of a resync"
echo "ok: resync stopped at $(( resync * 512 )) of $(( rows * 64 * 1024 )) bytes, went on from there (${SECONDS}s)"
end_failures
