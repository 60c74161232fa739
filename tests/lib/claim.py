# SPDX-License-Identifier: BSD-3-Clause
"""claim: the exclusive-claim tests (test-claim-*): a running md RAID-5
holding known data, and what must hold when a second array is started
on its disks.

    first = claim.First(t)                  # 4 local member files
    first = claim.First(t, [dev, p1, ...])  # or these disks
    first.refused([path, ...], "what")      # a second array must not start
    other_names(t, paths, os.link, "hard")  # new names: links to paths
    first.untouched("what")                 # members' bytes as they were,
                                            # the array still serving
    with claim.loop_device(t, path) as dev: # losetup, detached at the end

The first array is made with create=true and bitmap=none, written whole
and flushed, and left idle until its superblocks say clean: from then on
it writes nothing by itself, so any change to its members' bytes is the
second array's doing.  The second is assembled from the superblocks
alone, as an operator would start it; it must fail, with a line naming
its first member (the one it shares) and saying it is in use.
"""

import contextlib
import os
import subprocess
import time

import faults
import mdsb

EXPECT = "in use by another array or process"
MEMBER_SIZE = 4 << 20


class First:
    def __init__(self, t, disks=None):
        self.t = t
        members = (["local"] * 4 if disks is None
                   else [faults.FileMember(d) for d in disks])
        self.arr = t.array(members, member_size=MEMBER_SIZE, level=5,
                           chunk=65536, data_offset=65536, control=True,
                           params=["create=true", "bitmap=none"])
        self.paths = [m.path for m in self.arr.members]
        self.arr.ctl.wait_idle(60)
        self.shadow = t.rng.randbytes(self.arr.size)
        self.arr.h.pwrite(self.shadow, 0)
        self.settle()

    def settle(self):
        """Flush, and wait until the superblocks say clean: the first
        array then writes nothing until a client does; its members'
        bytes are taken as they are now."""
        self.arr.h.flush()
        end = time.monotonic() + 20
        while any(mdsb.read(p)["resync_offset"] != mdsb.CLEAN
                  for p in self.paths):
            assert time.monotonic() < end, "the first array is not clean"
            time.sleep(0.05)
        self.sums = faults.md5s(self.paths)

    def refused(self, disks, what):
        """A second array on disks (disks[0] one of ours) must not start;
        the first is untouched.  Returns the log line that refused it."""
        line = self.t.refused_array(
            [faults.FileMember(d) for d in disks], EXPECT, what,
            level=None, chunk=None, layout=None, data_offset=None)
        faults.log("ok: %s refused: %s" % (what, line))
        self.untouched(what)
        return line

    def untouched(self, what):
        """Its members' bytes as they were, and it still reads its data
        and takes a write."""
        assert faults.md5s(self.paths) == self.sums, \
            "%s: a member of the first array was written" % what
        assert self.arr.h.pread(self.arr.size, 0) == self.shadow, \
            "%s: the first array no longer reads its data" % what
        new = self.t.rng.randbytes(4096)
        self.arr.h.pwrite(new, 0)
        self.shadow = new + self.shadow[4096:]
        assert self.arr.h.pread(self.arr.size, 0) == self.shadow, \
            "%s: the first array no longer takes writes" % what
        self.settle()


def other_names(t, paths, make, prefix):
    """A second name for each path, PREFIXi in the test's directory, made
    by make(path, name): os.symlink, os.link."""
    names = [os.path.join(t.dir, "%s%d" % (prefix, i))
             for i in range(len(paths))]
    for p, n in zip(paths, names):
        make(p, n)
    return names


@contextlib.contextmanager
def loop_device(t, path):
    """A loop device over path (losetup), detached when the block ends;
    faults.Skip where loop devices cannot be had."""
    if os.geteuid() != 0 or not os.path.exists("/dev/loop-control"):
        raise faults.Skip("loop devices need root and /dev/loop-control")
    faults.requires("losetup")
    r = subprocess.run(["losetup", "-f", "--show", path],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    if r.returncode != 0:
        raise faults.Skip("losetup cannot make a loop device here: %s"
                          % r.stdout.strip())
    dev = r.stdout.strip()
    try:
        yield dev
    finally:
        # The arrays may still hold it: the kernel then detaches it when
        # the last of them closes it (autoclear).
        subprocess.run(["losetup", "-d", dev])
