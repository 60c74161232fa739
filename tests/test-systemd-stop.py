#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""systemctl stop leaves the array clean.  nbdkit is started the way
nbdkit-raid@NAME.service starts it: its ExecStart line (from the built
unit) with %i and the variables of a NAME.conf expanded as systemd does,
and its listening socket passed by socket activation (LISTEN_FDS=1,
LISTEN_PID, the socket on fd 3) as nbdkit-raid@NAME.socket passes it.
Only three things differ from the installed unit: the plugin is the one
just built, /run/nbdkit-raid is a directory of the test's, and nbdkit is
the one on PATH (under make check-valgrind, the sanitizer's wrapper).
Then SIGTERM, as systemctl stop sends.  nbdkit 1.32 then waits for its
connected clients to go, which an idle one never does (systemd ends
that with SIGKILL after TimeoutStopSec), so the array must be clean
before that, with the client still connected:

  1. a new array (create=true), resynced, written by a client that stays
     connected and never flushed (the superblocks say active); SIGTERM:
     md's superblocks on every member say clean (resync_offset all ones)
     within 5 s, md would accept them, their event counts agree; the
     client goes: nbdkit exits 0, the control socket is gone;
  2. started again from the conf less create=true (as the example conf
     says): nothing to resync, the data is there; written again, SIGTERM,
     clean, then SIGKILL: still clean, and the next start (3) resyncs
     nothing either;
  3. SIGTERM during a throttled rebuild: clean; once the client goes
     nbdkit exits 0 at once; the replacement's superblock records how
     far its rebuild got, and the next start goes on from there to the
     end with the data intact.

The same without raid.c's settle thread fails at 1 ("not clean 5 s
after SIGTERM").

RAID_TEST_SEED=N replays a run.
"""

import os
import shlex
import signal
import socket
import subprocess
import time

import faults
import mdsb
import workload as wl

K, M = 1024, 1024 * 1024
NAME = "vm1"
n, chunk, msize = 5, 64 * K, 8 * M
RATE = 2 * M                    # rebuild-rate: 7 MiB of data in 3.5 s
UNIT = os.path.join(os.environ.get("top_builddir", faults.TOP), "systemd",
                    "nbdkit-raid@.service")


def unit_exec_start():
    with open(UNIT) as f:
        return next(line.split("=", 1)[1].strip() for line in f
                    if line.startswith("ExecStart="))


def environment_file(path):
    """KEY="value" lines, the subset of systemd's EnvironmentFile= the
    example conf uses."""
    env = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                k, v = line.split("=", 1)
                env[k] = shlex.split(v)[0] if v else ""
    return env


def command(hz, conf):
    """ExecStart as systemd expands it: %i, and $VAR split at spaces."""
    env = environment_file(conf)
    argv = []
    for word in shlex.split(unit_exec_start()):
        if word.startswith("$"):
            argv += env.get(word[1:], "").split()
            continue
        word = word.replace("%i", NAME)
        word = word.replace("/run/nbdkit-raid/", hz.dir + "/run/")
        if word.endswith("/nbdkit-raid-plugin.so"):
            word = hz.plugin
        argv.append(word)
    assert os.path.basename(argv[0]) == "nbdkit", argv
    return ["nbdkit"] + argv[1:]


class Service:
    """nbdkit as the units run it, on the socket the socket unit holds."""

    starts = 0

    def __init__(self, hz, conf):
        Service.starts += 1
        self.paths = [w[5:] for w in environment_file(conf)["RAID_ARGS"].split()
                      if w.startswith("disk=")]
        self.sock = os.path.join(hz.dir, "run", NAME + ".sock")
        self.ctlpath = os.path.join(hz.dir, "run", NAME + ".ctl")
        self.logfile = os.path.join(hz.dir, "array-%d.log" % Service.starts)
        if os.path.exists(self.sock):
            os.unlink(self.sock)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(self.sock)
        listener.listen(16)
        fd = listener.fileno()
        # sd_listen_fds(): the sockets from fd 3 on, for this very pid.
        shim = 'LISTEN_PID=$$; export LISTEN_PID; ' \
            '[ "$FD" = 3 ] || eval "exec 3<&$FD $FD<&-"; exec "$@"'
        cmd = command(hz, conf)
        faults.log("  %s" % " ".join(cmd))
        with open(self.logfile, "ab") as log:
            self.proc = subprocess.Popen(
                ["/bin/sh", "-c", shim, "sh"] + cmd, pass_fds=(fd,),
                env=dict(os.environ, LISTEN_FDS="1", FD=str(fd)),
                stdin=subprocess.DEVNULL, stdout=log, stderr=log)
        listener.close()
        faults._procs.append(self.proc)
        self.ctl = faults.Control(self.ctlpath, wait=20)
        self.h = faults.nbd.NBD()
        self.h.set_strict_mode(0)
        self.h.connect_uri("nbd+unix:///?socket=" + self.sock)

    def sigterm_until_clean(self, paths, limit=5.0):
        """SIGTERM, as systemctl stop; the seconds until the superblocks
        say clean, the client still connected (nbdkit 1.32 then waits
        for it to go; a later one may already have gone)."""
        t0 = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        while any(mdsb.read(p)["resync_offset"] != mdsb.CLEAN for p in paths):
            assert time.monotonic() - t0 < limit, \
                "not clean %g s after SIGTERM:\n%s" % (limit, self.log())
            time.sleep(0.05)
        return time.monotonic() - t0

    def wait_exit(self):
        status = self.proc.wait(timeout=30)
        faults._procs.remove(self.proc)
        return status

    def kill(self):
        self.proc.kill()
        self.wait_exit()

    def expect_no_resync(self, shadow, what):
        st = self.ctl.status()
        assert not st["scrub"]["running"] and not st["scrub"]["resync"] and \
            not st["degraded"], "%s: %s" % (what, st["scrub"])
        assert "not shut down cleanly" not in self.log(), self.log()
        same(self.h, shadow, what)

    def log(self):
        with open(self.logfile, errors="replace") as f:
            return f.read()


def write_conf(path, raid_args):
    with open(path, "w") as f:
        f.write("# as systemd/nbdkit-raid.conf.example\n"
                'RAID_ARGS="%s"\nNBDKIT_ARGS="--threads=8"\n'
                % " ".join(raid_args))


def same(h, shadow, what):
    assert h.get_size() == len(shadow), what
    for off in range(0, len(shadow), M):
        got = h.pread(min(M, len(shadow) - off), off)
        assert got == shadow[off:off + len(got)], \
            "%s: the array differs from what was written in [%d, %d)" % (
                what, off, off + len(got))


def unflushed_write(svc, shadow, rng):
    """A write and no flush: the superblocks say active."""
    data = rng.randbytes(12345)
    off = rng.randrange(len(shadow) - len(data))
    svc.h.pwrite(data, off)
    shadow[off:off + len(data)] = data
    assert all(sb["resync_offset"] == 0 for sb in superblocks(svc.paths)), \
        "written and not flushed, yet the superblocks do not say active"


def superblocks(paths):
    sbs = [mdsb.read(p) for p in paths]
    for p, sb in zip(paths, sbs):
        assert sb["magic"] == mdsb.MAGIC and mdsb.check(sb) == [], \
            "%s: md would refuse it: %s" % (p, mdsb.check(sb))
    return sbs


def expect_clean(paths, what):
    sbs = superblocks(paths)
    bad = [p for p, sb in zip(paths, sbs) if sb["resync_offset"] != mdsb.CLEAN]
    assert not bad, "%s: not clean: %s" % (what, bad)
    events = {sb["events"] for sb in sbs}
    assert len(events) == 1, "%s: events differ: %s" % (what, events)
    return sbs


with faults.Test(timeout=120) as hz:
    if not os.path.isfile(UNIT):
        raise faults.Skip("%s was not built" % UNIT)
    os.mkdir(os.path.join(hz.dir, "run"))
    paths = []
    for i in range(n):
        paths.append(os.path.join(hz.dir, "d%d" % i))
        with open(paths[-1], "wb") as f:
            f.truncate(msize)
    conf = os.path.join(hz.dir, NAME + ".conf")
    raid_args = ["level=6", "chunk=%d" % chunk, "rebuild-rate=%d" % RATE] + \
        ["disk=" + p for p in paths]
    write_conf(conf, ["create=true"] + raid_args)

    # 1. A new array, resynced, written and not flushed; SIGTERM with the
    # client connected, then the client goes.
    svc = Service(hz, conf)
    svc.ctl.finished_scrub(30)
    shadow = wl.fill(svc.h, hz.rng)
    unflushed_write(svc, shadow, hz.rng)
    took = svc.sigterm_until_clean(paths)
    svc.h.shutdown()
    status = svc.wait_exit()
    assert status == 0, "nbdkit exited %d on SIGTERM:\n%s" % (status, svc.log())
    sbs = expect_clean(paths, "after SIGTERM")
    assert not os.path.exists(svc.ctlpath), "the control socket outlived nbdkit"
    faults.log("  SIGTERM with a client connected: clean in %.2f s, exit 0 "
               "once it left, events %d" % (took, sbs[0]["events"]))

    # 2. Again from the conf less create=true: nothing to resync.  Then
    # SIGTERM with a client that stays, and SIGKILL, as systemd sends
    # after TimeoutStopSec.
    write_conf(conf, raid_args)
    svc = Service(hz, conf)
    svc.expect_no_resync(shadow, "after a clean stop")
    unflushed_write(svc, shadow, hz.rng)
    took = svc.sigterm_until_clean(paths)
    svc.kill()
    expect_clean(paths, "SIGTERM, then SIGKILL with a client connected")
    faults.log("  SIGTERM, SIGKILL with a client connected: clean in %.2f s"
               % took)

    # 3. SIGTERM during a rebuild.
    svc = Service(hz, conf)
    svc.expect_no_resync(shadow, "after SIGTERM and SIGKILL")
    spare = os.path.join(hz.dir, "spare")
    faults.noise_file(spare, msize)
    svc.ctl.ok("fail 2")
    svc.ctl.ok("replace 2 " + spare)
    time.sleep(1)
    assert svc.ctl.status()["rebuild"]["running"]
    paths[2] = spare
    svc.sigterm_until_clean(paths)
    svc.h.shutdown()
    t0 = time.monotonic()
    status = svc.wait_exit()
    took = time.monotonic() - t0
    assert status == 0, "nbdkit exited %d on SIGTERM:\n%s" % (status, svc.log())
    assert took < 2, "nbdkit took %.1f s to stop a rebuild" % took
    sb = expect_clean(paths, "after SIGTERM during a rebuild")[2]
    rec = sb["recovery_offset"] * 512
    assert sb["feature_map"] & 2 and 0 < rec < msize - sb["data_offset"] * 512, \
        "the replacement's superblock: feature_map %#x, recovery_offset %d" \
        % (sb["feature_map"], rec)
    faults.log("  SIGTERM during a rebuild: exit 0 in %.2f s, clean, member 2 "
               "recovered to %d" % (took, rec))
    write_conf(conf, raid_args[:3] + ["disk=" + p for p in paths])
    svc = Service(hz, conf)
    st = svc.ctl.wait_idle(30)
    assert [m["state"] for m in st["members"]] == ["in_sync"] * n, st
    same(svc.h, shadow, "after the resumed rebuild")
    svc.h.shutdown()
    svc.proc.send_signal(signal.SIGTERM)
    assert svc.wait_exit() == 0
    expect_clean(paths, "at the end")
