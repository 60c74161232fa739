# SPDX-License-Identifier: BSD-3-Clause
# Helpers of the md superblock tests (test-md-*.sh), sourced after
# functions.sh.  Members are 4M, chunks 64K; md's default data offset
# (1M) and layout (left-symmetric).
#
#   client SHADOW MODE [OPTION...] -- NBDKIT-ARGS...
#       one captive nbdkit serving NBDKIT-ARGS and tests/lib/shadow_client.py
#       in MODE (write, verify, both; options --seed, --whole, --writes)
#       against the shadow file SHADOW, then $AFTER if set (in --run);
#       nbdkit's stderr goes to $tmpdir/log.
#   md_create NAME LEVEL N WRITES
#       members $tmpdir/NAME0.. (${members[@]}), a new array on them
#       holding random data and WRITES unaligned writes over it (shadow
#       $tmpdir/NAME.shadow, seed LEVEL), left clean.
#   copy_set SRC DST N    DST0..DST(N-1) as sparse copies of SRC0...
#   x SET N               the case's members x0..x(N-1), fresh copies.

chunk=64K
size=4M

client ()
{
    local shadow=$1 mode=$2 opts=()
    shift 2
    while [ "$1" != -- ]; do opts+=("$1"); shift; done
    shift
    SHADOW_ARGS="$mode $shadow ${opts[*]}" AFTER="${AFTER:-}" \
        nbdkit -U - "$RAID_PLUGIN" "$@" \
        --run 'python3 "$top_srcdir/tests/lib/shadow_client.py" "$uri" $SHADOW_ARGS &&
               eval "$AFTER"' \
        2> "$tmpdir/log" || { cat "$tmpdir/log" >&2; return 1; }
}

md_create ()
{
    make_members "$3" "$size" "$1"
    md_new "$tmpdir/$1.shadow" --seed "$2" --whole --writes "$4" -- \
        level="$2" chunk=$chunk "${members[@]}"
}

copy_set ()
{
    local i
    for (( i = 0; i < $3; i++ )); do
        cp --sparse=always "$tmpdir/$1$i" "$tmpdir/$2$i"
    done
}

x ()
{
    rm -f "$tmpdir"/x*
    copy_set "$1" x "$2"
}
