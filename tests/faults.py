"""faults: a fault-injection harness for the raid plugin's tests.

    import sys; sys.path.insert(0, TESTS_DIR)
    import faults
    with faults.Harness() as hz:                    # or Harness(dir=...)
        arr = hz.array(level=6, chunk=16384,
                       members=["remote", "local", "remote", "remote"],
                       member_size=1 << 20, params=["member-timeout=2"])
        arr.h.pwrite(b"x" * 4096, 0)                # arr.h: an nbd.NBD
        m = arr.members[0]
        m.fail_reads(True)                          # EIO on its preads
        m.fail_writes(True)                         # EIO on pwrite/zero/trim
        m.kill(); m.restart()                       # SIGKILL; same socket+file
        m.stop(); m.cont()                          # SIGSTOP / SIGCONT: a hang
        m.truncate(size); m.corrupt(offset, n); m.path

Why it looks like this.  A member that fails for real is worth more than
a mock: every remote member is its own nbdkit process serving a member
file through nbdkit's error filter (per-operation trigger files, so a
test turns faults on and off by creating or removing a file) and,
optionally, the delay filter.  The file stays an ordinary file, so the
test can read it directly and raidcheck.py can verify parity on it.
Local members are plain files given to the plugin by path, so one array
can mix both kinds.

Member server:  nbdkit -f --exit-with-parent -U SOCK -P PIDFILE
                    [--filter=multi-conn] [--filter=delay] --filter=error
                    file FILE error=EIO
                    error-pread-rate=100%  error-pread-file=TRIGGER.read
                    error-pwrite-rate=100% error-pwrite-file=TRIGGER.write
                    error-zero-rate=100%   error-zero-file=TRIGGER.write
                    error-trim-rate=100%   error-trim-file=TRIGGER.write
(or the memory plugin, for benchmarks: no file, no faults).

Clean-up.  Every process started here is a child we hold by pid: it is
killed (SIGCONT first, in case a test stopped it; then SIGTERM; then
SIGKILL) when the Harness is closed, at interpreter exit (atexit), and
on SIGTERM/SIGINT/SIGHUP (turned into SystemExit so that finally blocks
run too).  --exit-with-parent is a second line of defence should this
process itself be SIGKILLed.  The working directory is removed when the
Harness made it.

The row arithmetic (which member holds which chunk, parity of a row)
comes from raidcheck.py, the tests' independent checker, never from the
plugin.

Run with /usr/bin/python3 (Debian's, which has the nbd module).
"""

import atexit
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import nbd

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import raidcheck  # noqa: E402

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(TESTS_DIR)

# Every process started by any Harness, for atexit and signals.
_procs = []


def default_plugin():
    return os.environ.get("RAID_PLUGIN") or os.path.join(
        TOP, "plugin", ".libs", "nbdkit-raid-plugin.so")


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
    print("faults: %s: killing every server started here" % why,
          file=sys.stderr, flush=True)
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


def cleanup_dir(dir):
    """Kill the servers whose pid files are in dir: for the shell wrapper,
    in case this process was itself killed (SIGKILL) or hung.  A pid is
    killed only if its command line names its own pid file."""
    for name in sorted(os.listdir(dir)):
        if not name.endswith(".pid"):
            continue
        path = os.path.join(dir, name)
        try:
            pid = int(open(path).read().strip())
            cmdline = open("/proc/%d/cmdline" % pid, "rb").read().split(b"\0")
        except (OSError, ValueError):
            continue
        if path.encode() in cmdline:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass


atexit.register(_reap_all)
for _s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
    signal.signal(_s, _on_signal)


