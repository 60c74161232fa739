"""raidfail_lib: what the failure tests (test-raid-fail-*.sh) share.

    import raidfail_lib as rf
    ctl = rf.Control(path)              # the plugin's control=PATH socket
    ctl.status()  ctl.ok("fail 2")  ctl.cmd("replace 2 /x")  ctl.wait_idle(60)
    shadow = rf.fill(h, rng)            # the whole array, random, in a shadow
    rf.random_ops(h, rng, shadow, ...)  # writes/zeroes/trims/reads vs shadow
    rf.compare_all(arr, shadow, what)   # byte-exact, names row and member
    rf.check_members(arr, paths, shadow, what)   # raidcheck.py + image

The tests need one oracle that shares nothing with the plugin, so the
member arithmetic comes from raidcheck.py (through faults.Array) and the
final word on the member files is raidcheck.py run as a program, as the
other integration tests use it.  The array processes themselves are
faults.py's: its Harness owns every process and kills it on any exit.

A member that is absent from the start is MissingMember: disk=missing.

Run with /usr/bin/python3 (Debian's, which has the nbd module).
"""

import json
import os
import random
import re
import threading
import socket
import subprocess
import sys
import time

import nbd

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, TESTS_DIR)
import faults  # noqa: E402
import raidcheck as rcheck  # noqa: E402

K = 1024
M = 1024 * 1024


def log(*args):
    print(*args, flush=True)


def plugin_feature(name):
    """True when --dump-plugin says raid_NAME=yes."""
    return faults.plugin_has("raid_" + name) == "yes"


def skip(why):
    log("SKIP: " + why)
    sys.exit(77)


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


def array(hz, members, **kw):
    """faults.Harness.array() for a member list that may hold
    MissingMember (which Harness.array would take for a kind to create).
    Its log is next_array_log(hz), named before nbdkit starts."""
    a = faults.Array(hz, list(members), name="array%d" % len(hz.arrays), **kw)
    hz.arrays.append(a)
    return a


def next_array_log(hz):
    """The log file of the array array() starts next: what to show when
    that nbdkit fails to start (an Array that raises in its constructor
    is never returned, so its .logfile cannot be asked for)."""
    return os.path.join(hz.dir, "array%d.log" % len(hz.arrays))


def last_array_log(hz):
    """The log of the array started (or tried) last, or None."""
    logs = [os.path.join(hz.dir, f) for f in os.listdir(hz.dir)
            if re.match(r"array\d+\.log$", f)]
    return max(logs, key=os.path.getmtime) if logs else None


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

    def states(self):
        return [m["state"] for m in self.status()["members"]]


# The shadow image and client I/O.

def fill(h, rng, step=M):
    """Write the whole array with random bytes; returns the shadow."""
    size = h.get_size()
    shadow = bytearray(rng.randbytes(size))
    for off in range(0, size, step):
        n = min(step, size - off)
        h.pwrite(shadow[off:off + n], off)
    h.flush()
    return shadow


def pick_range(rng, size, chunk, row):
    """A random request: sub-sector to a few rows, at any alignment."""
    k = rng.random()
    n = (rng.randint(1, 511) if k < 0.15 else
         512 * rng.randint(1, 16) if k < 0.35 else
         rng.randint(1, 2 * chunk) if k < 0.55 else
         chunk * rng.randint(1, 3) if k < 0.7 else
         row * rng.randint(1, 2) if k < 0.85 else
         rng.randint(1, 3 * row))
    k = rng.random()
    off = (rng.randrange(size) if k < 0.35 else
           rng.randrange(0, size, chunk) if k < 0.65 else
           rng.randrange(0, size, row) if k < 0.8 else
           rng.randrange(0, size, chunk) + rng.randint(-700, 700))
    off = max(0, min(off, size - 1))
    return off, min(n, size - off)


def where(arr, off):
    """'row R data chunk I on member M (member offset X)' for messages."""
    s, i, m, moff = arr.where(off)
    p, q, _ = arr.layout_of(s)
    return ("row %d, data chunk %d on member %d at member offset %d "
            "(P on %d%s)" % (s, i, m, moff, p,
                             "" if q is None else ", Q on %d" % q))


def check_range(arr, h, shadow, off, n, what):
    got = h.pread(n, off)
    if got != shadow[off:off + n]:
        bad = next(i for i in range(n) if got[i] != shadow[off + i])
        last = max(i for i in range(n) if got[i] != shadow[off + i])
        raise AssertionError(
            "%s: read of %d bytes at %d: byte %d is 0x%02x, shadow 0x%02x "
            "(%s); bad bytes %d..%d"
            % (what, n, off, off + bad, got[bad], shadow[off + bad],
               where(arr, off + bad), off + bad, off + last))


