# SPDX-License-Identifier: BSD-3-Clause
# Plugin tests.  Each plugin engine has its own Check program that links
# only the files it tests.

# Geometry: md's RAID-5/6 layouts (plugin/geometry.c).
if HAVE_CHECK
check_PROGRAMS += test_geometry
TESTS += test_geometry
test_geometry_SOURCES = test_geometry.c lib/check_run.h ../plugin/geometry.c
test_geometry_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# The NBD member backend alone (plugin/member_nbd*.c) against real nbdkit
# servers: ids reused, the batch timeout, ids under concurrent I/O (also
# under ThreadSanitizer: test-member-nbd-tsan.sh builds it so), batches
# without memory (allocations wrapped), servers without flush.
if HAVE_CHECK
if ENABLE_PLUGIN
check_PROGRAMS += test_member_nbd
TESTS += test_member_nbd
test_member_nbd_SOURCES = test_member_nbd.c lib/check_run.h ../plugin/member_nbd.c \
	../plugin/member_nbd_connect.c ../plugin/member_nbd_internal.h \
	../plugin/member.c ../plugin/md_badblocks.c ../plugin/member_table.c
test_member_nbd_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS) $(LIBNBD_CFLAGS)
test_member_nbd_LDFLAGS = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
test_member_nbd_LDADD = $(LIBNBD_LIBS) $(CHECK_LIBS) $(PTHREAD_LIBS)
endif
endif
TESTS += test-member-nbd-tsan.sh
EXTRA_DIST += test-member-nbd-tsan.sh

# Integration tests: real nbdkit processes serving the plugin, real nbdsh /
# qemu clients, and an independent parity checker (lib/raidcheck.py) that
# reads the member files.  Named feature first (test-md-*, test-readd-*,
# ...; tests/README.md lists the features).  Shell tests (test-*.sh)
# source lib/functions.sh; Python tests (test-*.py, run by the test
# driver with /usr/bin/python3) have lib/faults.py for their harness (the
# test's environment, member servers, arrays, control sockets, faults)
# and lib/workload.py for what their clients do (fills, random requests,
# loads, all against a shadow image).
# TSAN_TESTS are the ones make check-tsan runs too: where the plugin's
# threads meet (clients at once, control commands and jobs, remote members
# failing, the bitmap's thread); add a concurrency test there as well.
# VALGRIND_TESTS, with the Check programs, are the ones make check-valgrind
# runs: one or two per path by which the plugin's bytes reach a member, a
# client or the control socket (tests/Makefile.am says why not all).
EXTRA_DIST += lib/raidcheck.py lib/faults.py lib/workload.py lib/mdsb.py
TESTS += test-plugin-dump.sh
EXTRA_DIST += test-plugin-dump.sh
TESTS += test-parity-impls.py
EXTRA_DIST += test-parity-impls.py
TESTS += test-plugin-exports.sh
EXTRA_DIST += test-plugin-exports.sh
TESTS += test-bad-input.sh
VALGRIND_TESTS += test-bad-input.sh
EXTRA_DIST += test-bad-input.sh
TESTS += test-io-shadow.sh
VALGRIND_TESTS += test-io-shadow.sh
EXTRA_DIST += test-io-shadow.sh
TESTS += test-io-concurrent.sh
VALGRIND_TESTS += test-io-concurrent.sh
TSAN_TESTS += test-io-concurrent.sh
EXTRA_DIST += test-io-concurrent.sh
TESTS += test-qemu-img-io.sh
EXTRA_DIST += test-qemu-img-io.sh
TESTS += test-ring-fallback.sh
TSAN_TESTS += test-ring-fallback.sh
EXTRA_DIST += test-ring-fallback.sh
TESTS += test-remote-flush-enotsup.sh
EXTRA_DIST += test-remote-flush-enotsup.sh

