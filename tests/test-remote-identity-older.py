#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A remote member's server of an md array is restarted over a copy of its
file taken before another member failed (its superblock's event count is
behind what was written to it since).  The first request that reconnects
must find that the new connection is not the member's disk (events
behind), fail the member with that reason in the log, and never read it:
every chunk reads back byte for byte as written, from the other members,
and writes go on.  (tests/lib/remote_restart.py.)
"""

import remote_restart

remote_restart.run('md', 'older')