def compare_all(arr, shadow, what, h=None, step=M):
    h = h or arr.h
    size = h.get_size()
    assert size == len(shadow), "%s: size %d, shadow %d" % (what, size,
                                                            len(shadow))
    for off in range(0, size, step):
        check_range(arr, h, shadow, off, min(step, size - off), what)


def random_ops(arr, rng, shadow, nops, what, h=None, reads=True, trace=None):
    """Writes (some FUA), zeroes, trims, flushes and spot reads; every
    successful change goes into the shadow.  Returns op counts.  With a
    trace list, (what, kind, offset, length) of every change is appended."""
    h = h or arr.h
    size, chunk, row = len(shadow), arr.chunk, arr.row
    counts = {"write": 0, "zero": 0, "trim": 0, "read": 0, "flush": 0}
    for i in range(nops):
        off, n = pick_range(rng, size, chunk, row)
        k = rng.random()
        if k < 0.6:
            data = rng.randbytes(n)
            h.pwrite(data, off, nbd.CMD_FLAG_FUA if rng.random() < 0.15 else 0)
            shadow[off:off + n] = data
            counts["write"] += 1
            if trace is not None:
                trace.append((what, "write", off, n))
        elif k < 0.72:
            h.zero(n, off, nbd.CMD_FLAG_NO_HOLE if rng.random() < 0.5 else 0)
            shadow[off:off + n] = bytes(n)
            counts["zero"] += 1
            if trace is not None:
                trace.append((what, "zero", off, n))
        elif k < 0.8:
            h.trim(n, off)
            shadow[off:off + n] = bytes(n)
            counts["trim"] += 1
            if trace is not None:
                trace.append((what, "trim", off, n))
        elif k < 0.97:
            if reads:
                roff, rn = pick_range(rng, size, chunk, row)
                check_range(arr, h, shadow, roff, rn,
                            "%s, op %d: random read" % (what, i))
                counts["read"] += 1
        else:
            h.flush()
            counts["flush"] += 1
        if reads and rng.random() < 0.2:
            lo = max(0, off - rng.randint(0, 700))
            hi = min(size, off + n + rng.randint(0, 700))
            check_range(arr, h, shadow, lo, hi - lo,
                        "%s, op %d: read-back" % (what, i))
            counts["read"] += 1
    return counts


# Clients that keep the array busy.

def deal_pieces(rng, size, chunk, row, nclients):
    """Cut the array into pieces of 1 byte to 2 rows and deal them round
    robin: the clients share every stripe but never a byte, so each
    client's shadow bytes are its own and must read back exact."""
    pieces, off = [], 0
    while off < size:
        k = rng.random()
        pn = (rng.randint(1, 600) if k < 0.3 else
              rng.randint(512, 3 * chunk) if k < 0.9 else
              rng.randint(row, 2 * row))
        pn = min(pn, size - off)
        pieces.append((off, pn))
        off += pn
    return [pieces[i::nclients] for i in range(nclients)]


class Client(threading.Thread):
    """One client on its own connection: writes (some FUA), zeroes,
    flushes and reads of its own pieces until stop is set.  The shadow
    changes only when a request succeeds; a failed request is recorded in
    errors and its piece's bytes re-read (they may be old or new), so
    every later read checks every acknowledged write."""

    def __init__(self, arr, ci, pieces, shadow, stop, seed):
        super().__init__(daemon=True)
        self.arr, self.ci, self.pieces = arr, ci, pieces
        self.shadow, self.stop = shadow, stop
        self.rng = random.Random(seed)
        self.h = arr.connect()
        self.errors = []          # (op, offset, length, errno)
        self.done = {"write": 0, "zero": 0, "read": 0, "flush": 0}
        self.exc = None

    def run(self):
        try:
            self.loop()
        except BaseException as e:
            self.exc = e

    def loop(self):
        rng, shadow, h = self.rng, self.shadow, self.h
        while not self.stop.is_set():
            poff, pn = rng.choice(self.pieces)
            if rng.random() < 0.3:
                off, n = poff, pn
            else:
                a = rng.randrange(pn)
                off, n = poff + a, rng.randint(1, pn - a)
            k = rng.random()
            op = ("write" if k < 0.7 else "zero" if k < 0.8 else
                  "read" if k < 0.97 else "flush")
            try:
                if op == "write":
                    data = rng.randbytes(n)
                    h.pwrite(data, off,
                             nbd.CMD_FLAG_FUA if rng.random() < 0.1 else 0)
                    shadow[off:off + n] = data
                elif op == "zero":
                    h.zero(n, off)
                    shadow[off:off + n] = bytes(n)
                elif op == "read":
                    check_range(self.arr, h, shadow, poff, pn,
                                "client %d: read-back under load" % self.ci)
                else:
                    h.flush()
                self.done[op] += 1
            except nbd.Error as e:
                self.errors.append((op, off, n, e.errno or str(e)))
                try:
                    shadow[poff:poff + pn] = h.pread(pn, poff)
                except nbd.Error:
                    pass

    def total(self):
        return sum(self.done.values())


