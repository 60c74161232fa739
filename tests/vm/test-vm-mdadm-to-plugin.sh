#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Arrays made by Linux md are read exactly by the plugin.
#
# In a guest (qemu, Debian's kernel, tests/vm/build-guest.sh), mdadm
# creates RAID-5 and RAID-6 arrays over virtio disks backed by files here:
# 3 to 6 members, chunks of 64K and 512K, the four rotating layouts for
# each level, members given to mdadm in a shuffled order.  The guest waits
# for the initial sync, writes a pattern (tests/vm/patgen.c) over the whole
# array and some unaligned overwrites; in one RAID-5 and one RAID-6 array
# it fails and removes a member and goes on writing, degraded.  Then it
# stops the array and saves mdadm --examine of each member.
#
# Here, from --examine alone (level, layout, chunk, data offset, the role
# of each file, and which member is stale), each array is served by the
# plugin in raw mode, the failed member as "missing", and every sector md
# wrote is checked through nbdsh.  Before that, raidcheck.py checks md's
# parity on the arrays that never failed and rebuilds their data, which
# must hold the pattern too (so a mismatch can be pinned on md's layout as
# raidcheck models it, or on the plugin).  Each array is also served from
# its md superblocks, with no geometry at all, its members in a shuffled
# order.

source "$(dirname "$0")/../lib/functions.sh"
source "$(dirname "$0")/common.sh"
requires nbdsh awk shuf
vm_setup

# NAME LEVEL N CHUNK_KIB LAYOUT FAIL_ROLE  (create order is shuffled below)
arrays="
r5a 5 3 64 left-symmetric -
r5b 5 5 512 right-asymmetric 2
r5c 5 4 64 right-symmetric -
r5d 5 3 512 left-asymmetric -
r6a 6 4 64 left-asymmetric -
r6b 6 6 512 left-symmetric 4
r6c 6 5 64 right-asymmetric -
r6d 6 4 512 right-symmetric -
"
# Members: 5M with 64K chunks, 8M with 512K chunks (mdadm then puts the
# data 2M in): at least 8 rows, more than one turn of every rotation.
member_size () { [ "$1" -le 64 ] && echo "${MEMBER_SIZE:-5M}" || echo "${MEMBER_SIZE:-8M}"; }

: > "$tmpdir/arrays.txt"
while read -r name level n chunk layout failrole; do
    [ -n "$name" ] || continue
    order=$(seq 0 $((n - 1)) | shuf | paste -sd,)
    echo "$name $level $n $chunk $layout $failrole $order" >> "$tmpdir/arrays.txt"
    for (( i = 0; i < n; i++ )); do
        truncate -s "$(member_size "$chunk")" "$tmpdir/$name-d$i"
        vm_disk "$name-d$i" "$tmpdir/$name-d$i"
    done
done <<< "$arrays"
cat "$tmpdir/arrays.txt"
vm_results_disk md
vm_initrd "$tmpdir/initrd" "$vm_dir/guest-md-create.sh" "$tmpdir/arrays.txt"
run_vm md "$tmpdir/initrd" "${vm_args[@]}"
vm_results md "$tmpdir/out" || exit 1
vm_result md || exit 1
echo "guest: $(vm_elapsed)"

# ex FILE FIELD: a field of mdadm --examine output.
ex () { awk -F' : ' -v f="$2" '{ k = $1; gsub(/^ +| +$/, "", k) } k == f { print $2; exit }' "$1"; }

