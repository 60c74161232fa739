#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Install everything nbdkit-raid needs to build, test and benchmark on
# Debian 12, from Debian's own packages.  Run as root.  The sanitizer
# targets need clang and its runtimes (libclang-rt-14-dev: ASan, libFuzzer
# for check-asan and check-fuzz), gcc's libtsan (with gcc, for check-tsan)
# and readelf (binutils, to find the loader nbdkit runs under).
# python3-prometheus-client: Prometheus's own parser, which
# tests/test-ctl-metrics.py reads nbdkit-raid-ctl metrics with.
# systemd: systemd-analyze, which tests/test-systemd-verify.sh checks
# the units with, and pkg-config's systemd.pc, which says where they go.
# nbdkit: Debian 12's 1.32.5 aborts when a client hangs up with reads in
# flight, taking every client down; install-nbdkit.sh builds a fixed one
# from Debian 13's source package into /usr/local, once (configure then
# finds it).  Debian's nbdkit and its headers stay: the plugin builds
# against either.
# resource-agents: ocf-tester and ocf-shellfuncs, which the OCF agent
# (ocf/nbdkit-raid) is tested with and runs on, and the OCF root it is
# installed under; libxml2-utils: xmllint, with which ocf-tester checks
# the agent's meta-data (only recommended by resource-agents).
set -e

packages="
  build-essential autoconf automake libtool pkg-config perl
  nbdkit nbdkit-plugin-dev liburing-dev libnbd-dev libnbd-bin python3-libnbd
  python3-prometheus-client systemd
  check libisal-dev libsimde-dev
  clang libclang-rt-14-dev binutils
  qemu-utils fio valgrind bc
  qemu-system-x86 busybox-static cpio e2fsprogs fdisk gcc libc6-dev
  resource-agents libxml2-utils
"

export DEBIAN_FRONTEND=noninteractive
apt-get update
# shellcheck disable=SC2086
apt-get install -y --no-install-recommends $packages

"$(dirname "$0")/install-nbdkit.sh"

if [ -x "$(dirname "$0")/../tests/cross/install-deps.sh" ]; then
  "$(dirname "$0")/../tests/cross/install-deps.sh"
fi
