# Plugin tests.  Each plugin engine has its own Check program that links
# only the files it tests.

# Geometry: md's RAID-5/6 layouts (plugin/geometry.c).
if HAVE_CHECK
check_PROGRAMS += test_geometry
TESTS += test_geometry
test_geometry_SOURCES = test_geometry.c ../plugin/geometry.c
test_geometry_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# The NBD member backend alone (plugin/member_nbd.c) against real nbdkit
# servers: ids reused, the batch timeout, ids under concurrent I/O (also
# under ThreadSanitizer: test-member-nbd-tsan.sh builds it so), batches
# without memory (allocations wrapped), servers without flush.
if HAVE_CHECK
if ENABLE_PLUGIN
check_PROGRAMS += test_member_nbd
TESTS += test_member_nbd
test_member_nbd_SOURCES = test_member_nbd.c ../plugin/member_nbd.c \
	../plugin/member.c ../plugin/members.c
test_member_nbd_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS) $(LIBNBD_CFLAGS)
test_member_nbd_LDFLAGS = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
test_member_nbd_LDADD = $(LIBNBD_LIBS) $(CHECK_LIBS) $(PTHREAD_LIBS)
endif
endif
TESTS += test-member-nbd-tsan.sh
EXTRA_DIST += test-member-nbd-tsan.sh

# Integration tests: real nbdkit processes serving the plugin, real nbdsh /
# qemu clients, and an independent parity checker (raidcheck.py) that reads
# the member files.  functions.sh holds their helpers.  TSAN_TESTS are the
# ones make check-tsan runs too: where the plugin's threads meet (clients
# at once, control commands and jobs, remote members failing, the bitmap's
# thread); add a concurrency test there as well.
EXTRA_DIST += raidcheck.py
TESTS += test-raid-dump-plugin.sh
EXTRA_DIST += test-raid-dump-plugin.sh
TESTS += test-raid-exports.sh
EXTRA_DIST += test-raid-exports.sh
TESTS += test-raid-bad-input.sh
EXTRA_DIST += test-raid-bad-input.sh
TESTS += test-raid-shadow.sh
EXTRA_DIST += test-raid-shadow.sh
TESTS += test-raid-concurrent.sh
TSAN_TESTS += test-raid-concurrent.sh
EXTRA_DIST += test-raid-concurrent.sh
TESTS += test-raid-qemu.sh
EXTRA_DIST += test-raid-qemu.sh
TESTS += test-raid-ring-fallback.sh
TSAN_TESTS += test-raid-ring-fallback.sh
EXTRA_DIST += test-raid-ring-fallback.sh
TESTS += test-raid-flush-enotsup.sh
EXTRA_DIST += test-raid-flush-enotsup.sh

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
TESTS += test-raid-remote-restart-raw.sh
TSAN_TESTS += test-raid-remote-restart-raw.sh
EXTRA_DIST += test-raid-remote-restart-raw.sh remote_restart.py
TESTS += test-raid-remote-identity.sh
TSAN_TESTS += test-raid-remote-identity.sh
EXTRA_DIST += test-raid-remote-identity.sh
TESTS += test-raid-remote-alias.sh
EXTRA_DIST += test-raid-remote-alias.sh
TESTS += test-raid-remote-blocksize.sh
EXTRA_DIST += test-raid-remote-blocksize.sh remote_blocksize.py
TESTS += test-raid-remote-noflush.sh
EXTRA_DIST += test-raid-remote-noflush.sh
TESTS += test-raid-fail-random.sh
TSAN_TESTS += test-raid-fail-random.sh
EXTRA_DIST += test-raid-fail-random.sh
# The randomized test's program, and the seeds that ever failed, replayed.
EXTRA_DIST += raidfail_random.py random-seeds.regress
TESTS += test-raid-fail-random-regress.sh
EXTRA_DIST += test-raid-fail-random-regress.sh

# md v1.2 superblocks (plugin/md_super.c, and the bitmap's superblock:
# plugin/md_bitmap_super.c): hand-built superblocks, the
# kernel's checksum, refusals.  The test supplies its own member_io_run.
if HAVE_CHECK
check_PROGRAMS += test_metadata
TESTS += test_metadata
test_metadata_SOURCES = test_metadata.c ../plugin/md_super.c \
	../plugin/md_bitmap_super.c
