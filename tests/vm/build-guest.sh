#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Build (or find in the cache) the Linux guest the tests/vm tests boot:
# Debian's kernel and a busybox initramfs with mdadm, nbd-client,
# e2fsprogs, patgen and the modules for virtio, nbd, md RAID-5/6 and ext4.
#
#   build-guest.sh        prints the guest directory on stdout (the last
#                         line): vmlinuz, initramfs.cpio.gz, patgen (a
#                         static binary the host uses too), kver, versions
#
# The guest's packages are fetched with `apt-get download` into
# $VM_CACHE/debs and unpacked there; nothing is installed on the host.
# The result lives in $VM_CACHE/guest-KEY, KEY a hash of the package
# versions and of the files here that go into the guest, so a second run
# (or another test) reuses it.  VM_CACHE defaults to
# ${XDG_CACHE_HOME:-/var/tmp}/nbdkit-raid-vm, outside the build tree.
#
# Exit status 0 on success; otherwise 1 with the reason on stderr (the
# tests turn that into a skip).  Log lines go to stderr.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VM_CACHE=${VM_CACHE:-${XDG_CACHE_HOME:-/var/tmp}/nbdkit-raid-vm}
export LC_ALL=C

die() { echo "build-guest: $*" >&2; exit 1; }
log() { echo "build-guest: $*" >&2; }

for t in busybox cpio gzip gcc apt-get apt-cache dpkg-deb ldd sha256sum flock; do
	command -v "$t" > /dev/null 2>&1 || die "the host lacks '$t'"
done
# (Not "| grep -q": with pipefail, busybox's SIGPIPE would fail the test.)
[ -x /bin/busybox ] && /bin/busybox --list | grep -x depmod > /dev/null ||
	die "/bin/busybox is not busybox-static with depmod (install busybox-static)"

mkdir -p "$VM_CACHE/debs"
exec 9> "$VM_CACHE/lock"
flock 9   # one build at a time; the others wait and then reuse it

# ---- what goes into the guest, and the cache key ---------------------------
# linux-image-amd64 is a metapackage: resolve the real image package.
KPKG=$(apt-cache depends linux-image-amd64 2>/dev/null |
	awk '/Depends: linux-image-[0-9]/ { print $2; exit }') || true
# Guest packages; any library not among them comes from the host (same
# Debian release).
GUEST_PKGS="$KPKG mdadm nbd-client libnl-3-200 libnl-genl-3-200 e2fsprogs libext2fs2 libcom-err2 libss2"
versions=""
if [ -n "$KPKG" ]; then
	# One apt-cache call (each one rereads all package lists).
	versions=$(apt-cache show --no-all-versions $GUEST_PKGS 2>/dev/null |
		awk '/^Package:/ { p = $2 } /^Version:/ { print p "=" $2 }' | sort -u)
	[ "$(printf '%s\n' "$versions" | wc -l)" -eq "$(echo $GUEST_PKGS | wc -w)" ] ||
		versions=""
	[ -z "$versions" ] || versions="$versions"$'\n'
fi
if [ -z "$versions" ]; then
	# No package lists (offline?): reuse the newest guest already built.
	last=$(ls -1dt "$VM_CACHE"/guest-*/ 2>/dev/null | head -n 1)
	if [ -n "$last" ] && [ -s "$last/initramfs.cpio.gz" ]; then
		log "no apt package data; reusing ${last%/}"
		echo "${last%/}"
		exit 0
	fi
	die "cannot resolve the guest packages with apt-cache (run apt-get update)"
fi
bbver=$(dpkg-query -W -f '${Version}' busybox-static 2>/dev/null || /bin/busybox | head -n 1)
key=$( {
	printf '%s' "$versions"
	echo "busybox=$bbver"
	cat "$here/build-guest.sh" "$here/init" "$here/modprobe-log" "$here/patgen.c"
} | sha256sum | cut -c1-16)
G=$VM_CACHE/guest-$key
if [ -s "$G/initramfs.cpio.gz" ] && [ -s "$G/vmlinuz" ] && [ -x "$G/patgen" ]; then
	touch "$G"
	echo "$G"
	exit 0
fi

log "building the guest in $G"
t0=$(date +%s)
W=$(mktemp -d "$VM_CACHE/build.XXXXXX")
trap 'rm -rf "$W"' EXIT

# ---- fetch and unpack the guest packages ------------------------------------
for p in $GUEST_PKGS; do
	v=$(printf '%s' "$versions" | awk -F= -v p="$p" '$1 == p { print $2 }')
	# apt-get download spells an epoch "1%3a".
	pat="$VM_CACHE/debs/${p}_${v/:/%3a}_"
	deb=$(ls "$pat"*.deb 2>/dev/null | head -n 1) || true
	if [ -z "$deb" ]; then
		(cd "$VM_CACHE/debs" && apt-get download "$p=$v" >&2) ||
			die "apt-get download $p=$v failed"
		deb=$(ls "$pat"*.deb | head -n 1)
	fi
	if [ "$p" = "$KPKG" ]; then
		# Unpacking the kernel takes minutes here: keep it, per version.
		K=$VM_CACHE/kernel-$(basename "$deb" .deb)
		if [ ! -s "$K/modules.dep.done" ]; then
			rm -rf "$K.tmp"
			dpkg-deb -x "$deb" "$K.tmp"
			# The .deb ships no modules.dep; busybox depmod makes one.
			/bin/busybox depmod -b "$K.tmp" "${KPKG#linux-image-}"
			touch "$K.tmp/modules.dep.done"
			rm -rf "$K"
			mv "$K.tmp" "$K"
		fi
	else
		dpkg-deb -x "$deb" "$W/x"
	fi