# Failures: degraded reads and writes, members failing under load,
# rebuild, scrub and the control socket.
EXTRA_DIST += lib/fail_degraded.py
TESTS += test-fail-degraded-r5.py
EXTRA_DIST += test-fail-degraded-r5.py
TESTS += test-fail-degraded-r6.py
EXTRA_DIST += test-fail-degraded-r6.py
TESTS += test-fail-burst.py
TSAN_TESTS += test-fail-burst.py
EXTRA_DIST += test-fail-burst.py
EXTRA_DIST += lib/fail_control.py
TESTS += test-ctl-status.py
TSAN_TESTS += test-ctl-status.py
EXTRA_DIST += test-ctl-status.py
TESTS += test-ctl-refused.py
TSAN_TESTS += test-ctl-refused.py
EXTRA_DIST += test-ctl-refused.py
TESTS += test-ctl-fail-replace.py
VALGRIND_TESTS += test-ctl-fail-replace.py
TSAN_TESTS += test-ctl-fail-replace.py
EXTRA_DIST += test-ctl-fail-replace.py
TESTS += test-rebuild-stop.py
TSAN_TESTS += test-rebuild-stop.py
EXTRA_DIST += test-rebuild-stop.py
# The resync a kill during a rebuild leaves owed runs right after the
# rebuild, and status, show and metrics say it is owed until then.
TESTS += test-rebuild-resync-owed.py
EXTRA_DIST += test-rebuild-resync-owed.py
TESTS += test-ctl-relative.sh
EXTRA_DIST += test-ctl-relative.sh
# What ops tools read: nbdkit-raid-ctl metrics (Prometheus) against the
# status JSON and known requests, and show's and wait's finish estimate.
TESTS += test-ctl-metrics.py
VALGRIND_TESTS += test-ctl-metrics.py
EXTRA_DIST += test-ctl-metrics.py
# The service (systemd/): the units pass systemd-analyze verify, and
# nbdkit started as the units start it leaves the array clean on SIGTERM,
# even with a client that stays connected.
TESTS += test-systemd-verify.sh
EXTRA_DIST += test-systemd-verify.sh
TESTS += test-systemd-stop.py
EXTRA_DIST += test-systemd-stop.py
# The service stays up: clients that reset their connection with reads
# queued (nbdkit 1.32.4 to 1.33.9 abort) while another client's writes
# and reads are checked against a shadow.
TESTS += test-service-rude-clients.py
TSAN_TESTS += test-service-rude-clients.py
# Not under check-tsan: the signals that come after nbdkit has closed its
# own quit pipe make nbdkit's handler (not the plugin's) leave errno
# changed, which ThreadSanitizer reports ("signal handler spoils errno",
# in nbdkit's frames).  The race this test is about was found by
# check-tsan in test-ctl-clients.py, which stays there.
TESTS += test-service-stop-signals.py
EXTRA_DIST += test-service-stop-signals.py
EXTRA_DIST += test-service-rude-clients.py
# What the service's Restart=on-failure relies on: nbdkit killed under
# load and started again loses no acknowledged write.
TESTS += test-service-sigkill.py
EXTRA_DIST += test-service-sigkill.py
# A clean stop logs no line at error level: a start, writes and SIGTERM
# with an idle client (the array still settles clean), SIGTERM during a
# rebuild and during a resync.
TESTS += test-service-stop-quiet.py
EXTRA_DIST += test-service-stop-quiet.py
# The OCF resource agent (ocf/nbdkit-raid), run as Pacemaker runs it on
# md arrays whose members are remote: ocf-tester, validate-all's
# refusals, a clean stop and a second head with nothing to resync, and
# a kill -9 after which monitor says failed and a second head resyncs.
TESTS += test-ocf-tester.py
EXTRA_DIST += test-ocf-tester.py
TESTS += test-ocf-validate.py
EXTRA_DIST += test-ocf-validate.py
TESTS += test-ocf-stop-clean.py
EXTRA_DIST += test-ocf-stop-clean.py
TESTS += test-ocf-kill.py
EXTRA_DIST += test-ocf-kill.py
EXTRA_DIST += lib/ocf.py
TESTS += test-scrub-repair.py
EXTRA_DIST += test-scrub-repair.py
# What a repairing scrub rewrote is flushed: a member server restarting
# after it costs nothing.
TESTS += test-scrub-repair-durable.py
EXTRA_DIST += test-scrub-repair-durable.py
EXTRA_DIST += lib/fail_rebuild.py
TESTS += test-rebuild-fail-second.py
TSAN_TESTS += test-rebuild-fail-second.py
EXTRA_DIST += test-rebuild-fail-second.py
TESTS += test-rebuild-fail-again.py
TSAN_TESTS += test-rebuild-fail-again.py
EXTRA_DIST += test-rebuild-fail-again.py

# Remote members (NBD URIs): faults.py serves each member through its own
# nbdkit (error and delay filters) so that tests can fail, kill, stop and
# restart it.
TESTS += test-remote-shadow.py
VALGRIND_TESTS += test-remote-shadow.py
TSAN_TESTS += test-remote-shadow.py
EXTRA_DIST += test-remote-shadow.py
EXTRA_DIST += lib/remote_eio.py
TESTS += test-remote-eio-reads.py
TSAN_TESTS += test-remote-eio-reads.py
EXTRA_DIST += test-remote-eio-reads.py
TESTS += test-remote-eio-writes.py
VALGRIND_TESTS += test-remote-eio-writes.py
TSAN_TESTS += test-remote-eio-writes.py
EXTRA_DIST += test-remote-eio-writes.py
TESTS += test-remote-kill.py
VALGRIND_TESTS += test-remote-kill.py
TSAN_TESTS += test-remote-kill.py
EXTRA_DIST += test-remote-kill.py
EXTRA_DIST += lib/remote_hang.py
TESTS += test-remote-slow.py
TSAN_TESTS += test-remote-slow.py
EXTRA_DIST += test-remote-slow.py
TESTS += test-remote-hang.py
TSAN_TESTS += test-remote-hang.py
EXTRA_DIST += test-remote-hang.py
# remote_restart.py: a member's server restarted over the same disk or
# another, for each of these.
EXTRA_DIST += lib/remote_restart.py
TESTS += test-remote-restart.py
TSAN_TESTS += test-remote-restart.py
EXTRA_DIST += test-remote-restart.py
TESTS += test-remote-restart-raw.py
TSAN_TESTS += test-remote-restart-raw.py
EXTRA_DIST += test-remote-restart-raw.py
TESTS += test-remote-restart-unflushed.py
TSAN_TESTS += test-remote-restart-unflushed.py
EXTRA_DIST += test-remote-restart-unflushed.py
TESTS += test-remote-identity-empty.py
TSAN_TESTS += test-remote-identity-empty.py
EXTRA_DIST += test-remote-identity-empty.py
TESTS += test-remote-identity-bigger.py
TSAN_TESTS += test-remote-identity-bigger.py
EXTRA_DIST += test-remote-identity-bigger.py
TESTS += test-remote-identity-older.py
TSAN_TESTS += test-remote-identity-older.py
EXTRA_DIST += test-remote-identity-older.py
TESTS += test-remote-alias.sh
EXTRA_DIST += test-remote-alias.sh
TESTS += test-remote-blocksize.py
EXTRA_DIST += test-remote-blocksize.py
TESTS += test-remote-noflush.sh
EXTRA_DIST += test-remote-noflush.sh
# A remote member's requests share few connections (at most
# two per member) with many in flight on each, not one connection per
# nbdkit thread (the log filter's lines on each member server count them).
TESTS += test-remote-shared-conn.py
EXTRA_DIST += test-remote-shared-conn.py
TESTS += test-fail-random.py
VALGRIND_TESTS += test-fail-random.py
TSAN_TESTS += test-fail-random.py
EXTRA_DIST += test-fail-random.py
# The randomized test's module (with its model of bad sectors), and the
# seeds that ever failed, replayed.
EXTRA_DIST += lib/raidfail_random.py lib/raidfail_sectors.py \
	lib/random-seeds.regress