def have_filter(name):
    """True if this nbdkit has the named filter."""
    r = subprocess.run(["nbdkit", "--filter=" + name, "null", "--dump-plugin"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return r.returncode == 0


def plugin_has(field, plugin=None):
    """The value of a --dump-plugin field of the raid plugin, or None."""
    r = subprocess.run(["nbdkit", plugin or default_plugin(), "--dump-plugin"],
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                       universal_newlines=True)
    for line in r.stdout.splitlines():
        k, _, v = line.partition("=")
        if k == field:
            return v
    return None


def expect_degraded(plugin=None):
    """Does the plugin serve reads of a failed member from parity?

    RAID_EXPECT_DEGRADED=0/1 overrides; else --dump-plugin's
    raid_degraded=yes.
    """
    env = os.environ.get("RAID_EXPECT_DEGRADED")
    if env is not None and env != "":
        return env not in ("0", "no", "false")
    return plugin_has("raid_degraded", plugin) == "yes"


def _wait_for(path, proc, what, timeout=10.0):
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


class Member:
    """One member: a local file, or a file (or memory) behind nbdkit."""

    def __init__(self, hz, name, size, remote=True, plugin="file",
                 delay_read=None, delay_write=None, multi_conn=True,
                 filters=(), extra=(), server_args=()):
        self.hz = hz
        self.name = name
        self.remote = remote
        self.plugin = plugin
        self.path = None if plugin == "memory" else os.path.join(hz.dir, name)
        self.sock = os.path.join(hz.dir, name + ".sock")
        self.pidfile = os.path.join(hz.dir, name + ".pid")
        self.logfile = os.path.join(hz.dir, name + ".log")
        self.read_trigger = os.path.join(hz.dir, name + ".fail-read")
        self.write_trigger = os.path.join(hz.dir, name + ".fail-write")
        self.delay_read, self.delay_write = delay_read, delay_write
        self.multi_conn = multi_conn
        self.filters, self.extra = list(filters), list(extra)
        self.server_args = list(server_args)      # nbdkit options, e.g. -t 2
        self.size = size
        self.proc = None
        self.stopped = False
        if self.path:
            with open(self.path, "wb") as f:
                f.truncate(size)
        if remote:
            self.start()

    @property
    def uri(self):
        return "nbd+unix:///?socket=" + self.sock

    @property
    def disk(self):
        """What to give the raid plugin: disk=THIS."""
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
        if self.plugin == "file":
            cmd += ["--filter=error", "file", self.path, "error=EIO"]
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
        assert self.remote
        for p in (self.sock, self.pidfile):
            if os.path.lexists(p):
                os.unlink(p)
        log = open(self.logfile, "ab")
        self.proc = subprocess.Popen(self.command(), stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=log)
        log.close()
        _procs.append(self.proc)
        self.hz.procs.append(self.proc)
        self.stopped = False
        _wait_for(self.pidfile, self.proc, "member server %s" % self.name)

    def _need_remote(self, what):
        if not self.remote or self.plugin != "file":
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

    def kill(self):
        """SIGKILL the member server: its connections drop at once."""
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
        return self.proc is not None and self.proc.poll() is None

    def truncate(self, size):
        with open(self.path, "r+b") as f:
            f.truncate(size)

    def corrupt(self, offset, n, pattern=None):
        """Overwrite n bytes at file offset with bytes that differ from
        what is there (each byte inverted, unless pattern is given)."""
        with open(self.path, "r+b") as f:
            f.seek(offset)
            old = f.read(n)
            new = pattern if pattern is not None else bytes(b ^ 0xff for b in old)
            f.seek(offset)
            f.write(new)

    def read(self, offset=0, n=None):
        """The member file's bytes, straight from the file."""
        with open(self.path, "rb") as f:
            f.seek(offset)
            return f.read() if n is None else f.read(n)


class Array:
    """The raid plugin served on a Unix socket, with a client handle h."""

    def __init__(self, hz, members, level=6, chunk=65536, layout="left-symmetric",
                 data_offset=0, params=(), plugin=None, name="array",
                 threads=None, metadata=None):
        self.hz = hz
        self.members = members
        self.level, self.chunk, self.layout = level, chunk, layout
        self.data_offset = data_offset
        self.params = list(params)
        self.plugin = plugin or default_plugin()
        self.sock = os.path.join(hz.dir, name + ".sock")
        self.pidfile = os.path.join(hz.dir, name + ".pid")
        self.logfile = os.path.join(hz.dir, name + ".log")
        self.threads = threads
        # Raw mode must be asked for (metadata=none); an array made with
        # create=true, and its later starts, are md (metadata="md").
        if any(p.startswith("metadata=") for p in params):
            metadata = None         # the caller says it in params
        elif metadata is None:
            metadata = "md" if any(p.startswith("create=") for p in params) \
                else "none"
        self.metadata = metadata
        self.proc = None
        self.h = None
        self.n = len(members)
        self.npar = 2 if level == 6 else 1
        self.dd = self.n - self.npar
        self.row = self.dd * chunk
        self.start()

    @property
    def uri(self):
        return "nbd+unix:///?socket=" + self.sock

    def start(self):
        for p in (self.sock, self.pidfile):
            if os.path.lexists(p):
                os.unlink(p)
        cmd = ["nbdkit", "-f", "--exit-with-parent", "-U", self.sock,
               "-P", self.pidfile]
        if self.threads:
            cmd += ["-t", str(self.threads)]
        cmd += [self.plugin, "level=%d" % self.level, "chunk=%d" % self.chunk,
                "layout=%s" % self.layout, "data-offset=%d" % self.data_offset]
        if self.metadata:
            cmd.append("metadata=" + self.metadata)
        cmd += self.params + ["disk=" + m.disk for m in self.members]
        log = open(self.logfile, "ab")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                                     stdout=log, stderr=log)
        log.close()
        _procs.append(self.proc)
        self.hz.procs.append(self.proc)
        _wait_for(self.pidfile, self.proc, "the raid plugin (see %s)" % self.logfile)
        self.h = self.connect()
        self.size = self.h.get_size()
        self.rows = self.size // self.row

    def connect(self):
        h = nbd.NBD()
        h.set_strict_mode(0)
        h.connect_uri(self.uri)
        return h

    def stop(self):
        if self.h:
            self.h.shutdown()
            self.h = None
        if self.proc:
            _reap(self.proc)
            if self.proc in _procs:
                _procs.remove(self.proc)
            self.proc = None

    def log(self):
        with open(self.logfile, errors="replace") as f:
            return f.read()

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
        rows = range(self.rows) if rows is None else rows
        bad = []
        files = [open(m.path, "rb") for m in self.members]
        try:
            for s in rows:
                off = self.data_offset + s * self.chunk
                col = []
                for f in files:
                    f.seek(off)
                    col.append(f.read(self.chunk))
                p, q, data = self.layout_of(s)
                if col[p] != raidcheck.xor_chunks([col[m] for m in data], self.chunk):
                    bad.append(s)
                    continue
                if q is not None:
                    order = raidcheck.syndrome_order(self.n, p, q)
                    if col[q] != raidcheck.q_syndrome([col[m] for m in order],
                                                      self.chunk):
                        bad.append(s)
        finally:
            for f in files:
                f.close()
        return bad


class Harness:
    """Owns a directory, member servers and arrays; closes them all."""

    def __init__(self, dir=None):
        if dir is None:
            dir = os.environ.get("FAULTS_DIR")
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
        file the plugin opens itself) or "memory" (nbdkit memory plugin)."""
        name = "m%d" % self._count
        self._count += 1
        if kind == "memory":
            m = Member(self, name, size, remote=True, plugin="memory", **kw)
        else:
            m = Member(self, name, size, remote=(kind == "remote"), **kw)
        self.members.append(m)
        return m

    def array(self, members, member_size=None, **kw):
        """An array over members: Member objects, or kinds to create."""
        ms = []
        for m in members:
            if isinstance(m, Member):
                ms.append(m)
            else:
                ms.append(self.member(member_size, m))
        a = Array(self, ms, name="array%d" % len(self.arrays), **kw)
        self.arrays.append(a)
        return a

    def close(self):
        for a in self.arrays:
            try:
                a.stop()
            except Exception:
                pass
        for m in self.members:
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


class Timer:
    """with Timer() as t: ...; t.s is the elapsed seconds."""

    def __enter__(self):
        self.t0 = time.monotonic()
        self.s = None
        return self

    def __exit__(self, *exc):
        self.s = time.monotonic() - self.t0
        return False


def try_io(fn, *args):
    """(result, None) or (None, errno name) for one nbd call."""
    try:
        return fn(*args), None
    except nbd.Error as e:
        return None, e.errno or str(e)


def timed(fn, *args):
    """(result, errno name or None, seconds) for one nbd call."""
    t0 = time.monotonic()
    r, err = try_io(fn, *args)
    return r, err, time.monotonic() - t0


def fill(arr, rng):
    """Write random data over the whole array (whole rows, so no reads);
    returns the shadow image."""
    shadow = bytearray(rng.randbytes(arr.size))
    step = 4 * arr.row
    for off in range(0, arr.size, step):
        arr.h.pwrite(shadow[off:off + step], off)
    arr.h.flush()
    return shadow


def retry(fn, timeout, interval=0.1):
    """Call fn until it returns without nbd.Error, for at most timeout
    seconds; returns (result, attempts, seconds), raises the last error."""
    t0 = time.monotonic()
    n = 0
    while True:
        n += 1
        try:
            return fn(), n, time.monotonic() - t0
        except nbd.Error:
            if time.monotonic() - t0 > timeout:
                raise
            time.sleep(interval)


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--cleanup":
        cleanup_dir(sys.argv[2])
    else:
        print("usage: faults.py --cleanup DIR   (kill the servers whose "
              "pid files are in DIR)", file=sys.stderr)
        sys.exit(2)
