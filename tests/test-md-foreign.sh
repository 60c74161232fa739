#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: the array's mode is never guessed from what is on the
# members, and disks that carry another format are not overwritten unasked.
#
#  (a) Members without md v1.2 superblocks and no metadata=none: refused
#      (a raw array needs metadata=none), nothing written.
#  (b) A raw array (metadata=none) whose client wrote md superblocks into
#      its data is raw again at the next start with the same command line:
#      the client's data reads back byte for byte.
#  (c) Members with md's magic at v1.0's place, their end, but no
#      superblock md would use there (its super_offset names no place) are
#      refused naming v1.0, not served as a raw array of default geometry.
#  (d) create=true refuses members carrying an ext4 filesystem, a swap
#      area, an MBR or a GPT partition table, naming each, and writes
#      nothing; with force=true it creates the array.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires nbdsh md5sum mkfs.ext4 mkswap sfdisk


# refused EXPECT ARGS...: nbdkit must refuse to start, saying EXPECT, and
# leave every member as it was.
refused ()
{
    local expect=$1 before
    shift
    before=$(members_md5 "${members[@]}")
    if raid_nbdkit "$@" --run true > "$tmpdir/log" 2>&1; then
        cat "$tmpdir/log"
        fail "nbdkit started with $*"
    fi
    grep -q -- "$expect" "$tmpdir/log" ||
        { cat "$tmpdir/log"; fail "no '$expect' in the message"; }
    [ "$(members_md5 "${members[@]}")" = "$before" ] ||
        fail "a refused start changed a member"
    echo "ok: refused ($expect)"
}

# (a)
make_members 4 4M
refused "metadata=none" level=5 chunk=64K "${members[@]}"

# (b) Four md superblocks, made by the plugin on other files, written by a
# client of a raw array where they land at member offset 4K of the data
# members (RAID-5 left-symmetric, 64K chunks: data chunk i of row 0 is on
# member i).
make_members 4 4M sb
raid_nbdkit create=true level=5 chunk=64K data-offset=64K bitmap=none \
  "${members[@]}" --run true
sbs=("${members[@]}")
make_members 4 4M
cat > "$tmpdir/forge.py" <<'EOF'
import os
h.set_strict_mode(0)
size = h.get_size()
shadow = bytearray(os.urandom(size))
for i, path in enumerate(os.environ["SBS"].split()[:3]):
    with open(path, "rb") as f:
        f.seek(4096)
        shadow[i * 65536 + 4096:i * 65536 + 8192] = f.read(4096)
h.pwrite(bytes(shadow), 0)
h.flush()
open(os.environ["SHADOW"], "wb").write(shadow)
EOF
cat > "$tmpdir/check.py" <<'EOF'
import os
shadow = open(os.environ["SHADOW"], "rb").read()
assert h.pread(len(shadow), 0) == shadow, "raw data changed"
EOF
export SBS="${sbs[*]}" SHADOW=$tmpdir/shadow
raw=(metadata=none level=5 chunk=64K "${members[@]}")
raid_nbdkit "${raw[@]}" --run 'nbdsh -u "$uri" -c "exec(open(\"'"$tmpdir"'/forge.py\").read())"'
python3 - "${members[@]::3}" <<'EOF'
import sys
for p in sys.argv[1:]:
    with open(p, "rb") as f:
        f.seek(4096)
        assert f.read(4)[::-1].hex() == "a92b4efc", p + ": no forged superblock"
EOF
raid_nbdkit "${raw[@]}" --run 'nbdsh -u "$uri" -c "exec(open(\"'"$tmpdir"'/check.py\").read())"'
echo "ok: client-written superblocks stay client data under metadata=none"

# (c) md v1.0 keeps its superblock 8K before the end, rounded down to 4K;
# the magic and major version are what signature.c recognises: refused by
# default, naming metadata-version= (only v1.2's place is read without
# it); and with metadata-version=1.0, as a super_offset of 0 makes it no
# superblock md_super.c (or md) would use.
make_members 4 4M
for m in "${members[@]}"; do
    python3 - "$m" <<'EOF'
import os, struct, sys
path = sys.argv[1]
sectors = os.path.getsize(path) // 512
with open(path, "r+b") as f:
    f.seek(((sectors - 16) & ~7) * 512)
    f.write(struct.pack("<II", 0xa92b4efc, 1))
EOF
done
refused "md v1.0 superblock .*metadata-version= names their version" level=5 chunk=64K "${members[@]}"
refused "md v1.0 superblock .*super_offset, which must name the place" metadata-version=1.0 \
    level=5 chunk=64K "${members[@]}"

# (d) Real tools' output on the members.
for kind in ext4 swap mbr gpt; do
    make_members 4 4M
    case $kind in
        ext4) mkfs.ext4 -q -F "${members[2]}"; expect="ext2/3/4" ;;
        swap) mkswap -q "${members[2]}" >/dev/null; expect="swap" ;;
        mbr)  echo 'start=2048, type=83' | sfdisk -q "${members[2]}"
              expect="MBR" ;;
        gpt)  echo 'start=2048' | sfdisk -q --label gpt "${members[2]}"
              expect="GPT" ;;
    esac
    refused "${members[2]} already carries .*$expect" create=true level=5 chunk=64K \
      "${members[@]}"
done
raid_nbdkit create=true force=true level=5 chunk=64K data-offset=64K \
  "${members[@]}" --run true
raid_nbdkit level=5 "${members[@]}" --run true
echo "ok: force=true creates the array over them"
