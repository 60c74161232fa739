#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""A remote member's server of a raw array (metadata=none) is restarted
while the array is idle, over the same file.  A raw member carries
nothing that says which disk it is, and the plugin's proof that a new
connection reaches the same disk is that the connection it made at open
(the sentinel) still answers; after a restart it does not, and nothing
proves the new server holds the member's data.  So the member is failed
with that reason in the log, and never read: every chunk reads back as
written, from the other members, and writes go on.
(tests/lib/remote_restart.py; md arrays: test-remote-restart.py.)
"""

import remote_restart

remote_restart.run('raw', 'same')
