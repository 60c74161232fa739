# SPDX-License-Identifier: BSD-3-Clause
"""Fail and replace members of a running array, many times over.

    replace-cycles.py CONTROL-SOCKET CYCLES SIZE DIR NAME FILE...

FILE... are the array's members in role order.  Each cycle fails one
member (by the control socket), replaces it with a new sparse file
DIR/NAME-rK of SIZE bytes and waits for the rebuild; the replaced file is
deleted.  Prints the members in role order at the end, one a line.  For
test-vm-plugin-to-mdadm.sh: md must then assemble what the plugin left
after hundreds of replacements, more than md's 384 dev_roles slots.
"""

import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "lib"))
import faults  # noqa: E402

sock, cycles, size, where, name = sys.argv[1:6]
roles = sys.argv[6:]
ctl = faults.Control(sock)
ctl.wait_idle(120)                  # a new array's first resync
rng = random.Random(1)
for c in range(int(cycles)):
    k = rng.randrange(len(roles))
    new = os.path.join(where, "%s-r%d" % (name, c))
    with open(new, "wb") as f:
        f.truncate(int(size))
    ctl.ok("fail %d" % k)
    ctl.ok("replace %d %s" % (k, new))
    ctl.wait_idle(120, poll=0.002)
    os.unlink(roles[k])
    roles[k] = new
print("\n".join(roles))