TESTS += test-fail-random-regress.py
EXTRA_DIST += test-fail-random-regress.py

# md v1.x superblocks (plugin/md_super.c): hand-built superblocks, the
# kernel's checksum, refusals, each version's place.  The test supplies
# its own member_io_run.  lib/le_store.h: the little-endian stores it
# shares with test_md_bitmap_super.
if HAVE_CHECK
check_PROGRAMS += test_md_super
TESTS += test_md_super
test_md_super_SOURCES = test_md_super.c lib/check_run.h lib/le_store.h \
	../plugin/md_super.c
test_md_super_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# md's bad-block log (plugin/md_badblocks.c): hand-built logs, the
# encoder's bytes, random sets against a per-sector model, log full,
# refusals, mdadm's places for the log.
if HAVE_CHECK
check_PROGRAMS += test_md_badblocks
TESTS += test_md_badblocks
test_md_badblocks_SOURCES = test_md_badblocks.c lib/check_run.h \
	lib/le_store.h lib/random_seed.h ../plugin/md_badblocks.c
test_md_badblocks_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# The bitmap's superblock (plugin/md_bitmap_super.c): hand-built, read
# and written back, md's refusals, mdadm's area sizes.
if HAVE_CHECK
check_PROGRAMS += test_md_bitmap_super
TESTS += test_md_bitmap_super
test_md_bitmap_super_SOURCES = test_md_bitmap_super.c lib/check_run.h \
	lib/le_store.h ../plugin/md_bitmap_super.c
test_md_bitmap_super_LDADD = $(CHECK_LIBS)
endif

# Signatures of other formats (plugin/signature.c): what a disk carries
# that the array must not overwrite unasked.
if HAVE_CHECK
check_PROGRAMS += test_signature
TESTS += test_signature
test_signature_SOURCES = test_signature.c lib/check_run.h ../plugin/signature.c
test_signature_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# Member I/O batches (plugin/member.c): every request runs, even when a
# large batch's list cannot be allocated (malloc wrapped by the test);
# the error classes; the file backend's short reads.
if HAVE_CHECK
check_PROGRAMS += test_member
TESTS += test_member
test_member_SOURCES = test_member.c ../plugin/member.c ../plugin/md_badblocks.c ../plugin/member_file.c ../plugin/member_file_claim.c
test_member_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS) $(LIBURING_CFLAGS)
test_member_LDFLAGS = -Wl,--wrap=malloc
test_member_LDADD = $(LIBURING_LIBS) $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# Guest tests: a Debian kernel under qemu (TCG) with mdadm,
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

