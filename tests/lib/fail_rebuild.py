# SPDX-License-Identifier: BSD-3-Clause
"""What test-rebuild-fail-*.py share: four clients on their own
connections keep writing, zeroing, flushing and reading back their own
pieces of the array (every stripe is shared, workload.Load) while
members are failed, replaced by files full of noise and rebuilt at a
capped rate (rebuild-rate), so that each rebuild runs for a few seconds
under load.  Watch follows the rebuilds through the control socket's
status: a member being rebuilt only moves forward.  Then, still under
load, scrub check and scrub repair must find mismatch_cnt 0; at the end
scrub check must find mismatch_cnt 0 and raidcheck.py must find every
row's parity right on all member files and the shadow in them.  No
client request may fail, and every read must match the shadow.
"""

import os

import faults
import workload as wl

K, M = 1024, 1024 * 1024
msize = 2 * M


class Watch:
    """Polls status until the rebuild is idle, checking that the member
    being rebuilt only moves forward; at `half` (a fraction of the member)
    calls the action once."""

    def __init__(self, ctl, what):
        self.ctl, self.what = ctl, what
        self.last = {}
        self.polls = 0
        self.rebuilding_seen = set()

    def run(self, timeout, half=None, action=None):
        def during(st):
            self.polls += 1
            for m in st["members"]:
                i = m["index"]
                if m["state"] != "rebuilding":
                    self.last.pop(i, None)
                    continue
                self.rebuilding_seen.add(i)
                off = m["recovery_offset"]
                assert off >= self.last.get(i, 0), \
                    "%s: member %d's recovery_offset went back from %d to %d" \
                    % (self.what, i, self.last.get(i, 0), off)
                assert off <= st["rebuild"]["total"], (self.what, st)
                self.last[i] = off
                if self.action and off >= half:
                    act, self.action = self.action, None
                    act()
            return st
        self.action = action
        return self.ctl.wait_idle(timeout, poll=0.02, during=during)


def replacement(hz, name):
    path = os.path.join(hz.dir, name)
    faults.noise_file(path, msize)
    return path


def scrubs_under_load(ctl, what):
    """Scrubs race the clients' writes: with rows locked right, a check
    finds nothing and a repair changes nothing."""
    for mode in ("check", "repair"):
        ctl.ok("scrub " + mode)
        sc = ctl.wait_idle(60)["scrub"]
        assert sc["finished"] and sc["mismatch_cnt"] == 0, \
            "%s: scrub %s under writes: %s" % (what, mode, sc)


def check_at_end(arr, paths, shadow, what):
    wl.compare_all(arr, shadow, what + ": after the rebuilds")
    arr.ctl.ok("scrub check")
    st = arr.ctl.wait_idle(60)["scrub"]
    assert st["finished"] and st["mismatch_cnt"] == 0, \
        "%s: scrub after the rebuilds: %s" % (what, st)
    arr.stop()
    faults.check_members(arr, paths, shadow, what)
    faults.log("  %s: scrub and raidcheck.py find every row right" % what)