test_metadata_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# Signatures of other formats (plugin/signature.c): what a disk carries
# that the array must not overwrite unasked.
if HAVE_CHECK
check_PROGRAMS += test_signature
TESTS += test_signature
test_signature_SOURCES = test_signature.c ../plugin/signature.c
test_signature_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# Member I/O batches (plugin/member.c): every request runs, even when a
# large batch's list cannot be allocated (malloc wrapped by the test).
if HAVE_CHECK
check_PROGRAMS += test_member_io
TESTS += test_member_io
test_member_io_SOURCES = test_member_io.c ../plugin/member.c
test_member_io_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
test_member_io_LDFLAGS = -Wl,--wrap=malloc
test_member_io_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
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
TESTS += test-raid-md-foreign.sh
EXTRA_DIST += test-raid-md-foreign.sh
TESTS += test-raid-replace-foreign.sh
EXTRA_DIST += test-raid-replace-foreign.sh
EXTRA_DIST += vm/guest-md-check.sh
TESTS += vm/test-vm-plugin-to-mdadm.sh
EXTRA_DIST += vm/test-vm-plugin-to-mdadm.sh
EXTRA_DIST += vm/fill-missing.py vm/replace-cycles.py

# md write-intent bitmaps between the plugin and Linux md (a guest):
# mdadm's bitmaps through the plugin, the plugin's through md, and md's
# bitmap resync after the plugin is killed.
TESTS += vm/test-vm-bitmap.sh
EXTRA_DIST += vm/test-vm-bitmap.sh vm/guest-md-bitmap.sh

# Issue 11: md superblocks crafted with a correct checksum but impossible
# fields are refused at start-up, naming the member; mdsb.py reads and
# changes superblocks independently of the plugin.
EXTRA_DIST += mdsb.py
TESTS += test-raid-md-crafted.sh
EXTRA_DIST += test-raid-md-crafted.sh
TESTS += test-raid-md-replace-cycles.sh
EXTRA_DIST += test-raid-md-replace-cycles.sh test-raid-md-replace-cycles.py
TESTS += test-raid-md-unclean-rebuilding.sh
EXTRA_DIST += test-raid-md-unclean-rebuilding.sh
TESTS += test-raid-md-create-refused.sh
EXTRA_DIST += test-raid-md-create-refused.sh
TESTS += test-raid-md-readonly.sh
EXTRA_DIST += test-raid-md-readonly.sh
TESTS += test-raid-cmdline-options.sh
EXTRA_DIST += test-raid-cmdline-options.sh

# nbdkit -r read from the command line (plugin/nbdkit_cmdline.c).
if HAVE_CHECK
check_PROGRAMS += test_cmdline
TESTS += test_cmdline
test_cmdline_SOURCES = test_cmdline.c ../plugin/nbdkit_cmdline.c
test_cmdline_LDADD = $(CHECK_LIBS)
endif

# Rebuild and scrub jobs, the control socket (issue 11): the throttle's
# delay as a pure function, and nbdkit stopping at once during a
# throttled rebuild although the plugin's clock jumps (clock-skew.c, an
# LD_PRELOAD shim).
if HAVE_CHECK
check_PROGRAMS += test_rebuild
TESTS += test_rebuild
test_rebuild_SOURCES = test_rebuild.c
test_rebuild_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif
check_LTLIBRARIES = libclockskew.la liballocfail.la
libclockskew_la_SOURCES = clock-skew.c
libclockskew_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
libclockskew_la_LIBADD = -ldl
# A shortage of memory is no member failure: the plugin's aligned_alloc
# failing on demand (alloc-fail.c, an LD_PRELOAD shim).
liballocfail_la_SOURCES = alloc-fail.c
liballocfail_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere
liballocfail_la_LIBADD = -ldl
TESTS += test-raid-read-nomem.sh
EXTRA_DIST += test-raid-read-nomem.sh
TESTS += test-raid-rebuild-stop.sh
EXTRA_DIST += test-raid-rebuild-stop.sh
TESTS += test-raid-ctl-scrub-refused.sh
TSAN_TESTS += test-raid-ctl-scrub-refused.sh
EXTRA_DIST += test-raid-ctl-scrub-refused.sh test-raid-ctl-scrub-refused.py
TESTS += test-raid-ctl-fail-rebuilding.sh
TSAN_TESTS += test-raid-ctl-fail-rebuilding.sh
EXTRA_DIST += test-raid-ctl-fail-rebuilding.sh test-raid-ctl-fail-rebuilding.py
TESTS += test-raid-ctl-replace-scrub.sh
TSAN_TESTS += test-raid-ctl-replace-scrub.sh
EXTRA_DIST += test-raid-ctl-replace-scrub.sh test-raid-ctl-replace-scrub.py
TESTS += test-raid-ctl-clients.sh
TSAN_TESTS += test-raid-ctl-clients.sh
EXTRA_DIST += test-raid-ctl-clients.sh test-raid-ctl-clients.py
TESTS += test-raid-ctl-input.sh
EXTRA_DIST += test-raid-ctl-input.sh
TESTS += test-raid-ctl-path.sh
EXTRA_DIST += test-raid-ctl-path.sh
TESTS += test-raid-ctl-replace-fds.sh
TSAN_TESTS += test-raid-ctl-replace-fds.sh
EXTRA_DIST += test-raid-ctl-replace-fds.sh test-raid-ctl-replace-fds.py

