#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# nbdkit --dump-plugin and --help: the plugin names its parity
# implementation (one of the ones it lists, the scalar reference among
# them), its io_uring features, its md write-intent bitmap and the md
# superblock versions it reads and writes.  --help documents every
# parameter, and the parameters that params.c takes are the ones the man
# page documents; --help's control= names every control command.
# (test-parity-impls.py forces each implementation listed.)

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"

nbdkit "$RAID_PLUGIN" --dump-plugin > "$tmpdir/dump"
cat "$tmpdir/dump"

grep -q '^name=raid$' "$tmpdir/dump"
impl=$(sed -n 's/^raid_parity=//p' "$tmpdir/dump")
impls=$(sed -n 's/^raid_parity_impls=//p' "$tmpdir/dump")
uring=$(sed -n 's/^raid_io_uring=//p' "$tmpdir/dump")
if [ -z "$impl" ] || [ -z "$impls" ]; then
    fail "--dump-plugin lacks raid_parity= or raid_parity_impls="
fi
if ! grep -q '^raid_io_uring=.' "$tmpdir/dump"; then
    fail "--dump-plugin lacks raid_io_uring="
fi
case ",$impls," in
    *",$impl,"*) ;;
    *) fail "raid_parity=$impl is not in raid_parity_impls=$impls" ;;
esac
case ",$impls," in
    *,generic,*) ;;
    *) fail "the scalar reference 'generic' is not listed: $impls" ;;
esac
for kv in raid_bitmap=internal raid_readd=manual,auto \
          raid_metadata_versions=1.0,1.1,1.2; do
    if ! grep -qx "$kv" "$tmpdir/dump"; then
        fail "--dump-plugin does not say $kv"
    fi
done
echo "parity: $impl of $impls; io_uring: $uring"

nbdkit "$RAID_PLUGIN" --help > "$tmpdir/help"
# The keys params.c accepts, those the man page documents (=item
# B<key=...>) and those --help names must be the same set.
src=${top_srcdir:-$(dirname "$0")/..}
keys () { sort -u | tr '\n' ' '; }
accepted=$(grep -o 'strcmp (key, "[a-z-]*")' "$src/plugin/params.c" |
           sed 's/.*"\(.*\)")/\1/' | keys)
documented=$(sed -n 's/^=item \[\{0,1\}B<\([a-z-]*\)=.*/\1/p' \
             "$src/man/nbdkit-raid-plugin.pod" | keys)
if [ -z "$accepted" ] || [ "$accepted" != "$documented" ]; then
    fail "params.c accepts: $accepted; the man page documents: $documented"
fi
for p in $accepted; do
    if ! grep -q -- "\(^\|[ (]\)$p=" "$tmpdir/help"; then
        cat "$tmpdir/help"
        fail "--help does not document $p="
    fi
done
echo "parameters in params.c, the man page and --help: $accepted"
# The control commands --help names for control=: those the socket takes.
for c in status fail replace re-add add-spare remove-spare scrub; do
    if ! sed -n '/^control=/,/^[a-z]/p' "$tmpdir/help" | grep -q -- "[ (]$c[,)]"; then
        cat "$tmpdir/help"
        fail "--help's control= does not name the command $c"
    fi
done
