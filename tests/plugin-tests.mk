# Plugin tests.  Each plugin engine has its own Check program that links
# only the files it tests.

# Geometry: md's RAID-5/6 layouts (plugin/geometry.c).
if HAVE_CHECK
check_PROGRAMS += test_geometry
TESTS += test_geometry
test_geometry_SOURCES = test_geometry.c ../plugin/geometry.c
test_geometry_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# Integration tests: real nbdkit processes serving the plugin, real nbdsh /
# qemu clients, and an independent parity checker (raidcheck.py) that reads
# the member files.  functions.sh holds their helpers.  TSAN_TESTS are the
# ones make check-tsan runs too: where the plugin's threads meet (clients
# at once, control commands and jobs, remote members failing, the bitmap's
# thread); add a concurrency test there as well.
EXTRA_DIST += raidcheck.py
TESTS += test-raid-dump-plugin.sh
EXTRA_DIST += test-raid-dump-plugin.sh
TESTS += test-raid-bad-input.sh
EXTRA_DIST += test-raid-bad-input.sh
TESTS += test-raid-shadow.sh
EXTRA_DIST += test-raid-shadow.sh
TESTS += test-raid-concurrent.sh
TSAN_TESTS += test-raid-concurrent.sh
EXTRA_DIST += test-raid-concurrent.sh
TESTS += test-raid-qemu.sh
EXTRA_DIST += test-raid-qemu.sh

# Failure tests (issue 5): degraded reads and writes, members failing
# under load, rebuild, scrub and the control socket.  raidfail_lib.py is
# their shared Python; faults.py runs the member servers.
EXTRA_DIST += raidfail_lib.py
TESTS += test-raid-fail-degraded.sh
EXTRA_DIST += test-raid-fail-degraded.sh
TESTS += test-raid-fail-burst.sh
TSAN_TESTS += test-raid-fail-burst.sh
EXTRA_DIST += test-raid-fail-burst.sh
TESTS += test-raid-fail-control.sh
TSAN_TESTS += test-raid-fail-control.sh
EXTRA_DIST += test-raid-fail-control.sh
TESTS += test-raid-fail-scrub.sh
EXTRA_DIST += test-raid-fail-scrub.sh
TESTS += test-raid-fail-rebuild.sh
TSAN_TESTS += test-raid-fail-rebuild.sh
EXTRA_DIST += test-raid-fail-rebuild.sh

# Remote members (NBD URIs) and the fault-injection harness: faults.py
# serves each member through its own nbdkit (error and delay filters) so
# that tests can fail, kill, stop and restart it.
EXTRA_DIST += faults.py
TESTS += test-raid-remote-shadow.sh
TSAN_TESTS += test-raid-remote-shadow.sh
EXTRA_DIST += test-raid-remote-shadow.sh
TESTS += test-raid-remote-eio.sh
TSAN_TESTS += test-raid-remote-eio.sh
EXTRA_DIST += test-raid-remote-eio.sh
TESTS += test-raid-remote-kill.sh
TSAN_TESTS += test-raid-remote-kill.sh
EXTRA_DIST += test-raid-remote-kill.sh
TESTS += test-raid-remote-hang.sh
TSAN_TESTS += test-raid-remote-hang.sh
EXTRA_DIST += test-raid-remote-hang.sh
TESTS += test-raid-remote-restart.sh
TSAN_TESTS += test-raid-remote-restart.sh
EXTRA_DIST += test-raid-remote-restart.sh
TESTS += test-raid-fail-random.sh
TSAN_TESTS += test-raid-fail-random.sh
EXTRA_DIST += test-raid-fail-random.sh
# The randomized test's program, and the seeds that ever failed, replayed.
EXTRA_DIST += raidfail_random.py random-seeds.regress
TESTS += test-raid-fail-random-regress.sh
EXTRA_DIST += test-raid-fail-random-regress.sh

# md v1.2 superblocks (plugin/metadata.c): hand-built superblocks, the
# kernel's checksum, refusals.  The test supplies its own member_io_run.
if HAVE_CHECK
check_PROGRAMS += test_metadata
TESTS += test_metadata
test_metadata_SOURCES = test_metadata.c ../plugin/metadata.c
test_metadata_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# Guest tests (issue 6): a Debian kernel under qemu (TCG) with mdadm,
# nbd-client and e2fsprogs checks the plugin against Linux md and the
# kernel's NBD client.  vm/build-guest.sh builds the guest once into
# ${XDG_CACHE_HOME:-/var/tmp}/nbdkit-raid-vm; they skip without qemu.
EXTRA_DIST += vm/build-guest.sh vm/common.sh vm/guest-lib.sh vm/init \
	vm/modprobe-log vm/patgen.c vm/guest-md-create.sh
TESTS += vm/test-vm-mdadm-to-plugin.sh
EXTRA_DIST += vm/test-vm-mdadm-to-plugin.sh
EXTRA_DIST += vm/guest-nbd.sh
TESTS += vm/test-vm-nbd-client.sh
EXTRA_DIST += vm/test-vm-nbd-client.sh

# md v1.2 superblocks end to end (issue 6): create=true, assembling from
# the superblocks, stale members, bad superblocks and parameters,
# clean/active across clean and unclean shutdowns.
TESTS += test-raid-md.sh
EXTRA_DIST += test-raid-md.sh
TESTS += test-raid-md-bitmap.sh
TSAN_TESTS += test-raid-md-bitmap.sh
EXTRA_DIST += test-raid-md-bitmap.sh
EXTRA_DIST += vm/guest-md-check.sh
TESTS += vm/test-vm-plugin-to-mdadm.sh
EXTRA_DIST += vm/test-vm-plugin-to-mdadm.sh
EXTRA_DIST += vm/fill-missing.py

# md write-intent bitmaps between the plugin and Linux md (a guest):
# mdadm's bitmaps through the plugin, the plugin's through md, and md's
# bitmap resync after the plugin is killed.
TESTS += vm/test-vm-bitmap.sh
EXTRA_DIST += vm/test-vm-bitmap.sh vm/guest-md-bitmap.sh
