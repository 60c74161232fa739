# SPDX-License-Identifier: BSD-3-Clause
"""faults: the harness of the Python tests: the test's environment, member
servers, arrays, their control sockets, and faults.

    import faults
    with faults.Test(tools=["qemu-img"], filters=["error"],
                     timeout=80) as t:              # exit 77 if one is missing
        arr = t.array(["remote", "local", "remote", "remote"],
                      member_size=1 << 20, level=6, chunk=16384,
                      control=True, params=["member-timeout=2"])
        arr.h.pwrite(b"x" * 4096, 0)                # arr.h: an nbd.NBD
        arr.ctl.ok("fail 2"); arr.ctl.status()      # control=PATH socket
        m = arr.members[0]
        m.fail_reads(True)                          # EIO on its preads
        m.fail_writes(True)                         # EIO on pwrite/zero/trim
        m.kill(); m.restart()                       # SIGKILL; same socket+file
        m.stop(); m.cont()                          # SIGSTOP / SIGCONT: a hang
        m.truncate(size); m.corrupt(offset, n); m.path
        b = t.member(1 << 20, "badsector")          # sectors that go bad
        b.add_bad_range(offset, 4096)               # EIO until written
        b.add_bad_range(offset, 512, "write")       # writes fail ("both")
        b.healed_ranges(); b.clear_bad_ranges()     # what writes mended
        b.remove_bad_ranges(b.bad[:1])              # some faults go
        t.seed, t.rng, t.dir                        # printed, replayable

A test program is a .py file that automake's test driver runs with
Debian's /usr/bin/python3 (tests/Makefile.am: PY_LOG_COMPILER), in the
environment of make check (top_srcdir, RAID_PLUGIN, PATH).  Test does for
it what tests/lib/functions.sh does for a shell test:
  - PATH with /usr/bin first (the nbd module is Debian's python3's),
    before it the directory of the nbdkit configure found (RAID_NBDKIT),
    and before that RAID_TEST_PATH, where make check-asan/tsan/valgrind
    put the nbdkit wrapper (tests/sanitize/run-test);
  - exit 77 with the reason when a tool, an nbdkit filter or plugin, the
    nbd module or the built plugin is missing;
  - a fresh directory (removed at the end unless RAID_TEST_KEEP is set)
    holding a private copy of the plugin, so that a rebuild while the
    test runs (libtool relinks in place) cannot pull it from under nbdkit;
  - the seed, RAID_TEST_SEED or a new one, always printed;
  - a watchdog: after `timeout` seconds every server is killed, so that a
    client stuck in libnbd gets an error and the test fails with a
    traceback instead of hanging; 10 s later the process exits anyway;
  - on a failure, the traceback and the end of each array's log.

Why members look like this.  A member that fails for real is worth more
than a mock: every remote member is its own nbdkit process serving a
member file through nbdkit's error filter (per-operation trigger files, so
a test turns faults on and off by creating or removing a file) and,
optionally, the delay filter.  The file stays an ordinary file, so the
test can read it directly and raidcheck.py can verify parity on it.
Local members are plain files given to the plugin by path, so one array
can mix both kinds.  MissingMember is disk=missing; FileMember a file
that exists already (a replacement, after a restart).

Bad sectors.  A "badsector" member is served the same way, with the
project's own test plugin (tests/lib/nbdkit-badsector-plugin.c, built
by make check) in the file plugin's place: its listed sector ranges fail
reads until a write covers them, or fail writes, as a disk's do.  The
list is a file of the member's (NAME.bad) that the plugin reads again
whenever it changes; the sectors that writes mended it appends to
NAME.healed.  "badsector-local" is the same server with its disk
mounted by nbdfuse: a local file, opened by the plugin itself, whose
bad sectors fail with EIO from the kernel (tests/README.md, "Bad
sectors").

Member server:  nbdkit -f --exit-with-parent -U SOCK -P PIDFILE
                    [--filter=multi-conn] [--filter=delay] --filter=error
                    file FILE error=EIO
                    error-pread-rate=100%  error-pread-file=TRIGGER.read
                    error-pwrite-rate=100% error-pwrite-file=TRIGGER.write
                    error-zero-rate=100%   error-zero-file=TRIGGER.write
                    error-trim-rate=100%   error-trim-file=TRIGGER.write
(or, for "badsector", nbdkit-badsector-plugin.so file=FILE ranges=NAME.bad
healed=NAME.healed in the file plugin's place; or the memory plugin: no
file, no faults).

Arrays.  The geometry given (level, chunk, layout, data_offset) goes on
the command line; what is left None is not given, and is read back from
the md superblock (mdsb.py) once nbdkit serves: an md array assembled
from its superblocks alone.  Raw arrays get metadata=none, arrays made
with create=true metadata=md, unless params say otherwise.

Clean-up.  Every process started here is a child we hold by pid: it is
killed (SIGCONT first, in case a test stopped it; then SIGTERM; then
SIGKILL) when the Harness is closed, at interpreter exit (atexit), and
on SIGTERM/SIGINT/SIGHUP (turned into SystemExit so that finally blocks
run too).  --exit-with-parent is a second line of defence should this
process itself be SIGKILLed.

The row arithmetic (which member holds which chunk, parity of a row)
comes from raidcheck.py, the tests' independent checker, never from the
plugin; the client workloads are workload.py's.
"""

