#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Description: install the Debian packages that make check-cross needs.
#
# The aarch64 cross compiler and C library, QEMU's user-mode emulators, and
# Check for arm64 (a static library and headers from Debian's arm64 archive,
# hence the foreign architecture; libsubunit comes with it).  SIMDe is for
# the host's test build of the AVX-512 kernels.  Run as root; CI calls this
# before make check-cross.

set -e

dpkg --add-architecture arm64
apt-get update
apt-get install -y --no-install-recommends \
  gcc-aarch64-linux-gnu libc6-dev-arm64-cross \
  qemu-user \
  pkg-config \
  check:arm64 libsubunit-dev:arm64 \
  libsimde-dev
