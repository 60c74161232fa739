#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: what a client writes into another version's superblock
# place never decides how the array is assembled.  Each version's data
# covers another's place, so a client of the array can write a valid
# superblock of the other version there.  Here a client does, through the
# array:
#  (a) into a v1.2 array, a v1.0 superblock at a member's end (the data of
#      an mdadm-made v1.2 array runs to the end): the plugin reads only
#      v1.2's place unless told another version, so the default start
#      serves the array as before, every byte the client wrote (the forged
#      superblock included) read back;
#  (b) into a v1.0 array, a v1.2 superblock at 4 KiB of member 0 (v1.0's
#      data starts at 0): started without its version, the array is
#      refused (the other members have no v1.2 superblock), the message
#      naming their v1.0 superblocks and metadata-version=; with
#      metadata-version=1.0 it serves every byte the client wrote.
# Nothing is written by a refused start.  Also: metadata-version=
# naming a version the members lack, a bad value, with metadata=none,
# and v1.0 with a data offset.  And arrays of other metadata (md v0.90,
# DDF, IMSM) are refused naming the format.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
source "$top_srcdir/tests/lib/md-functions.sh"
requires_python_module nbd

# forge SHADOW MEMBER VERSION ARRAY-OFFSET NBDKIT-ARGS...: through the
# array, write at ARRAY-OFFSET a valid superblock of VERSION: MEMBER's own
# (read by mdsb), moved to VERSION's place on MEMBER (data_offset and size
# made to fit it, re-sealed).  The shadow follows.
forge ()
{
    local shadow=$1 member=$2 version=$3 off=$4
    shift 4
    python3 - "$member" "$version" > "$tmpdir/forged" <<'EOF'
import os, struct, sys
sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "lib"))
import mdsb
path, v = sys.argv[1], sys.argv[2]
raw, _, _ = mdsb.read_raw(path)
at = mdsb.place(v, os.path.getsize(path))
struct.pack_into("<Q", raw, 144, at // 512)               # super_offset
if v == "1.0":
    struct.pack_into("<Q", raw, 128, 0)                   # data_offset
    struct.pack_into("<Q", raw, 80, at // 512 - 64)       # size
else:
    struct.pack_into("<Q", raw, 128, at // 512 + 2048)
struct.pack_into("<I", raw, 8, 0)                          # no bitmap
struct.pack_into("<I", raw, 216, mdsb.csum(raw))
sys.stdout.buffer.write(raw)
EOF
    FORGED=$tmpdir/forged OFF=$off SHADOW=$shadow nbdkit -U - "$RAID_PLUGIN" "$@" \
        --run 'nbdsh -u "$uri" -c "
import os
blk = open(os.environ[\"FORGED\"], \"rb\").read()
off = int(os.environ[\"OFF\"])
h.pwrite(blk, off)
h.flush()
img = bytearray(open(os.environ[\"SHADOW\"], \"rb\").read())
img[off:off + len(blk)] = blk
open(os.environ[\"SHADOW\"], \"wb\").write(img)
"' 2> "$tmpdir/log" || { cat "$tmpdir/log"; fail "forging through the array"; }
}

# (a) v1.2, RAID-5 left-symmetric, 4 members of 4M, 64K chunks, data at
# 1M: 48 rows.  Row 47 has P on member 0 (47 mod 4 = 3 = data disks - P)
# and its data chunk 0 on member 1, so member 1's v1.0 place (8K before
# its end: in row 47, 56K into the chunk) is array byte 47 * 3 * 64K + 56K.
md_create a 5 4 10
forge "$tmpdir/a.shadow" "${members[1]}" 1.0 $(( 47 * 3 * 65536 + 57344 )) \
    "${members[@]}"
[ "$(sb get "${members[1]}" version 2>&1)" != 1.2 ] ||
    fail "(a) the forged superblock did not land at member 1's v1.0 place"
client "$tmpdir/a.shadow" verify -- "${members[@]}" ||
    fail "(a) started without a version: the data differs"
client "$tmpdir/a.shadow" verify -- metadata-version=1.2 "${members[@]}" ||
    fail "(a) metadata-version=1.2: the data differs"
echo "ok: (a) served as the v1.2 array it is, every byte the client wrote"

# (b) v1.0, RAID-5 left-symmetric, 4 members: row 0's data chunk 0 is on
# member 0 from byte 0, so array byte 4096 is member 0's v1.2 place.
make_members 4 4M b
md_new "$tmpdir/b.shadow" --seed 3 --whole --writes 10 -- metadata-version=1.0 \
    level=5 chunk=$chunk "${members[@]}"
forge "$tmpdir/b.shadow" "${members[0]}" 1.2 4096 metadata-version=1.0 \
    "${members[@]}"
expect_refused "(b) v1.0 array whose client wrote a v1.2 superblock, no version given" \
    "member .*b[123] has no md v1.x superblock but other members do; it carries an md v1.0 superblock .*metadata-version=" \
    -U - "$RAID_PLUGIN" "${members[@]}"
client "$tmpdir/b.shadow" verify -- metadata-version=1.0 "${members[@]}" ||
    fail "(b) metadata-version=1.0: the data differs"
echo "ok: (b) served again with metadata-version=1.0, every byte the client wrote"

# metadata-version naming a version the members do not have.
expect_refused "metadata-version=1.1 on a v1.0 array" \
    "no md v1.x superblock \(v1.1, at the start.*it carries an md v1.2 superblock, not one of the version metadata-version= names" \
    -U - "$RAID_PLUGIN" metadata-version=1.1 "${members[@]}"
expect_refused "metadata-version=0.90" "metadata-version=0.90: must be 1.0, 1.1 or 1.2" \
    -U - "$RAID_PLUGIN" metadata-version=0.90 "${members[@]}"
expect_refused "metadata-version with metadata=none" \
    "metadata-version .*metadata=none" \
    -U - "$RAID_PLUGIN" metadata=none metadata-version=1.0 level=5 "${members[@]}"
make_members 4 4M c
expect_refused "v1.0 with a data offset" "metadata-version=1.0 .*data-offset must be 0" \
    -U - "$RAID_PLUGIN" create=true metadata-version=1.0 data-offset=1M level=5 \
    "${members[@]}"
expect_refused "v1.1 with a data offset under 4K" "data-offset must leave room" \
    -U - "$RAID_PLUGIN" create=true metadata-version=1.1 data-offset=2K level=5 \
    "${members[@]}"

# Other metadata: md v0.90 (either byte order), DDF and IMSM, each planted
# where its tools put it, on every member: refused at assembly, naming it.
for kind in 0.90 0.90be ddf imsm; do
    make_members 4 4M o
    for m in "${members[@]}"; do
        python3 - "$m" "$kind" <<'EOF'
import os, struct, sys
path, kind = sys.argv[1], sys.argv[2]
sectors = os.path.getsize(path) // 512
with open(path, "r+b") as f:
    if kind.startswith("0.90"):         # md.h: MD_NEW_SIZE_SECTORS
        f.seek(((sectors & ~127) - 128) * 512)
        f.write(struct.pack(">II" if kind.endswith("be") else "<II",
                            0xa92b4efc, 0))
    elif kind == "ddf":                 # the anchor, in the last sector
        f.seek((sectors - 1) * 512)
        f.write(bytes.fromhex("de11de11"))
    else:                               # IMSM's MPB, two sectors back
        f.seek((sectors - 2) * 512)
        f.write(b"Intel Raid ISM Cfg Sig. ")
EOF
    done
    case $kind in
        0.90*) expect="an md v0.90 superblock" ;;
        ddf) expect="a DDF \(firmware RAID\) anchor header" ;;
        imsm) expect="Intel IMSM \(firmware RAID\) metadata" ;;
    esac
    expect_refused "assembling members with $kind metadata" \
        "o0 has no md v1.x superblock; it carries $expect, which this plugin does not assemble" \
        -U - "$RAID_PLUGIN" "${members[@]}"
    expect_refused "create=true over $kind metadata" \
        "o0 already carries $expect" \
        -U - "$RAID_PLUGIN" create=true level=5 "${members[@]}"
done
end_failures
