# SPDX-License-Identifier: BSD-3-Clause
"""ocf: what the tests of the OCF resource agent (ocf/nbdkit-raid, the
one configure made in the build tree) share: the agent run as Pacemaker
runs it, the heads it starts, and an md array on remote members for
them to share.

    import ocf
    with faults.Test(timeout=120) as t:
        ocf.requires()                       # 77 without resource-agents
        members, shadow = ocf.md_array(t)    # remote members, clean, filled
        a = ocf.Head(t, "raid-a", members)   # one resource instance
        rc, out = a.run("start")             # OCF_RESKEY_* from a.params
        a.run("monitor", interval=0)         # a probe
        h = a.connect(); a.ctl.status(); a.kill()

How Pacemaker runs an agent, as far as the agent can tell: the action as
its one argument, OCF_ROOT, OCF_RESOURCE_INSTANCE, the parameters as
OCF_RESKEY_NAME, the operation's timeout (OCF_RESKEY_CRM_meta_timeout,
ms) and interval (OCF_RESKEY_CRM_meta_interval, ms; 0 for a probe), no
terminal, and its output read until everything holding it has closed it
(so a run returns only if the nbdkit the agent starts keeps none of its
descriptors).  resource-agents' log lines go to NAME.ha.log in the
test's directory (HA_LOGFILE); ocf_exit_reason's line is in the output.

Each head has its own instance name, TCP port (or Unix socket), control
socket, pid file and log, as two nodes' heads would; they share only the
members.  nbdkit is the one on PATH (the sanitizers' wrapper under make
check-asan), the plugin the test's copy, nbdkit-raid-ctl the source
tree's.  The nbdkit a head starts is not a child of the test (the agent
runs it in a session of its own), so a head that started registers its
pid with the harness, which kills it at the end like any server.
"""

import os
import select
import shutil
import signal
import socket
import subprocess
import time

import faults
import workload as wl

K, M = 1024, 1024 * 1024
OCF_ROOT = "/usr/lib/ocf"
SHELLFUNCS = os.path.join(OCF_ROOT, "lib", "heartbeat", "ocf-shellfuncs")
AGENT = os.path.join(os.environ.get("top_builddir", faults.TOP), "ocf",
                     "nbdkit-raid")

# OCF exit codes (resource-agents' ocf-returncodes).
SUCCESS, ERR_GENERIC, ERR_ARGS, ERR_UNIMPLEMENTED = 0, 1, 2, 3
ERR_INSTALLED, ERR_CONFIGURED, NOT_RUNNING = 5, 6, 7


def requires(tester=False):
    """Skip (77) without the agent, resource-agents or (tester) ocf-tester."""
    if not os.path.isfile(AGENT):
        raise faults.Skip("%s was not built" % AGENT)
    if not os.path.isfile(SHELLFUNCS) or \
            (tester and shutil.which("ocf-tester") is None):
        raise faults.Skip("resource-agents is not installed (no %s): Debian "
                          "package resource-agents, which "
                          "scripts/install-deps.sh installs"
                          % ("ocf-tester" if tester else SHELLFUNCS))
    faults.requires("nbdinfo", "setsid", "timeout")


def free_port():
    """A TCP port nothing listens on just now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def md_array(t, n=5, size=8 * M, level=6, chunk=64 * K, params=()):
    """A new md array (create=true) on n remote members, resynced, filled
    and stopped clean, as an operator makes it before the cluster manages
    it: (members, shadow)."""
    members = [t.member(size, "remote") for _ in range(n)]
    arr = t.array(members, level=level, chunk=chunk, data_offset=None,
                  control=True,
                  params=["create=true"] + list(params))
    arr.ctl.finished_scrub(60)
    shadow = wl.fill(arr.h, t.rng)
    assert arr.stop(grace=30) == 0, arr.log()
    return members, shadow


class Pid:
    """A process we did not start (the agent's nbdkit), with what the
    harness's clean-up asks of a subprocess.Popen.  Held by a pidfd, not
    by its number: a process that is not our child is reaped by someone
    else the moment it ends, and its number may then go to any new
    process (pid_max is 32768 here, and make check wraps it within
    minutes); a signal sent by number once killed another test's member
    server.  A pidfd names this process only: it reads as ready once the
    process has ended, and a signal through it never reaches another."""

    def __init__(self, pid):
        self.pid, self.returncode = pid, None
        try:
            self.fd = os.pidfd_open(pid)
        except ProcessLookupError:
            self.fd, self.returncode = None, -signal.SIGKILL

    def _ended(self):
        return select.select([self.fd], [], [], 0)[0] != []

    def _exiting(self):
        """Its memory is gone (the agent's stop takes that for stopped,
        as its command line no longer names the pid file), though a
        thread may still be finishing.  Asked only while the pidfd says
        it has not ended, so the number is still this process's."""
        try:
            with open("/proc/%d/cmdline" % self.pid, "rb") as f:
                return f.read() == b""
        except OSError:
            return True

    def poll(self):
        # The pidfd first; /proc only while the pidfd says the process
        # has not ended, and the pidfd again after, for one that ended
        # in between (whose number another may hold by then).
        if self.returncode is None and \
                (self._ended() or self._exiting() or self._ended()):
            os.close(self.fd)
            self.fd = None
            self.returncode = -signal.SIGKILL     # not ours to know
        return self.returncode

    def send_signal(self, sig):
        if self.poll() is None:
            signal.pidfd_send_signal(self.fd, sig)

    def kill(self):
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout=None):
        end = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if end is not None and time.monotonic() > end:
                raise subprocess.TimeoutExpired("pid %d" % self.pid, timeout)
            time.sleep(0.02)
        return self.returncode


