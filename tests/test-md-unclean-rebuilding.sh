#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# An unclean md array with a half-rebuilt member.
#
# md's raid5_run() refuses to start a dirty array that is degraded, and a
# member that is not in sync (its superblock carries a recovery offset)
# counts as degraded: its rows above the offset can only be
# reconstructed, from parity the unclean shutdown may have left stale,
# and a resync would "repair" from it.  md excuses a half-rebuilt member
# that holds nothing but parity (parity-first / parity-last layouts).
#
#   (a) left-symmetric, member 1 half rebuilt, resync_offset 0: refused
#       without force=true, naming the cause, members unchanged;
#   (b) the same with force=true: it starts and serves the data;
#   (c) the same array clean: it starts without force (the rebuild goes on);
#   (d) parity-last, the parity member half rebuilt, unclean: it starts
#       without force, as md's only_parity() allows.
#
# The superblocks are set by tests/lib/mdsb.py (independent of the plugin)
# on copies of an array the plugin created and shut down cleanly.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires nbdsh md5sum cp cmp
requires_python_module nbd


# make_array NAME LAYOUT: NAME0..3, RAID-5, chunk 4K, 64 rows, with data
# (shadow NAME.shadow), clean, its first resync done.
make_array ()
{
    make_members 4 320K "$1"
    md_new "$tmpdir/$1.shadow" -- level=5 chunk=4K layout="$2" \
        data-offset=64K bitmap=none "${members[@]}"
}

# copy NAME HALF RESYNC: x0..x3 copies of NAME, member HALF marked half
# rebuilt (16 of 64 rows), every superblock's resync_offset RESYNC.
copy ()
{
    local i
    for i in 0 1 2 3; do
        cp --sparse=always "$tmpdir/$1$i" "$tmpdir/x$i"
        sb set "$tmpdir/x$i" resync_offset="$3"
    done
    sb set "$tmpdir/x$2" feature_map=0x2 recovery_offset=$((16 * 8))
    cp "$tmpdir/$1.shadow" "$tmpdir/x.shadow"
}

x=("$tmpdir/x0" "$tmpdir/x1" "$tmpdir/x2" "$tmpdir/x3")
watch='"${x[@]}"'

# start WHAT EXPECT ARGS...: EXPECT is "served" or "refused"; a served
# array must read back as the shadow, a refused one say why and change no
# member.
start ()
{
    local what=$1 expect=$2 r=0
    shift 2
    if [ "$expect" = refused ]; then
        expect_refused "$what" \
            "cannot start a degraded array that was not shut down cleanly.*1 half rebuilt" \
            -U - "$RAID_PLUGIN" "$@" "${x[@]}"
        return
    fi
    timeout 60 nbdkit --exit-with-parent -U - "$RAID_PLUGIN" "$@" "${x[@]}" \
        --run 'nbdsh -u "$uri" -c "
assert h.pread(h.get_size(), 0) == open(\"'"$tmpdir/x.shadow"'\", \"rb\").read()
print(\"SERVED\")
"' > "$tmpdir/out" 2> "$tmpdir/err" || r=$?
    if [ $r != 0 ] || ! grep -q SERVED "$tmpdir/out"; then
        fail "$what: not served (exit $r)"
        sed 's/^/    /' "$tmpdir/err"
    else
        echo "ok: $what: served, data as written"
    fi
}

make_array A left-symmetric
copy A 1 0
start "(a) unclean, member 1 half rebuilt" refused
start "(b) the same, force=true" served force=true
copy A 1 $clean
start "(c) clean, member 1 half rebuilt" served

# parity-last: role 3 holds only parity (md's ALGORITHM_PARITY_N).
make_array P parity-last
copy P 3 0
start "(d) parity-last, unclean, the parity member half rebuilt" served
copy P 2 0
start "(d2) parity-last, unclean, data member 2 half rebuilt" refused

end_failures
