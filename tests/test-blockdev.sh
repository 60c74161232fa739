#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: members that are block devices (loop devices over files,
# losetup --direct-io=on, as close to disks as this machine has) are
# opened with O_DIRECT by default, as md uses its disks, and with their
# logical block size as their alignment; direct=false keeps the page
# cache.  Checked from outside the plugin: the open descriptors' flags
# in /proc/PID/fdinfo (O_DIRECT, 040000).  A raw RAID-6 of six devices,
# one of them with 4 KiB logical blocks (losetup --sector-size 4096):
#   - random writes of every size and alignment and a full read compare
#     against a shadow (shadow_client.py), then reads of 1 to 4095 bytes
#     at odd offsets (a 512-byte request on a 4Kn device is widened
#     through a bounce buffer), each against the shadow;
#   - member 2 failed and replaced by another loop device: rebuilt, the
#     data still the shadow;
#   - stopped: raidcheck.py on the devices finds every row's parity right
#     and the image equal to the shadow.
# Skips unless run as root with losetup and loop devices.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires losetup nbdsh cmp
requires_python_module nbd
if [ "$(id -u)" != 0 ] || [ ! -e /dev/loop-control ]; then
    echo "$0: SKIP: loop devices need root and /dev/loop-control"
    exit 77
fi

devs=()
loop ()                         # loop FILE [LOSETUP-OPTIONS]: its device
{
    local f=$1
    shift
    truncate -s 16M "$f"
    losetup -f --show --direct-io=on "$@" "$f"
}
for i in 0 1 2 3 4 5 6; do
    opts=()
    [ "$i" = 3 ] && opts=(--sector-size 4096)
    d=$(loop "$tmpdir/b$i" "${opts[@]}") || {
        echo "$0: SKIP: losetup cannot make a loop device here"
        exit 77
    }
    # Here, not in loop: that runs in $(...), whose cleanup list is lost
    # (every run used to leave its seven devices attached).
    cleanup_fn losetup -d "$d"
    devs+=("$d")
done
members=("${devs[@]:0:6}") spare=${devs[6]}

# flags_of PID DEV: the open flags (octal) of PID's descriptor for DEV
# that carries its I/O, the one opened read-write: the array holds a
# second, read-only one, its exclusive claim (O_EXCL), which never does.
flags_of ()
{
    local fd f
    for fd in /proc/"$1"/fd/*; do
        if [ "$(readlink "$fd")" = "$2" ]; then
            f=$(awk '/^flags:/ { print $2 }' /proc/"$1"/fdinfo/"${fd##*/}")
            if (( (8#$f & 3) == 2 )); then
                echo "$f"
                return
            fi
        fi
    done
}
# direct_of PID DEV: yes or no.
direct_of ()
{
    local f
    f=$(flags_of "$1" "$2")
    [ -n "$f" ] || { echo "none"; return; }
    (( 8#$f & 8#40000 )) && echo yes || echo no
}

sock=$tmpdir/raid.sock ctl=$tmpdir/ctl uri="nbd+unix:///?socket=$tmpdir/raid.sock"

# direct=false: the page cache.
start_nbdkit "$sock" metadata=none level=6 chunk=64K direct=false "${members[@]}"
pid=${_bg_pids[-1]}
for d in "${members[@]}"; do
    [ "$(direct_of "$pid" "$d")" = no ] ||
        fail "direct=false: $d opened $(flags_of "$pid" "$d") (O_DIRECT set?)"
done
kill "$pid"; wait "$pid" 2>/dev/null || true

# The default: O_DIRECT on every block device.
start_nbdkit "$sock" metadata=none level=6 chunk=64K control="$ctl" "${members[@]}"
pid=${_bg_pids[-1]}
for d in "${members[@]}"; do
    [ "$(direct_of "$pid" "$d")" = yes ] ||
        fail "default: $d opened with flags $(flags_of "$pid" "$d"), not O_DIRECT"
done
shadow_client "$uri" both "$tmpdir/shadow" --whole --writes 200 ||
    fail "random writes and the full compare"
SHADOW=$tmpdir/shadow nbdsh -u "$uri" -c '
import os, random
h.set_strict_mode(0)
img = open(os.environ["SHADOW"], "rb").read()
rng = random.Random(7)
for _ in range(500):
    n = rng.randint(1, 4095)
    off = rng.randrange(0, len(img) - n) | 1
    got = h.pread(n, off)
    assert got == img[off:off + n], "read of %d bytes at %d differs" % (n, off)
print("500 small reads at odd offsets match the shadow")
' || fail "small unaligned reads"

python3 "$top_srcdir/tools/nbdkit-raid-ctl" "$ctl" fail 2 > /dev/null &&
python3 "$top_srcdir/tools/nbdkit-raid-ctl" "$ctl" replace 2 "$spare" > /dev/null &&
python3 "$top_srcdir/tools/nbdkit-raid-ctl" "$ctl" wait 60 > /dev/null ||
    fail "fail 2 and replace 2 by $spare"
[ "$(direct_of "$pid" "$spare")" = yes ] || fail "the replacement is not O_DIRECT"
shadow_client "$uri" verify "$tmpdir/shadow" || fail "after the rebuild"
kill "$pid"; wait "$pid" 2>/dev/null || true
members[2]=$spare
raidcheck --level 6 --chunk 65536 --size $(( 16 * 1024 * 1024 )) \
    --image "$tmpdir/image" "${members[@]}" ||
    fail "raidcheck on the devices"
cmp "$tmpdir/image" "$tmpdir/shadow" || fail "the devices' image is not the shadow"
end_failures
