#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Description: a member whose flush fails with ENOTSUP has not made its
# writes durable: it is failed, not counted as flushed.
#
# One member of a RAID-5 is an NBD export of qemu-nbd over a file, through
# qemu's blkdebug driver, which answers every flush with ENOTSUP (errno
# 95; nbdkit's own servers turn ENOTSUP into EINVAL on the wire, qemu-nbd
# sends NBD_ENOTSUP).  After a write and a flush the member must be failed
# (the flush still succeeds: the other members made the data durable and
# the array is within its tolerance), and the data must read back byte for
# byte.  The old code took ENOTSUP for a missing feature, as it rightly
# does for punch and zero-range, and reported the flush as done with the
# member in sync.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires nbdsh qemu-nbd
requires_python_module nbd


make_members 2 4M
truncate -s 4M "$tmpdir/remote.img"
cat > "$tmpdir/blkdebug.conf" <<'EOF'
[inject-error]
event = "flush_to_disk"
errno = "95"
iotype = "flush"
EOF
start_bg qemu-nbd --image-opts -k "$tmpdir/remote.sock" -t \
    "driver=raw,file.driver=blkdebug,file.config=$tmpdir/blkdebug.conf,file.image.driver=file,file.image.filename=$tmpdir/remote.img"
for _ in $(seq 100); do [ -S "$tmpdir/remote.sock" ] && break; sleep 0.1; done

ctl=$tmpdir/ctl
start_nbdkit "$tmpdir/raid.sock" metadata=none level=5 chunk=64K \
    control="$ctl" "${members[@]}" "nbd+unix:///?socket=$tmpdir/remote.sock" \
    2> "$tmpdir/log"
nbdsh -u "nbd+unix:///?socket=$tmpdir/raid.sock" -c '
import os
size = h.get_size()
data = os.urandom(size)
h.pwrite(data, 0)
h.flush()
assert h.pread(size, 0) == data, "read back differs"
' || { cat "$tmpdir/log"; fail "the client saw an error"; }
state=$(python3 "$top_srcdir/tools/nbdkit-raid-ctl" "$ctl" status |
        python3 -c 'import json, sys; print(json.load(sys.stdin)["members"][2]["state"])')
[ "$state" = failed ] ||
    { cat "$tmpdir/log"; fail "the member whose flush failed is $state"; }
echo "ok: a flush answered with ENOTSUP failed its member; data intact"
