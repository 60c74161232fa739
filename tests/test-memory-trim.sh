#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: trimming and zeroing every row of a large array leaves
# nbdkit's memory where it was.
#
# A RAID-6 of six sparse 8 GiB members (32768 rows of 256K) is trimmed,
# then zeroed, whole, twice.  Whole rows are punched on every member under
# the row's stripe head, which caches nothing; the cache used to keep
# every such head (its budget counts buffers only), about 3 KiB a row, so
# that nbdkit grew by 104 MB here and by gigabytes on a real disk's worth
# of rows.  Now nbdkit's resident memory may grow by 24 MiB at most.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires nbdsh
requires_python_module nbd

rss_kib () { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

make_members 6 8G
sock=$tmpdir/raid.sock
start_nbdkit "$sock" metadata=none level=6 chunk=256K "${members[@]}"
pid=${_bg_pids[-1]}

# Every path once before the measure: a write, a trim and a zero.
nbdsh -u "nbd+unix:///?socket=$sock" -c "
row = 4 * 256 * 1024
h.pwrite(b'x' * 4096, 0)
h.trim(4 * row, row)
h.zero(4 * row, 5 * row)
"
before=$(rss_kib "$pid")
nbdsh -u "nbd+unix:///?socket=$sock" -c "
size = h.get_size()
for op in (h.trim, h.zero, h.trim, h.zero):
    off = 0
    while off < size:
        op(min(1 << 30, size - off), off)
        off += 1 << 30
h.flush()
assert h.pread(4096, 0) == bytes(4096)
"
after=$(rss_kib "$pid")
echo "nbdkit's resident memory: $before KiB before, $after KiB after"
(( after - before <= 24 * 1024 )) ||
  fail "nbdkit grew by $(( (after - before) / 1024 )) MiB over 32768 trimmed rows"
echo "ok: trimming and zeroing every row kept nbdkit's memory"
