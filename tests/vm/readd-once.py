# SPDX-License-Identifier: BSD-3-Clause
"""Fail a member of a running array, write while it is out, re-add it.

    readd-once.py CONTROL-SOCKET NBD-SOCKET PATGEN WRITES MEMBER [midway]

Waits for the array's first resync, fails MEMBER by the control socket,
writes pattern seed 5 over a fifth of the array (patgen, as the guest
reads it back) through the NBD socket, flushes, and re-adds MEMBER; the
re-add must end in sync having resynced less than the member holds;
with midway, it returns as soon as the re-add has written something
(nbdkit is then stopped in the middle of it).  Appends the write to WRITES (test-vm-plugin-to-mdadm.sh: md must then
assemble the result clean, with the data, and find no mismatch).
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import faults  # noqa: E402

ctl_sock, nbd_sock, patgen, writes, member = sys.argv[1:6]
member, midway = int(member), sys.argv[6:] == ["midway"]
ctl = faults.Control(ctl_sock)
ctl.wait_idle(120)                  # a new array's first resync
h = faults.nbd.NBD()
h.connect_uri("nbd+unix:///?socket=" + nbd_sock)
s = h.get_size() // 512
seed, first, n = 5, s // 3 + 7, s // 5
ctl.ok("fail %d" % member)
img = writes + ".img"
open(img, "wb").close()
subprocess.check_call([patgen, str(seed), str(first), str(n), img])
with open(img, "rb") as f:
    f.seek(first * 512)
    h.pwrite(f.read(n * 512), first * 512)
os.unlink(img)
h.flush()
h.shutdown()
with open(writes, "a") as f:
    print(seed, first, n, file=f)
ctl.ok("re-add %d" % member)
while midway:
    st = ctl.status()
    m = st["members"][member]
    assert m["state"] == "rebuilding", "the re-add ended too soon: %s" % m
    if m["resynced"] > 0:
        print("re-adding member %d: %d of %d bytes owed resynced, stopping"
              % (member, m["resynced"], m["owed"] + m["resynced"]))
        sys.exit(0)
    time.sleep(0.02)
st = ctl.wait_idle(120)
m = st["members"][member]
total = st["rebuild"]["total"]
assert m["state"] == "in_sync" and m["readd"] and 0 < m["resynced"] < total, m
print("re-added member %d: %d of %d bytes resynced" % (member, m["resynced"],
                                                       total))
