#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
# Description: an nbdkit that a client cannot kill, under /usr/local.
#
# Why.  nbdkit 1.32.4 to 1.33.9 abort when a client hangs up while it
# still has reads queued: the worker whose reply meets the closed socket
# closes it, and the next worker with a reply ready trips an assertion
# ("raw_send_socket: Assertion `sock >= 0' failed"), which takes every
# other client's connection down with the server.  Upstream fixed it in
# 1.33.10 ("server: Don't assert on send if client hangs up early").
# Debian 12 ships 1.32.5.  tests/test-service-rude-clients.py shows both.
#
# What.  When /usr/local has no fixed nbdkit yet and the distribution's
# is in that range, this builds nbdkit from Debian 13's (trixie) source
# package and installs it under /usr/local (nbdkit in /usr/local/sbin,
# plugins and filters in /usr/local/lib/nbdkit, headers and nbdkit.pc
# for pkg-config).  configure then prefers /usr/local/sbin/nbdkit, and
# the tests, demo, benchmarks and systemd unit use the nbdkit configure
# found.  The distribution's packages stay installed: nothing else on the
# machine changes, and the plugin still builds against their headers.
#
# How.  The source comes from the Debian archive this machine already
# uses (the Origin: Debian source of the release it runs, as apt reads
# /etc/apt/sources.list and sources.list.d), through apt with a private
# configuration in a temporary folder: one deb-src line for trixie,
# checked against debian-archive-keyring.  The machine's own apt sources
# and state are never touched and no trixie binary package is installed.
# The build dependencies are Debian 12's.  Language bindings (Perl,
# Python, OCaml, Rust, Go, Lua, Tcl) and plugins and filters that need
# libraries Debian 12 lacks or the tests do not use are off, and so are
# the manual pages (Debian 12's nbdkit packages keep theirs); the C
# plugins and filters that need nothing else are built, which includes
# every one the tests and benchmarks start (checked after the build).
# On two cores (2026-12-07): install-deps.sh took 65 s on a fresh
# /usr/local, 56 s of it this build (autoreconf to make install; 92 s
# with other builds running), and 5 s once the build was there (this
# script: 0.05 s).
#
# Run as root (scripts/install-deps.sh runs it).  Idempotent: with a
# fixed nbdkit in /usr/local that has those plugins and filters, it
# only says so.
set -e

prefix=/usr/local
nbdkit=$prefix/sbin/nbdkit
source_release=trixie
# The affected releases, first and last.
bad_first=1.32.4
bad_last=1.33.9
# What the tests and benchmarks start (grep tests/ bench/ for nbdkit's
# command lines): a build without one of them is not good enough.
plugins="file memory null eval sh data zero"
filters="error delay blocksize-policy log multi-conn noextents pause"

# affected VERSION: true if VERSION is in the affected range.
affected ()
{
  dpkg --compare-versions "$1" ge "$bad_first" &&
    dpkg --compare-versions "$1" le "$bad_last"
}

# complete NBDKIT: true if NBDKIT runs and has every plugin and filter.
complete ()
{
  "$1" --version >/dev/null 2>&1 || return 1
  for p in $plugins; do
    "$1" "$p" --dump-plugin >/dev/null 2>&1 || return 1
  done
  for f in $filters; do
    "$1" --filter="$f" null --dump-plugin >/dev/null 2>&1 || return 1
  done
}

# version NBDKIT: its version ("nbdkit 1.42.3 (extra)" -> 1.42.3).
version ()
{
  "$1" --version 2>/dev/null | awk 'NR == 1 { print $2 }'
}

if [ -x "$nbdkit" ] && ! affected "$(version "$nbdkit")" && complete "$nbdkit"; then
  echo "install-nbdkit: $nbdkit $(version "$nbdkit") is not affected; nothing to do"
  exit 0
fi
distro=$(dpkg-query -W -f '${Version}' nbdkit 2>/dev/null | sed 's/^[0-9]*://; s/-[^-]*$//')
if [ -n "$distro" ] && ! affected "$distro"; then
  echo "install-nbdkit: the distribution's nbdkit $distro is not affected; nothing to do"
  exit 0
fi

# The Debian archive this machine installs its release from.
. /etc/os-release
mirror=$(apt-get indextargets --format '$(REPO_URI)' "Origin: Debian" \
  "Release: $VERSION_CODENAME" "Target-Of: deb" | head -n 1)
if [ -z "$mirror" ]; then
  echo "install-nbdkit: apt has no Debian archive for $VERSION_CODENAME" \
    "(run apt-get update first)" >&2
  exit 1
fi
echo "install-nbdkit: nbdkit ${distro:-(not installed)} is affected; building" \
  "$source_release's from $mirror"

export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends build-essential dpkg-dev \
  autoconf automake libtool pkg-config libgnutls28-dev libnbd-dev

work=$(mktemp -d /var/tmp/nbdkit-build.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" \
  "$work/sources.list.d" "$work/dl"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
  "$mirror $source_release main" > "$work/sources.list"
# apt downloads as _apt where it can.
chown _apt "$work/dl" 2>/dev/null || true
privately ()
{
  "$@" -o Dir::Etc::SourceList="$work/sources.list" \
    -o Dir::Etc::SourceParts="$work/sources.list.d" \
    -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache"
}
privately apt-get -q update
(cd "$work/dl" && privately apt-get -q source --download-only nbdkit)
# dpkg-source cannot check the uploader's signature without Debian's
# keyring of developers (it warns); apt has checked the files against
# the signed index.
dpkg-source -x "$work"/dl/nbdkit_*.dsc "$work/src"
debian_version=$(dpkg-parsechangelog -l "$work/src/debian/changelog" -S Version)

t0=$(date +%s)
cd "$work/src"
# Debian's patches touch configure.ac: regenerate, as its build does.
autoreconf -fi >/dev/null
# --sysconfdir=/etc as Debian's: root's TLS certificates stay in
# /etc/pki/nbdkit.
./configure --prefix="$prefix" --sysconfdir=/etc \
  --with-extra="Debian $debian_version, built by nbdkit-raid's install-deps" \
  --disable-perl --disable-python --disable-ocaml --disable-rust \
  --disable-tcl --disable-lua --disable-golang \
  --disable-torrent --disable-vddk --disable-linuxdisk \
  --disable-libguestfs-tests --without-libguestfs \
  --without-manpages --without-bash-completions \
  --without-curl --without-ssh --without-iso --without-libvirt \
  --without-libblkio --without-ext2 --without-bzip2 --without-zlib \
  --without-zlib-ng --without-liblzma --without-libzstd --without-selinux \
  --with-gnutls --with-libnbd >/dev/null
make -j"$(nproc)" >/dev/null
make install >/dev/null
find "$prefix/lib/nbdkit" -name '*.la' -delete
echo "install-nbdkit: built and installed in $(( $(date +%s) - t0 )) s"

v=$(version "$nbdkit")
if affected "$v" || ! complete "$nbdkit"; then
  echo "install-nbdkit: $nbdkit $v is affected or lacks one of the plugins" \
    "($plugins) or filters ($filters)" >&2
  exit 1
fi
echo "install-nbdkit: $("$nbdkit" --version | head -n 1) in $nbdkit"
