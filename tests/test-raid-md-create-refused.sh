#!/usr/bin/env bash
# create=true writes nothing unless every check has passed (issue 11,
# item 15).  Before the fix, a `missing` member and a control= path that
# cannot be bound were found out only after the fork (the resync, the
# control socket), when the superblocks were already written; so was
# anything nbdkit itself refuses between config_complete and the fork
# (its own -U socket).  Each refused create here must stop nbdkit with a
# message naming the cause and leave every member byte for byte as it was
# (md5, members full of noise so that any write shows); the last case is
# a create that succeeds, so that the others are not vacuous.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires md5sum head

make_members 4 2M
for m in "${members[@]}"; do
    head -c 2M /dev/urandom > "$m"
done
failures=0
fail () { echo "FAIL: $*"; failures=$((failures + 1)); }

# refused WHAT REGEX NBDKIT-ARGS...: nbdkit must fail, say REGEX, and
# change no member.
refused ()
{
    local what=$1 regex=$2 r=0
    shift 2
    members_md5 "${members[@]}" > "$tmpdir/before"
    timeout 60 nbdkit --exit-with-parent "$@" --run 'echo SERVED' \
        > "$tmpdir/out" 2> "$tmpdir/err" || r=$?
    members_md5 "${members[@]}" > "$tmpdir/after"
    if ! cmp -s "$tmpdir/before" "$tmpdir/after"; then
        fail "$what: a member was written (nbdkit exit $r):"
        diff "$tmpdir/before" "$tmpdir/after" | sed 's/^/    /' || :
        sed 's/^/    /' "$tmpdir/err"
    elif [ $r = 0 ] || grep -q SERVED "$tmpdir/out"; then
        fail "$what: nbdkit accepted it (exit $r)"
    elif ! grep -qE -- "$regex" "$tmpdir/err"; then
        fail "$what: the message does not match /$regex/:"
        sed 's/^/    /' "$tmpdir/err"
    else
        echo "ok: $what: $(grep -E -- "$regex" "$tmpdir/err" | head -1)"
    fi
}

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

[ $failures = 0 ] || { echo "$failures case(s) failed"; exit 1; }
