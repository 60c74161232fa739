#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Read-only means nothing is written to any member, as with mdadm
# --assemble --readonly: nbdkit -r (which nbdkit tells the plugin only
# per connection, after the resync and the rebuild would have started) and
# readonly=true.  Every case checks the md5 of every member before and
# after, and reads the whole array against the shadow.
#
#   (a) an unclean array (nbdkit SIGKILLed after writes, bitmap bits set):
#       served, not resynchronised, the bitmap not cleared, and the log
#       says so; for every spelling of -r nbdkit accepts (-r, --readonly,
#       --read-only, the prefix --read, a cluster -fr, -r after the plugin's
#       parameters, -r beside nbdkit 1.42's --timeout when nbdkit has it),
#       with nbdkit started by the dynamic loader (ld.so and its own
#       options before nbdkit's, as make check-asan starts it), and
#       readonly=true.  And the other way: an "-r" inside
#       --run's argument is not nbdkit's, so that start does resync.
#   (b) an array left mid-recovery (member 1 half rebuilt, its rows above
#       the recovery offset noise): served with those rows reconstructed,
#       the rebuild not resumed; read-write, the same start rebuilds it.
#   (c) the control socket refuses fail, replace and scrub repair ("the
#       array is read-only"); scrub check runs.
#   (d) a member exported read-only over NBD is accepted, and when it
#       fails under reads (EIO from nbdkit's error filter) the array goes
#       on degraded and still writes no superblock.
#   (e) create=true is refused.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires nbdsh md5sum cp cmp head readelf
requires_python_module nbd
requires_nbdkit_filter error


# verify.py: the whole array must read as $SHADOW.
cat > "$tmpdir/verify.py" <<'EOF'
import os
want = open(os.environ["SHADOW"], "rb").read()
assert h.get_size() == len(want), (h.get_size(), len(want))
got = h.pread(len(want), 0)
if got != want:
    bad = next(i for i in range(len(want)) if got[i] != want[i])
    raise AssertionError("array byte %d differs from the shadow" % bad)
assert h.is_read_only(), "the array was exported writable"
print("VERIFIED")
EOF

# A: RAID-5, 4 members, chunk 4K, 64 rows, a bitmap of 64K bits; data
# written and the array clean, its first resync done.
make_members 4 320K A
A=("${members[@]}")
md_new "$tmpdir/A.shadow" -- level=5 chunk=4K data-offset=64K \
    bitmap-chunk=16K "${A[@]}"

x=("$tmpdir/x0" "$tmpdir/x1" "$tmpdir/x2" "$tmpdir/x3")
copy_A () { for i in 0 1 2 3; do cp --sparse=always "${A[i]}" "${x[i]}"; done; }

# served WHAT 'LOG-REGEX' NBDKIT-ARGS... (the members are given by the
# caller): served, reads = $SHADOW, the log matches, no member changed.
served ()
{
    local what=$1 regex=$2 r=0 i
    shift 2
    # Each case starts from the same members ($SRC0..3), whatever an
    # earlier one did.
    for i in 0 1 2 3; do cp --sparse=always "$tmpdir/$SRC$i" "${x[i]}"; done
    members_md5 "${x[@]}" > "$tmpdir/before"
    SHADOW=$SHADOW timeout 60 "${start[@]}" --exit-with-parent "$@" \
        > "$tmpdir/out" 2> "$tmpdir/err" || r=$?
    members_md5 "${x[@]}" > "$tmpdir/after"
    if [ $r != 0 ] || ! grep -q VERIFIED "$tmpdir/out"; then
        fail "$what: not served right (exit $r)"
        sed 's/^/    /' "$tmpdir/out" "$tmpdir/err"
    elif ! cmp -s "$tmpdir/before" "$tmpdir/after"; then
        fail "$what: a member was written"
        diff "$tmpdir/before" "$tmpdir/after" | sed 's/^/    /' || :
    elif [ -n "$regex" ] && ! grep -qE -- "$regex" "$tmpdir/err"; then
        fail "$what: the log does not say /$regex/:"
        sed 's/^/    /' "$tmpdir/err"
    else
        echo "ok: $what"
    fi
}
start=(nbdkit)
verify='nbdsh -u "$uri" -c "exec(open(\"'"$tmpdir/verify.py"'\").read())"'

# written WHAT SRC RUN: a read-write start (--run RUN) on fresh copies of
# $SRC0..3: true if it wrote a member.  Its log is in $tmpdir/err.
written ()
{
    local i
    for i in 0 1 2 3; do cp --sparse=always "$tmpdir/$2$i" "${x[i]}"; done
    members_md5 "${x[@]}" > "$tmpdir/before"
    nbdkit -U - "$RAID_PLUGIN" "${x[@]}" --run "$3" 2> "$tmpdir/err" ||
        fail "$1 the read-write start failed"
    members_md5 "${x[@]}" > "$tmpdir/after"
    ! cmp -s "$tmpdir/before" "$tmpdir/after"
}