# md v1.2 superblocks end to end: create=true, assembling from
# the superblocks, stale members, bad superblocks and parameters,
# clean/active across clean and unclean shutdowns, resyncs that stop and
# go on (md-functions.sh and shadow_client.py: their helpers); the
# write-intent bitmap (md_bitmap.py: what its tests share).
EXTRA_DIST += lib/md-functions.sh lib/shadow_client.py
TESTS += test-md-create.sh
VALGRIND_TESTS += test-md-create.sh
EXTRA_DIST += test-md-create.sh
# md v1.0 and v1.1: their places, bitmaps and data offsets;
# a member with two superblocks, and the parameter; re-add and replace.
TESTS += test-md-versions.sh
EXTRA_DIST += test-md-versions.sh
TESTS += test-md-versions-refused.sh
EXTRA_DIST += test-md-versions-refused.sh
TESTS += test-md-versions-replace.sh
EXTRA_DIST += test-md-versions-replace.sh
TESTS += test-md-left-out.sh
EXTRA_DIST += test-md-left-out.sh
TESTS += test-md-refused.sh
EXTRA_DIST += test-md-refused.sh
TESTS += test-md-events.sh
VALGRIND_TESTS += test-md-events.sh
EXTRA_DIST += test-md-events.sh
TESTS += test-md-clean.sh
EXTRA_DIST += test-md-clean.sh
TESTS += test-md-resync-resume.sh
EXTRA_DIST += test-md-resync-resume.sh
TESTS += test-md-fail-crash.py
TSAN_TESTS += test-md-fail-crash.py
EXTRA_DIST += test-md-fail-crash.py
EXTRA_DIST += lib/md_bitmap.py
TESTS += test-bitmap-create.py
TSAN_TESTS += test-bitmap-create.py
EXTRA_DIST += test-bitmap-create.py
TESTS += test-bitmap-dirty.py
VALGRIND_TESTS += test-bitmap-dirty.py
TSAN_TESTS += test-bitmap-dirty.py
EXTRA_DIST += test-bitmap-dirty.py
TESTS += test-bitmap-clean.py
TSAN_TESTS += test-bitmap-clean.py
EXTRA_DIST += test-bitmap-clean.py
TESTS += test-bitmap-stale.py
TSAN_TESTS += test-bitmap-stale.py
EXTRA_DIST += test-bitmap-stale.py
TESTS += test-bitmap-corrupt.py
TSAN_TESTS += test-bitmap-corrupt.py
EXTRA_DIST += test-bitmap-corrupt.py
TESTS += test-bitmap-none.py
TSAN_TESTS += test-bitmap-none.py
EXTRA_DIST += test-bitmap-none.py
TESTS += test-md-foreign.sh
EXTRA_DIST += test-md-foreign.sh
TESTS += test-replace-foreign.sh
EXTRA_DIST += test-replace-foreign.sh
# Exclusive claims: a second array on a running array's disks, by the
# same paths, a symlink, a hard link, a loop device over a member file
# and the file under a member loop device, is refused and writes
# nothing; a replacement another array holds is refused; claims end
# with the array; read-only arrays claim too.
EXTRA_DIST += lib/claim.py
TESTS += test-claim-same-path.py
EXTRA_DIST += test-claim-same-path.py
TESTS += test-claim-symlink.py
EXTRA_DIST += test-claim-symlink.py
TESTS += test-claim-hardlink.py
EXTRA_DIST += test-claim-hardlink.py
TESTS += test-claim-loop-over-member.py
EXTRA_DIST += test-claim-loop-over-member.py
TESTS += test-claim-file-under-loop.py
EXTRA_DIST += test-claim-file-under-loop.py
TESTS += test-claim-replace.py
EXTRA_DIST += test-claim-replace.py
TESTS += test-claim-after-stop.py
EXTRA_DIST += test-claim-after-stop.py
TESTS += test-claim-readonly.py
EXTRA_DIST += test-claim-readonly.py
EXTRA_DIST += vm/guest-md-check.sh
TESTS += vm/test-vm-plugin-to-mdadm.sh
EXTRA_DIST += vm/test-vm-plugin-to-mdadm.sh
# md v1.0 and v1.1 both ways: mdadm's arrays with bitmaps
# assembled by the plugin, the plugin's checked by md.
TESTS += vm/test-vm-md-versions.sh
EXTRA_DIST += vm/test-vm-md-versions.sh
EXTRA_DIST += vm/fill-missing.py vm/replace-cycles.py vm/readd-once.py

# md write-intent bitmaps between the plugin and Linux md (a guest):
# mdadm's bitmaps through the plugin, the plugin's through md, and md's
# bitmap resync after the plugin is killed.
TESTS += vm/test-vm-bitmap.sh
EXTRA_DIST += vm/test-vm-bitmap.sh vm/guest-md-bitmap.sh

# md's bad-block logs between the plugin and Linux md (a guest): the
# plugin's logs (a rebuild's and refused writes') listed by mdadm and
# honoured by md; md's (added through sysfs) counted and honoured by the
# plugin, the listed sectors' bytes never read.
TESTS += vm/test-vm-md-badblocks.sh
EXTRA_DIST += vm/test-vm-md-badblocks.sh vm/guest-md-badblocks.sh \
	vm/badblocks-record.py

# md fails and removes a member of a plugin-made array with a bitmap
# and writes; the plugin re-adds it at start-up from the bitmap;
# md then assembles the result clean, with no mismatch (a guest).
TESTS += vm/test-vm-md-removes-readd.sh
EXTRA_DIST += vm/test-vm-md-removes-readd.sh vm/guest-md-remove.sh \
	vm/readd-removed.py

# md's hot spares between the plugin and Linux md (a guest): the
# plugin's spare examined, assembled and rebuilt onto by md; mdadm's
# (-x 1) assembled by the plugin and rebuilt onto after "fail 0".
TESTS += vm/test-vm-md-spares.sh
EXTRA_DIST += vm/test-vm-md-spares.sh vm/guest-md-spares.sh \
	vm/spares-host.py

# The export as a VM's disk through qemu's own NBD client: ext4 written
# while two members are failed and replaced and nbdkit is killed and
# started again under qemu's reconnect-delay.
TESTS += vm/test-vm-qemu-drive.sh
EXTRA_DIST += vm/test-vm-qemu-drive.sh vm/guest-qemu-drive.sh
# The kernel's NBD client with four connections (blkverify, fio's
# verify=crc32c for a guest without fio) and restarts of nbdkit under a
# mounted file system.
TESTS += vm/test-vm-nbd-multiconn.sh
EXTRA_DIST += vm/test-vm-nbd-multiconn.sh vm/guest-nbd-multiconn.sh \
	vm/blkverify.c

