#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A remote member's server of an md array is restarted over the same file
grown by 1 MiB (another disk, by its size).  The first request that
reconnects must find that the new connection is not the member's disk
(the wrong size), fail the member with that reason in the log, and never
read it: every chunk reads back byte for byte as written, from the other
members, and writes go on.  (tests/lib/remote_restart.py.)
"""

import remote_restart

remote_restart.run('md', 'bigger')
