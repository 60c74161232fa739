#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# md's bad-block logs, both ways, with Linux md in a guest (one boot).
#
# The plugin to md: badblocks-record.py makes a RAID-5 of 4 with the
# plugin (create=true, v1.2) and makes it record bad blocks as md would:
# a rebuild that cannot read a range of member 2 records it there and on
# the replacement (two pages of the array lost), and two writes that
# member 2 refuses are recorded on it.  In the guest, mdadm
# --examine-badblocks must list exactly those ranges on those members
# (and the counts of the plugin's status), mdadm --assemble must take
# the array, not degraded, and with every recorded range of the member
# files overwritten with noise, every sector not lost must read as
# written and every lost range must fail.
#
# md to the plugin: in the same guest mdadm creates a RAID-5 of 4 (v1.2:
# it reserves a log), writes a pattern, and three ranges (one not on a
# 4 KiB boundary) go into one member's log through md's sysfs; md writes
# the log with the superblocks.  Here the listed sectors of that member's
# file are overwritten with noise, and the plugin, assembling from the
# superblocks, must count what md listed in its status (per member, and
# nothing lost) and serve every sector as written: the listed ones
# reconstructed from the other members, never read from that one.

source "$(dirname "$0")/../lib/functions.sh"
source "$(dirname "$0")/common.sh"
requires nbdsh awk python3
: "${RAID_BADSECTOR_PLUGIN:=$top_builddir/tests/.libs/nbdkit-badsector-plugin.so}"
export RAID_BADSECTOR_PLUGIN
if [ ! -f "$RAID_BADSECTOR_PLUGIN" ]; then
    echo "$0: SKIP: $RAID_BADSECTOR_PLUGIN is not built (make check builds it)"
    exit 77
fi
vm_setup
RAIDCTL=$top_srcdir/tools/nbdkit-raid-ctl

# ebb FILE: the ranges of mdadm --examine-badblocks output, "SECTOR LENGTH".
ebb () { awk '$2 == "for" && $4 == "sectors" { print $1, $3 }' "$1"; }
# bb_count STATUS MEMBER: "RANGES SECTORS" of a member's log in the
# status JSON STATUS; MEMBER: its role, or its name (the disk= given).
bb_count ()
{
    python3 -c '
import json, sys
st = json.load(open(sys.argv[1]))
m = [x for x in st["members"] if sys.argv[2] in (x["name"], str(x["index"]))]
bb = m[0]["bad_blocks"] if m else None
print("%d %d" % (bb["ranges"], bb["sectors"]) if bb else "none")
' "$1" "$2"
}

# The plugin to md: the array, its logs written by the plugin.
pm=$tmpdir/pm
initrd_files=()
if python3 "$vm_dir/badblocks-record.py" "$pm" "$PATGEN"; then
    mapfile -t pm_roles < "$pm/roles.txt"
    for (( i = 0; i < 4; i++ )); do
        vm_disk "pm-d$i" "${pm_roles[i]}"
        echo "pm: role $i (${pm_roles[i]##*/}): the plugin's status counts $(bb_count "$pm/status.json" "$i") (ranges, sectors)"
    done
    echo "pm: expected ranges (role, sector, length): $(paste -sd, "$pm/expected.txt")"
    echo "pm: lost (array sectors): $(paste -sd, "$pm/lost.txt"); the status: $(python3 -c 'import json, sys; st = json.load(open(sys.argv[1])); print("lost_ranges", st["lost_ranges"], "lost_bytes", st["lost_bytes"])' "$pm/status.json")"
    # Noise over every range recorded, on the files themselves: md must
    # reconstruct the pages the logs list, or fail them, never read them.
    # A control: the plugin in raw mode (no log) reads the noise in the
    # 8 data sectors of a refused write and in the 16 lost.
    while read -r role s n; do
        dd if=/dev/urandom of="${pm_roles[role]}" bs=512 seek="$s" count="$n" \
            conv=notrunc status=none
    done < "$pm/expected.txt"
    echo "1 0 $(cat "$pm/size.txt")" > "$pm/writes.txt"
    rawdisks=("${pm_roles[@]/#/disk=}")
    raw=$(read_array "$tmpdir/plugin.img" "$(cat "$pm/size.txt")" metadata=none \
              level=5 chunk=64K layout=left-symmetric data-offset=1M \
              "${rawdisks[@]}" > /dev/null 2>&1 &&
          "$PATGEN" -l "$pm/writes.txt" "$(cat "$pm/size.txt")" "$tmpdir/plugin.img" 2>&1 |
              tail -n 1)
    echo "pm: control, raw mode: $raw"
    [[ $raw == *", 24 bad" ]] ||
        fail "pm: raw mode does not read the noise in the 24 data sectors listed: $raw"
    rm -f "$tmpdir/plugin.img"
    cp "$pm/lost.txt" "$tmpdir/pm-lost.txt"
    cp "$pm/size.txt" "$tmpdir/pm-size.txt"
    initrd_files+=("$tmpdir/pm-lost.txt" "$tmpdir/pm-size.txt")