# md superblocks crafted with a correct checksum but impossible
# fields are refused at start-up, naming the member; mdsb.py reads and
# changes superblocks independently of the plugin.
TESTS += test-md-crafted.sh
VALGRIND_TESTS += test-md-crafted.sh
EXTRA_DIST += test-md-crafted.sh
TESTS += test-md-replace-cycles.py
EXTRA_DIST += test-md-replace-cycles.py
TESTS += test-md-unclean-rebuilding.sh
EXTRA_DIST += test-md-unclean-rebuilding.sh
TESTS += test-md-create-refused.sh
EXTRA_DIST += test-md-create-refused.sh
TESTS += test-md-readonly.sh
EXTRA_DIST += test-md-readonly.sh
TESTS += test-cmdline-options.sh
EXTRA_DIST += test-cmdline-options.sh

# nbdkit -r read from the command line (plugin/nbdkit_cmdline.c).
if HAVE_CHECK
check_PROGRAMS += test_nbdkit_cmdline
TESTS += test_nbdkit_cmdline
test_nbdkit_cmdline_SOURCES = test_nbdkit_cmdline.c ../plugin/nbdkit_cmdline.c
test_nbdkit_cmdline_LDADD = $(CHECK_LIBS)
endif

# The jobs' throttle (plugin/jobs.h: jobs_throttle_delay, the rate limit
# of rebuilds and resyncs) as a pure function of one clock reading; and
# (test-rebuild-stop-clock-skew.sh) nbdkit stopping at once during a
# throttled rebuild although the plugin's clock jumps (clock-skew.c, an
# LD_PRELOAD shim); and (test-spare-clock-step.sh) the watchers' waits
# unmoved by a step of the wall clock.
if HAVE_CHECK
check_PROGRAMS += test_jobs
TESTS += test_jobs
test_jobs_SOURCES = test_jobs.c
test_jobs_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif
check_LTLIBRARIES = libclockskew.la liballocfail.la
libclockskew_la_SOURCES = lib/clock-skew.c
libclockskew_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
libclockskew_la_LIBADD = -ldl
# A shortage of memory is no member failure: the plugin's aligned_alloc
# failing on demand (alloc-fail.c, an LD_PRELOAD shim).
liballocfail_la_SOURCES = lib/alloc-fail.c
liballocfail_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
liballocfail_la_LIBADD = -ldl
TESTS += test-memory-read-enomem.sh
EXTRA_DIST += test-memory-read-enomem.sh
TESTS += test-memory-bounce-pool.sh
EXTRA_DIST += test-memory-bounce-pool.sh
TESTS += test-memory-trim.sh
EXTRA_DIST += test-memory-trim.sh
TESTS += test-rebuild-stop-clock-skew.sh
EXTRA_DIST += test-rebuild-stop-clock-skew.sh
TESTS += test-spare-clock-step.sh
EXTRA_DIST += test-spare-clock-step.sh
# The harness's clean-ups never signal a process number that changed
# hands (tests/lib/pid_reuse.py makes the kernel give one again).
EXTRA_DIST += lib/pid_reuse.py
TESTS += test-harness-pid-reuse.sh test-harness-pid-reuse.py
EXTRA_DIST += test-harness-pid-reuse.sh test-harness-pid-reuse.py
TESTS += test-scrub-refused.py
TSAN_TESTS += test-scrub-refused.py
EXTRA_DIST += test-scrub-refused.py
TESTS += test-scrub-stop-last.py
TSAN_TESTS += test-scrub-stop-last.py
EXTRA_DIST += test-scrub-stop-last.py
TESTS += test-ctl-fail-rebuilding.py
TSAN_TESTS += test-ctl-fail-rebuilding.py
EXTRA_DIST += test-ctl-fail-rebuilding.py
TESTS += test-replace-scrub.py
TSAN_TESTS += test-replace-scrub.py
EXTRA_DIST += test-replace-scrub.py
TESTS += test-ctl-clients.py
TSAN_TESTS += test-ctl-clients.py
EXTRA_DIST += test-ctl-clients.py
TESTS += test-ctl-input.sh
VALGRIND_TESTS += test-ctl-input.sh
EXTRA_DIST += test-ctl-input.sh
TESTS += test-ctl-path.sh
EXTRA_DIST += test-ctl-path.sh
TESTS += test-replace-fds.py
TSAN_TESTS += test-replace-fds.py
EXTRA_DIST += test-replace-fds.py

# MEMBER_MEM_SOURCES: in-memory members, and stubs for the real backends
# (member_stubs.c says why), for every unit test above the members.
MEMBER_MEM_SOURCES = lib/member_mem.c lib/member_mem.h lib/member_stubs.c

# The stripe cache (plugin/stripe_*.c) against in-memory members
# (member_mem.c, fault injection and counters): random writes, the
# RMW/RCW choice, reconstruction and rebuild, scrub, members failing
# mid-write, all checked by a reference computed in the test.
# STRIPE_TEST_SOURCES: what every stripe cache test links.
STRIPE_TEST_SOURCES = lib/check_run.h \
	$(MEMBER_MEM_SOURCES) lib/mem_array.c lib/mem_array.h \
	../plugin/stripe_cache.c ../plugin/stripe_recover.c \
	../plugin/stripe_write.c ../plugin/stripe_scrub.c \
	../plugin/geometry.c ../plugin/member.c ../plugin/md_badblocks.c \
	../plugin/member_table.c
