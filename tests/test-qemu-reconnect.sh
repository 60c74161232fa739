#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# qemu's NBD client across a restart of nbdkit: what a VM's disk survives,
# shown with qemu-io writing 64K every 50 ms (64 writes, each its own
# pattern) while nbdkit goes away for 2 s (as long as the service's
# RestartSec keeps it away when it dies).
#
#  kill     reconnect-delay=30, nbdkit killed (SIGKILL) and started again:
#           every write succeeds (qemu holds them, reconnects, resends
#           what was in flight) and reads back with its pattern.
#  nodelay  the same without reconnect-delay (qemu's default, 0): the
#           writes of the outage fail.  The option is what makes (kill)
#           work.
#  term     reconnect-delay=30, nbdkit stopped with SIGTERM: nbdkit 1.32
#           answers the requests that come while it stops with an error
#           (ESHUTDOWN) instead of dropping the connection, and qemu
#           hands those errors to the guest; it reconnects only once
#           nbdkit has gone.  nbdkit-raid-plugin(1), SERVICE, says so; if
#           a later nbdkit changes this, this case fails and the page
#           must change with it.
# After each case the array (md, create=true at the start) must be
# consistent: scrub check, 0 mismatches.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires qemu-io qemu-img
if ! qemu-img --help 2>/dev/null | grep -qw nbd; then
    echo "$0: SKIP: this qemu lacks the nbd block driver"
    exit 77
fi

make_members 6 16M
sock=$tmpdir/sock ctl=$tmpdir/ctl
ctl () { "$top_srcdir/tools/nbdkit-raid-ctl" "$ctl" "$@"; }
start_nbdkit "$sock" create=true level=6 chunk=64K control="$ctl" \
    "${members[@]}" 2> "$tmpdir/nbdkit.log"
sb wait-clean "${members[0]}" 60

writes=()
for (( i = 0; i < 64; i++ )); do
    writes+=(-c "write -P $(( i + 1 )) $(( i * 65536 )) 64k" -c "sleep 50")
done
reads=()
for (( i = 0; i < 64; i++ )); do
    reads+=(-c "read -P $(( i + 1 )) $(( i * 65536 )) 64k")
done

# run_case NAME SIGNAL DELAY: qemu-io's writes across SIGNAL to nbdkit;
# sets $failed (writes that failed) and $out.
run_case ()
{
    local name=$1 sig=$2 delay=$3 q pid opts
    opts="driver=raw,file.driver=nbd,file.server.type=unix,file.server.path=$sock"
    [ "$delay" = 0 ] || opts+=",file.reconnect-delay=$delay"
    out=$tmpdir/$name.out
    qemu-io --image-opts "$opts" "${writes[@]}" > "$out" 2>&1 &
    q=$!
    sleep 1
    pid=${_bg_pids[-1]}
    kill "-$sig" "$pid"
    sleep 2
    if [ "$sig" = TERM ]; then
        kill -0 "$pid" 2>/dev/null && echo "$name: nbdkit still runs 2 s after SIGTERM (a client is connected)"
    fi
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    start_nbdkit "$sock" control="$ctl" "${members[@]}" 2>> "$tmpdir/nbdkit.log"
    wait "$q" || true
    failed=$(grep -c 'write failed' "$out" || true)
    echo "$name: $(grep -c '^wrote' "$out") writes done, $failed failed" \
        "$(grep -m1 'write failed' "$out" || true)"
}

consistent ()
{
    ctl wait 60 > /dev/null
    ctl scrub check > /dev/null
    ctl wait 60 > /dev/null
    ctl status | python3 -c '
import json, sys
sc = json.load(sys.stdin)["scrub"]
assert sc["finished"] and sc["mismatch_cnt"] == 0, sc' ||
        fail "$1: scrub check"
}

run_case kill KILL 30
[ "$failed" = 0 ] || fail "kill: $failed writes failed across the restart"
qemu-io -r -f raw "nbd+unix:///?socket=$sock" "${reads[@]}" > "$tmpdir/reads" 2>&1
if [ "$(grep -c '^read 65536' "$tmpdir/reads")" != 64 ] ||
   grep -q -i 'fail\|mismatch' "$tmpdir/reads"; then
    fail "kill: the writes do not read back"
    grep -i 'fail\|mismatch' "$tmpdir/reads" | head -n 5
fi
consistent kill

run_case nodelay KILL 0
[ "$failed" -gt 0 ] ||
    fail "nodelay: no write failed without reconnect-delay (did nbdkit go away?)"
consistent nodelay

run_case term TERM 30
[ "$failed" -gt 0 ] && grep -q 'transport endpoint shutdown' "$tmpdir/term.out" ||
    fail "term: SIGTERM no longer fails qemu's writes with ESHUTDOWN: update nbdkit-raid-plugin(1), SERVICE"
consistent term
end_failures