else
    fail "badblocks-record.py: the plugin did not record the bad blocks"
fi

# md to the plugin: blank members, and the ranges for md-d1's log (data
# sectors: from the data offset): rows 12, 32 and 71, where md-d1 (role
# 1, left-symmetric) holds data; one not on a 4 KiB boundary.  Not in row
# 0, which the guest writes again so that md updates the superblocks.
for (( i = 0; i < 4; i++ )); do
    truncate -s 8M "$tmpdir/md-d$i"
    vm_disk "md-d$i" "$tmpdir/md-d$i"
done
printf '%s\n' "1536 8" "4099 5" "9128 24" > "$tmpdir/md-bad.txt"
initrd_files+=("$tmpdir/md-bad.txt")

vm_results_disk bb
vm_initrd "$tmpdir/initrd" "$vm_dir/guest-md-badblocks.sh" "${initrd_files[@]}"
run_vm bb "$tmpdir/initrd" "${vm_args[@]}"
vm_results bb "$tmpdir/out" || exit 1
vm_result bb || fail "the guest did not pass"
grep -a -E 'RAIDVM: (ok|FAIL)' "$tmpdir/bb.console" | tr -d '\r' || true
echo "guest: $(vm_elapsed)"
out=$tmpdir/out

# The plugin to md: what mdadm lists is what the plugin recorded.
if [ -s "$pm/expected.txt" ]; then
    : > "$tmpdir/pm-listed.txt"
    for (( i = 0; i < 4; i++ )); do
        echo "pm-d$i: mdadm --examine-badblocks:"
        sed 's/^/    /' "$out/pm-ebb-d$i.txt"
        ebb "$out/pm-ebb-d$i.txt" | sed "s/^/$i /" >> "$tmpdir/pm-listed.txt"
        read -r n s <<< "$(ebb "$out/pm-ebb-d$i.txt" |
                           awk '{ n++; s += $2 } END { print n + 0, s + 0 }')"
        c=$(bb_count "$pm/status.json" "$i")
        [ "$c" = "$n $s" ] ||
            fail "pm: role $i: md lists $n ranges, $s sectors; the plugin's status said $c"
    done
    if diff -u "$pm/expected.txt" "$tmpdir/pm-listed.txt"; then
        echo "pm: md lists exactly the $(wc -l < "$pm/expected.txt") ranges the plugin recorded"
    else
        fail "pm: md's lists (+) are not the ranges the plugin recorded (-)"
    fi
fi

# md to the plugin.
doff=$(cat "$out/md-offset.txt" 2>/dev/null) || doff=
if [ -z "$doff" ] || [ ! -s "$out/md-writes.txt" ]; then
    fail "md: the guest did not make the array"
    vm_finish