done
KVER=${KPKG#linux-image-}
MODDIR=$K/lib/modules/$KVER
[ -s "$MODDIR/modules.dep" ] || die "no modules.dep for $KVER in $KPKG"

# Modules to load, in this order, each after its dependencies.
# crc32c_generic first: libcrc32c (raid456) and ext4 declare it only as a
# softdep, which insmod does not follow.
WANT="crc32c_generic virtio_pci virtio_blk virtio_net nbd md_mod raid456 ext4"
declare -A seen=()
order=()
modpath() {
	local a=${1//_/[-_]}
	grep -m1 -E "(^|/)$a\.ko(\.xz|\.zst)?:" "$MODDIR/modules.dep" | cut -d: -f1
}
visit() {
	local p=$1 d
	[ -n "${seen[$p]:-}" ] && return
	seen[$p]=1
	for d in $(grep -m1 "^$p:" "$MODDIR/modules.dep" | cut -d: -f2-); do
		visit "$d"
	done
	order+=("$p")
}
for m in $WANT; do
	p=$(modpath "$m")
	if [ -z "$p" ]; then
		# Built into this kernel?
		grep -q -E "/${m//_/[-_]}\.ko" "$MODDIR/modules.builtin" 2>/dev/null ||
			die "module $m is neither a module nor built in"
		continue
	fi
	visit "$p"
done
case "${order[*]}" in *.ko.xz* | *.ko.zst*) die "compressed modules are not supported" ;; esac

# ---- the root ---------------------------------------------------------------
R=$W/root
mkdir -p "$R"/{bin,sbin,usr/bin,usr/sbin,etc/raidvm,etc/mdadm,proc,sys,dev,run,tmp,mnt,out,lib64}
cp /bin/busybox "$R/bin/busybox"
for a in $(/bin/busybox --list-full); do
	[ -e "$R/$a" ] || ln -s /bin/busybox "$R/$a"
done
put() { # put SRC DEST-IN-ROOT
	mkdir -p "$R/$(dirname "$2")"
	rm -f "$R/$2"
	cp -L "$1" "$R/$2"
}
bin_of() { # the binary in the unpacked debs, /sbin or /usr/sbin
	local f
	for f in "$W/x/sbin/$1" "$W/x/usr/sbin/$1" "$W/x/bin/$1" "$W/x/usr/bin/$1"; do
		[ -e "$f" ] && { echo "$f"; return; }
	done
	die "$1 is not in the guest packages"
}
for b in mdadm nbd-client mke2fs e2fsck dumpe2fs debugfs; do
	put "$(bin_of "$b")" "sbin/$b"
done
ln -sf mke2fs "$R/sbin/mkfs.ext4"
ln -sf e2fsck "$R/sbin/fsck.ext4"
gcc -O2 -Wall -Wextra -static -o "$W/patgen" "$here/patgen.c"
put "$W/patgen" bin/patgen

# Shared libraries, looked up in the unpacked debs first.
LDP=$W/x/lib/x86_64-linux-gnu:$W/x/usr/lib/x86_64-linux-gnu
for b in mdadm nbd-client mke2fs e2fsck dumpe2fs debugfs; do
	out=$(LD_LIBRARY_PATH=$LDP ldd "$R/sbin/$b")
	! grep -q "not found" <<< "$out" || die "unresolved libraries for $b: $out"
	awk '/=>/ && $3 ~ /^\// { print $3 }' <<< "$out" | while read -r lib; do
		dest=${lib#"$W"/x}
		[ -e "$R/$dest" ] || put "$lib" "$dest"
	done
done
cp -L /lib64/ld-linux-x86-64.so.2 "$R/lib64/"

[ -f /etc/mke2fs.conf ] && cp /etc/mke2fs.conf "$R/etc/"
[ -f "$W/x/etc/mke2fs.conf" ] && cp "$W/x/etc/mke2fs.conf" "$R/etc/"
printf 'DEVICE partitions\nMAILADDR root\n' > "$R/etc/mdadm/mdadm.conf"
: > "$R/etc/fstab"
echo 'root:x:0:0:root:/:/bin/sh' > "$R/etc/passwd"
echo 'root:x:0:' > "$R/etc/group"

for p in "${order[@]}"; do
	put "$MODDIR/$p" "lib/modules/$KVER/$p"
done
printf '%s\n' "${order[@]}" > "$R/etc/raidvm/modules.load"
cp "$MODDIR/modules.dep" "$R/lib/modules/$KVER/"
install -m 0755 "$here/init" "$R/init"
install -m 0755 "$here/modprobe-log" "$R/sbin/modprobe-log"

mkdir -p "$W/out"
(cd "$R" && find . -print0 | sort -z | cpio --null -o -H newc --quiet) |
	gzip -6 > "$W/out/initramfs.cpio.gz"
cp "$K/boot/vmlinuz-$KVER" "$W/out/vmlinuz"
cp "$W/patgen" "$W/out/patgen"
echo "$KVER" > "$W/out/kver"
{ printf '%s' "$versions"; echo "busybox=$bbver"; } > "$W/out/versions"
printf '%s\n' "${order[@]}" > "$W/out/modules.load"
rm -rf "$G"
mv "$W/out" "$G"
# Guests of other package versions or scripts that nobody has built or
# used for a week go (another checkout may still use a recent one).
find "$VM_CACHE" -maxdepth 1 -name 'guest-*' ! -path "$G" -mtime +7 \
	-exec rm -rf {} + 2>/dev/null || true
log "built $G in $(( $(date +%s) - t0 )) s (kernel $KVER)"
echo "$G"
