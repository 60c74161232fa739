# SPDX-License-Identifier: BSD-3-Clause
"""The host side of test-vm-md-removes-readd.sh, run by nbdkit's --run.

    readd-removed.py write CONTROL URI PATGEN WRITES
        A new array: wait for its first resync, write pattern seed 1 over
        all of it, flush; WRITES gets the line "1 0 SECTORS".

    readd-removed.py readd CONTROL URI PATGEN WRITES MEMBER
        The array md failed and removed MEMBER from (a path, as the plugin
        was given it) and wrote while it was out: the plugin must re-add
        MEMBER at start-up from the write-intent bitmap, rebuilding ->
        in_sync, resyncing some but at most half of a member's data; then
        every sector must read back as WRITES says (patgen -l).

Patterns come from patgen, as the guest writes and reads them.
"""

import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import faults  # noqa: E402

act, ctl_sock, uri, patgen, writes = sys.argv[1:6]
ctl = faults.Control(ctl_sock)


def readd():
    name = sys.argv[6]
    seen = []                   # the member's states, as they changed
    end = time.monotonic() + 120
    while True:
        st = ctl.status()
        m = [m for m in st["members"] if m["name"] == name]
        state = m[0]["state"] if m else "left out"
        if not seen or seen[-1] != state:
            seen.append(state)
        if not st["rebuild"]["running"] and not st["scrub"]["running"]:
            break
        assert time.monotonic() < end, "still busy after 120 s: %s" % st
        time.sleep(0.02)
    if not m:
        raise AssertionError(
            "the removed member %s was left out at start-up; the members: %s"
            % (name, ", ".join("%s %s" % (m["name"], m["state"])
                               for m in st["members"])))
    m = m[0]
    total = st["rebuild"]["total"]
    print("member %d (%s): states %s; resynced %d of %d bytes, readd %s, "
          "failure %s" % (m["index"], name, " -> ".join(seen), m["resynced"],
                          total, m["readd"], m["failure"]))
    assert seen[0] == "rebuilding" and m["state"] == "in_sync", \
        "the removed member was not re-added: states %s" % seen
    assert m["readd"] and 0 < m["resynced"] <= total // 2, \
        "the re-add resynced %d of %d bytes: not by the bitmap" \
        % (m["resynced"], total)


def write():
    ctl.wait_idle(120)          # the first resync
    s = h.get_size() // 512
    img = writes + ".img"
    open(img, "wb").close()
    subprocess.check_call([patgen, "1", "0", str(s), img])
    with open(img, "rb") as f:
        for off in range(0, s * 512, 4 << 20):
            h.pwrite(f.read(4 << 20), off)
    os.unlink(img)
    h.flush()
    with open(writes, "w") as f:
        print(1, 0, s, file=f)


def read_back():
    s = h.get_size() // 512
    img = writes + ".img"
    with open(img, "wb") as f:
        for off in range(0, s * 512, 4 << 20):
            f.write(h.pread(min(4 << 20, s * 512 - off), off))
    subprocess.check_call([patgen, "-l", writes, str(s), img])
    os.unlink(img)
    print("every sector read back through NBD as %s says" % writes)


h = faults.nbd.NBD()
h.connect_uri(uri)
if act == "write":
    write()
else:
    readd()
    read_back()
h.shutdown()
