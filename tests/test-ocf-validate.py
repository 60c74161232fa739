#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""The agent's validate-all refuses what cannot work, with the OCF code
Pacemaker acts on and a reason: a mistake in the configuration is
OCF_ERR_CONFIGURED (6: wrong on every node), what this node lacks is
OCF_ERR_INSTALLED (5: another node may have it).  A start with such
parameters fails the same way and starts nothing; a probe (monitor with
interval 0) of an array never started says not running (7) even when
every program is missing, as Pacemaker's first probe on a node without
the software needs.  Nothing here connects to a member: validate-all
only reads the parameters and this node's files.
"""

import os

import faults
import ocf

CONFIGURED = [
    (dict(members=""), "members is empty"),
    (dict(members="level=6 MEMBERS"), "is a plugin parameter"),
    (dict(members="disk=relative/m0 MEMBERS"), "neither an NBD URI"),
    (dict(plugin_args="create=true"), "make the array once"),
    (dict(plugin_args="control=/run/other.ctl"), "control parameter"),
    (dict(plugin_args="disk=/dev/sdz"), "is a member"),
    (dict(plugin_args="readd"), "not KEY=VALUE"),
    (dict(nbdkit_args="-p 10810"), "the agent sets where nbdkit listens"),
    (dict(nbdkit_args="--exit-with-parent"), "do not make a service"),
    (dict(nbdkit_args="--tls=require"), "without TLS"),
    (dict(port="nbd"), "not a TCP port"),
    (dict(port="70000"), "not a TCP port"),
    (dict(socket="export.sock"), "not an absolute path"),
    (dict(pidfile="nbdkit.pid"), "not an absolute path"),
    (dict(stop_timeout="soon"), "not a number of seconds"),
]
INSTALLED = [
    (dict(members="MEMBERS disk=/no/such/disk"), "does not exist on this node"),
    (dict(nbdkit="/no/such/nbdkit"), "not an executable program"),
    (dict(plugin="/no/such/nbdkit-raid-plugin.so"), "no such file"),
    (dict(ctl_tool="/no/such/nbdkit-raid-ctl"), "not an executable program"),
]

with faults.Test(timeout=60) as t:
    ocf.requires()
    paths = []
    for i in range(3):
        paths.append(os.path.join(t.dir, "m%d" % i))
        open(paths[-1], "w").close()
    good = " ".join(["disk=" + p for p in paths] +
                    ["nbd://127.0.0.1:1/m3", "nbd+unix:///?socket=/x.sock",
                     "missing"])
    n = 0
    for want, cases in ((ocf.ERR_CONFIGURED, CONFIGURED),
                        (ocf.ERR_INSTALLED, INSTALLED)):
        for params, reason in cases:
            n += 1
            params = {k: v.replace("MEMBERS", good) for k, v in params.items()}
            tcp = "socket" not in params
            head = ocf.Head(t, "case%d" % n, [], tcp=tcp,
                            **dict(dict(members=good), **params))
            for action in ("validate-all", "start"):
                rc, out = head.run(action)
                assert rc == want and reason in out, \
                    "%s with %s: exit status %d, expected %d saying %r: %s" \
                    % (action, params, rc, want, reason, out)
            assert not os.path.exists(head.params["pidfile"]), \
                "a start with %s left a pid file" % params
    head = ocf.Head(t, "good", [], members=good)
    head.must("validate-all")
    head = ocf.Head(t, "probe", [], members=good, nbdkit="/no/such/nbdkit",
                    ctl_tool="/no/such/nbdkit-raid-ctl")
    head.must("monitor", ocf.NOT_RUNNING, interval=0)
    faults.log("  %d refusals, each with its code and reason" % n)