# --- (a) unclean --------------------------------------------------------------
copy_A
cp "$tmpdir/A.shadow" "$tmpdir/U.shadow"
start_nbdkit "$tmpdir/w.sock" "${x[@]}"
nbdsh -u "nbd+unix:///?socket=$tmpdir/w.sock" -c "
import os
h.set_strict_mode(0)
shadow = bytearray(open('$tmpdir/U.shadow', 'rb').read())
for off in (0, 100000, 150001):
    d = os.urandom(3000)
    h.pwrite(d, off)
    shadow[off:off + len(d)] = d
open('$tmpdir/U.shadow', 'wb').write(shadow)
"
kill -9 "${_bg_pids[-1]}"
wait "${_bg_pids[-1]}" 2>/dev/null || :
[ "$(sb get "${x[0]}" resync_offset)" != $clean ] ||
    fail "(a) the SIGKILLed array's superblocks say clean"
for i in 0 1 2 3; do cp --sparse=always "${x[i]}" "$tmpdir/U$i"; done
SHADOW=$tmpdir/U.shadow SRC=U
unrepaired='read-only: the array was not shut down cleanly and is not resynchronised'
bits='read-only: the write-intent bitmap.s [0-9]+ set bits are not cleared'
served "(a) unclean, nbdkit -r" "$unrepaired" \
    -r -U - "$RAID_PLUGIN" "${x[@]}" --run "$verify"
grep -qE "$bits" "$tmpdir/err" || fail "(a) the log does not say /$bits/"
served "(a) unclean, --readonly" "$unrepaired" \
    --readonly -U - "$RAID_PLUGIN" "${x[@]}" --run "$verify"
served "(a) unclean, --read-only" "$unrepaired" \
    --read-only -U - "$RAID_PLUGIN" "${x[@]}" --run "$verify"
served "(a) unclean, --read (a prefix getopt takes)" "$unrepaired" \
    --read -U - "$RAID_PLUGIN" "${x[@]}" --run "$verify"
served "(a) unclean, -fr" "$unrepaired" \
    -fr -U - "$RAID_PLUGIN" "${x[@]}" --run "$verify"
served "(a) unclean, -r after the plugin's parameters" "$unrepaired" \
    -U - "$RAID_PLUGIN" "${x[@]}" -r --run "$verify"
# An option nbdkit 1.32 lacks: the plugin's tables must have it too, or
# the command line reads as one getopt refuses, and so as writable.
if nbdkit --long-options | grep -qx -- --timeout; then
    served "(a) unclean, -r beside 1.42's --timeout" "$unrepaired" \
        -r --timeout=30 -U - "$RAID_PLUGIN" "${x[@]}" --run "$verify"
else
    echo "skip: (a) -r beside --timeout: this nbdkit has no --timeout"
fi
# The loader's arguments come first in what execve got (and so in
# /proc/self/cmdline); nbdkit's -r must still be found.  Under check-asan
# and check-tsan every case here is started so (tests/sanitize/nbdkit).
case ${RAID_SANITIZE:-} in
    asan|tsan)
        echo "ok: (a) unclean, nbdkit -r started by the loader: every case here is" ;;
    *)
        # Under check-valgrind "nbdkit" is tests/sanitize/nbdkit, a script:
        # this case runs the real one, outside memcheck.
        nbdkit_bin=${RAID_REAL_NBDKIT:-$(command -v nbdkit)}
        ldso=$(readelf -l "$nbdkit_bin" |
               sed -n 's/.*program interpreter: \([^]]*\)]/\1/p')
        [ -x "$ldso" ] || fail "(a) no program interpreter found in $nbdkit_bin"
        start=("$ldso" --inhibit-cache --argv0 nbdkit "$nbdkit_bin")
        served "(a) unclean, nbdkit -r started by the loader ($ldso)" \
            "$unrepaired" -r -U - "$RAID_PLUGIN" "${x[@]}" --run "$verify"
        start=(nbdkit) ;;
esac
served "(a) unclean, readonly=true" "$unrepaired" \
    -U - "$RAID_PLUGIN" readonly=true "${x[@]}" --run "$verify"
# Not read-only: the -r is --run's.  This start resyncs and writes.
if ! written "(a)" U 'sleep 1 || true -r' || grep -q "read-only" "$tmpdir/err"; then
    fail "(a) an -r in --run's argument made the array read-only"
else
    echo "ok: (a) an -r in --run's argument is not nbdkit's: resynced, written"
fi