class Head:
    """One resource instance of the agent: its parameters (members: the
    disks given, faults.Member and the like; params override any), and
    the nbdkit it runs once started."""

    def __init__(self, t, name, disks, tcp=True, **params):
        self.t, self.name = t, name
        d = os.path.join(t.dir, name)
        os.mkdir(d)
        self.params = {
            "members": " ".join("disk=" + m.disk for m in disks),
            "control": os.path.join(d, "ctl"),
            "pidfile": os.path.join(d, "pid"),
            "logfile": os.path.join(d, "nbdkit.log"),
            "nbdkit": shutil.which("nbdkit"),
            "plugin": t.plugin,
            "ctl_tool": faults.CTL_TOOL,
        }
        if tcp:
            self.params.update(address="127.0.0.1", port=str(free_port()))
            self.uri = "nbd://127.0.0.1:%s" % self.params["port"]
        else:
            self.params["socket"] = os.path.join(d, "export.sock")
            self.uri = "nbd+unix:///?socket=" + self.params["socket"]
        self.params.update(params)
        self.halog = os.path.join(t.dir, name + ".ha.log")
        self.proc = None

    def env(self, timeout=60, interval=None):
        env = dict(os.environ, OCF_ROOT=OCF_ROOT,
                   OCF_RESOURCE_INSTANCE=self.name, HA_LOGFILE=self.halog,
                   OCF_RESKEY_CRM_meta_timeout=str(timeout * 1000))
        if interval is not None:
            env["OCF_RESKEY_CRM_meta_interval"] = str(interval * 1000)
        env.update(("OCF_RESKEY_" + k, v) for k, v in self.params.items())
        return env

    def run(self, action, timeout=60, interval=None):
        """The agent's action: (exit status, what it printed)."""
        r = subprocess.run([AGENT, action], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=timeout + 10,
                           env=self.env(timeout, interval))
        faults.log("  %s %s: %d %s" % (self.name, action, r.returncode,
                                       r.stdout.strip()))
        if action == "start" and r.returncode == SUCCESS:
            self._adopt()
        return r.returncode, r.stdout

    def must(self, action, want=SUCCESS, **kw):
        rc, out = self.run(action, **kw)
        assert rc == want, "%s %s: exit status %d, expected %d: %s\n%s" % (
            self.name, action, rc, want, out, self.log()[-2000:])
        return out

    def _adopt(self):
        with open(self.params["pidfile"]) as f:
            pid = int(f.read())
        if self.proc is None or self.proc.pid != pid:
            self.proc = Pid(pid)
            faults._procs.append(self.proc)
            self.t.procs.append(self.proc)
        self.ctl = faults.Control(self.params["control"])

    def connect(self):
        h = faults.nbd.NBD()
        h.set_strict_mode(0)
        h.connect_uri(self.uri)
        return h

    def running(self):
        return self.proc is not None and self.proc.poll() is None

    def kill(self):
        """kill -9 of the head's nbdkit, as a crash or the OOM killer."""
        self.proc.kill()
        self.proc.wait(10)

    def log(self):
        text = ""
        for f in (self.params.get("logfile"), self.halog):
            if f and os.path.exists(f):
                with open(f, errors="replace") as fh:
                    text += "==> %s <==\n%s" % (f, fh.read())
        return text
