#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A remote member's server of an md array is restarted while the array is
idle (a planned restart of a storage server: kill, start again on the
same socket over the same file, no client I/O in between).  Every new
connection is checked against the member's md superblock, which is the
one last written, so the member must stay in the array: every read
succeeds at the first try, and writes made afterwards reach it (every
row's parity is good on the member files at the end).  The plugin's
connections to the old server, one per nbdkit thread, are stale by
then; each must be noticed and replaced without failing a request.
(tests/lib/remote_restart.py; raw arrays: test-remote-restart-raw.py.)
"""

import remote_restart

remote_restart.run('md', 'same')