fi
echo "md-d1: data offset $doff sectors; md's sysfs bad_blocks: $(paste -sd, "$out/md-sysfs-bad_blocks.txt")"
awk -v d="$doff" '{ print $1 + d, $2 }' "$tmpdir/md-bad.txt" > "$tmpdir/md-expected.txt"
for (( i = 0; i < 4; i++ )); do
    echo "md-d$i: mdadm --examine-badblocks:"
    sed 's/^/    /' "$out/md-ebb-d$i.txt"
    ebb "$out/md-ebb-d$i.txt" > "$tmpdir/md-listed-d$i.txt"
    listed[i]=$(awk '{ s += $2 } END { print NR, s + 0 }' "$tmpdir/md-listed-d$i.txt")
done
if [ "${listed[*]}" != "0 0 3 37 0 0 0 0" ]; then
    fail "md: md's logs hold (ranges, sectors per member) ${listed[*]}, not 0 0 3 37 0 0 0 0"
fi
diff -u "$tmpdir/md-expected.txt" "$tmpdir/md-listed-d1.txt" ||
    fail "md: md-d1's log (+) is not the ranges written to sysfs (-)"
# Noise over every sector md listed, on the member file itself.
while read -r s n; do
    dd if=/dev/urandom of="$tmpdir/md-d1" bs=512 seek="$s" count="$n" \
        conv=notrunc status=none
done < "$tmpdir/md-listed-d1.txt"
sectors=$(cat "$out/md-size.txt")
mapfile -t shuffled < <(for (( i = 0; i < 4; i++ )); do echo "disk=$tmpdir/md-d$i"; done | shuf)
rm -f "$tmpdir/plugin.img"
read_array "$tmpdir/plugin.img" "$sectors" "${shuffled[@]}" ||
    fail "md: the plugin did not read md's array"
# Its status, served again (read_array's --run has no room for it).
if ! ST=$tmpdir/md-status.json CTL=$tmpdir/md.ctl RAIDCTL=$RAIDCTL \
    raid_nbdkit "${shuffled[@]}" control="$tmpdir/md.ctl" \
        --run '"$RAIDCTL" "$CTL" status > "$ST"'; then
    fail "md: the plugin did not serve md's array with its logs"
else
    for (( i = 0; i < 4; i++ )); do
        c=$(bb_count "$tmpdir/md-status.json" "$tmpdir/md-d$i")
        echo "md-d$i: the plugin's status counts $c (ranges, sectors); md listed ${listed[i]}"
        [ "$c" = "${listed[i]}" ] ||
            fail "md: md-d$i: the plugin counts $c, md listed ${listed[i]}"
    done
    lost=$(python3 -c 'import json, sys; st = json.load(open(sys.argv[1])); print(st["lost_ranges"], st["lost_bytes"])' "$tmpdir/md-status.json")
    [ "$lost" = "0 0" ] || fail "md: the plugin counts lost ranges and bytes: $lost"
fi
if [ -s "$tmpdir/plugin.img" ] &&
    "$PATGEN" -l "$out/md-writes.txt" "$sectors" "$tmpdir/plugin.img"; then
    echo "md: the plugin serves every sector as md wrote it, md-d1's listed sectors reconstructed"
else
    fail "md: the plugin's reads of md's array (listed sectors of md-d1 overwritten with noise)"
fi
# A control: the same members in raw mode (no superblocks, so no log;
# md-dI has role I, the order given to mdadm) read the noise in every
# listed sector (all three ranges are data on md-d1), or the check above
# proves nothing.
rawdisks=(disk="$tmpdir"/md-d{0,1,2,3})
rm -f "$tmpdir/plugin.img"
raw=$(read_array "$tmpdir/plugin.img" "$sectors" metadata=none level=5 \
          chunk=64K layout=left-symmetric data-offset=$(( doff * 512 )) \
          "${rawdisks[@]}" > /dev/null 2>&1 &&
      "$PATGEN" -l "$out/md-writes.txt" "$sectors" "$tmpdir/plugin.img" 2>&1 | tail -n 1)
echo "md: control, raw mode: $raw"
[[ $raw == *", 37 bad" ]] ||
    fail "md: raw mode does not read md-d1's noise in the 37 listed sectors: $raw"
rm -f "$tmpdir/plugin.img"

vm_finish