STRIPE_TEST_LDADD = $(top_builddir)/parity/libparity.la $(CHECK_LIBS) \
	$(PTHREAD_LIBS)
if HAVE_CHECK
check_PROGRAMS += test_stripe
TESTS += test_stripe
test_stripe_SOURCES = test_stripe.c $(STRIPE_TEST_SOURCES)
test_stripe_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
test_stripe_LDADD = $(STRIPE_TEST_LDADD)
endif

# A write through the stripe cache allocates nothing once the cache has
# warmed up (no per-request allocation on the hot path): the allocator's
# entry points wrapped and counted.
if HAVE_CHECK
check_PROGRAMS += test_stripe_alloc
TESTS += test_stripe_alloc
test_stripe_alloc_SOURCES = test_stripe_alloc.c $(STRIPE_TEST_SOURCES)
test_stripe_alloc_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
test_stripe_alloc_LDFLAGS = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc \
	-Wl,--wrap=aligned_alloc,--wrap=posix_memalign
test_stripe_alloc_LDADD = $(STRIPE_TEST_LDADD)
endif

# A head reused for another row has a lock new to TSan's lock-order
# checker (a rebuild window's false inversion, check-tsan in CI).
if HAVE_CHECK
check_PROGRAMS += test_stripe_cache_lock_reuse
TESTS += test_stripe_cache_lock_reuse
TSAN_TESTS += test_stripe_cache_lock_reuse
TSAN_CHECK_PROGS += test_stripe_cache_lock_reuse
test_stripe_cache_lock_reuse_SOURCES = test_stripe_cache_lock_reuse.c \
	$(STRIPE_TEST_SOURCES)
test_stripe_cache_lock_reuse_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
test_stripe_cache_lock_reuse_LDADD = $(STRIPE_TEST_LDADD)
endif

# Assembly refused after a member was set aside: a refusal, not a crash.
TESTS += test-md-claimed-twice.sh
EXTRA_DIST += test-md-claimed-twice.sh

# The plugin's files call each other one way only: the
# file-level graph from the objects' symbols, printed, with no cycle and
# no edge against the layer order in layering.py.
TESTS += test-layering.sh
EXTRA_DIST += test-layering.sh lib/layering.py

# md's write-intent bitmap (plugin/md_bitmap.c) as a state machine against
# in-memory members: marked before the write, lazy clearing, nothing
# cleared while degraded, the resync's rows after an unclean shutdown.
if HAVE_CHECK
check_PROGRAMS += test_md_bitmap
TESTS += test_md_bitmap
test_md_bitmap_SOURCES = test_md_bitmap.c lib/check_run.h $(MEMBER_MEM_SOURCES) \
	../plugin/md_bitmap.c ../plugin/md_bitmap_super.c ../plugin/md_super.c \
	../plugin/member_table.c \
	../plugin/member.c ../plugin/md_badblocks.c
test_md_bitmap_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
test_md_bitmap_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# md's files against in-memory members, one program per file tested, on
# arrays lib/md_rig.c creates.  MD_RIG_SOURCES: what the rig links
# (md_create.c makes the array, md_array.c writes its superblocks, and
# what they call), in every md test whatever file it tests.
MD_RIG_SOURCES = lib/check_run.h lib/md_rig.c lib/md_rig.h \
	$(MEMBER_MEM_SOURCES) \
	../plugin/md_array.c ../plugin/md_bblog.c ../plugin/md_array_internal.h \
	../plugin/md_create.c ../plugin/md_identity.c ../plugin/md_bitmap.c \
	../plugin/md_bitmap_super.c ../plugin/md_super.c ../plugin/signature.c \
	../plugin/member_table.c ../plugin/member.c ../plugin/md_badblocks.c ../plugin/geometry.c
# Serving (plugin/md_array.c): clean/active event counting, failures
# recorded before the write or flush they hit is acknowledged, dev_number
# reuse over thousands of replacements.
if HAVE_CHECK
check_PROGRAMS += test_md_array
TESTS += test_md_array
test_md_array_SOURCES = test_md_array.c $(MD_RIG_SOURCES)
test_md_array_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
test_md_array_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif
# A member's identity (plugin/md_identity.c) across superblock writes:
# a read on the wire during a write is the member, an older copy is not.
if HAVE_CHECK
check_PROGRAMS += test_md_identity
TESTS += test_md_identity
test_md_identity_SOURCES = test_md_identity.c $(MD_RIG_SOURCES)
test_md_identity_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
test_md_identity_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif
# Assembly (plugin/md_assemble.c): role order, one-behind and stale
# members; and md v1.0/v1.1 created and assembled (md_create.c's places,
# md_admit.c's size check of a replacement).
if HAVE_CHECK
check_PROGRAMS += test_md_assemble
TESTS += test_md_assemble
test_md_assemble_SOURCES = test_md_assemble.c $(MD_RIG_SOURCES) \
	../plugin/md_assemble.c ../plugin/md_admit.c
