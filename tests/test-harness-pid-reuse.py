#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The Python harness's clean-up never signals a process that is not the
one it adopted.  The OCF tests adopt the nbdkit the agent starts (not a
child of the test: ocf.Pid) and kill it at the end; one that had
already ended was signalled by its number, which the kernel may have
given to any new process since (pid_max is 32768 here, and make check
wraps it within minutes), and so a member server of another test died.
A stranger (tests/lib/pid_reuse.py: `sleep 60`, nobody's child here) is
made to hold the number of an adopted process that ended: the clean-up
(faults._reap, as Harness.close calls it) must leave it running.
"""

import os
import signal
import subprocess
import time

import faults
import ocf
import pid_reuse


def alive(pid):
    """Running, not a zombie that its parent has yet to reap."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


with faults.Test() as t:
    if not pid_reuse.can():
        raise faults.Skip("%s cannot be written (not root): the kernel "
                          "cannot be made to reuse a number"
                          % pid_reuse.NS_LAST_PID)
    # Not our child, as the agent's nbdkit is not.
    out = subprocess.run(["sh", "-c", "sleep 60 > /dev/null 2>&1 & echo $!"],
                         check=True, capture_output=True, text=True).stdout
    adopted = ocf.Pid(int(out))
    os.kill(adopted.pid, signal.SIGKILL)        # the agent's stop, say
    for _ in range(500):
        if not os.path.exists("/proc/%d" % adopted.pid):
            break                               # reaped, the number free
        time.sleep(0.01)
    out = subprocess.run([pid_reuse.__file__, str(adopted.pid)],
                         capture_output=True, text=True).stdout
    if not out:
        raise faults.Skip("the kernel did not give number %d again"
                          % adopted.pid)
    stranger = int(out)
    try:
        faults._reap(adopted)
        time.sleep(0.2)
        assert alive(stranger), \
            "the clean-up killed process %d, which holds the number of " \
            "an adopted process that had ended" % stranger
        assert adopted.poll() is not None, "the ended process is not seen"
        faults.log("a stranger with the adopted process's old number %d "
                   "survived the clean-up" % stranger)
    finally:
        if alive(stranger):
            os.kill(stranger, signal.SIGKILL)
