#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# md fails and removes a member of an array the plugin made with a
# write-intent bitmap and writes while it is out; the plugin, given the
# member back, re-adds it from the bitmap; md then takes the result
# clean.
#
#  1. The plugin creates RAID-6 and RAID-5 arrays (create=true,
#     bitmap-chunk=64K), waits for the first resync, writes pattern 1 over
#     all of it and stops cleanly (tests/vm/readd-removed.py write).
#  2. Guest boot (tests/vm/guest-md-remove.sh remove): mdadm assembles
#     each, `--fail X --remove X` one member, writes pattern 2 over a
#     fifth of the array, stops.  Here, from the files (tests/lib/mdsb.py):
#     md must have left the removed member's superblock stale (events
#     behind by more than one) and written its slot as spare (0xffff) in
#     the others' dev_roles: what the plugin is to accept.
#  3. The plugin starts on all members (shuffled, no create=): it must log
#     "was out of date: re-adding it from the write-intent bitmap", the
#     member go rebuilding -> in_sync having resynced at most half of a
#     member's data (the bitmap's regions, not all of it), and every
#     sector read back through NBD as pattern 1 overlaid by pattern 2
#     (readd-removed.py readd); after its clean stop every superblock is
#     clean, at one events count.
#  4. Guest boot (guest-md-remove.sh check): mdadm --assemble must bring
#     it up with every member active, clean, no dirty bit, no resync or
#     recovery; the pattern reads back; md's check counts no mismatch.
#
# Skips unless qemu and the guest are here.

source "$(dirname "$0")/../lib/functions.sh"
source "$(dirname "$0")/common.sh"
requires_python_module nbd
vm_setup

helper=$vm_dir/readd-removed.py
# NAME LEVEL N ROLE (the role md removes)
arrays="
r6 6 5 2
r5 5 4 1
"

# --- 1. the plugin creates the arrays -------------------------------------
mkdir -p "$tmpdir/remove-in" "$tmpdir/check-in"
: > "$tmpdir/remove-in/arrays.txt"
: > "$tmpdir/check-in/arrays.txt"
declare -A sectors_of
while read -r name level n role; do
    [ -n "$name" ] || continue
    make_members "$n" 6M "$name-d"
    ctl=$tmpdir/$name.ctl w=$tmpdir/$name-writes.txt
    echo "== $name: create=true level=$level chunk=64K bitmap-chunk=64K, $n members"
    if ! raid_nbdkit create=true level="$level" chunk=64K bitmap-chunk=64K \
            control="$ctl" "${members[@]/#/disk=}" \
            --run "python3 '$helper' write '$ctl' \"\$uri\" '$PATGEN' '$w'" \
            2> "$tmpdir/$name.create.log"; then
        cat "$tmpdir/$name.create.log"
        fail "$name: creating and writing through the plugin"
        continue
    fi
    sectors=$(awk 'NR == 1 { print $3 }' "$w")
    sectors_of[$name]=$sectors
    echo "2 $((sectors / 3 + 7)) $((sectors / 5))" >> "$w"   # md writes it
    echo "remove $name $n $role $sectors" >> "$tmpdir/remove-in/arrays.txt"
    for (( i = 0; i < n; i++ )); do vm_disk "$name-d$i" "${members[i]}"; done
done <<< "$arrays"
[ -s "$tmpdir/remove-in/arrays.txt" ] || exit 1

# --- 2. md fails and removes a member, writes, stops ----------------------
vm_results_disk remove
vm_initrd "$tmpdir/initrd-remove" "$vm_dir/guest-md-remove.sh" \
    "$tmpdir/remove-in/arrays.txt" "$tmpdir"/*-writes.txt
run_vm remove "$tmpdir/initrd-remove" "${vm_args[@]}"
vm_args=(); _vm_ndisk=0
vm_results remove "$tmpdir/remove-out" || true
vm_result remove || fail "the guest that removes a member"
grep -a -E 'RAIDVM: (ok|FAIL|  |[^ ]+: )' "$tmpdir/remove.console" | tr -d '\r' || true
echo "== md's removals done ($(vm_elapsed))"

# --- 3. the plugin re-adds the removed member -----------------------------
while read -r name level n role; do
    [ -n "$name" ] && [ -n "${sectors_of[$name]:-}" ] || continue
    ctl=$tmpdir/$name.ctl w=$tmpdir/$name-writes.txt
    gone=$tmpdir/$name-d$role
    mapfile -t members < <(for (( i = 0; i < n; i++ )); do echo "$tmpdir/$name-d$i"; done)
    # What md left, read independently of the plugin and of mdadm.
    read -r dn ev_gone <<< "$(sb get "$gone" dev_number events)"
    for m in "${members[@]}"; do
        [ "$m" != "$gone" ] || continue
        ev=$(sb get "$m" events)
        read -r -a roles <<< "$(sb get "$m" dev_roles | tr -d '[],')"
        if [ $((ev_gone + 1)) -ge "$ev" ] || [ "${roles[dn]}" != 65535 ]; then
            fail "$name: md did not leave what this test is about: ${m##*/} has events $ev and dev_roles[$dn] ${roles[dn]}, the removed ${gone##*/} events $ev_gone (want older by 2 or more, and 65535: spare)"
        fi
    done
    echo "== $name: md left ${gone##*/} (slot $dn) at events $ev_gone, the others at $ev with slot $dn spare"
    mapfile -t shuffled < <(printf 'disk=%s\n' "${members[@]}" | shuf)
    echo "== $name: the plugin, on all members: ${shuffled[*]}"
    if raid_nbdkit control="$ctl" rebuild-rate=1M "${shuffled[@]}" \
            --run "python3 '$helper' readd '$ctl' \"\$uri\" '$PATGEN' '$w' '$gone'" \
            2> "$tmpdir/$name.readd.log"; then
        echo "  ok: $name: re-added from the bitmap; the data reads back"
    else
        fail "$name: the plugin did not re-add the member md removed"
    fi
    sed 's/^/  nbdkit: /' "$tmpdir/$name.readd.log"
    grep -q "($gone) was out of date: re-adding it from the write-intent bitmap" \
        "$tmpdir/$name.readd.log" ||
        fail "$name: no \"was out of date: re-adding it from the write-intent bitmap\" for ${gone##*/} in nbdkit's log"
    evs=$(for m in "${members[@]}"; do sb get "$m" events; done | sort -u | tr '\n' ' ')
    nclean=$(for m in "${members[@]}"; do sb get "$m" resync_offset; done | grep -c -x "$clean" || :)
    [ "$nclean" = "$n" ] && [ "$evs" = "$(sb get "${members[0]}" events) " ] ||
        fail "$name: after the plugin's stop: $nclean of $n superblocks clean, events $evs"
    echo "check $name $n ${sectors_of[$name]}" >> "$tmpdir/check-in/arrays.txt"
    for (( i = 0; i < n; i++ )); do vm_disk "$name-d$i" "${members[i]}"; done
done <<< "$arrays"
echo "== the plugin's re-adds done ($(vm_elapsed))"

# --- 4. md takes the result -----------------------------------------------
vm_results_disk check
vm_initrd "$tmpdir/initrd-check" "$vm_dir/guest-md-remove.sh" \
    "$tmpdir/check-in/arrays.txt" "$tmpdir"/*-writes.txt
run_vm check "$tmpdir/initrd-check" "${vm_args[@]}"
vm_results check "$tmpdir/check-out" || true
vm_result check || fail "the guest that assembles the result"
grep -a -E 'RAIDVM: (ok|FAIL|  |[^ ]+: )' "$tmpdir/check.console" | tr -d '\r' || true

vm_finish