import atexit
import glob
import hashlib
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

try:
    import nbd
except ImportError:             # Test() skips, saying why
    nbd = None

# LIB_DIR: tests/lib, the helpers (this file among them); TOP: the source tree.
LIB_DIR = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(LIB_DIR))
sys.path.insert(0, LIB_DIR)
import mdsb  # noqa: E402
import raidcheck  # noqa: E402

K, M = 1024, 1024 * 1024



def configured_nbdkit():
    """The nbdkit configure found, as tests/lib/functions.sh finds it:
    RAID_NBDKIT, which make check sets, or for a test run by hand the
    build's Makefile; None if neither names one."""
    path = os.environ.get("RAID_NBDKIT")
    if not path:
        makefile = os.path.join(os.environ.get("top_builddir") or TOP,
                                "Makefile")
        try:
            with open(makefile) as f:
                found = re.search(r"^NBDKIT = (.*)$", f.read(), re.M)
            path = found.group(1) if found else None
        except OSError:
            pass
    return path if path and path.startswith("/") else None


# PATH as tests/lib/functions.sh makes it (see there): the sanitizers'
# wrapper, the configured nbdkit's directory, /usr/bin.
NBDKIT = configured_nbdkit()
if NBDKIT:
    os.environ["RAID_NBDKIT"] = NBDKIT
os.environ["PATH"] = ":".join(
    ([os.environ["RAID_TEST_PATH"]] if os.environ.get("RAID_TEST_PATH")
     else []) + ([os.path.dirname(NBDKIT)] if NBDKIT else [])
    + ["/usr/bin", os.environ.get("PATH", "")])

# Every process started by any Harness, for atexit and signals.
_procs = []


def log(*args):
    print(*args, flush=True)


def default_plugin():
    return os.environ.get("RAID_PLUGIN") or os.path.join(
        TOP, "plugin", ".libs", "nbdkit-raid-plugin.so")


def badsector_plugin():
    """The test backend of "badsector" members, which make check builds
    (tests/lib/nbdkit-badsector-plugin.c)."""
    return os.environ.get("RAID_BADSECTOR_PLUGIN") or os.path.join(
        os.environ.get("top_builddir") or TOP, "tests", ".libs",
        "nbdkit-badsector-plugin.so")


def _reap(p, grace=2.0):
    """Stop one child for good; never waits more than ~grace seconds."""
    if p.poll() is not None:
        return
    for sig, wait in ((signal.SIGCONT, 0), (signal.SIGTERM, grace),
                      (signal.SIGKILL, grace)):
        try:
            p.send_signal(sig)
        except ProcessLookupError:
            return
        if wait:
            try:
                p.wait(timeout=wait)
                return
            except subprocess.TimeoutExpired:
                pass


def _reap_all():
    while _procs:
        _reap(_procs.pop())


def _on_signal(signum, frame):
    _reap_all()
    raise SystemExit(128 + signum)


def _kill_all_now(why):
    log("faults: %s: killing every server started here" % why)
    for p in list(_procs):
        try:
            p.kill()
        except ProcessLookupError:
            pass


def watchdog(seconds):
    """Kill every server this process started after `seconds`: a client
    stuck in libnbd (where Python cannot take a signal) then gets an
    error, and the test fails with a traceback instead of hanging."""
    t = threading.Timer(seconds, _kill_all_now,
                        ("watchdog: the test ran over %g s" % seconds,))
    t.daemon = True
    t.start()
    return t


atexit.register(_reap_all)
for _s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(_s, _on_signal)


# --- What a test needs ----------------------------------------------------

class Skip(Exception):
    """Raised (by requires*, or by a test) to skip: exit 77, saying why."""


def requires(*cmds):
    for cmd in cmds:
        if shutil.which(cmd) is None:
            raise Skip("this test needs '%s', which is not installed" % cmd)


