#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The OCF resource agent passes resource-agents' ocf-tester, on an md
array whose members are served remotely by nbdkit (tests/lib/faults.py):
its meta-data is valid against ra-api-1.dtd and readable by nobody, and
start, monitor (running 0, stopped 7, the probe of a stopped array 7
even with every program missing), stop, a start of a started array and
a stop of a stopped one answer as the OCF spec says.  ocf-tester's last
action is a stop: after it nothing runs, and every member's md
superblock is clean with the same event count.  The export is a Unix
socket here, and TCP in test-ocf-stop-clean.py and test-ocf-kill.py.
"""

import os
import subprocess

import faults
import mdsb
import ocf

with faults.Test(timeout=240) as t:
    ocf.requires(tester=True)
    members, shadow = ocf.md_array(t)
    head = ocf.Head(t, "raid1", members, tcp=False)
    cmd = ["ocf-tester", "-n", head.name]
    for k, v in head.params.items():
        cmd += ["-o", "%s=%s" % (k, v)]
    r = subprocess.run(cmd + [ocf.AGENT], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, timeout=200,
                       env=dict(os.environ, HA_LOGFILE=head.halog))
    faults.log(r.stdout)
    assert r.returncode == 0 and "passed all tests" in r.stdout, \
        "ocf-tester: exit status %d\n%s" % (r.returncode, head.log())
    assert not os.path.exists(head.params["pidfile"]) and \
        not os.path.exists(head.params["socket"]), \
        "after ocf-tester's last stop: %s" % os.listdir(os.path.dirname(
            head.params["pidfile"]))
    sbs = [mdsb.read(m.path) for m in members]
    assert all(sb["resync_offset"] == mdsb.CLEAN for sb in sbs) and \
        len({sb["events"] for sb in sbs}) == 1, \
        "after ocf-tester's last stop: resync_offset %s, events %s" % (
            [sb["resync_offset"] for sb in sbs], [sb["events"] for sb in sbs])