# The stripe cache (plugin/stripe_*.c) against in-memory members
# (member_mem.c, fault injection and counters): random writes, the
# RMW/RCW choice, reconstruction and rebuild, scrub, members failing
# mid-write, all checked by a reference computed in the test.
if HAVE_CHECK
check_PROGRAMS += test_stripe
TESTS += test_stripe
test_stripe_SOURCES = test_stripe.c member_mem.c member_mem.h \
	../plugin/stripe_cache.c ../plugin/stripe_recover.c \
	../plugin/stripe_write.c ../plugin/stripe_scrub.c \
	../plugin/geometry.c ../plugin/member.c \
	../plugin/members.c
test_stripe_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
test_stripe_LDADD = $(top_builddir)/parity/libparity.la $(CHECK_LIBS) \
	$(PTHREAD_LIBS)
endif

# Assembly refused after a member was set aside: a refusal, not a crash.
TESTS += test-raid-md-claimed-twice.sh
EXTRA_DIST += test-raid-md-claimed-twice.sh

# The plugin's files call each other one way only (issue 12): the
# file-level graph from the objects' symbols, printed, with no cycle and
# no edge against the layer order in layering.py.
TESTS += test-layering.sh
EXTRA_DIST += test-layering.sh layering.py

# md's write-intent bitmap (plugin/md_bitmap.c) as a state machine against
# in-memory members: marked before the write, lazy clearing, nothing
# cleared while degraded, the resync's rows after an unclean shutdown.
if HAVE_CHECK
check_PROGRAMS += test_md_bitmap
TESTS += test_md_bitmap
test_md_bitmap_SOURCES = test_md_bitmap.c member_mem.c member_mem.h \
	../plugin/md_bitmap.c ../plugin/md_bitmap_super.c ../plugin/members.c \
	../plugin/member.c
test_md_bitmap_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
test_md_bitmap_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# md_array.c against in-memory members: create, clean/active event
# counting, failures and dev_number reuse over thousands of
# replacements, assembly in role order with one-behind and stale members.
if HAVE_CHECK
check_PROGRAMS += test_md_array
TESTS += test_md_array
test_md_array_SOURCES = test_md_array.c member_mem.c member_mem.h \
	../plugin/md_array.c ../plugin/md_bitmap.c ../plugin/md_bitmap_super.c \
	../plugin/md_super.c ../plugin/signature.c ../plugin/members.c \
	../plugin/member.c ../plugin/geometry.c
test_md_array_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
test_md_array_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif

# The member table (plugin/members.c): the failure policy, what can
# still be served, reader sections and the reclaim of replaced members.
if HAVE_CHECK
check_PROGRAMS += test_members
TESTS += test_members
test_members_SOURCES = test_members.c member_mem.c member_mem.h \
	../plugin/members.c ../plugin/member.c
test_members_CFLAGS = $(AM_CFLAGS) $(NBDKIT_CFLAGS)
test_members_LDADD = $(CHECK_LIBS) $(PTHREAD_LIBS)
endif
