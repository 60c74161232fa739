#!/usr/bin/env bash
# md v1.2 superblocks, from the host (tests/vm/ does it with Linux's md):
#
#   (a) create=true writes an array that later starts from its superblocks
#       alone (no geometry parameters, members in any order), holds the
#       data byte for byte, and is laid out as md lays it out (raidcheck.py
#       at a 1 MiB data offset, and the image it rebuilds).
#   (b) a member left out: the array is degraded and correct; given back
#       later, it is stale (older events), not used, not written.
#   (c) bad input stops nbdkit with a message naming the cause and leaves
#       every member byte for byte as it was; metadata=none serves raw.
#   (c2) a member one event behind the others (an update a crash cut
#       short) is in sync, two behind is stale.
#   (d) clean/active: clean (resync_offset all ones, events up) after a
#       flush and after a clean exit; active (resync_offset 0) while
#       written; after SIGKILL the next start says so and serves the data.
#   (e) a resync stopped cleanly half way is recorded in resync_offset
#       and goes on from there at the next start.
#
# Superblock fields are read and changed by a small Python tool written
# below (sbtool.py), independent of the plugin.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires nbdsh truncate md5sum cmp cp dd
requires_python_module nbd

chunk=64K
size=4M
clean=18446744073709551615      # resync_offset: all ones

# --- Helpers -----------------------------------------------------------

cat > "$tmpdir/sbtool.py" <<'EOF'
"""Read or change an md v1.2 superblock field (md_p.h offsets).

  get FILE FIELD...       print the fields, on one line
  set FILE FIELD VALUE    change it and re-seal the checksum
  or FILE FIELD VALUE     set bits in it, re-seal
"""
import struct
import sys

FIELDS = {
    'magic': (0, '<I'), 'feature_map': (8, '<I'), 'set_uuid': (16, '16s'),
    'ctime': (64, '<Q'), 'level': (72, '<i'), 'layout': (76, '<I'),
    'size': (80, '<Q'), 'chunksize': (88, '<I'), 'raid_disks': (92, '<I'),
    'data_offset': (128, '<Q'), 'dev_number': (160, '<I'),
    'utime': (192, '<Q'), 'events': (200, '<Q'), 'resync_offset': (208, '<Q'),
    'sb_csum': (216, '<I'), 'max_dev': (220, '<I'),
}


