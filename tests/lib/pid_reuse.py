#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""pid_reuse: a stranger holding a process number that a test's own
process held before, for the tests that a clean-up never signals a
number that has changed hands (test-harness-pid-reuse.*).

    python3 tests/lib/pid_reuse.py PID     # prints the stranger's pid

Why it matters.  pid_max is 32768 on the test machines, and make check
forks enough (every nbdsh, nbdkit-raid-ctl, ocf-tester's agent runs) to
wrap it within minutes.  A clean-up that signals a number it once held,
after that process was reaped, kills whatever holds the number now: a
member server of another test running beside it, which then answers
"Connection refused".

How.  The kernel gives the next process the number after the one in
/proc/sys/kernel/ns_last_pid (root only), so writing PID - 1 there just
before a fork makes the child PID, unless another fork on the machine
comes between: then the child is killed and the fork tried again.  The
child runs `sleep 60` in a session of its own, its output away from the
caller's pipes; this program exits at once, so the stranger is nobody's
child but init's (or a subreaper's): not the caller's.  Exit status 1
(nothing printed) if ns_last_pid cannot be written or the number could
not be had.
"""

import os
import signal
import sys

NS_LAST_PID = "/proc/sys/kernel/ns_last_pid"


def can():
    """Whether this process may ask the kernel for a number."""
    return os.access(NS_LAST_PID, os.W_OK)


def stranger(pid, tries=200):
    """Fork `sleep 60` as the process number pid: that number, or None."""
    for _ in range(tries):
        try:
            with open(NS_LAST_PID, "w") as f:
                f.write(str(pid - 1))
        except OSError:
            return None
        child = os.fork()
        if child == 0:
            try:
                os.setsid()
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):
                    os.dup2(null, fd)
                os.execvp("sleep", ["sleep", "60"])
            finally:
                os._exit(127)
        if child == pid:
            return child
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
    return None


if __name__ == "__main__":
    got = stranger(int(sys.argv[1]))
    if got is None:
        sys.exit(1)
    print(got, flush=True)
