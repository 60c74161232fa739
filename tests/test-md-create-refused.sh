#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# create=true writes nothing unless every check has passed.  Before the
# fix, a `missing` member and a control= path that cannot be bound were
# found out only after the fork (the resync, the control socket), when the
# superblocks were already written; so was anything nbdkit itself refuses
# between config_complete and the fork (its own -U socket).  Each refused
# create here must stop nbdkit with a message naming the cause and leave
# every member byte for byte as it was
# (md5, members full of noise so that any write shows); the last case is
# a create that succeeds, so that the others are not vacuous.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires md5sum head

make_members 4 2M
for m in "${members[@]}"; do
    head -c 2M /dev/urandom > "$m"
done
# refused WHAT REGEX NBDKIT-ARGS...: nbdkit must fail, say REGEX, and
# change no member (functions.sh).
refused () { expect_refused "$@"; }

create=("$RAID_PLUGIN" create=true force=true level=5 chunk=4K)
refused "a missing member" "member 2 is 'missing'" \
    -U - "${create[@]}" "${members[0]}" "${members[1]}" missing "${members[3]}"
refused "control= in a directory that does not exist" \
    "control=$tmpdir/no/such/dir/ctl.sock: No such file or directory" \
    -U - "${create[@]}" "${members[@]}" control="$tmpdir/no/such/dir/ctl.sock"
touch "$tmpdir/regular"
refused "control= naming a regular file" \
    "control=$tmpdir/regular: exists and is not a socket" \
    -U - "${create[@]}" "${members[@]}" control="$tmpdir/regular"
refused "control= path too long for a socket" "path too long" \
    -U - "${create[@]}" "${members[@]}" control="$tmpdir/$(printf 'x%.0s' $(seq 120))"
# nbdkit binds its own socket after config_complete: create=true must
# not have written anything by then.
refused "nbdkit's own -U socket cannot be bound" "no/such/dir" \
    -U "$tmpdir/no/such/dir/nbd.sock" "${create[@]}" "${members[@]}"

# The control case: the same create, with a good control path, writes.
members_md5 "${members[@]}" > "$tmpdir/before"
nbdkit --exit-with-parent -U - "${create[@]}" "${members[@]}" \
    control="$tmpdir/ctl.sock" --run '
        for i in $(seq 100); do test -S '"$tmpdir/ctl.sock"' && exit 0; sleep 0.1; done
        exit 1' \
    2> "$tmpdir/err" || { fail "the good create failed"; cat "$tmpdir/err"; }
members_md5 "${members[@]}" > "$tmpdir/after"
if cmp -s "$tmpdir/before" "$tmpdir/after"; then
    fail "the good create wrote nothing"
else
    echo "ok: the same create with a usable control path writes superblocks"
fi

end_failures