class Load:
    """with Load(arr, shadow, n, seed) as load: ... ; load.total() counts
    completed requests; leaving the block stops and checks the clients:
    any exception or failed request is an AssertionError."""

    def __init__(self, arr, shadow, nclients, seed, what):
        self.what = what
        rng = random.Random(seed)
        deal = deal_pieces(rng, len(shadow), arr.chunk, arr.row, nclients)
        self.stop = threading.Event()
        self.clients = [Client(arr, i, deal[i], shadow, self.stop,
                               seed * 1000 + i) for i in range(nclients)]

    def __enter__(self):
        for c in self.clients:
            c.start()
        return self

    def total(self):
        return sum(c.total() for c in self.clients)

    def counts(self):
        out = {}
        for c in self.clients:
            for k, v in c.done.items():
                out[k] = out.get(k, 0) + v
        return out

    def __exit__(self, *exc):
        self.stop.set()
        for c in self.clients:
            c.join(60)
        for c in self.clients:
            try:
                c.h.shutdown()
            except nbd.Error:
                pass
        if exc[0] is not None:
            return False
        for c in self.clients:
            if c.is_alive():
                raise AssertionError("%s: client %d hangs" % (self.what, c.ci))
            if c.exc:
                raise c.exc
        errors = [(c.ci,) + e for c in self.clients for e in c.errors]
        if errors:
            raise AssertionError(
                "%s: %d client requests failed although the array stayed "
                "within its tolerance; the first (client, op, offset, "
                "length, errno): %s" % (self.what, len(errors), errors[:5]))
        return False


# The member files.

def file_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def noise_file(path, size):
    """A replacement member full of noise: a rebuild must overwrite every
    byte it is responsible for, and zeroes would hide a skipped chunk."""
    with open(path, "wb") as f:
        f.write(os.urandom(size))


def raidcheck(arr, paths, image=None):
    """Run raidcheck.py on the files; (exit status, its output)."""
    cmd = [sys.executable, os.path.join(TESTS_DIR, "raidcheck.py"),
           "--level", str(arr.level), "--layout", arr.layout,
           "--chunk", str(arr.chunk), "--data-offset", str(arr.data_offset),
           "--all"]
    if image:
        cmd += ["--image", image]
    r = subprocess.run(cmd + list(paths), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    return r.returncode, r.stdout.strip()


def check_members(arr, paths, shadow, what, workdir=None, inprocess=True):
    """Every row's parity must be right on the member files, and the image
    they hold must be the shadow.  In process (the default, for tests that
    check hundreds of arrays) this is raidcheck.py's own row code imported;
    otherwise raidcheck.py is run as a program with --image."""
    if not inprocess:
        image = os.path.join(workdir, "raidcheck.image")
        rc, out = raidcheck(arr, paths, image)
        if rc != 0:
            raise AssertionError("%s: raidcheck.py on %s failed:\n%s"
                                 % (what, " ".join(paths), out[-3000:]))
        with open(image, "rb") as f:
            img = f.read()
        os.unlink(image)
    else:
        out = "parity good"
        img = bytearray()
        lay = rcheck.LAYOUTS[arr.layout]
        chunk, n = arr.chunk, len(paths)
        bufs = [file_bytes(p) for p in paths]
        rows = (min(len(b) for b in bufs) - arr.data_offset) // chunk
        for s in range(rows):
            off = arr.data_offset + s * chunk
            col = [b[off:off + chunk] for b in bufs]
            p, q, data = rcheck.row_layout(arr.level, lay, n, s)
            bad = None
            if col[p] != rcheck.xor_chunks([col[m] for m in data], chunk):
                bad = "P on member %d" % p
            elif q is not None and col[q] != rcheck.q_syndrome(
                    [col[m] for m in rcheck.syndrome_order(n, p, q)], chunk):
                bad = "Q on member %d" % q
            if bad:
                raise AssertionError("%s: row %d: %s is wrong (member files "
                                     "%s)" % (what, s, bad, " ".join(paths)))
            for m in data:
                img += col[m]
    n = min(len(img), len(shadow))
    assert n == len(shadow), "%s: member files hold %d bytes, array %d" % (
        what, len(img), len(shadow))
    if img[:n] != shadow[:n]:
        bad = next(i for i in range(n) if img[i] != shadow[i])
        raise AssertionError("%s: the image rebuilt from the member files "
                             "differs from the shadow at byte %d (%s)"
                             % (what, bad, where(arr, bad)))
    return out


def expect_log(arr, needle, what):
    text = arr.log()
    if needle not in text:
        raise AssertionError("%s: %r not in the plugin's log %s:\n%s"
                             % (what, needle, arr.logfile, text[-2000:]))
