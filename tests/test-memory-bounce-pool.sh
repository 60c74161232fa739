#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: reads through bounce buffers come back right, batched with
# the other pieces, and allocate nothing once the array's pool holds a
# buffer (no allocation per request on the hot path).
#
# A RAID-5 whose member 1 is an NBD export with a 4 KiB minimum block size
# (nbdkit's blocksize-policy filter), so that reads of its chunks at
# 512-byte offsets go through an aligned bounce buffer.  After one such
# read, the plugin's aligned_alloc is made to fail (alloc-fail.c, switched
# on by a file): reads that bounce, alone and among pieces of the other
# members, must still succeed and equal what was written, and member 1
# must stay in sync.  The old code allocated a buffer per bounced piece,
# and its reads failed with ENOMEM here.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires nbdsh
requires_python_module nbd

start_bounce_array

nbdsh -u "nbd+unix:///?socket=$sock" -c "
import os
size = h.get_size()
data = os.urandom(size)
h.pwrite(data, 0)
h.flush()
assert h.pread(512, 65536 + 512) == data[65536 + 512:65536 + 1024]
open('$ALLOC_FAIL_FILE', 'w').close()
for off, n in [(65536 + 512, 512), (65536 + 3584, 1024), (512, size - 1024),
               (300032, 700416)]:
    assert h.pread(n, off) == data[off:off + n], 'read %d at %d' % (n, off)
os.unlink('$ALLOC_FAIL_FILE')
assert h.pread(size, 0) == data
" || { cat "$tmpdir/log"; fail "a bounced read failed or read the wrong thing"; }
state=$(python3 "$top_srcdir/tools/nbdkit-raid-ctl" "$ctl" status |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["members"][1]["state"])')
[ "$state" = in_sync ] || { cat "$tmpdir/log"; fail "member 1 is $state"; }
echo "ok: bounced reads right and without allocation once the pool is warm"
