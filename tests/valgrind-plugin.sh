#!/usr/bin/env bash
# Description: the plugin under valgrind: random writes, zeroes and reads
# on a healthy RAID-6, then degraded reads and a rebuild, and an md RAID-5
# with a write-intent bitmap created, written and assembled again, with memcheck
# failing the run on any invalid access or use of uninitialised memory.
# (Leaks are checked in the unit tests; nbdkit itself keeps some memory
# until exit, so they are not counted here.)  Run by make check-valgrind.
set -euo pipefail
source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires valgrind nbdkit nbdsh

make_members 4 2M
# nbdkit's exit status is that of --run, so memcheck's verdict is read from
# its log files instead.
vg="valgrind -q --leak-check=no --log-file=$tmpdir/vg.%p"

cat > "$tmpdir/work.py" <<'PY'
import os, random, sys
h.set_strict_mode(0)
size = h.get_size()
shadow = bytearray(size)
random.seed(int(os.environ.get("RAID_TEST_SEED", "3")))
for i in range(150):
    off = random.randrange(size)
    n = random.randrange(1, min(40000, size - off) + 1)
    if random.random() < 0.8:
        d = os.urandom(n); h.pwrite(d, off); shadow[off:off + n] = d
    else:
        h.zero(n, off); shadow[off:off + n] = bytes(n)
assert h.pread(size, 0) == shadow, "healthy read-back differs"
open(os.environ["SHADOW"], "wb").write(shadow)
PY
cat > "$tmpdir/check.py" <<'PY'
import os
h.set_strict_mode(0)
shadow = open(os.environ["SHADOW"], "rb").read()
assert h.pread(len(shadow), 0) == shadow, "degraded read-back differs"
PY
export SHADOW=$tmpdir/shadow.bin

# shellcheck disable=SC2086
$vg nbdkit -f -U - "$RAID_PLUGIN" metadata=none level=6 chunk=4K "${members[@]}" \
  --run 'nbdsh -u "$uri" -c "exec(open(\"'"$tmpdir"'/work.py\").read())"'
# Two members missing: every read is reconstructed (recov_2data, datap).
# shellcheck disable=SC2086
$vg nbdkit -f -U - "$RAID_PLUGIN" metadata=none level=6 chunk=4K missing \
  "${members[1]}" \
  missing "${members[3]}" \
  --run 'nbdsh -u "$uri" -c "exec(open(\"'"$tmpdir"'/check.py\").read())"'
# md superblocks and a write-intent bitmap: create, write (bits set and,
# during the pause, cleared by the bitmap's thread), then assemble again.
make_members 4 2M md
$vg nbdkit -f -U - "$RAID_PLUGIN" create=true level=5 chunk=4K \
  data-offset=64K bitmap-chunk=4K bitmap-delay=1 "${members[@]}" \
  --run 'nbdsh -u "$uri" -c "exec(open(\"'"$tmpdir"'/work.py\").read())" && sleep 3'
$vg nbdkit -f -U - "$RAID_PLUGIN" "${members[@]}" \
  --run 'nbdsh -u "$uri" -c "exec(open(\"'"$tmpdir"'/check.py\").read())"'
if grep -l "^==[0-9]*== [A-Z]" "$tmpdir"/vg.* >/dev/null 2>&1; then
  cat "$tmpdir"/vg.*
  echo "valgrind-plugin: FAIL: memcheck found errors"
  exit 1
fi
echo "valgrind-plugin: no memcheck errors"
