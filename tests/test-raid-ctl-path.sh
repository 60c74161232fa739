#!/usr/bin/env bash
# control=PATH never takes over what is at PATH (issue 11, item 8): it used
# to unlink whatever was there.
#   - a regular file at PATH: nbdkit refuses to start, saying why, and the
#     file is still there byte for byte;
#   - the live control socket of another nbdkit: refused, and the other
#     nbdkit's socket still answers;
#   - a stale socket (its process is gone): replaced, nbdkit serves.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires md5sum
ctl_tool=$top_srcdir/tools/nbdkit-raid-ctl
make_members 4 1M
fail=0

head -c 10000 /dev/urandom > "$tmpdir/precious"
sum=$(md5sum < "$tmpdir/precious")
if raid_nbdkit metadata=none level=5 chunk=4K control="$tmpdir/precious" \
        "${members[@]}" --run true > "$tmpdir/out1" 2>&1; then
    echo "FAIL: nbdkit started with control= naming a regular file"; fail=1
elif ! grep -q "not a socket" "$tmpdir/out1"; then
    echo "FAIL: the refusal does not say why: $(cat "$tmpdir/out1")"; fail=1
else
    echo "ok: refused: $(grep 'not a socket' "$tmpdir/out1")"
fi
if [ ! -f "$tmpdir/precious" ] || [ "$(md5sum < "$tmpdir/precious")" != "$sum" ]; then
    echo "FAIL: control= destroyed the regular file at its path"; fail=1
fi

start_nbdkit "$tmpdir/s2" metadata=none level=5 chunk=4K \
    control="$tmpdir/ctl" "${members[@]}"
for _ in $(seq 50); do [ -S "$tmpdir/ctl" ] && break; sleep 0.1; done
make_members 4 1M n
if raid_nbdkit metadata=none level=5 chunk=4K control="$tmpdir/ctl" \
        "${members[@]}" --run true > "$tmpdir/out3" 2>&1; then
    echo "FAIL: a second nbdkit started on the first one's control socket"; fail=1
elif ! grep -q "listening" "$tmpdir/out3"; then
    echo "FAIL: the refusal does not say why: $(cat "$tmpdir/out3")"; fail=1
else
    echo "ok: refused: $(grep listening "$tmpdir/out3")"
fi
if ! python3 "$ctl_tool" "$tmpdir/ctl" status > /dev/null; then
    echo "FAIL: the first nbdkit's control socket no longer answers"; fail=1
fi

python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1])' "$tmpdir/stale"
start_nbdkit "$tmpdir/s4" metadata=none level=5 chunk=4K \
    control="$tmpdir/stale" "${members[@]}"
if ! python3 "$ctl_tool" "$tmpdir/stale" status > /dev/null; then
    echo "FAIL: a stale socket at control= was not replaced"; fail=1
else
    echo "ok: a stale socket is replaced"
fi
exit $fail
