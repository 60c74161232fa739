#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: a read that cannot get its bounce buffer (no memory) fails
# with ENOMEM and fails no member.
#
# A RAID-5 whose member 1 is an NBD export with a 4 KiB minimum block size
# (nbdkit's blocksize-policy filter), so that a 512-byte read of its chunk
# goes through an aligned bounce buffer.  With the plugin's aligned_alloc
# failing (alloc-fail.c, an LD_PRELOAD shim switched on by a file), that
# read must fail with ENOMEM and member 1 must stay in sync; once memory
# is back, the data reads right.  The old code failed member 1 as if its
# disk had broken.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires nbdsh
requires_python_module nbd

start_bounce_array

nbdsh -u "nbd+unix:///?socket=$sock" -c "
import errno, os
data = os.urandom(h.get_size())
h.pwrite(data, 0)
h.flush()
open('$ALLOC_FAIL_FILE', 'w').close()
try:
    h.pread(512, 65536 + 512)        # member 1's chunk of row 0
    raise SystemExit('the read without memory succeeded')
except nbd.Error as e:
    assert e.errnum == errno.ENOMEM, 'read without memory: %s' % e
os.unlink('$ALLOC_FAIL_FILE')
assert h.pread(512, 65536 + 512) == data[65536 + 512:65536 + 1024]
assert h.pread(h.get_size(), 0) == data
" || { cat "$tmpdir/log"; fail "the client saw the wrong thing"; }
state=$(python3 "$top_srcdir/tools/nbdkit-raid-ctl" "$ctl" status |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["members"][1]["state"])')
[ "$state" = in_sync ] || { cat "$tmpdir/log"; fail "member 1 is $state"; }
echo "ok: no memory for a bounce buffer: ENOMEM to the client, member 1 in sync"
