#!/usr/bin/env bash
# The control socket (control=PATH) and its client, nbdkit-raid-ctl.
# status is one JSON object with every documented field, right for the
# array; the commands that must be refused are refused with "error: ..."
# and change nothing: fail of a member that does not exist (out of range,
# negative, not a number, missing), unknown commands, replace of an
# in-sync member, replace with a member that is too small (the reply says
# so), that does not exist, that is already another member, or that is
# "missing".  Then the accepted path: fail, a throttled rebuild watched
# through status (state rebuilding, recovery_offset growing) and through
# nbdkit-raid-ctl wait, scrub check, and raidcheck.py on the member files.
# A member path with a quote and a backslash must not break the JSON.

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires_python_module nbd
requires md5sum

ctl_tool=$top_srcdir/tools/nbdkit-raid-ctl
requires_plugin_feature 'raid_control=yes$' 'control socket'
if [ ! -f "$ctl_tool" ]; then
    echo "$0: SKIP: $ctl_tool is missing"
    exit 77
fi
test_seed

cat > "$tmpdir/control.py" <<'EOF'
import hashlib, json, os, random, subprocess, sys, time
import faults
import raidfail_lib as rf

seed = int(os.environ["SEED"])
work = os.environ["FAULTS_DIR"]
tool = os.environ["CTL_TOOL"]
K, M = 1024, 1024 * 1024
n, chunk, msize = 5, 16 * K, 1 * M


def ctl_tool(*args):
    r = subprocess.run(["/usr/bin/python3", tool] + list(args),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=60)
    return r.returncode, r.stdout, r.stderr


def md5(path):
    with open(path, "rb") as f:
        return hashlib.md5(f.read()).hexdigest()


