#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: `replace N PATH` does not overwrite a disk that belongs to
# something else unless forced; a disk of the array's own set is not
# foreign.
#
# An md RAID-5 with member 1 failed.  Offered as its replacement, and
# refused with a message naming what they carry, each byte for byte
# untouched and member 1 still failed: a member of another md array (made
# by the plugin on other files), an ext4 filesystem (mkfs.ext4), a GPT
# partition table (sfdisk).  Accepted: the failed member itself (this
# array's own disk coming back), and with `force` the ext4 disk; after
# each rebuild the data reads back byte for byte.  A raw array refuses a
# replacement that carries any md superblock.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires nbdsh md5sum mkfs.ext4 sfdisk
requires_python_module nbd

ctl_tool=$top_srcdir/tools/nbdkit-raid-ctl
ctl=$tmpdir/ctl sock=$tmpdir/raid.sock
uri="nbd+unix:///?socket=$sock"

ctl () { python3 "$ctl_tool" "$ctl" "$@"; }
state_of () {
    ctl status | python3 -c 'import json, sys
m = json.load(sys.stdin)["members"][int(sys.argv[1])]
print(m["state"], m["name"])' "$1"
}
wait_rebuilt () {
    ctl wait 60 > /dev/null || fail "the rebuild did not end"
    [ "$(state_of 1 | cut -d' ' -f1)" = in_sync ] || fail "member 1: $(state_of 1)"
}
check_data () {
    nbdsh -u "$uri" -c "assert h.pread(h.get_size(), 0) == open('$tmpdir/shadow', 'rb').read()" ||
        fail "$1: the data differs"
}

# refused WHAT EXPECT PATH: replace 1 PATH is refused, saying EXPECT; PATH
# and the array are unchanged.
refused ()
{
    local what=$1 expect=$2 path=$3 sum reply
    sum=$(md5sum < "$path")
    reply=$(ctl replace 1 "$path") && fail "$what: accepted ($reply)"
    echo "$reply" | grep -q -- "$expect" || fail "$what: said '$reply'"
    [ "$(md5sum < "$path")" = "$sum" ] || fail "$what: the disk was written"
    [ "$(state_of 1)" = "failed ${members[1]}" ] ||
        fail "$what: member 1 is now $(state_of 1)"
    echo "ok: $what refused: $reply"
}

# Another md array's member.
make_members 3 4M other
raid_nbdkit create=true level=5 chunk=64K data-offset=64K bitmap=none \
    "${members[@]}" --run true
other=${members[0]}

make_members 4 4M
start_nbdkit "$sock" create=true level=5 chunk=64K data-offset=64K \
    bitmap=none control="$ctl" "${members[@]}" 2> "$tmpdir/log"
ctl wait 60 > /dev/null
nbdsh -u "$uri" -c "
import os
d = os.urandom(h.get_size())
h.pwrite(d, 0)
h.flush()
open('$tmpdir/shadow', 'wb').write(d)
"
ctl fail 1 > /dev/null

truncate -s 4M "$tmpdir/ext4.img" "$tmpdir/gpt.img"
mkfs.ext4 -q -F "$tmpdir/ext4.img"
echo 'start=2048' | sfdisk -q --label gpt "$tmpdir/gpt.img"
refused "another array's member" "another array (UUID" "$other"
refused "an ext4 filesystem" "ext2/3/4 filesystem" "$tmpdir/ext4.img"
refused "a GPT disk" "GPT partition table" "$tmpdir/gpt.img"

ctl replace 1 "${members[1]}" > /dev/null ||
    fail "the array's own failed member was refused"
wait_rebuilt
check_data "after replacing member 1 by itself"
echo "ok: the array's own disk is not foreign"

ctl fail 1 > /dev/null
ctl replace 1 "$tmpdir/ext4.img" force > /dev/null ||
    fail "replace ... force was refused"
wait_rebuilt
check_data "after a forced replacement"
echo "ok: force overwrites"
kill "${_bg_pids[-1]}"; wait "${_bg_pids[-1]}" 2>/dev/null || :

# A raw array: any md superblock is another array's.
make_members 4 4M raw
start_nbdkit "$sock" metadata=none level=5 chunk=64K control="$ctl" \
    "${members[@]}" 2> "$tmpdir/log"
ctl fail 1 > /dev/null
refused "an md member offered to a raw array" "md superblock (array UUID" "$other"
