#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# md's hot spares, both ways, with Linux md in a guest (one boot).
#
# The plugin to md: spares-host.py makes a RAID-5 of 3 with a spare
# (create=true, spare=, v1.2, members of 8 MiB) and writes patgen's seed
# 1 over it.  In the guest (guest-md-spares.sh) mdadm --examine must
# show the spare as "Device Role : spare" and the others in their roles,
# mdadm --assemble must take all four with the spare listed as a spare
# by --detail, and when mdadm --fail fails role 0, md must rebuild it
# onto the spare; its check then counts no mismatch and the pattern
# reads back.
#
# md to the plugin: in the same guest mdadm creates a RAID-5 of 3 with
# one spare (-x 1), writes the pattern and stops it; --examine must show
# its spare as a spare.  Here the plugin assembles it from the
# superblocks, every disk given in a shuffled order: the status lists
# the spare, and after "fail 0" on the control socket the plugin
# rebuilds role 0 onto it with no other command; then every sector reads
# as the pattern and a scrub check counts 0 mismatches (spares-host.py).

source "$(dirname "$0")/../lib/functions.sh"
source "$(dirname "$0")/common.sh"
requires nbdsh awk shuf python3
vm_setup
DISKS="d0 d1 d2 s0"

# ex FILE FIELD: a field of mdadm --examine or --detail output.
ex () { awk -F' : ' -v f="$2" '{ k = $1; gsub(/^ +| +$/, "", k) } k == f { print $2; exit }' "$1"; }
# show NAME: each disk's role, events, features and checksum verdict,
# as --examine said.
show ()
{
    local x e
    for x in $DISKS; do
        e=$out/$1-examine-$x.txt
        [ -s "$e" ] || continue
        echo "$1-$x: Device Role : $(ex "$e" 'Device Role'); Events : $(ex "$e" Events); Feature Map : $(ex "$e" 'Feature Map'); Checksum : $(ex "$e" Checksum)"
    done
}
# disks NAME: the lines of mdadm --detail's device table.
disks () { awk '/Number +Major/ { on = 1; next } on && NF' "$1"; }

# The plugin to md.
pm=$tmpdir/pm
initrd_files=()
if python3 "$vm_dir/spares-host.py" make "$pm" "$PATGEN"; then
    mapfile -t pm_files < "$pm/roles.txt"
    i=0
    for x in $DISKS; do
        vm_disk "pm-$x" "${pm_files[i]}"
        i=$((i + 1))
    done
    cp "$pm/size.txt" "$tmpdir/pm-size.txt"
    initrd_files+=("$tmpdir/pm-size.txt")
else
    fail "spares-host.py: the plugin did not make the array with its spare"
fi

# md to the plugin: blank disks.
for x in $DISKS; do
    truncate -s 8M "$tmpdir/md-$x"
    vm_disk "md-$x" "$tmpdir/md-$x"
done

out=$tmpdir/out
vm_guest spares "$out" "$vm_dir/guest-md-spares.sh" "${initrd_files[@]}" || exit 1

# What md said of the plugin's array, for the log: each disk's role and
# the spare's whole --examine.  mdadm finds every disk's superblock
# right: a spare whose superblock says there is a bitmap must carry one,
# or mdadm drops the bit and the checksum no longer matches.
show pm
for x in $DISKS; do
    e=$out/pm-examine-$x.txt
    [ -s "$e" ] || { fail "pm-$x: no mdadm --examine"; continue; }
    case $(ex "$e" Checksum) in
        *" - correct") ;;
        *) fail "pm-$x: mdadm --examine: Checksum : $(ex "$e" Checksum)" ;;
    esac
done
[ -s "$out/pm-examine-s0.txt" ] && echo "pm-s0: mdadm --examine:"
[ -s "$out/pm-examine-s0.txt" ] && sed 's/^/    /' "$out/pm-examine-s0.txt"
for f in pm-detail pm-detail-rebuilt; do
    [ -s "$out/$f.txt" ] || continue
    echo "$f: State : $(ex "$out/$f.txt" State); Active Devices : $(ex "$out/$f.txt" 'Active Devices'); Spare Devices : $(ex "$out/$f.txt" 'Spare Devices'); Failed Devices : $(ex "$out/$f.txt" 'Failed Devices')"
    disks "$out/$f.txt" | sed 's/^ */    /'
done
[ -s "$out/pm-examine-s0-rebuilt.txt" ] &&
    echo "pm-s0 after md's rebuild: Device Role : $(ex "$out/pm-examine-s0-rebuilt.txt" 'Device Role')"
[ -s "$out/pm-mismatch_cnt.txt" ] &&
    echo "pm: md's check: mismatch_cnt $(cat "$out/pm-mismatch_cnt.txt")"

# md to the plugin.
if [ ! -s "$out/md-size.txt" ] || [ ! -s "$out/md-examine-s0.txt" ]; then
    fail "md: the guest did not make the array"
    vm_finish
fi
show md
echo "md-s0: mdadm --examine:"
sed 's/^/    /' "$out/md-examine-s0.txt"
echo "md-detail: Spare Devices : $(ex "$out/md-detail.txt" 'Spare Devices')"
disks "$out/md-detail.txt" | sed 's/^ */    /'
mapfile -t shuffled < <(for x in $DISKS; do echo "$tmpdir/md-$x"; done | shuf)
echo "md: the plugin assembles ${shuffled[*]}"
python3 "$vm_dir/spares-host.py" takeover "$tmpdir/md" "$PATGEN" "${shuffled[@]}" ||
    fail "md: the plugin did not rebuild md's array onto md's spare"

vm_finish
