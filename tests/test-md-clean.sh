#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# clean/active in the md superblocks.  After a flush and a clean exit the
# superblocks say clean (resync_offset all ones), the event count goes up
# and back down as md's does, the update time says they were rewritten,
# the creation time stays.  A served array is active (resync_offset 0)
# from the first write until a flush with no write in flight, clean after
# it.  After SIGKILL during writes the superblocks say active and their
# events advanced; a start that is unclean and degraded serves the right
# data or refuses saying so (never leaving a client hanging); the next
# whole start says "not shut down cleanly", serves the data, resyncs and
# ends clean with good parity.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
source "$top_srcdir/tests/lib/md-functions.sh"
requires nbdsh truncate md5sum cmp cp
requires_python_module nbd

md_create A 5 4 10
x A 4
cp "$tmpdir/A.shadow" "$tmpdir/d.shadow"
read -r ev0 ctime0 utime0 <<< "$(sb get "$tmpdir/x0" events ctime utime)"
sleep 1         # so that a rewritten ctime would show
client "$tmpdir/d.shadow" write --seed 21 --writes 10 -- "$tmpdir"/x[0-3]
# Active then clean again, with nothing else changed: like md, the event
# count goes up and back down; the update time says it was rewritten.
for m in "$tmpdir"/x[0-3]; do
    read -r resync events ctime utime <<< "$(sb get "$m" resync_offset events ctime utime)"
    [ "$resync" = $clean ] || fail "$m: not clean after a clean shutdown"
    [ "$events" -ge "$ev0" ] || fail "$m: events went back from $ev0 to $events"
    [ "$utime" -gt "$utime0" ] || fail "$m: not rewritten (utime $utime0 -> $utime)"
    [ "$ctime" = "$ctime0" ] ||
        fail "$m: the creation time changed ($ctime0 -> $ctime)"
done
echo "ok: clean after flush + exit, events $ev0 -> $(sb get "$tmpdir/x0" events)"

# A served array: active from the first write until a flush, clean after.
sock=$tmpdir/d.sock
start_nbdkit "$sock" "$tmpdir"/x[0-3] 2> "$tmpdir/served.log"
pid=${_bg_pids[-1]}
uri="nbd+unix:///?socket=$sock"
ev1=$(sb get "$tmpdir/x0" events)
# write OFFSET LENGTH BYTE [flush]: one write, in the shadow too.
write ()
{
    SHADOW=$tmpdir/d.shadow nbdsh -u "$uri" -c "
import os
img = bytearray(open(os.environ['SHADOW'], 'rb').read())
h.set_strict_mode(0)
h.pwrite(bytes([$3]) * $2, $1)
img[$1:$1 + $2] = bytes([$3]) * $2
open(os.environ['SHADOW'], 'wb').write(img)
if '$4' == 'flush':
    h.flush()"
}
write 65536 8192 0x5a
for m in "$tmpdir"/x[0-3]; do
    [ "$(sb get "$m" resync_offset)" = 0 ] ||
        fail "$m: not active while written"
done
nbdsh -u "$uri" -c 'h.flush()'
for m in "$tmpdir"/x[0-3]; do
    [ "$(sb get "$m" resync_offset)" = $clean ] ||
        fail "$m: not clean after a flush with no write in flight"
done
write 200001 5000 0xa5
write 1000000 3 0x77
kill -9 "$pid"
wait "$pid" 2>/dev/null || :
for m in "$tmpdir"/x[0-3]; do
    read -r resync events <<< "$(sb get "$m" resync_offset events)"
    [ "$resync" = 0 ] || fail "$m: not active after SIGKILL during writes"
    [ "$events" -gt "$ev1" ] || fail "$m: events did not advance from $ev1"
done
# Not shut down cleanly and a member missing (md refuses such an array
# unless told to start it anyway): nbdkit must decide before it serves,
# either serving the right data or stopping with a message about it, and
# never leave a client hanging.
for i in 0 1 2 3; do cp --sparse=always "$tmpdir/x$i" "$tmpdir/y$i"; done
members_md5 "$tmpdir"/y[013] > "$tmpdir/before"
r=0
timeout -k 5 20 nbdkit -U - "$RAID_PLUGIN" "$tmpdir/y0" "$tmpdir/y1" "$tmpdir/y3" \
    --run 'python3 "$top_srcdir/tests/lib/shadow_client.py" "$uri" verify '"$tmpdir/d.shadow" \
    > "$tmpdir/out" 2> "$tmpdir/err" || r=$?
if [ $r = 124 ]; then
    fail "unclean and degraded: the client hung (nbdkit said: $(tr '\n' ' ' < "$tmpdir/err"))"
elif [ $r = 0 ]; then
    echo "ok: unclean and degraded: served, $(cat "$tmpdir/out")"
elif grep -qE "degraded|missing" "$tmpdir/err" &&
     members_md5 "$tmpdir"/y[013] | cmp -s "$tmpdir/before" -; then
    echo "ok: unclean and degraded: refused: $(grep -E "degraded|missing" "$tmpdir/err" | head -1)"
else
    fail "unclean and degraded: exit $r:"
    cat "$tmpdir/err"
fi
rm -f "$tmpdir"/y*

# The next start says so, serves the data, resyncs and ends clean.
AFTER="python3 $top_srcdir/tests/lib/mdsb.py wait-clean $tmpdir/x0" \
    client "$tmpdir/d.shadow" verify -- "$tmpdir/x2" "$tmpdir/x0" "$tmpdir/x3" "$tmpdir/x1" ||
    fail "after SIGKILL: wrong data, or never clean again"
if grep -q "not shut down cleanly" "$tmpdir/log"; then
    echo "ok: after SIGKILL: $(grep "not shut down cleanly" "$tmpdir/log")"
else
    fail "the start after SIGKILL did not say 'not shut down cleanly':"
    cat "$tmpdir/log"
fi
raidcheck --level 5 --chunk $chunk --data-offset 1048576 "$tmpdir"/x[0-3] ||
    fail "parity after the resync"
end_failures
