# SPDX-License-Identifier: BSD-3-Clause
"""workload: what the Python tests do to an array as its clients, and how
they check what they read: a shadow image of what the array must hold.

    import workload as wl
    shadow = wl.fill(arr.h, rng)            # the whole array, random
    wl.random_ops(arr, rng, shadow, 300, "what")   # writes/zeroes/trims/
                                            # flushes/reads vs the shadow
    wl.apply_ops(h, rng, shadow, [("write", off, n), ("zero", ...)])
    wl.compare_all(arr, shadow, "what")     # byte-exact, names row+member
    r, err, secs = wl.timed(arr.h.pread, 4096, off)   # err: errno name
    wl.retry(lambda: arr.h.pread(4096, 0), 8.0)
    wl.in_flight(h, [lambda: h.aio_pwrite(...), ...], depth=16)
    with wl.Load(arr, shadow, 8, seed, "what") as load: ...
                                            # clients on their own
                                            # connections, all checked

The shadow changes only when the array acknowledged a request; a read is
compared with it byte for byte, and a difference is reported with the row,
the data chunk and the member it lies on (arr.describe, from raidcheck.py's
layout code, never the plugin's).  arr is a faults.Array, or anything with
its chunk, row and describe().

The random choices are drawn from the rng passed in, in a fixed order:
the seeds in random-seeds.regress replay through random_ops and fill, so
their draws must not change.

Run with /usr/bin/python3 (Debian's, which has the nbd module).
"""

import random
import threading
import time

try:
    import nbd
except ImportError:             # faults.Test skips, saying why
    nbd = None

M = 1024 * 1024


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


def fill(h, rng, step=M):
    """Write the whole array with random bytes, step bytes a request
    (whole rows, where step is a multiple of the row, need no reads);
    returns the shadow."""
    size = h.get_size()
    shadow = bytearray(rng.randbytes(size))
    for off in range(0, size, step):
        n = min(step, size - off)
        h.pwrite(shadow[off:off + n], off)
    h.flush()
    return shadow


def in_flight(h, requests, depth=16):
    """Run the requests (each a function that issues one aio command and
    returns its cookie) with up to depth in flight; every one must
    succeed (aio_command_completed raises on an error)."""
    pending = []
    for make in requests:
        while len(pending) >= depth:
            h.poll(-1)
            pending = [c for c in pending if not h.aio_command_completed(c)]
        pending.append(make())
    while pending:
        h.poll(-1)
        pending = [c for c in pending if not h.aio_command_completed(c)]


def burst(arr, rng, shadow, depth=32):
    """Disjoint random pieces over the whole array, written in a random
    order with up to depth requests in flight on each of two connections,
    so that several nbdkit threads hit the members at once; returns how
    many pieces."""
    hs = [arr.h, arr.connect()]
    pieces, off = [], 0
    while off < arr.size:
        n = min(arr.size - off, rng.choice((rng.randint(1, 9000),
                                            rng.randint(1, 2 * arr.chunk))))
        pieces.append((off, n))
        off += n
    rng.shuffle(pieces)
    pending = [[], []]
    for j, (off, n) in enumerate(pieces):
        h, pend = hs[j % 2], pending[j % 2]
        while len(pend) >= depth:
            h.poll(-1)
            pend[:] = [c for c in pend if not h.aio_command_completed(c)]
        data = rng.randbytes(n)
        pend.append(h.aio_pwrite(nbd.Buffer.from_bytearray(bytearray(data)),
                                 off))
        shadow[off:off + n] = data
    for h, pend in zip(hs, pending):
        for _ in range(100000):
            pend[:] = [c for c in pend if not h.aio_command_completed(c)]
            if not pend:
                break
            h.poll(-1)
        assert not pend
    hs[1].shutdown()
    return len(pieces)


def apply_ops(h, rng, shadow, ops):
    """Writes (random data), zeroes and trims, ("write"|"zero"|"trim",
    offset, length) each, acknowledged and mirrored in the shadow."""
    for kind, off, n in ops:
        data = rng.randbytes(n) if kind == "write" else bytes(n)
        if kind == "write":
            h.pwrite(data, off)
        elif kind == "zero":
            h.zero(n, off)
        else:
            h.trim(n, off)
        shadow[off:off + n] = data


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


def check_range(arr, h, shadow, off, n, what):
    """n bytes at off must read back as the shadow says."""
    got = h.pread(n, off)
    if got != shadow[off:off + n]:
        bad = next(i for i in range(n) if got[i] != shadow[off + i])
        last = max(i for i in range(n) if got[i] != shadow[off + i])
        raise AssertionError(
            "%s: read of %d bytes at %d: byte %d is 0x%02x, shadow 0x%02x "
            "(%s); bad bytes %d..%d"
            % (what, n, off, off + bad, got[bad], shadow[off + bad],
               arr.describe(off + bad), off + bad, off + last))


def compare_all(arr, shadow, what, h=None, step=M):
    """The whole array must read back as the shadow."""
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

def deal_pieces(rng, size, chunk, row, nclients, start=0):
    """Cut the array (from byte start) into pieces of 1 byte to 2 rows
    and deal them round robin: the clients share every stripe but never a
    byte, so each client's shadow bytes are its own and must read back
    exact."""
    pieces, off = [], start
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
    any exception or failed request is an AssertionError.  region=(start,
    end) keeps the clients within those bytes of the array."""

    def __init__(self, arr, shadow, nclients, seed, what, region=None):
        self.what = what
        rng = random.Random(seed)
        start, end = region or (0, len(shadow))
        deal = deal_pieces(rng, end, arr.chunk, arr.row, nclients, start)
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