# --- (b) mid-recovery -----------------------------------------------------
copy_A
SHADOW=$tmpdir/A.shadow
# Member 1 half rebuilt: rows 0..15 good, the rest noise, as a rebuild
# cut short leaves it.  Feature bits: bitmap (1) + recovery offset (2).
sb set "${x[1]}" feature_map=0x3 recovery_offset=$((16 * 8))
python3 -c '
import os, sys
with open(sys.argv[1], "r+b") as f:
    f.seek(65536 + 16 * 4096)
    f.write(os.urandom(48 * 4096))
' "${x[1]}"
for i in 0 1 2 3; do cp --sparse=always "${x[i]}" "$tmpdir/R$i"; done
SRC=R
served "(b) mid-recovery, nbdkit -r" \
    "read-only: member ${x[1]} was being rebuilt \(row 16 of 64\): the rebuild is not resumed" \
    -r -U - "$RAID_PLUGIN" "${x[@]}" --run "$verify"
served "(b) mid-recovery, readonly=true" "the rebuild is not resumed" \
    -U - "$RAID_PLUGIN" readonly=true "${x[@]}" --run "$verify"
# The control: read-write, the same array is rebuilt (member 1 written).
written "(b)" R 'sleep 1' ||
    fail "(b) read-write, the half-rebuilt member was not rebuilt (nothing written)"

# --- (c) the control socket ---------------------------------------------------
copy_A
touch "$tmpdir/spare"
truncate -s 320K "$tmpdir/spare"
ctl=$tmpdir/ctl.sock
cat > "$tmpdir/ctl.py" <<EOF
import sys
sys.path.insert(0, "$top_srcdir/tests/lib")
import faults
c = faults.Control("$ctl")
for cmd in ("fail 1", "replace 1 $tmpdir/spare", "scrub repair"):
    r = c.error(cmd)
    assert "the array is read-only" in r, (cmd, r)
    print("refused:", cmd, "->", r)
c.ok("scrub check")
st = c.wait_idle(30)
assert st["scrub"]["finished"] and st["scrub"]["mismatch_cnt"] == 0, st
assert [m["state"] for m in st["members"]] == ["in_sync"] * 4, st
EOF
members_md5 "${x[@]}" "$tmpdir/spare" > "$tmpdir/before"
if nbdkit -r -U - "$RAID_PLUGIN" "${x[@]}" control="$ctl" \
    --run "python3 $tmpdir/ctl.py" > "$tmpdir/out" 2> "$tmpdir/err"; then
    members_md5 "${x[@]}" "$tmpdir/spare" > "$tmpdir/after"
    if cmp -s "$tmpdir/before" "$tmpdir/after"; then
        echo "ok: (c) control: fail, replace and scrub repair refused, scrub check ran"
        sed 's/^/    /' "$tmpdir/out"
    else
        fail "(c) a member or the spare was written"
    fi
else
    fail "(c) the control socket of a read-only array"
    sed 's/^/    /' "$tmpdir/out" "$tmpdir/err"
fi

# --- (d) a read-only NBD member that fails under reads ---------------------
copy_A
SHADOW=$tmpdir/A.shadow SRC=A
trigger=$tmpdir/x3.fail
start_bg nbdkit -f --exit-with-parent -r -U "$tmpdir/x3.sock" \
    --filter=error file "${x[3]}" error-pread-rate=100% \
    error-pread-file="$trigger" 2> "$tmpdir/x3.log"
for i in $(seq 100); do [ -S "$tmpdir/x3.sock" ] && break; sleep 0.1; done
cat > "$tmpdir/fail-reads.py" <<EOF
import os
exec(open("$tmpdir/verify.py").read())
open("$trigger", "w").close()
exec(open("$tmpdir/verify.py").read())
os.unlink("$trigger")
EOF
served "(d) a read-only NBD member, failed by EIO while serving" \
    "read-only: member nbd\+unix:.*x3.sock failed while serving; the superblocks do not record it" \
    -r -U - "$RAID_PLUGIN" "${x[0]}" "${x[1]}" "${x[2]}" \
    "nbd+unix:///?socket=$tmpdir/x3.sock" \
    --run 'nbdsh -u "$uri" -c "exec(open(\"'"$tmpdir/fail-reads.py"'\").read())"'

# --- (e) create=true --------------------------------------------------------
copy_A
members_md5 "${x[@]}" > "$tmpdir/before"
if nbdkit -r -U - "$RAID_PLUGIN" create=true force=true level=5 chunk=4K \
    "${x[@]}" --run true 2> "$tmpdir/err"; then
    fail "(e) create=true with nbdkit -r was accepted"
elif ! grep -q "create=true writes superblocks: it cannot go with a read-only array" "$tmpdir/err"; then
    fail "(e) create=true with -r: unexpected message"; cat "$tmpdir/err"
else
    members_md5 "${x[@]}" > "$tmpdir/after"
    cmp -s "$tmpdir/before" "$tmpdir/after" && echo "ok: (e) create=true with -r refused" ||
        fail "(e) create=true with -r wrote a member"
fi

end_failures