test_md_assemble_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
test_md_assemble_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# The row record (plugin/row_record.c): the bitmap, the record in memory
# or nothing, chosen once, against in-memory members and md_array.c.
if HAVE_CHECK
check_PROGRAMS += test_row_record
TESTS += test_row_record
test_row_record_SOURCES = test_row_record.c lib/check_run.h $(MEMBER_MEM_SOURCES) \
	../plugin/row_record.c ../plugin/missed_rows.c ../plugin/watcher.c \
	../plugin/md_array.c ../plugin/md_bblog.c ../plugin/md_array_internal.h ../plugin/md_create.c \
	../plugin/md_identity.c ../plugin/md_bitmap.c ../plugin/md_bitmap_super.c \
	../plugin/md_super.c ../plugin/signature.c ../plugin/member_table.c \
	../plugin/member.c ../plugin/md_badblocks.c ../plugin/geometry.c
test_row_record_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
test_row_record_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# The member table (plugin/member_table.c): the failure policy, what can
# still be served, reader sections and the reclaim of replaced members.
if HAVE_CHECK
check_PROGRAMS += test_member_table
TESTS += test_member_table
test_member_table_SOURCES = test_member_table.c lib/check_run.h $(MEMBER_MEM_SOURCES) \
	../plugin/member_table.c ../plugin/member.c ../plugin/md_badblocks.c
test_member_table_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
test_member_table_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# Every benchmark script runs at toy sizes (--smoke) to its end, so that
# one that stopped working fails here (tests/lib/bench-smoke.sh).
TESTS += test-bench-smoke-e2e.sh test-bench-smoke-e2e-degraded.sh \
	test-bench-smoke-e2e-remote.sh test-bench-smoke-e2e-bitmap.sh \
	test-bench-smoke-e2e-heal.sh test-bench-smoke-e2e-blockdev.sh
EXTRA_DIST += lib/bench-smoke.sh test-bench-smoke-e2e.sh \
	test-bench-smoke-e2e-blockdev.sh \
	test-bench-smoke-e2e-degraded.sh test-bench-smoke-e2e-remote.sh \
	test-bench-smoke-e2e-bitmap.sh test-bench-smoke-e2e-heal.sh

# Block devices (loop devices) are opened with O_DIRECT by default, with
# their logical block size as alignment.
TESTS += test-blockdev.sh
VALGRIND_TESTS += test-blockdev.sh
EXTRA_DIST += test-blockdev.sh

# A rebuild punches the rows every other member holds as holes.
TESTS += test-rebuild-sparse.py
VALGRIND_TESTS += test-rebuild-sparse.py
EXTRA_DIST += test-rebuild-sparse.py

# A two-thread rebuild moves the recovery offset only over written rows.
TESTS += test-rebuild-order.py
TSAN_TESTS += test-rebuild-order.py
EXTRA_DIST += test-rebuild-order.py

# The in-memory record of missed rows (plugin/missed_rows.c) that arrays
# without an on-disk bitmap re-add from.
if HAVE_CHECK
check_PROGRAMS += test_missed_rows
TESTS += test_missed_rows
test_missed_rows_SOURCES = test_missed_rows.c lib/check_run.h $(MEMBER_MEM_SOURCES) \
	../plugin/missed_rows.c ../plugin/watcher.c ../plugin/member_table.c ../plugin/member.c ../plugin/md_badblocks.c
test_missed_rows_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
test_missed_rows_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# Re-add from the write-intent bitmap: a failed member's own
# disk taken back with re-add N, only the rows under set bits resynced
# (readd.py: what the tests share); a different disk, or one the bitmap
# cannot vouch for, refused with nothing written; a member that fails
# again during its re-add stays failed.
EXTRA_DIST += lib/readd.py
TESTS += test-readd.py
VALGRIND_TESTS += test-readd.py
TSAN_TESTS += test-readd.py
EXTRA_DIST += test-readd.py
TESTS += test-readd-other-disk.py
TSAN_TESTS += test-readd-other-disk.py
EXTRA_DIST += test-readd-other-disk.py
TESTS += test-readd-uncovered.py
TSAN_TESTS += test-readd-uncovered.py
EXTRA_DIST += test-readd-uncovered.py
TESTS += test-readd-fail-again.py
TSAN_TESTS += test-readd-fail-again.py
EXTRA_DIST += test-readd-fail-again.py
TESTS += test-readd-restart.py
TSAN_TESTS += test-readd-restart.py
EXTRA_DIST += test-readd-restart.py
TESTS += test-readd-load.py
TSAN_TESTS += test-readd-load.py
EXTRA_DIST += test-readd-load.py
TESTS += test-readd-relative.sh
EXTRA_DIST += test-readd-relative.sh
TESTS += test-readd-two.py
TSAN_TESTS += test-readd-two.py
EXTRA_DIST += test-readd-two.py
TESTS += test-readd-was-rebuilding.py
EXTRA_DIST += test-readd-was-rebuilding.py
TESTS += test-readd-startup.py
EXTRA_DIST += test-readd-startup.py

