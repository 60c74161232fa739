#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: re-add and replace keep working on md v1.0 and v1.1
# arrays.  On a new array (members of different sizes, a bitmap), member
# 1 fails, the client writes, and re-add takes it back; member 2 fails
# and is replaced, not by a disk too small for the data and, for v1.0,
# the bitmap and superblock after it (refused, nothing written to it),
# but by a bigger one that carries a leftover v1.2 superblock.  After a
# clean stop every superblock is at its version's place on its own
# member (the replacement's at its own end for v1.0, the leftover gone,
# so that the array starts again without being told its version), the
# parity is right (raidcheck.py) and the data is the client's, byte for
# byte, also reassembled shuffled.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
source "$top_srcdir/tests/lib/md-functions.sh"
requires_python_module nbd
ctl () { python3 "$top_srcdir/tools/nbdkit-raid-ctl" "$ctl_sock" "$@"; }

for v in 1.0 1.1; do
    name=v${v/./}
    members=()
    for i in 0 1 2 3; do
        truncate -s $(( 4 * 1024 * 1024 + i * 4608 )) "$tmpdir/$name$i"
        members+=("$tmpdir/$name$i")
    done
    shadow=$tmpdir/$name.shadow
    md_new "$shadow" --seed 7 --whole --writes 10 -- metadata-version=$v \
        level=5 chunk=$chunk "${members[@]}"
    size=$(sb get "${members[0]}" size)
    doff=$(sb get "${members[0]}" data_offset)
    ctl_sock=$tmpdir/$name.ctl
    sock=$tmpdir/$name.sock
    start_nbdkit "$sock" metadata-version=$v "${members[@]}" control="$ctl_sock"
    uri="nbd+unix:///?socket=$sock"

    ctl fail 1 > /dev/null
    shadow_client "$uri" write "$shadow" --seed 8 --writes 20 > /dev/null
    reply=$(ctl re-add 1) || fail "v$v: re-add 1: $reply"
    ctl wait 60 > /dev/null

    ctl fail 2 > /dev/null
    shadow_client "$uri" write "$shadow" --seed 9 --writes 20 > /dev/null
    # Exactly the data: for v1.0 there is no room for its metadata.
    small=$tmpdir/$name-small
    truncate -s $(( (doff + size) * 512 + 4096 )) "$small"
    before=$(md5sum < "$small")
    if [ "$v" = 1.0 ]; then
        if reply=$(ctl replace 2 "$small" 2>&1); then
            fail "v$v: a replacement with no room for the bitmap and superblock taken: $reply"
        elif ! grep -q "too small.*v1.0" <<< "$reply"; then
            fail "v$v: the small replacement refused, but: $reply"
        else
            echo "ok: v$v: $reply"
        fi
        [ "$(md5sum < "$small")" = "$before" ] || fail "v$v: the refused disk was written"
    fi
    # Bigger, with a v1.2 superblock left from another life (member 0's,
    # moved to 4 KiB).
    spare=$tmpdir/$name-spare
    truncate -s $(( 4 * 1024 * 1024 + 40960 + 512 )) "$spare"
    python3 - "${members[0]}" "$spare" <<'EOF'
import os, struct, sys
sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "lib"))
import mdsb
raw, _, _ = mdsb.read_raw(sys.argv[1])
struct.pack_into("<Q", raw, 144, 8)
struct.pack_into("<Q", raw, 128, 2048)
struct.pack_into("<I", raw, 8, 0)
raw[16] ^= 0xff                                     # another set UUID
struct.pack_into("<I", raw, 216, mdsb.csum(raw))
with open(sys.argv[2], "r+b") as f:
    f.seek(4096)
    f.write(raw)
EOF
    reply=$(ctl replace 2 "$spare" force) || fail "v$v: replace 2: $reply"
    ctl wait 60 > /dev/null
    shadow_client "$uri" verify "$shadow" > /dev/null ||
        fail "v$v: after re-add and replace, the data differs"
    kill "${_bg_pids[-1]}"
    wait "${_bg_pids[-1]}" || true

    final=("${members[0]}" "${members[1]}" "$spare" "${members[3]}")
    for m in "${final[@]}"; do
        got=$(sb get "$m" version at 2>&1) || { fail "v$v: $m: $got"; continue; }
        want="$v $(python3 -c "
import os, sys
sys.path.insert(0, os.path.join(os.environ['top_srcdir'], 'tests', 'lib'))
import mdsb
print(mdsb.place('$v', os.path.getsize('$m')))")"
        [ "$got" = "$want" ] || fail "v$v: $m: superblock (version, at) $got, not $want"
        sb check "$m" || fail "v$v: $m: md would refuse its superblock"
    done
    raidcheck --level 5 --chunk $chunk --data-offset $((doff * 512)) \
        --size $((size * 512)) --image "$tmpdir/$name.image" "${final[@]}" ||
        fail "v$v: raidcheck after re-add and replace"
    cmp "$tmpdir/$name.image" "$shadow" || fail "v$v: raidcheck's image is not the data"
    rm -f "$tmpdir/$name.image"
    client "$shadow" verify -- metadata-version=$v "${final[3]}" "${final[2]}" \
        "${final[0]}" "${final[1]}" ||
        fail "v$v: reassembled shuffled, the data differs"
    echo "ok: v$v: re-add and replace, superblocks in place, parity and data right (${SECONDS}s)"
done
end_failures