rng = random.Random(seed)
with faults.Harness(work) as hz:
    members = [hz.member(msize, "local") for _ in range(n)]
    # A name JSON must escape.
    odd = os.path.join(work, 'odd"name\\member')
    os.rename(members[3].path, odd)
    members[3].path = odd
    paths = [m.path for m in members]
    sock = os.path.join(work, "ctl.sock")
    arr = rf.array(hz, members, level=6, chunk=chunk, layout="right-symmetric",
                   params=["control=" + sock, "rebuild-rate=2M"])
    ctl = rf.Control(sock)
    shadow = rf.fill(arr.h, rng)

    # status: every field, right for this array.
    st = ctl.status()
    size = arr.h.get_size()
    rows = msize // chunk
    for k, want in (("level", 6), ("layout", "right-symmetric"),
                    ("chunk", chunk), ("size", size), ("degraded", False),
                    ("failed", 0)):
        assert st.get(k) == want, "status %s is %r, expected %r" % (
            k, st.get(k), want)
    assert len(st["members"]) == n, st["members"]
    for i, m in enumerate(st["members"]):
        assert m["index"] == i and m["name"] == paths[i] and \
            m["state"] == "in_sync" and isinstance(m["recovery_offset"], int), \
            "status member %d: %r" % (i, m)
    r = st["rebuild"]
    assert r["running"] is False and isinstance(r["member"], int) and \
        isinstance(r["done"], int) and isinstance(r["total"], int) and \
        isinstance(r["mb_per_s"], (int, float)), "status rebuild: %r" % r
    s = st["scrub"]
    assert s["running"] is False and isinstance(s["repair"], bool) and \
        isinstance(s["done"], int) and isinstance(s["total"], int) and \
        s["mismatch_cnt"] == 0 and s["bad_data"] == [] and \
        isinstance(s["finished"], bool), "status scrub: %r" % s
    rf.log("  status: %s" % json.dumps(st)[:300])

    rc, out, err = ctl_tool(sock, "status")
    assert rc == 0 and json.loads(out) == ctl.status(), \
        "nbdkit-raid-ctl status: exit %d, %r %r" % (rc, out, err)

    # Refusals change nothing.
    before = ctl.status()["members"]
    sums = [md5(p) for p in paths]
    small = os.path.join(work, "small")
    with open(small, "wb") as f:
        f.truncate(msize - chunk)
    small_sum = md5(small)
    with open(os.path.join(work, "spare"), "wb") as f:
        f.truncate(msize)
    # The ones a lax number parser would take for a member come last, so
    # that one such bug does not hide the others.
    refusals = [
        "fail %d" % n, "fail -1", "fail", "fail 99999999999", "frobnicate",
        "", "scrub sideways", "status now",
        "replace 1 %s" % os.path.join(work, "spare"),        # 1 is in sync
        "replace %d %s" % (n, small),
        "fail abc", "fail 1x", "fail 2 3",
    ]
    problems = []
    for line in refusals:
        reply = ctl.cmd(line)
        rf.log("  %-28r -> %s" % (line.replace(work + "/", ""), reply))
        if not reply.startswith("error: "):
            problems.append("%r was accepted (%r)" % (line, reply))
        now = ctl.status()["members"]
        if now != before:
            problems.append("%r changed the members: %s"
                            % (line, [m["state"] for m in now]))
            break
    if problems:
        raise AssertionError("refusals: " + "; ".join(problems))
    assert [md5(p) for p in paths] == sums, "a refused command wrote to a member"
    rc, out, err = ctl_tool(sock, "fail", str(n))
    assert rc != 0 and "error" in out + err, \
        "nbdkit-raid-ctl fail %d: exit %d, %r %r" % (n, rc, out, err)
    rc, out, err = ctl_tool(os.path.join(work, "no-such.sock"), "status")
    assert rc != 0, "nbdkit-raid-ctl on a missing socket: exit 0"

    # Member 1 fails; the array serves it from parity.
    ctl.ok("fail 1")
    st = ctl.status()
    assert st["degraded"] is True and st["failed"] == 1 and \
        [m["state"] for m in st["members"]] == \
        ["in_sync", "failed", "in_sync", "in_sync", "in_sync"], \
        "after fail 1: %s" % st
    rf.compare_all(arr, shadow, "after fail 1")
    rf.random_ops(arr, rng, shadow, 40, "degraded")
    arr.h.flush()
    before = ctl.status()["members"]
    sums = [md5(p) for p in paths]
    link2 = os.path.join(work, "link-to-m2")
    os.symlink(paths[2], link2)
    for line in ("replace 1 %s" % small,
                 "replace 1 %s" % os.path.join(work, "no-such-file"),
                 "replace 1 %s" % paths[2],
                 "replace 1 %s" % link2,
                 "replace 1 missing",
                 "replace 1 nbd+unix:///?socket=%s" % os.path.join(work, "none.sock"),
                 "replace %d %s" % (n, os.path.join(work, "spare")),
                 "replace -1 %s" % os.path.join(work, "spare"),
                 "replace 0 %s" % os.path.join(work, "spare")):
        reply = ctl.error(line)
        rf.log("  %-28r -> %s" % (line.replace(work + "/", ""), reply))
        if line.startswith("replace 1 " + small):
            assert "small" in reply, \
                "the refusal of a too-small member does not say so: %r" % reply
        assert ctl.status()["members"] == before, \
            "%r changed the members: %s" % (line, ctl.status()["members"])
    assert md5(small) == small_sum, "a refused replacement wrote to its file"
    assert [md5(p) for p in paths] == sums, "a refused replace wrote to a member"

    # The accepted replacement, throttled to 2M/s: about half a second.
    spare = os.path.join(work, "spare")
    rf.noise_file(spare, msize)
    ctl.ok("replace 1 " + spare)
    seen = []
    def watch(st):
        m = st["members"][1]
        seen.append((m["state"], m["recovery_offset"], st["rebuild"]["running"],
                     st["rebuild"]["done"], st["rebuild"]["total"]))
    st = ctl.wait_idle(30, poll=0.02, during=watch)
    rebuilding = [x for x in seen if x[0] == "rebuilding"]
    assert rebuilding, "member 1 was never seen rebuilding: %s" % seen[:5]
    offs = [x[1] for x in rebuilding]
    assert offs == sorted(offs) and offs[-1] > offs[0], \
        "recovery_offset did not grow steadily: %s" % offs
    assert all(0 <= o <= rows * chunk for o in offs), offs
    assert all(x[2] and x[4] == rows * chunk and x[3] <= x[4]
               for x in rebuilding), "rebuild progress: %s" % rebuilding[:5]
    assert st["members"][1] == {"index": 1, "name": spare, "state": "in_sync",
                                "recovery_offset": st["members"][1]["recovery_offset"]}, \
        st["members"][1]
    assert not st["degraded"] and st["failed"] == 0, st
    rf.log("  rebuild: %d polls saw member 1 rebuilding, recovery_offset "
           "%d..%d" % (len(rebuilding), offs[0], offs[-1]))
    rf.compare_all(arr, shadow, "after the rebuild")

    # The client's wait follows a second rebuild to its end.
    ctl.ok("fail 3")
    spare2 = os.path.join(work, "spare2")
    rf.noise_file(spare2, msize)
    ctl.ok("replace 3 " + spare2)
    t0 = time.monotonic()
    rc, out, err = ctl_tool(sock, "wait")
    assert rc == 0, "nbdkit-raid-ctl wait: exit %d, %r %r" % (rc, out, err)
    st = ctl.status()
    assert not st["rebuild"]["running"] and \
        st["members"][3]["state"] == "in_sync", st
    rf.log("  nbdkit-raid-ctl wait: %.1f s, %d progress lines"
           % (time.monotonic() - t0, len(out.splitlines())))
    paths[1], paths[3] = spare, spare2

    ctl.ok("scrub check")
    st = ctl.wait_idle(30)
    assert st["scrub"]["finished"] and st["scrub"]["mismatch_cnt"] == 0 and \
        st["scrub"]["bad_data"] == [] and st["scrub"]["repair"] is False, \
        "scrub after the rebuilds: %s" % st["scrub"]
    rc, out, err = ctl_tool(sock, "scrub", "stop")
    assert rc == 0 and out.strip() == "ok", (rc, out, err)

    rf.compare_all(arr, shadow, "at the end")
    arr.stop()
    assert not os.path.exists(sock), "the control socket outlives nbdkit"
    rf.check_members(arr, paths, shadow, "at the end", work, inprocess=False)
    rf.log("  parity and data right on every member file")

    # nbdkit stops promptly in the middle of a throttled rebuild: it
    # exits on SIGTERM (faults.py SIGKILLs it after 2 s).
    arr.members[1], arr.members[3] = rf.FileMember(spare), rf.FileMember(spare2)
    arr.start()
    rf.compare_all(arr, shadow, "restarted on the replacements")
    ctl = rf.Control(sock)
    ctl.ok("fail 2")
    spare3 = os.path.join(work, "spare3")
    rf.noise_file(spare3, msize)
    ctl.ok("replace 2 " + spare3)
    time.sleep(0.1)
    assert ctl.status()["rebuild"]["running"], "the rebuild is not running"
    proc = arr.proc
    t0 = time.monotonic()
    arr.stop()
    took = time.monotonic() - t0
    assert proc.returncode == 0, \
        "stopping nbdkit during a rebuild took %.1f s, exit status %s (a " \
        "negative status: it had to be killed)" % (took, proc.returncode)
    rf.log("  nbdkit stopped in %.2f s during a rebuild" % took)