while read -r name level n chunk layout failrole order; do
    echo "== $name: RAID-$level, $n members, chunk ${chunk}K, $layout, create order $order, failed role $failrole"
    sectors=$(cat "$tmpdir/out/$name-size.txt")
    writes=$tmpdir/out/$name-writes.txt
    cat "$writes"
    # Geometry and roles from --examine, as an operator would read it.
    roles=() ; events=()
    g_level= g_layout= g_chunk= g_doff=
    for (( i = 0; i < n; i++ )); do
        e=$tmpdir/out/$name-examine-d$i.txt
        l=$(ex "$e" "Raid Level"); lay=$(ex "$e" Layout)
        c=$(ex "$e" "Chunk Size"); off=$(ex "$e" "Data Offset")
        role=$(ex "$e" "Device Role"); ev=$(ex "$e" Events)
        echo "  d$i: $l, $lay, chunk $c, data offset $off, $role, events $ev"
        [ -z "$g_level" ] || [ "$l $lay $c $off" = "$g_level $g_layout $g_chunk $g_doff" ] ||
            fail "$name: members disagree on the geometry"
        g_level=$l g_layout=$lay g_chunk=$c g_doff=$off
        r=${role#Active device }
        [[ $r =~ ^[0-9]+$ ]] || { fail "$name d$i: role '$role'"; continue; }
        roles[r]=$i
        events[i]=${ev%%.*}
    done
    [ "$g_level" = "raid$level" ] || fail "$name: level $g_level"
    [ "$g_layout" = "$layout" ] || fail "$name: layout $g_layout"
    [ "$g_chunk" = "${chunk}K" ] || fail "$name: chunk $g_chunk"
    doff=$(( ${g_doff%% sectors} * 512 ))
    # A member whose event count lags was failed: it is "missing".
    maxev=0
    for ev in "${events[@]}"; do [ "$ev" -le "$maxev" ] || maxev=$ev; done
    disks=() ; files=() ; missing=
    for (( r = 0; r < n; r++ )); do
        i=${roles[r]:-}
        if [ -z "$i" ] || [ "${events[i]}" -lt "$maxev" ]; then
            disks+=(disk=missing); missing=$r
        else
            disks+=("disk=$tmpdir/$name-d$i"); files+=("$tmpdir/$name-d$i")
        fi
    done
    if [ "$failrole" != "${missing:--}" ]; then
        fail "$name: --examine shows role ${missing:-none} stale, the guest failed $failrole"
    fi
    expected_order=$(for (( r = 0; r < n; r++ )); do echo "${roles[r]:-?}"; done | paste -sd,)
    [ "$expected_order" = "$order" ] || [ -n "$missing" ] ||
        fail "$name: roles $expected_order, mdadm was given $order"

    # md's own parity and layout, by the independent checker.  With a
    # RAID-6 member missing, fill-missing.py derives its chunks from one
    # of P and Q, and raidcheck checks the other.
    if [ -n "$missing" ] && [ "$level" = 6 ]; then
        rolefiles=()
        for (( r = 0; r < n; r++ )); do
            if [ "$r" = "$missing" ]; then rolefiles+=("$tmpdir/filled")
            else rolefiles+=("$tmpdir/$name-d${roles[r]}"); fi
        done
        if python3 "$vm_dir/fill-missing.py" "$layout" "${chunk}K" "$doff" "$missing" \
                "$tmpdir/filled" "${rolefiles[@]}" &&
            raidcheck --level 6 --layout "$layout" --chunk "${chunk}K" \
                --data-offset "$doff" "${rolefiles[@]}"; then
            echo "  raidcheck: md's degraded writes left P and Q consistent"
        else
            fail "$name: raidcheck: md's degraded RAID-6 parity is not as modelled"
        fi
        rm -f "$tmpdir/filled"
    fi
    if [ -z "$missing" ]; then
        if raidcheck --level "$level" --layout "$layout" --chunk "${chunk}K" \
                --data-offset "$doff" --image "$tmpdir/rc.img" "${files[@]}" &&
            "$PATGEN" -l "$writes" "$sectors" "$tmpdir/rc.img"; then
            echo "  raidcheck: md's parity and layout as modelled: ok"
        else
            fail "$name: raidcheck disagrees with md (parity or layout)"
        fi
        rm -f "$tmpdir/rc.img"
    fi

    # The plugin, raw mode.
    rm -f "$tmpdir/plugin.img"
    if read_array "$tmpdir/plugin.img" "$sectors" metadata=none level="$level" \
            chunk="${chunk}K" layout="$layout" data-offset="$doff" "${disks[@]}" &&
        "$PATGEN" -l "$writes" "$sectors" "$tmpdir/plugin.img"; then
        echo "  plugin, raw mode: every sector ok"
    else
        fail "$name: the plugin in raw mode ($level $layout ${chunk}K data-offset=$doff ${disks[*]})"
    fi

    # The plugin, from the superblocks, members shuffled.
    mapfile -t shuffled < <(for (( i = 0; i < n; i++ )); do echo "disk=$tmpdir/$name-d$i"; done | shuf)
    rm -f "$tmpdir/plugin.img"
    if read_array "$tmpdir/plugin.img" "$sectors" "${shuffled[@]}" &&
        "$PATGEN" -l "$writes" "$sectors" "$tmpdir/plugin.img"; then
        echo "  plugin, md superblocks: every sector ok"
    else
        fail "$name: the plugin assembling from superblocks (${shuffled[*]})"
    fi
    rm -f "$tmpdir/plugin.img"
done < "$tmpdir/arrays.txt"

vm_finish