def _nbdkit_has(args):
    return subprocess.run(["nbdkit"] + args + ["--dump-plugin"],
                          stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def requires_filter(*names):
    for name in names:
        if not _nbdkit_has(["--filter=" + name, "null"]):
            raise Skip("nbdkit's %s filter is not installed" % name)


def requires_plugin(*names):
    """nbdkit's plugins; "badsector" is the project's test plugin;
    "badsector-local" that plugin under nbdfuse (a local file)."""
    for name in names:
        if name in ("badsector", "badsector-local"):
            if not os.path.isfile(badsector_plugin()):
                raise Skip("the test plugin %s has not been built (make "
                           "check builds it)" % badsector_plugin())
        if name == "badsector-local":
            requires("nbdfuse")
            if not os.path.exists("/dev/fuse"):
                raise Skip("this test needs FUSE (/dev/fuse) for nbdfuse")
        if name in ("badsector", "badsector-local"):
            continue
        if not _nbdkit_has([name]):
            raise Skip("nbdkit's %s plugin is not installed" % name)


def test_seed():
    """RAID_TEST_SEED, or a new seed; printed so that a failure replays."""
    seed = int(os.environ.get("RAID_TEST_SEED") or
               random.randrange(1 << 30))
    log("%s: seed=%d (replay with RAID_TEST_SEED=%d)"
        % (os.path.basename(sys.argv[0]), seed, seed))
    return seed


# --- Members ----------------------------------------------------------------

def _wait_for(path, proc, what, timeout=20.0):
    """Wait until path exists (nbdkit writes its pid file once serving)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if os.path.exists(path):
            return
        if proc.poll() is not None:
            raise RuntimeError("%s exited with status %d before serving"
                               % (what, proc.returncode))
        time.sleep(0.02)
    raise RuntimeError("%s did not start serving in %g s" % (what, timeout))


def _serve(hz, command, logfile, pidfile, paths, what):
    """Start an nbdkit (command) that logs to logfile and kills it at the
    end of the harness hz.  First removes what a run before may have
    left: its pidfile and the other files it makes (paths; entries may be
    None).  Returns the process once the pidfile shows that it serves."""
    for p in [pidfile] + paths:
        if p and os.path.lexists(p):
            os.unlink(p)
    with open(logfile, "ab") as log:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL,
                                stdout=log, stderr=log)
    _procs.append(proc)
    hz.procs.append(proc)
    _wait_for(pidfile, proc, what)
    return proc


class Member:
    """One member: a local file, or a file (or memory) behind nbdkit;
    plugin "badsector": a file whose listed sectors fail.  error: the
    errno the server answers with while a trigger is on (nbdkit's error
    filter): EIO, an error of the medium, which the plugin corrects or
    records as md does; ESHUTDOWN, the server going away, which fails
    the member at once."""

    def __init__(self, hz, name, size, remote=True, plugin="file",
                 delay_read=None, delay_write=None, multi_conn=True,
                 filters=(), extra=(), server_args=(), error="EIO",
                 fuse=False):
        self.hz = hz
        self.name = name
        self.remote = remote
        self.plugin = plugin
        # fuse: the server's disk mounted by nbdfuse as a file that the
        # plugin opens as a local member (fuse_file).
        self.fuse = fuse
        self.fuse_dir = os.path.join(hz.dir, name + ".fuse")
        self.fuse_file = os.path.join(self.fuse_dir, name)
        self.fuse_pidfile = os.path.join(hz.dir, name + ".fuse.pid")
        self.fuse_proc = None
        self.path = None if plugin == "memory" else os.path.join(hz.dir, name)
        self.sock = os.path.join(hz.dir, name + ".sock")
        self.pidfile = os.path.join(hz.dir, name + ".pid")
        self.logfile = os.path.join(hz.dir, name + ".log")
        self.read_trigger = os.path.join(hz.dir, name + ".fail-read")
        self.write_trigger = os.path.join(hz.dir, name + ".fail-write")
        self.ranges_file = os.path.join(hz.dir, name + ".bad")
        self.healed_file = os.path.join(hz.dir, name + ".healed")
        self.bad = []                   # NAME.bad's lines, oldest first
        self._bad_serial = 0
        self.delay_read, self.delay_write = delay_read, delay_write
        self.multi_conn = multi_conn
        self.filters, self.extra = list(filters), list(extra)
        self.server_args = list(server_args)      # nbdkit options, e.g. -t 2
        self.error = error
        self.size = size
        self.proc = None
        self.stopped = False
        if self.path:
            with open(self.path, "wb") as f:
                f.truncate(size)
        if remote or fuse:
            self.start()

    @property
    def uri(self):
        return "nbd+unix:///?socket=" + self.sock

    @property
    def disk(self):
        """What to give the raid plugin: disk=THIS."""
        if self.fuse:
            return self.fuse_file
        return self.uri if self.remote else self.path

    def command(self):
        cmd = ["nbdkit", "-f", "--exit-with-parent", "-U", self.sock,
               "-P", self.pidfile] + self.server_args
        for f in self.filters:
            cmd.append("--filter=" + f)
        if not self.multi_conn:
            cmd.append("--filter=multi-conn")
        if self.delay_read or self.delay_write:
            cmd.append("--filter=delay")
        if self.plugin in ("file", "badsector"):
            cmd.append("--filter=error")
            if self.plugin == "file":
                cmd += ["file", self.path]
            else:
                cmd += [badsector_plugin(), "file=" + self.path,
                        "ranges=" + self.ranges_file,
                        "healed=" + self.healed_file]
            cmd.append("error=" + self.error)
            for op, trig in (("pread", self.read_trigger),
                             ("pwrite", self.write_trigger),
                             ("zero", self.write_trigger),
                             ("trim", self.write_trigger)):
                cmd += ["error-%s-rate=100%%" % op, "error-%s-file=%s" % (op, trig)]
        else:
            cmd += ["memory", "size=%d" % self.size]
        if not self.multi_conn:
            cmd.append("multi-conn-mode=disable")
        if self.delay_read:
            cmd.append("delay-read=%s" % self.delay_read)
        if self.delay_write:
            cmd += ["delay-write=%s" % self.delay_write,
                    "delay-zero=%s" % self.delay_write]
        return cmd + self.extra

    def start(self):
        assert self.remote or self.fuse
        self.proc = _serve(self.hz, self.command(), self.logfile,
                           self.pidfile, [self.sock],
                           "member server %s" % self.name)
        self.stopped = False
        if self.fuse:
            os.makedirs(self.fuse_dir, exist_ok=True)
            self.fuse_proc = _serve(
                self.hz, ["nbdfuse", "-P", self.fuse_pidfile, self.fuse_file,
                          "--unix", self.sock],
                self.logfile, self.fuse_pidfile, [],
                "nbdfuse of member %s" % self.name)

    def unmount(self):
        """Stop nbdfuse (SIGTERM unmounts), and make sure nothing stays
        mounted: a stale mount would outlive the test's directory."""
        if self.fuse_proc is not None:
            _reap(self.fuse_proc)
            if self.fuse_proc in _procs:
                _procs.remove(self.fuse_proc)
            self.fuse_proc = None
        if self.fuse and os.path.ismount(self.fuse_dir):
            subprocess.run(["umount", "-l", self.fuse_dir],
                           stderr=subprocess.DEVNULL)

    def _need_remote(self, what):
        if not (self.remote or self.fuse) or \
                self.plugin not in ("file", "badsector"):
            raise ValueError("%s: %s needs a remote file member" % (self.name, what))

    @staticmethod
    def _trigger(path, on):
        if on:
            open(path, "w").close()
        elif os.path.exists(path):
            os.unlink(path)

    def fail_reads(self, on=True):
        """While on, every pread of this member's server returns EIO."""
        self._need_remote("fail_reads")
        self._trigger(self.read_trigger, on)

    def fail_writes(self, on=True):
        """While on, every pwrite, zero and trim returns EIO."""
        self._need_remote("fail_writes")
        self._trigger(self.write_trigger, on)

    def add_bad_range(self, offset, n, mode="read"):
        """From now on bytes [offset, offset + n) of the member, whole
        512-byte sectors, are bad ("badsector" members): "read", a read
        that touches them fails with EIO (reading nothing) until a write
        covers them, which mends them (healed_ranges); "write", a write,
        zero or trim that touches them fails with EIO (writing nothing);
        "both".  A range added again after it was mended is bad again.
        What was mended stays mended across a restart of the server, as
        a disk's remapped sectors do."""
        if self.plugin != "badsector":
            raise ValueError("%s: add_bad_range needs a badsector member"
                             % self.name)
        if offset % 512 or n % 512 or n <= 0 or \
                mode not in ("read", "write", "both"):
            raise ValueError("%s: add_bad_range(%r, %r, %r): whole sectors, "
                             "mode read, write or both"
                             % (self.name, offset, n, mode))
        # The serial makes each line a fault of its own (the plugin knows
        # a fault by its line).
        self._bad_serial += 1
        self.bad.append("%d %d %s # %d" % (offset // 512, n // 512, mode,
                                           self._bad_serial))
        self._write_bad()

    def clear_bad_ranges(self):
        """No sector of the member is bad any more."""
        self.bad = []
        self._write_bad()

    def remove_bad_ranges(self, lines):
        """The faults of those lines (of self.bad) go away; the others
        stay, with what was mended of them."""
        if not lines:
            return
        self.bad = [line for line in self.bad if line not in lines]
        self._write_bad()

    def _write_bad(self):
        # A new file renamed over the old: the plugin never reads half
        # of one.
        tmp = self.ranges_file + ".new"
        with open(tmp, "w") as f:
            f.write("".join(line + "\n" for line in self.bad))
        os.replace(tmp, self.ranges_file)

    def healed_ranges(self):
        """[(offset, n)] in bytes: the read-bad sectors that writes have
        mended, in the order mended (a range mended piece by piece is
        several entries)."""
        try:
            with open(self.healed_file) as f:
                lines = f.read().split("\n")
        except FileNotFoundError:
            return []
        # "START LENGTH LINE": LINE is the fault's, for the plugin.
        return [(int(a) * 512, int(b) * 512)
                for a, b in (line.split()[:2] for line in lines if line)]

    def kill(self):
        """SIGKILL the member server: its connections drop at once (a
        FUSE member's file goes with nbdfuse, unmounted first)."""
        self.unmount()
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        if self.proc in _procs:
            _procs.remove(self.proc)
        self.proc = None

    def restart(self, plugin=None, size=None):
        """A fresh server on the same socket over the same file; or, with
        plugin="memory", over an empty memory disk of `size` bytes (default:
        the member's size); or, with size alone, over the same file cut or
        grown to size."""
        self.kill()
        if size is not None:
            self.size = size
            if plugin is None and self.path:
                self.truncate(size)
        if plugin is not None:
            self.plugin = plugin
        self.start()

    def stop(self):
        """SIGSTOP the server: it accepts connections and answers nothing."""
        self.proc.send_signal(signal.SIGSTOP)
        self.stopped = True

    def cont(self):
        self.proc.send_signal(signal.SIGCONT)
        self.stopped = False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None and \
            (not self.fuse or (self.fuse_proc is not None and
                               self.fuse_proc.poll() is None))

    def truncate(self, size):
        with open(self.path, "r+b") as f:
            f.truncate(size)

    def corrupt(self, offset, n, pattern=None, xor=0xff):
        """Overwrite n bytes at file offset with bytes that differ from
        what is there (each byte xor'ed with xor: inverted), or with
        pattern."""
        corrupt(self.path, offset, n, pattern, xor)

    def read(self, offset=0, n=None):
        """The member file's bytes, straight from the file."""
        with open(self.path, "rb") as f:
            f.seek(offset)
            return f.read() if n is None else f.read(n)


class MissingMember:
    """disk=missing: a member that is absent when the array starts."""
    remote = False
    path = None
    proc = None
    disk = "missing"
    name = "missing"


class FileMember:
    """A member file that already exists (a replacement, after a restart)."""
    remote = False
    proc = None

    def __init__(self, path):
        self.path = self.disk = self.name = path

    def read(self, offset=0, n=None):
        return Member.read(self, offset, n)


def corrupt(path, offset, n, pattern=None, xor=0xff):
    """Member.corrupt for any file."""
    with open(path, "r+b") as f:
        f.seek(offset)
        old = f.read(n)
        new = pattern if pattern is not None else bytes(b ^ xor for b in old)
        f.seek(offset)
        f.write(new)


def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def md5(path):
    return hashlib.md5(file_bytes(path)).hexdigest()


def md5s(paths):
    return [md5(p) for p in paths]


def noise_file(path, size):
    """A replacement member full of noise: a rebuild must overwrite every
    byte it is responsible for, and zeroes would hide a skipped chunk."""
    with open(path, "wb") as f:
        f.write(os.urandom(size))


# --- The control socket -----------------------------------------------------

class Control:
    """The plugin's control socket: one line out, the reply until EOF."""

    def __init__(self, path, wait=10.0):
        self.path = path
        end = time.monotonic() + wait
        while not os.path.exists(path):
            if time.monotonic() > end:
                raise AssertionError("control socket %s did not appear" % path)
            time.sleep(0.02)

    def cmd(self, line, timeout=30.0):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(timeout)
        try:
            s.connect(self.path)
            s.sendall(line.encode() + b"\n")
            parts = []
            while True:
                b = s.recv(65536)
                if not b:
                    break
                parts.append(b)
        finally:
            s.close()
        return b"".join(parts).decode().strip()

    def ok(self, line):
        r = self.cmd(line)
        if r != "ok":
            raise AssertionError("control %r: replied %r, expected 'ok'"
                                 % (line, r))

    def error(self, line):
        """The command must be refused; returns the reply."""
        r = self.cmd(line)
        if not r.startswith("error: "):
            raise AssertionError("control %r: replied %r, expected 'error: ...'"
                                 % (line, r))
        return r

    def status(self):
        r = self.cmd("status")
        try:
            return json.loads(r)
        except ValueError:
            raise AssertionError("control 'status' is not JSON: %r" % r)

    def wait_idle(self, timeout, poll=0.01, during=None):
        """Until neither rebuild nor scrub runs; at most timeout seconds.
        during(status) is called on every poll.  Returns the last status."""
        end = time.monotonic() + timeout
        while True:
            st = self.status()
            if during:
                during(st)
            if not st["rebuild"]["running"] and not st["scrub"]["running"]:
                return st
            if time.monotonic() > end:
                raise AssertionError("still busy after %g s: %s"
                                     % (timeout, json.dumps(st)))
            time.sleep(poll)

    def finished_scrub(self, timeout=60):
        """The status once a scrub (a start-up resync) has finished."""
        end = time.monotonic() + timeout
        while True:
            st = self.status()
            if st["scrub"]["finished"] and not st["scrub"]["running"]:
                return st
            if time.monotonic() > end:
                raise AssertionError("no finished scrub after %d s: %s"
                                     % (timeout, st))
            time.sleep(0.05)

    def states(self):
        return [m["state"] for m in self.status()["members"]]


CTL_TOOL = os.path.join(TOP, "tools", "nbdkit-raid-ctl")


def ctl_tool(*args):
    """tools/nbdkit-raid-ctl ARGS: (exit status, stdout, stderr)."""
    r = subprocess.run([sys.executable, CTL_TOOL] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


# --- Arrays -----------------------------------------------------------------

MD_LAYOUTS = {0: "left-asymmetric", 1: "right-asymmetric",
              2: "left-symmetric", 3: "right-symmetric",
              4: "parity-first", 5: "parity-last"}


class Array:
    """The raid plugin served on a Unix socket, with a client handle h
    and, with control=True, its control socket ctl."""

    def __init__(self, hz, members, level=6, chunk=65536,
                 layout="left-symmetric", data_offset=0, params=(),
                 plugin=None, name="array", threads=None, metadata=None,
                 control=False, nbdkit_args=()):
        self.hz = hz
        self.members = members
        self.level, self.chunk, self.layout = level, chunk, layout
        self.data_offset = data_offset
        # What goes on the command line; the rest is read back (md).
        self.given = {k: v for k, v in (("level", level), ("chunk", chunk),
                                        ("layout", layout),
                                        ("data-offset", data_offset))
                      if v is not None}
        self.params = list(params)
        self.plugin = plugin or default_plugin()
        self.sock = os.path.join(hz.dir, name + ".sock")
        self.pidfile = os.path.join(hz.dir, name + ".pid")
        self.logfile = os.path.join(hz.dir, name + ".log")
        self.ctlpath = os.path.join(hz.dir, name + ".ctl") if control else None
        self.ctl = None
        self.threads = threads
        self.nbdkit_args = list(nbdkit_args)
        # Raw mode must be asked for (metadata=none); an array made with
        # create=true is md (metadata="md"); one assembled from its
        # superblocks alone (no level given) is left to find them.
        if any(p.startswith("metadata=") for p in params):
            metadata = None         # the caller says it in params
        elif metadata is None:
            if any(p.startswith("create=") for p in params):
                metadata = "md"
            elif level is not None:
                metadata = "none"
        self.metadata = metadata
        self.proc = None
        self.h = None
        self.start()

    @property
    def uri(self):
        return "nbd+unix:///?socket=" + self.sock

    def command(self):
        cmd = ["nbdkit", "-f", "--exit-with-parent", "-U", self.sock,
               "-P", self.pidfile] + self.nbdkit_args
        if self.threads:
            cmd += ["-t", str(self.threads)]
        cmd += [self.plugin] + ["%s=%s" % kv for kv in self.given.items()]
        if self.metadata:
            cmd.append("metadata=" + self.metadata)
        if self.ctlpath:
            cmd.append("control=" + self.ctlpath)
        return cmd + self.params + ["disk=" + m.disk for m in self.members]

    def start(self):
        self.proc = _serve(self.hz, self.command(), self.logfile,
                           self.pidfile, [self.sock, self.ctlpath],
                           "the raid plugin (see %s)" % self.logfile)
        if self.ctlpath:
            self.ctl = Control(self.ctlpath)
        self.h = self.connect()
        self.size = self.h.get_size()
        if None in (self.level, self.chunk, self.layout, self.data_offset):
            self.geometry_from_superblock()
        self.n = len(self.members)
        self.npar = 2 if self.level == 6 else 1
        self.dd = self.n - self.npar
        self.row = self.dd * self.chunk
        self.rows = self.size // self.row

    def geometry_from_superblock(self):
        """The geometry not given, from the first member's md superblock
        (as md would assemble it)."""
        sb = next(mdsb.read(m.path) for m in self.members if m.path)
        assert sb["magic"] == mdsb.MAGIC, "no md superblock on the members"
        if self.level is None:
            self.level = sb["level"]
        if self.chunk is None:
            self.chunk = sb["chunksize"] * 512
        if self.layout is None:
            self.layout = MD_LAYOUTS[sb["layout"]]
        if self.data_offset is None:
            self.data_offset = sb["data_offset"] * 512

    def connect(self):
        h = nbd.NBD()
        h.set_strict_mode(0)
        h.connect_uri(self.uri)
        return h

    def stop(self, grace=2.0):
        """Disconnect and stop nbdkit (SIGTERM); returns its exit status."""
        if self.h:
            self.h.shutdown()
            self.h = None
        status = None
        if self.proc:
            _reap(self.proc, grace)
            status = self.proc.returncode
            if self.proc in _procs:
                _procs.remove(self.proc)
            self.proc = None
        return status

    def kill(self):
        """SIGKILL nbdkit: an unclean stop."""
        self.proc.kill()
        self.proc.wait()
        if self.proc in _procs:
            _procs.remove(self.proc)
        self.proc = self.h = None

    def log(self):
        with open(self.logfile, errors="replace") as f:
            return f.read()

    def expect_log(self, needle, what):
        text = self.log()
        if needle not in text:
            raise AssertionError("%s: %r not in the plugin's log %s:\n%s"
                                 % (what, needle, self.logfile, text[-2000:]))

    # Geometry, from raidcheck.py (not from the plugin).

    def layout_of(self, s):
        """Row s: (P member, Q member or None, [member of data chunk i])."""
        return raidcheck.row_layout(self.level, raidcheck.LAYOUTS[self.layout],
                                    self.n, s)

    def where(self, offset):
        """Array offset -> (row, data chunk index, member, member offset)."""
        s, in_row = divmod(offset, self.row)
        i, in_chunk = divmod(in_row, self.chunk)
        m = self.layout_of(s)[2][i]
        return s, i, m, self.data_offset + s * self.chunk + in_chunk

    def describe(self, offset):
        """'row R, data chunk I on member M ...' for messages."""
        s, i, m, moff = self.where(offset)
        p, q, _ = self.layout_of(s)
        return ("row %d, data chunk %d on member %d at member offset %d "
                "(P on %d%s)" % (s, i, m, moff, p,
                                 "" if q is None else ", Q on %d" % q))

    def chunk_offset(self, s, i):
        """Array offset of data chunk i of row s."""
        return s * self.row + i * self.chunk

    def row_members(self, s):
        """Members holding parity of row s."""
        p, q, _ = self.layout_of(s)
        return [p] if q is None else [p, q]

    def bad_rows(self, rows=None):
        """Rows (of those given; default all) whose P or Q on the member
        files does not match their data.  Needs file members."""
        return raidcheck.bad_rows(self.level, self.layout, self.chunk,
                                  self.data_offset,
                                  [m.path for m in self.members],
                                  range(self.rows) if rows is None else rows)


def run_raidcheck(arr, paths, image=None):
    """raidcheck.py run as a program on the files, with arr's geometry;
    (exit status, its output)."""
    cmd = [sys.executable, os.path.join(LIB_DIR, "raidcheck.py"),
           "--level", str(arr.level), "--layout", arr.layout,
           "--chunk", str(arr.chunk), "--data-offset", str(arr.data_offset),
           "--all"]
    if image:
        cmd += ["--image", image]
    r = subprocess.run(cmd + list(paths), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    return r.returncode, r.stdout.strip()


def check_members(arr, paths, shadow, what, program=True, exact=False):
    """Every row's parity must be right on the member files, and the image
    they hold must begin with the shadow (exact: be the shadow).
    raidcheck.py run as a program (with --image), or, for tests that check
    hundreds of arrays, its row checker imported."""
    if program:
        image = os.path.join(arr.hz.dir, "raidcheck.image")
        rc, out = run_raidcheck(arr, paths, image)
        if rc != 0:
            raise AssertionError("%s: raidcheck.py on %s failed:\n%s"
                                 % (what, " ".join(paths), out[-3000:]))
        img = file_bytes(image)
        os.unlink(image)
    else:
        img, bad = raidcheck.image_of(arr.level, arr.layout, arr.chunk,
                                      arr.data_offset, paths)
        if bad:
            raise AssertionError("%s: row %d: %s on member %d is wrong "
                                 "(member files %s)"
                                 % ((what,) + bad + (" ".join(paths),)))
    n = min(len(img), len(shadow))
    assert n == len(shadow) and (len(img) == n or not exact), \
        "%s: member files hold %d bytes, array %d" % (what, len(img),
                                                      len(shadow))
    if img[:n] != shadow[:n]:
        bad = next(i for i in range(n) if img[i] != shadow[i])
        raise AssertionError("%s: the image rebuilt from the member files "
                             "differs from the shadow at byte %d (%s)"
                             % (what, bad, arr.describe(bad)))


class Harness:
    """Owns a directory, member servers and arrays; closes them all."""

    def __init__(self, dir=None):
        self.own_dir = dir is None
        self.dir = dir or tempfile.mkdtemp(prefix="raid-faults.")
        self.members = []
        self.arrays = []
        self._count = 0
        self.procs = []         # every process started, even if its
                                # object never finished construction

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def member(self, size, kind="remote", **kw):
        """A new member: kind "remote" (file behind nbdkit), "local" (a
        file the plugin opens itself), "memory" (nbdkit memory plugin),
        "badsector" (a file behind the test plugin whose sectors fail) or
        "badsector-local" (the same mounted by nbdfuse: a local file
        whose sectors fail, with EIO from the kernel)."""
        name = "m%d" % self._count
        self._count += 1
        if kind == "badsector-local":
            m = Member(self, name, size, remote=False, plugin="badsector",
                       fuse=True, **kw)
        elif kind in ("memory", "badsector"):
            m = Member(self, name, size, remote=True, plugin=kind, **kw)
        else:
            m = Member(self, name, size, remote=(kind == "remote"), **kw)
        self.members.append(m)
        return m

    def array(self, members, member_size=None, **kw):
        """An array over members: member objects (Member, MissingMember,
        FileMember), or kinds of Member to create.  Its log is
        next_array_log(), named before nbdkit starts."""
        ms = [m if hasattr(m, "disk") else self.member(member_size, m)
              for m in members]
        a = Array(self, ms, name="array%d" % len(self.arrays), **kw)
        self.arrays.append(a)
        return a

    def next_array_log(self):
        """The log file of the array array() starts next: what to show
        when that nbdkit fails to start (an Array that raises in its
        constructor is never returned, so its .logfile cannot be asked
        for)."""
        return os.path.join(self.dir, "array%d.log" % len(self.arrays))

    def last_array_log(self):
        """The log of the array started (or tried) last, or None."""
        logs = [os.path.join(self.dir, f) for f in os.listdir(self.dir)
                if re.match(r"array\d+\.log$", f)]
        return max(logs, key=os.path.getmtime) if logs else None

    def refused_array(self, members, expect, what, **kw):
        """An array that must not start: returns the line of its log that
        says `expect` (which must name members[0])."""
        logfile = self.next_array_log()
        try:
            self.array(members, **kw)
        except RuntimeError:
            text = open(logfile, errors="replace").read()
            line = [x for x in text.splitlines() if expect in x]
            assert line and members[0].disk in line[0], \
                "%s: refused, but not saying %r about %s:\n%s" % (
                    what, expect, members[0].disk, text)
            return line[0]
        raise AssertionError("%s: the array started" % what)

    def close(self):
        for a in self.arrays:
            try:
                a.stop()
            except Exception:
                pass
        for m in self.members:
            m.unmount()
            if m.proc:
                _reap(m.proc)
                if m.proc in _procs:
                    _procs.remove(m.proc)
                m.proc = None
        for p in self.procs:
            _reap(p)
            if p in _procs:
                _procs.remove(p)
        self.arrays, self.members, self.procs = [], [], []
        if self.own_dir and os.path.isdir(self.dir):
            shutil.rmtree(self.dir, ignore_errors=True)


class Test(Harness):
    """One test program: the checks and set-up tests/lib/functions.sh makes
    for a shell test (see the top of this file), and a Harness in the
    test's own directory.  Leaving the with block: 0 (and PASS with the
    time), 77 on Skip, 1 on anything else, after the traceback and the
    end of every array's log."""

    def __init__(self, tools=(), filters=(), plugins=(), timeout=None,
                 seed=True):
        self.t0 = time.monotonic()
        self.name = os.path.basename(sys.argv[0])
        self.dir = None
        try:
            if nbd is None:
                raise Skip("this test needs the Python module 'nbd' in %s"
                           % sys.executable)
            requires("nbdkit", *tools)
            plugin = default_plugin()
            if not os.path.isfile(plugin):
                raise Skip("the plugin %s has not been built" % plugin)
            requires_filter(*filters)
            requires_plugin(*plugins)
        except Skip as e:
            self._skip(e)
        keep = bool(os.environ.get("RAID_TEST_KEEP"))
        dir = tempfile.mkdtemp(prefix="raid-test.",
                               dir=os.environ.get("TMPDIR") or None)
        super().__init__(dir)
        self.own_dir = not keep
        # A private copy of the plugin (see the top of this file).
        copy = os.path.join(dir, "nbdkit-raid-plugin.so")
        shutil.copyfile(plugin, copy)
        os.environ["RAID_PLUGIN"] = copy
        self.plugin = copy
        # seed=False: a test that draws its own seeds (the soak).
        self.seed = test_seed() if seed else None
        self.rng = random.Random(self.seed)
        if timeout:
            watchdog(timeout)
            hard = threading.Timer(timeout + 10, self._hung, (timeout,))
            hard.daemon = True
            hard.start()

    def requires_holes(self):
        """Skip unless the test's directory reports holes to
        lseek(SEEK_DATA): the tests of sparse members need them."""
        probe = os.path.join(self.dir, "probe")
        with open(probe, "wb") as f:
            f.truncate(1 << 20)
        fd = os.open(probe, os.O_RDONLY)
        try:
            os.lseek(fd, 0, os.SEEK_DATA)
        except OSError:
            return
        finally:
            os.close(fd)
            os.unlink(probe)
        raise Skip("%s does not report holes (SEEK_DATA)" % self.dir)

    def _skip(self, e):
        log("%s: SKIP: %s" % (self.name, e))
        sys.exit(77)

    def _hung(self, timeout):
        log("%s: FAIL: still running %g s after the watchdog's %g s"
            % (self.name, time.monotonic() - self.t0 - timeout, timeout))
        sys.stdout.flush()
        os._exit(1)

    def __exit__(self, etype, e, tb):
        if etype is not None and issubclass(etype, Skip):
            self.close()
            self._skip(e)
        if etype is not None and not issubclass(etype, SystemExit):
            traceback.print_exception(etype, e, tb, file=sys.stdout)
            for f in sorted(glob.glob(os.path.join(self.dir, "array*.log"))):
                with open(f, errors="replace") as fh:
                    lines = fh.read().splitlines()[-20:]
                log("==> %s (last lines) <==\n%s" % (f, "\n".join(lines)))
        if not self.own_dir:
            log("%s: RAID_TEST_KEEP: the files are in %s" % (self.name,
                                                            self.dir))
        self.close()
        if etype is None:
            log("%s: PASS (%.1fs)" % (self.name, time.monotonic() - self.t0))
            return False
        if issubclass(etype, SystemExit):
            return False
        log("%s: FAIL (%.1fs)" % (self.name, time.monotonic() - self.t0))
        sys.exit(1)