EOF

SEED=$seed FAULTS_DIR=$tmpdir PYTHONPATH=$top_srcdir/tests CTL_TOOL=$ctl_tool \
    python3 "$tmpdir/control.py" || exit 1

# In the background nbdkit runs in /, but control=PATH and the PATH of
# "replace N PATH" are relative to where they were written.
(
    cd "$tmpdir"
    for i in 0 1 2 3; do truncate -s 2M "rel$i"; done
    truncate -s 2M relspare
    nbdkit -U rel.sock -P rel.pid "$RAID_PLUGIN" metadata=none level=5 \
        chunk=4K control=rel.ctl rel0 rel1 rel2 rel3
    for _ in $(seq 50); do [ -s rel.pid ] && break; sleep 0.1; done
    trap 'kill "$(cat rel.pid)" 2>/dev/null || :' EXIT
    [ -S "$tmpdir/rel.ctl" ] || { echo "FAIL: control=rel.ctl is not $tmpdir/rel.ctl"; exit 1; }
    python3 "$ctl_tool" rel.ctl fail 1 > /dev/null
    python3 "$ctl_tool" rel.ctl replace 1 relspare > /dev/null
    name=$(python3 "$ctl_tool" rel.ctl status |
           python3 -c 'import json,sys; print(json.load(sys.stdin)["members"][1]["name"])')
    [ "$name" = "$tmpdir/relspare" ] ||
        { echo "FAIL: replace 1 relspare gave member 1 the name $name"; exit 1; }
    echo "ok: relative control= and replace paths, nbdkit in the background"
)