# A stale member whose slot another disk took since is left out at
# start-up, not re-added beside it (two members, one dev_number).
TESTS += test-readd-startup-slot.py
EXTRA_DIST += test-readd-startup-slot.py
TESTS += test-readd-auto.py
TSAN_TESTS += test-readd-auto.py
EXTRA_DIST += test-readd-auto.py
TESTS += test-readd-auto-other.py
EXTRA_DIST += test-readd-auto-other.py
TESTS += test-readd-auto-refused.py
EXTRA_DIST += test-readd-auto-refused.py
TESTS += test-readd-writes-fail.py
EXTRA_DIST += test-readd-writes-fail.py
# Arrays without an on-disk bitmap (raw, bitmap=none) re-add from the
# record of missed rows kept in memory.
# A member that fails right after the array went clean (md's count back
# down below the last clearing's) is still re-added, as md lowers
# events_cleared with the count.
TESTS += test-readd-after-clean.py
EXTRA_DIST += test-readd-after-clean.py
TESTS += test-readd-memory.py
TSAN_TESTS += test-readd-memory.py
EXTRA_DIST += test-readd-memory.py

# Extents (base:allocation): which rows are holes
# (plugin/extents.c), against in-memory members that keep allocation by
# block, row by row against a reference, degraded and rebuilding
# members included, within a bounded number of questions per request.
if HAVE_CHECK
check_PROGRAMS += test_extents
TESTS += test_extents
test_extents_SOURCES = test_extents.c lib/check_run.h lib/random_seed.h \
	$(MEMBER_MEM_SOURCES) \
	lib/mem_array.c lib/mem_array.h \
	../plugin/extents.c ../plugin/geometry.c ../plugin/member_table.c \
	../plugin/member.c ../plugin/md_badblocks.c
test_extents_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
test_extents_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif
# The same through nbdkit: nbdinfo --map, a sparse nbdcopy, degraded,
# rebuilt, and with a member that cannot tell.
TESTS += test-extents.py
EXTRA_DIST += test-extents.py
# qemu-img convert from the export (extents: only the data read, the
# time with and without printed) and to it (--target-is-zero, -S).
TESTS += test-qemu-img-sparse.py
EXTRA_DIST += test-qemu-img-sparse.py
# qemu's reconnect-delay across a restart of nbdkit: SIGKILL survived,
# SIGTERM answered with ESHUTDOWN (nbdkit 1.32), no delay no survival.
TESTS += test-qemu-reconnect.sh
EXTRA_DIST += test-qemu-reconnect.sh

# Media errors.  nbdkit-badsector-plugin (lib/nbdkit-badsector-plugin.c,
# built here as a module, never installed) is a member server whose
# listed sectors fail reads until written, or fail writes, over real NBD;
# faults.py serves a member with it (kind "badsector").  Its own test
# talks to it through libnbd alone.  bench/media-errors.py (run by hand,
# make bench-media-errors) measures what the raid plugin does with such a
# member.
check_LTLIBRARIES += nbdkit-badsector-plugin.la
nbdkit_badsector_plugin_la_SOURCES = lib/nbdkit-badsector-plugin.c
nbdkit_badsector_plugin_la_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
nbdkit_badsector_plugin_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
TESTS += test-badsector-backend.py
EXTRA_DIST += test-badsector-backend.py
# Read-error correction through a member server whose sectors fail reads
# until written: the member stays in sync, the sectors are rewritten.
TESTS += test-media-read-correct.py
VALGRIND_TESTS += test-media-read-correct.py
EXTRA_DIST += test-media-read-correct.py
# A correction is flushed: a member server's restart after it costs
# nothing.
TESTS += test-media-correct-durable.py
EXTRA_DIST += test-media-correct-durable.py
# A rebuild that meets sectors it cannot reconstruct records them in
# md's bad-block logs and finishes; the logs hold across a restart.
TESTS += test-media-rebuild.py
VALGRIND_TESTS += test-media-rebuild.py
EXTRA_DIST += test-media-rebuild.py
# A scrub reports unreadable and listed pages, mends them (read errors in
# check mode, listed pages with repair) and goes on past lost ones.
TESTS += test-media-scrub.py
VALGRIND_TESTS += test-media-scrub.py
EXTRA_DIST += test-media-scrub.py
# md 6.19's logical_block_size: never set at create, advertised as the
# minimum block size when set, kept, refused when impossible.
TESTS += test-md-logical-block-size.py
EXTRA_DIST += test-md-logical-block-size.py
# A write acknowledged with a sector recorded bad survives SIGKILL: the
# log is on disk before the reply.
TESTS += test-media-kill.py
EXTRA_DIST += test-media-kill.py
# The man pages' POD: well formed, every internal link resolves.
TESTS += test-man-pod.sh
EXTRA_DIST += test-man-pod.sh
# A rebuild's punch refused by the target's medium: recorded, not fatal.
TESTS += test-media-rebuild-punch.py
EXTRA_DIST += test-media-rebuild-punch.py
# A write refused by some pages of a member's medium: those pages are
# recorded, not the request's range, and the member stays.
TESTS += test-media-write-error.py
VALGRIND_TESTS += test-media-write-error.py
EXTRA_DIST += test-media-write-error.py
# Hot spares: taken over at a failure, a second failure meanwhile, across
# restarts, the control commands, a returning member.
TESTS += test-spare-takeover.py
EXTRA_DIST += test-spare-takeover.py
TESTS += test-spare-second-failure.py
EXTRA_DIST += test-spare-second-failure.py
TESTS += test-spare-restart.py
EXTRA_DIST += test-spare-restart.py
TESTS += test-spare-ctl.py
EXTRA_DIST += test-spare-ctl.py
EXTRA_DIST += lib/spares.py
TESTS += test-spare-readd.py
EXTRA_DIST += test-spare-readd.py
