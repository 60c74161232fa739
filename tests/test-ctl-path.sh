#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# control=PATH never takes over what is at PATH: it used to unlink
# whatever was there.
#   - a regular file at PATH: nbdkit refuses to start, saying why, and the
#     file is still there byte for byte;
#   - the live control socket of another nbdkit: refused, and the other
#     nbdkit's socket still answers;
#   - a stale socket (its process is gone): replaced, nbdkit serves.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires md5sum
ctl_tool=$top_srcdir/tools/nbdkit-raid-ctl
make_members 4 1M
# refused WHAT WHY CONTROL: an array with control=CONTROL must not start,
# saying WHY.
refused ()
{
    expect_refused "$1" "$2" -U - "$RAID_PLUGIN" metadata=none level=5 \
        chunk=4K control="$3" "${members[@]}"
}

head -c 10000 /dev/urandom > "$tmpdir/precious"
sum=$(md5sum < "$tmpdir/precious")
refused "control= naming a regular file" "not a socket" "$tmpdir/precious"
if [ ! -f "$tmpdir/precious" ] || [ "$(md5sum < "$tmpdir/precious")" != "$sum" ]; then
    fail "control= destroyed the regular file at its path"
fi

start_nbdkit "$tmpdir/s2" metadata=none level=5 chunk=4K \
    control="$tmpdir/ctl" "${members[@]}"
for _ in $(seq 50); do [ -S "$tmpdir/ctl" ] && break; sleep 0.1; done
make_members 4 1M n
refused "a second nbdkit on the first one's control socket" "listening" \
    "$tmpdir/ctl"
if ! python3 "$ctl_tool" "$tmpdir/ctl" status > /dev/null; then
    fail "the first nbdkit's control socket no longer answers"
fi

python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])' "$tmpdir/stale"
start_nbdkit "$tmpdir/s4" metadata=none level=5 chunk=4K \
    control="$tmpdir/stale" "${members[@]}"
if ! python3 "$ctl_tool" "$tmpdir/stale" status > /dev/null; then
    fail "a stale socket at control= was not replaced"
else
    echo "ok: a stale socket is replaced"
fi
end_failures