def csum(sb):
    """The kernel's calc_sb_1_csum()."""
    size = 256 + 2 * struct.unpack_from('<I', sb, 220)[0]
    b = bytearray(sb[:size])
    b[216:220] = bytes(4)
    total = sum(struct.unpack_from('<%dI' % (size // 4), b))
    if size % 4:
        total += struct.unpack_from('<H', b, size - 2)[0]
    return ((total & 0xffffffff) + (total >> 32)) & 0xffffffff


op, path, field = sys.argv[1:4]
with open(path, 'r+b') as f:
    f.seek(4096)
    sb = bytearray(f.read(4096))
    if op == 'get':
        values = (struct.unpack_from(FIELDS[name][1], sb, FIELDS[name][0])[0]
                  for name in sys.argv[3:])
        print(*(v.hex() if isinstance(v, bytes) else v for v in values))
        sys.exit(0)
    off, fmt = FIELDS[field]
    value = int(sys.argv[4], 0)
    if op == 'or':
        value |= struct.unpack_from(fmt, sb, off)[0]
    struct.pack_into(fmt, sb, off, value)
    struct.pack_into('<I', sb, 216, csum(sb))
    f.seek(4096)
    f.write(sb)
EOF
sb () { python3 "$tmpdir/sbtool.py" "$@"; }

# wait-clean.sh FILE (in a --run): wait up to 10 s for FILE's superblock
# to say clean, i.e. for the background resync of a new array to end.
cat > "$tmpdir/wait-clean.sh" <<EOF
for i in \$(seq 100); do
    [ "\$(python3 $tmpdir/sbtool.py get "\$1" resync_offset)" = $clean ] &&
        exit 0
    sleep 0.1
done
echo "\$1: the superblock is still not clean after 10 s" >&2
exit 1
EOF

# The client: SHADOW holds what the array must contain.  write: fill the
# array (WHOLE=1) and/or make WRITES unaligned writes, flush, save the
# shadow; verify: read everything back and compare; both: write, verify.
cat > "$tmpdir/shadow.py" <<'EOF'
import os
import random

shadow, mode = os.environ['SHADOW'], os.environ['MODE']
h.set_strict_mode(0)
size = h.get_size()
if mode in ('write', 'both'):
    rng = random.Random(int(os.environ['SEED']))
    img = (bytearray(open(shadow, 'rb').read()) if os.path.exists(shadow)
           else bytearray(size))
    assert len(img) == size, (len(img), size)
    if os.environ.get('WHOLE') == '1':
        img = bytearray(rng.randbytes(size))
        for off in range(0, size, 1 << 20):
            h.pwrite(bytes(img[off:off + (1 << 20)]), off)
    for _ in range(int(os.environ.get('WRITES', '40'))):
        n = rng.randrange(1, 150000)
        off = rng.randrange(0, size - n)
        data = rng.randbytes(n)
        h.pwrite(data, off)
        img[off:off + n] = data
    h.flush()
    open(shadow, 'wb').write(img)
if mode in ('verify', 'both'):
    img = open(shadow, 'rb').read()
    assert size == len(img), "array size %d, shadow %d" % (size, len(img))
    for off in range(0, size, 1 << 20):
        got = h.pread(min(1 << 20, size - off), off)
        if got != img[off:off + len(got)]:
            bad = next(i for i in range(len(got)) if got[i] != img[off + i])
            raise AssertionError("array byte %d differs from the shadow"
                                 % (off + bad))
    print("verified %d bytes" % size)
EOF

# client SHADOW MODE [VAR=VALUE...] -- NBDKIT-ARGS...: one captive nbdkit
# and one nbdsh running shadow.py, then $AFTER if set (in the --run).
# nbdkit's stderr goes to $tmpdir/log.
client ()
{
    local shadow=$1 mode=$2
    shift 2
    local envs=()
    while [ "$1" != -- ]; do envs+=("$1"); shift; done
    shift
    env SHADOW="$shadow" MODE="$mode" SEED="${SEED:-1}" AFTER="${AFTER:-}" \
        "${envs[@]}" nbdkit -U - "$RAID_PLUGIN" "$@" \
        --run 'nbdsh -u "$uri" -c "exec(open(\"'"$tmpdir"'/shadow.py\").read())" &&
               eval "$AFTER"' \
        2> "$tmpdir/log" || { cat "$tmpdir/log" >&2; return 1; }
}

# create NAME LEVEL N WRITES: members $tmpdir/NAME0.., a new array on them
# holding random data (shadow $tmpdir/NAME.shadow), left clean.
create ()
{
    make_members "$3" "$size" "$1"
    SEED=$2 AFTER="sh $tmpdir/wait-clean.sh ${members[0]}" \
        client "$tmpdir/$1.shadow" write WHOLE=1 WRITES="$4" -- \
        create=true level="$2" chunk=$chunk "${members[@]}"
}

# copy_set SRC DST N: DST0..DST(N-1) as sparse copies of SRC0...
copy_set ()
{
    local i
    for (( i = 0; i < $3; i++ )); do
        cp --sparse=always "$tmpdir/$1$i" "$tmpdir/$2$i"
    done
}

failures=0
fail () { echo "FAIL: $*"; failures=$((failures + 1)); }

# --- (a) create, then assemble from the superblocks -----------------------

for spec in "5 4 r5" "6 6 r6"; do
    read -r level n name <<< "$spec"
    create "$name" "$level" "$n" 40
    shuffled=()
    for (( i = n - 1; i >= 0; i-- )); do
        shuffled+=("${members[(i + 2) % n]}")
    done
    client "$tmpdir/$name.shadow" verify -- "${shuffled[@]}"
    if grep -q "not shut down cleanly" "$tmpdir/log"; then
        fail "RAID-$level: not clean after create, resync, flush and exit"
    fi
    # level, raid_disks, chunk (sectors), 1 MiB (sectors), left-symmetric
    for m in "${members[@]}"; do
        got=$(sb get "$m" level raid_disks chunksize data_offset layout)
        [ "$got" = "$level $n 128 2048 2" ] ||
            fail "$m: level raid_disks chunksize data_offset layout: $got"
    done
    # md's layout at a 1 MiB data offset, by the independent checker.
    raidcheck --level "$level" --chunk $chunk --data-offset 1048576 \
        --image "$tmpdir/$name.image" "${members[@]}" ||
        fail "RAID-$level: raidcheck"
    cmp "$tmpdir/$name.image" "$tmpdir/$name.shadow" ||
        fail "RAID-$level: raidcheck's image of the members is not the data"
    rm -f "$tmpdir/$name.image"
    echo "ok: (a) RAID-$level created, reassembled shuffled, md layout (${SECONDS}s)"
done

# --- (b) a member left out, then given back -------------------------------

# The RAID-5 of (a); r51 is left out.
r50=$tmpdir/r50 r51=$tmpdir/r51 r52=$tmpdir/r52 r53=$tmpdir/r53
events_before=$(sb get "$r51" events)
md5_left_out=$(md5sum < "$r51")
SEED=11 client "$tmpdir/r5.shadow" both -- "$r53" "$r50" "$r52"
[ "$(md5sum < "$r51")" = "$md5_left_out" ] ||
    fail "(b) the member left out was written"
[ "$(sb get "$r50" events)" -gt "$events_before" ] ||
    fail "(b) the degraded array's events did not advance"
# Given back: stale, not used, and the data is still right.
SEED=12 client "$tmpdir/r5.shadow" both WRITES=10 -- "$r50" "$r51" "$r52" "$r53"
if ! grep -qE "r51.*stale.*not used" "$tmpdir/log"; then
    fail "(b) the stale member was not reported as stale and unused:"
    cat "$tmpdir/log"
fi
[ "$(md5sum < "$r51")" = "$md5_left_out" ] ||
    fail "(b) the stale member was written"
client "$tmpdir/r5.shadow" verify -- "$r52" "$r50" "$r53"
echo "ok: (b) a member left out: degraded, correct; given back: stale, unused (${SECONDS}s)"

# --- (c) bad input ---------------------------------------------------------

# Arrays to copy from: A, B (RAID-5, 4 members each, so two UUIDs) and C
# (RAID-6, 6 members), with data.
create A 5 4 10
for spec in "B 5 4" "C 6 6"; do         # superblocks only, enough here
    read -r name level n <<< "$spec"
    make_members "$n" "$size" "$name"
    nbdkit -U - "$RAID_PLUGIN" create=true level="$level" chunk=$chunk \
        "${members[@]}" --run true
done
[ "$(sb get "$tmpdir/A0" set_uuid)" != "$(sb get "$tmpdir/B0" set_uuid)" ] ||
    fail "two created arrays have the same UUID"
make_members 4 "$size" blank

# expect_fail 'WHAT' 'REGEX' ARGS...: as in test-raid-bad-input.sh; the
# files checked are the case's (x*) and the blank ones.
expect_fail ()
{
    local what=$1 regex=$2 r=0
    shift 2
    members_md5 "$tmpdir"/x* "$tmpdir"/blank* > "$tmpdir/before"
    timeout 60 nbdkit --exit-with-parent -U - "$RAID_PLUGIN" "$@" \
        --run 'echo SERVED' > "$tmpdir/out" 2> "$tmpdir/err" || r=$?
    members_md5 "$tmpdir"/x* "$tmpdir"/blank* > "$tmpdir/after"
    if [ $r = 0 ] || grep -q SERVED "$tmpdir/out"; then
        fail "$what: nbdkit accepted it (exit $r)"
    elif [ $r -gt 128 ]; then
        fail "$what: nbdkit died of signal $((r - 128))"
    elif ! grep -qE -- "$regex" "$tmpdir/err"; then
        fail "$what: the message does not match /$regex/:"
        sed 's/^/    /' "$tmpdir/err"
    elif ! cmp -s "$tmpdir/before" "$tmpdir/after"; then
        fail "$what: a member changed"
        diff "$tmpdir/before" "$tmpdir/after" || :
    else
        echo "ok: $what: $(grep -E -- "$regex" "$tmpdir/err" | head -1)"
    fi
}
# x SET N: the case's members x0..x(N-1), fresh copies of SET's.
x () { rm -f "$tmpdir"/x*; copy_set "$1" x "$2"; }

x A 4
printf '\xff' | dd of="$tmpdir/x2" bs=1 seek=$((4096 + 100)) conv=notrunc status=none
expect_fail "corrupted superblock" "x2.*checksum" "$tmpdir"/x[0-3]

x A 4
cp --sparse=always "$tmpdir/B3" "$tmpdir/xb3"
expect_fail "members of two arrays" "xb3.*another array" \
    "$tmpdir/x0" "$tmpdir/x1" "$tmpdir/x2" "$tmpdir/xb3"
expect_fail "members of two arrays (the other first)" "another array" \
    "$tmpdir/xb3" "$tmpdir/x0" "$tmpdir/x1" "$tmpdir/x2"

x A 4
cp --sparse=always "$tmpdir/A1" "$tmpdir/xdup"
expect_fail "two members claim one role" "both claim role 1" \
    "$tmpdir/x0" "$tmpdir/x1" "$tmpdir/xdup" "$tmpdir/x3"
expect_fail "two members claim one role (all given too)" "both claim role 1" \
    "$tmpdir"/x[0-3] "$tmpdir/xdup"

x C 6
expect_fail "RAID-6 with 3 of 6 members" "3 members are missing.*at most 2" \
    "$tmpdir/x0" "$tmpdir/x3" "$tmpdir/x5"
expect_fail "level=5 on a RAID-6" "level=5 contradicts" \
    level=5 "$tmpdir"/x[0-5]
expect_fail "chunk=128K on a 64K array" "chunk=131072 contradicts.*65536" \
    chunk=128K "$tmpdir"/x[0-5]
expect_fail "layout=ra on a left-symmetric array" "layout.*contradicts" \
    layout=ra "$tmpdir"/x[0-5]
expect_fail "data-offset=0 on a 1M-offset array" "data-offset.*contradicts" \
    data-offset=0 "$tmpdir"/x[0-5]
expect_fail "create=true on md members" "x0.*already.*superblock.*force=true" \
    create=true level=6 chunk=$chunk "$tmpdir"/x[0-5]
expect_fail "create=true, one md member among blank ones" "x0.*force=true" \
    create=true level=5 "$tmpdir/blank0" "$tmpdir/blank1" "$tmpdir/x0"
expect_fail "metadata=md on blank members" "no member has an md v1.2 superblock" \
    metadata=md level=5 "$tmpdir"/blank[0-3]
expect_fail "md members and a blank one" "blank0.*no md v1.2 superblock" \
    "$tmpdir/x0" "$tmpdir/x1" "$tmpdir/x2" "$tmpdir/blank0"

# Features the plugin does not implement, in one member's superblock.
x A 4
sb or "$tmpdir/x1" feature_map 0x200
expect_fail "write journal (feature 0x200)" "x1.*journal" "$tmpdir"/x[0-3]
x A 4
sb or "$tmpdir/x3" feature_map 0x400
expect_fail "partial parity log (feature 0x400)" "x3.*(PPL|partial parity)" \
    "$tmpdir"/x[0-3]

# Superblocks that are well formed but impossible, in every member (as
# a corrupted or hostile set would be): refused, not trusted.
x A 4
for m in "$tmpdir"/x[0-3]; do sb set "$m" raid_disks 300; done
expect_fail "raid_disks=300" "256|raid_disks|members" "$tmpdir"/x[0-3]
x A 4
for m in "$tmpdir"/x[0-3]; do sb set "$m" size 99999999; done
expect_fail "size beyond the members" "size|small" "$tmpdir"/x[0-3]
x A 4
for m in "$tmpdir"/x[0-3]; do sb set "$m" data_offset 0; done
expect_fail "data offset 0 (data over the superblock)" "offset|superblock" \
    "$tmpdir"/x[0-3]

# create=true force=true does overwrite: a new array (new UUID).
x A 4
old_uuid=$(sb get "$tmpdir/x0" set_uuid)
nbdkit -U - "$RAID_PLUGIN" create=true force=true level=5 chunk=$chunk \
    "$tmpdir"/x[0-3] --run true
if [ "$(sb get "$tmpdir/x0" set_uuid)" != "$old_uuid" ]; then
    echo "ok: create=true force=true wrote a new array"
else
    fail "create=true force=true did not make a new array"
fi

# metadata=none: raw mode, the superblocks are data; geometry from the
# parameters, size without the data offset.  Reads change nothing.
x A 4
members_md5 "$tmpdir"/x[0-3] > "$tmpdir/before"
raw_size=$(nbdkit -U - "$RAID_PLUGIN" metadata=none level=5 chunk=$chunk \
    "$tmpdir"/x[0-3] --run 'nbdsh -u "$uri" -c "print(h.get_size())"')
members_md5 "$tmpdir"/x[0-3] > "$tmpdir/after"
if [ "$raw_size" != $((3 * 4 * 1024 * 1024)) ]; then
    fail "metadata=none: array size $raw_size, expected $((3 * 4 * 1024 * 1024)) (raw)"
elif ! cmp -s "$tmpdir/before" "$tmpdir/after"; then
    fail "metadata=none: a member changed"
else
    echo "ok: metadata=none on md members serves raw ($raw_size bytes)"
fi
echo "(c) done (${SECONDS}s)"

# --- (c2) an update a crash interrupted ------------------------------------
# A crash while the superblocks are rewritten leaves some members one event
# behind the others.  Like the kernel and mdadm, one behind is in sync:
# the member is used and written (raidcheck finds its chunks right after
# writes); two behind is stale.
x A 4
ev=$(sb get "$tmpdir/x2" events)
sb set "$tmpdir/x2" events $((ev - 1))
cp "$tmpdir/A.shadow" "$tmpdir/c2.shadow"
SEED=31 client "$tmpdir/c2.shadow" both WRITES=10 -- "$tmpdir"/x[0-3] ||
    fail "(c2) one event behind: the array did not serve"
if grep -q "x2.*not used" "$tmpdir/log"; then
    fail "(c2) a member one event behind was not used:"
    cat "$tmpdir/log"
fi
raidcheck --level 5 --chunk $chunk --data-offset 1048576 \
    --image "$tmpdir/c2.image" "$tmpdir"/x[0-3] ||
    fail "(c2) one event behind: parity after writes"
cmp -s "$tmpdir/c2.image" "$tmpdir/c2.shadow" ||
    fail "(c2) one event behind: the members do not hold the data"
rm -f "$tmpdir/c2.image"
x A 4
sb set "$tmpdir/x2" events $((ev - 2))
client "$tmpdir/A.shadow" verify -- "$tmpdir"/x[0-3] ||
    fail "(c2) two events behind: wrong data"
grep -qE "x2.*stale.*not used" "$tmpdir/log" ||
    fail "(c2) a member two events behind was not reported stale"
echo "ok: (c2) one event behind: in sync and written; two behind: stale (${SECONDS}s)"

# --- (d) clean and active ---------------------------------------------------

x A 4
cp "$tmpdir/A.shadow" "$tmpdir/d.shadow"
read -r ev0 ctime0 utime0 <<< "$(sb get "$tmpdir/x0" events ctime utime)"
sleep 1         # so that a rewritten ctime would show
SEED=21 client "$tmpdir/d.shadow" write WRITES=10 -- "$tmpdir"/x[0-3]
# Active then clean again, with nothing else changed: like md, the event
# count goes up and back down; the update time says it was rewritten.
for m in "$tmpdir"/x[0-3]; do
    read -r resync events ctime utime <<< "$(sb get "$m" resync_offset events ctime utime)"
    [ "$resync" = $clean ] || fail "(d) $m: not clean after a clean shutdown"
    [ "$events" -ge "$ev0" ] || fail "(d) $m: events went back from $ev0 to $events"
    [ "$utime" -gt "$utime0" ] || fail "(d) $m: not rewritten (utime $utime0 -> $utime)"
    [ "$ctime" = "$ctime0" ] ||
        fail "(d) $m: the creation time changed ($ctime0 -> $ctime)"
done
echo "ok: (d) clean after flush + exit, events $ev0 -> $(sb get "$tmpdir/x0" events)"

# A served array: active from the first write until a flush, clean after.
sock=$tmpdir/d.sock
start_nbdkit "$sock" "$tmpdir"/x[0-3] 2> "$tmpdir/served.log"
pid=${_bg_pids[-1]}
uri="nbd+unix:///?socket=$sock"
ev1=$(sb get "$tmpdir/x0" events)
# write OFFSET LENGTH BYTE [flush]: one write, in the shadow too.
write ()
{
    SHADOW=$tmpdir/d.shadow nbdsh -u "$uri" -c "
import os
img = bytearray(open(os.environ['SHADOW'], 'rb').read())
h.set_strict_mode(0)
h.pwrite(bytes([$3]) * $2, $1)
img[$1:$1 + $2] = bytes([$3]) * $2
open(os.environ['SHADOW'], 'wb').write(img)
if '$4' == 'flush':
    h.flush()"
}
write 65536 8192 0x5a
for m in "$tmpdir"/x[0-3]; do
    [ "$(sb get "$m" resync_offset)" = 0 ] ||
        fail "(d) $m: not active while written"
done
nbdsh -u "$uri" -c 'h.flush()'
for m in "$tmpdir"/x[0-3]; do
    [ "$(sb get "$m" resync_offset)" = $clean ] ||
        fail "(d) $m: not clean after a flush with no write in flight"
done
write 200001 5000 0xa5
write 1000000 3 0x77
kill -9 "$pid"
wait "$pid" 2>/dev/null || :
for m in "$tmpdir"/x[0-3]; do
    read -r resync events <<< "$(sb get "$m" resync_offset events)"
    [ "$resync" = 0 ] || fail "(d) $m: not active after SIGKILL during writes"
    [ "$events" -gt "$ev1" ] || fail "(d) $m: events did not advance from $ev1"
done
# Not shut down cleanly and a member missing (md refuses such an array
# unless told to start it anyway): nbdkit must decide before it serves,
# either serving the right data or stopping with a message about it, and
# never leave a client hanging.
for i in 0 1 2 3; do cp --sparse=always "$tmpdir/x$i" "$tmpdir/y$i"; done
members_md5 "$tmpdir"/y[013] > "$tmpdir/before"
r=0
SHADOW=$tmpdir/d.shadow MODE=verify timeout -k 5 20 \
    nbdkit -U - "$RAID_PLUGIN" "$tmpdir/y0" "$tmpdir/y1" "$tmpdir/y3" \
    --run 'nbdsh -u "$uri" -c "exec(open(\"'"$tmpdir"'/shadow.py\").read())"' \
    > "$tmpdir/out" 2> "$tmpdir/err" || r=$?
if [ $r = 124 ]; then
    fail "(d) unclean and degraded: the client hung (nbdkit said: $(tr '\n' ' ' < "$tmpdir/err"))"
elif [ $r = 0 ]; then
    echo "ok: (d) unclean and degraded: served, $(cat "$tmpdir/out")"
elif grep -qE "degraded|missing" "$tmpdir/err" &&
     members_md5 "$tmpdir"/y[013] | cmp -s "$tmpdir/before" -; then
    echo "ok: (d) unclean and degraded: refused: $(grep -E "degraded|missing" "$tmpdir/err" | head -1)"
else
    fail "(d) unclean and degraded: exit $r:"
    cat "$tmpdir/err"
fi
rm -f "$tmpdir"/y*

# The next start says so, serves the data, resyncs and ends clean.
AFTER="sh $tmpdir/wait-clean.sh $tmpdir/x0" \
    client "$tmpdir/d.shadow" verify -- "$tmpdir/x2" "$tmpdir/x0" "$tmpdir/x3" "$tmpdir/x1" ||
    fail "(d) after SIGKILL: wrong data, or never clean again"
if grep -q "not shut down cleanly" "$tmpdir/log"; then
    echo "ok: (d) after SIGKILL: $(grep "not shut down cleanly" "$tmpdir/log")"
else
    fail "(d) the start after SIGKILL did not say 'not shut down cleanly':"
    cat "$tmpdir/log"
fi
raidcheck --level 5 --chunk $chunk --data-offset 1048576 "$tmpdir"/x[0-3] ||
    fail "(d) parity after the resync"

# --- (e) a resync stopped cleanly goes on where it stopped ---------------
# An array without a bitmap, its resync slowed down by rebuild-rate (md's
# sync_speed_max), stopped (SIGTERM) half way: the superblocks record how
# far it got in resync_offset, as md does; the next start resyncs only the
# rest, and ends clean with good parity.
make_members 4 "$size" e
ctl=$tmpdir/e.ctl
status () { python3 "$top_srcdir/tools/nbdkit-raid-ctl" "$ctl" status; }
field () { python3 -c "import json,sys; s=json.load(sys.stdin)['scrub']; print(s['$1'])"; }
start_nbdkit "$tmpdir/e.sock" create=true bitmap=none level=5 chunk=$chunk \
    rebuild-rate=1M control="$ctl" "${members[@]}" 2> "$tmpdir/e.log"
sleep 1.5
done1=$(status | field done)
kill -TERM "${_bg_pids[-1]}"
wait "${_bg_pids[-1]}" 2>/dev/null || :
rows=$(( 4 * 1024 * 1024 / (64 * 1024) - 16 ))     # 4M members, 1M data offset
read -r resync events <<< "$(sb get "${members[0]}" resync_offset events)"
if ! [ "$resync" -gt 0 ] 2>/dev/null || [ "$resync" = $clean ] ||
        [ $(( resync * 512 )) -lt "$done1" ]; then
    fail "(e) stopped at $done1 bytes of each member: resync_offset $resync"
fi
start_nbdkit "$tmpdir/e.sock" control="$ctl" "${members[@]}" 2> "$tmpdir/e.log"
total=$(status | field total)
[ "$total" = $(( rows * 64 * 1024 - resync * 512 )) ] ||
    fail "(e) the second resync goes over $total bytes, not the $(( rows * 64 * 1024 - resync * 512 )) left"
grep -q "resync stopped at row" "$tmpdir/e.log" ||
    fail "(e) the second start did not say where the resync stopped"
python3 "$top_srcdir/tools/nbdkit-raid-ctl" "$ctl" wait 60 > /dev/null ||
    fail "(e) the second resync did not end"
sh "$tmpdir/wait-clean.sh" "${members[0]}" || fail "(e) not clean after the resync"
kill -TERM "${_bg_pids[-1]}"
wait "${_bg_pids[-1]}" 2>/dev/null || :
raidcheck --level 5 --chunk $chunk --data-offset 1048576 "${members[@]}" ||
    fail "(e) parity after two halves of a resync"
echo "ok: (e) resync stopped at $(( resync * 512 )) of $(( rows * 64 * 1024 )) bytes, went on from there (${SECONDS}s)"

if [ $failures -gt 0 ]; then
    echo "$0: FAIL: $failures failure(s) (${SECONDS}s)"
    exit 1
fi
echo "$0: PASS (${SECONDS}s)"
