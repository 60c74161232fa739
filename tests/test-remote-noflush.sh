#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: a remote member whose server does not offer flush (nbdkit's
# eval plugin over a file, with no flush method: no NBD_FLAG_SEND_FLUSH, so
# no FUA either) promises nothing beyond a completed write.  The array must
# send it no flush and keep it in sync: writes, FUA writes, zeroes and
# flushes through the array succeed, read back byte for byte against a
# shadow, every row's parity is right on the member files
# (tests/lib/raidcheck.py reads the eval server's file itself), and nbdkit's
# log says once that the member has no flush.
#
# Two arrays: a raw RAID-5 (metadata=none) whose remote member has no
# multi-conn (one shared connection), and an md RAID-5 with a write-intent
# bitmap (create=true; superblock and bitmap writes are flushed or FUA)
# whose remote member has multi-conn.  The old code sent the flush, which
# libnbd refuses without sending: it dropped the connection and failed the
# member (the raw one for good at its first flush, as a lost only
# connection; the md one at the first superblock write).

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires nbdsh dd truncate
requires_python_module nbd
if ! nbdkit eval --dump-plugin >/dev/null 2>&1; then
    echo "$0: SKIP: nbdkit's eval plugin is not installed"
    exit 77
fi
test_seed

ctl () { python3 "$top_srcdir/tools/nbdkit-raid-ctl" "$@"; }

# serve_noflush SOCK FILE MULTI_CONN: FILE over NBD on SOCK, no flush.
serve_noflush ()
{
    local sock=$1 file=$2 mc=$3
    rm -f "$sock"
    # $3 is the count, $4 the offset (nbdkit-sh-plugin(3)).
    # shellcheck disable=SC2016
    start_bg nbdkit -f --exit-with-parent -U "$sock" eval \
        get_size="echo $(stat -c %s "$file")" \
        pread="exec dd if=$file skip=\$4 count=\$3 iflag=skip_bytes,count_bytes status=none" \
        pwrite="exec dd of=$file seek=\$4 conv=notrunc oflag=seek_bytes status=none" \
        can_multi_conn="exit $([ "$mc" = 1 ] && echo 0 || echo 3)"
    for _ in $(seq 100); do [ -S "$sock" ] && return 0; sleep 0.1; done
    fail "the eval server did not start on $sock"; exit 1
}

# run_case NAME MULTI_CONN DATA_OFFSET ARRAY-PARAMETERS...
run_case ()
{
    local name=$1 mc=$2 doff=$3
    shift 3
    local dir=$tmpdir/$name
    mkdir "$dir"
    make_members 2 4M "$name/m"
    truncate -s 4M "$dir/remote.img"
    serve_noflush "$dir/remote.sock" "$dir/remote.img" "$mc"
    start_nbdkit "$dir/raid.sock" level=5 chunk=64K control="$dir/ctl" \
        "$@" "${members[@]}" "nbd+unix:///?socket=$dir/remote.sock" \
        2> "$dir/log" || { cat "$dir/log"; fail "$name: nbdkit did not start"; exit 1; }
    ctl "$dir/ctl" wait 60 > /dev/null ||    # a new md array's first resync
        { cat "$dir/log"; fail "$name: the array is not serving"; exit 1; }

    SEED=$seed nbdsh -u "nbd+unix:///?socket=$dir/raid.sock" -c '
import os, random
rng = random.Random(int(os.environ["SEED"]))
size = h.get_size()
shadow = bytearray(size)
for i in range(60):
    n = rng.choice([512, 4096, 65536 - 512, 65536, 3 * 65536, 392 * 512])
    off = rng.randrange(0, size - n) // 512 * 512
    if i % 10 == 9:
        h.zero(n, off)
        shadow[off:off + n] = bytes(n)
    else:
        data = rng.randbytes(n)
        h.pwrite(data, off, nbd.CMD_FLAG_FUA if i % 3 == 0 else 0)
        shadow[off:off + n] = data
    if i % 7 == 0:
        h.flush()
h.flush()
assert h.pread(size, 0) == shadow, "the array reads back other data"
' || { cat "$dir/log"; fail "$name: the client saw an error or wrong data"; }

    states=$(ctl "$dir/ctl" status | python3 -c '
import json, sys
print(" ".join(m["state"] for m in json.load(sys.stdin)["members"]))')
    [ "$states" = "in_sync in_sync in_sync" ] ||
        { cat "$dir/log"; fail "$name: members are $states"; }
    said=$(grep -c "does not offer flush" "$dir/log" || true)
    [ "$said" = 1 ] ||
        { cat "$dir/log"; fail "$name: the log says $said times that the member has no flush"; }
    raidcheck --level 5 --chunk 64K --data-offset "$doff" --all \
        "${members[@]}" "$dir/remote.img" ||
        fail "$name: parity is wrong on the member files"
    echo "ok: $name: flushes skip the member without flush; data and parity right"
}

run_case raw 0 0 metadata=none
run_case md 1 1M create=true bitmap=internal
