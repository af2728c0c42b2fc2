#!/usr/bin/env bash
# Builds the root filesystems of the serverless function runtimes from Debian
# packages, as plain uncompressed tarballs (paths like ./usr/bin/python3):
#
#   python3.tar     Debian 12 minbase + python3 (and ca-certificates)
#   python3-ml.tar  the same + python3-numpy, python3-sklearn (scipy with the
#                   reference BLAS and LAPACK; no compiler)
#
# into $MINIK8S_RUNTIMES_DIR (default /var/lib/minik8s/runtimes), where
# pkg/serverless/pyruntime.BaseTarball finds them. Needs root and debootstrap;
# downloads only from the Debian mirror ($DEBIAN_MIRROR, default the first
# .../debian URI in /etc/apt/sources*). Idempotent: a tarball newer than this
# script is kept. Each tarball is written under a temporary name and renamed
# when complete, so an interrupted run never leaves half a tarball.
set -euo pipefail

script="$(readlink -f "$0")"
dir="${MINIK8S_RUNTIMES_DIR:-/var/lib/minik8s/runtimes}"
suite=bookworm

if [ "$(id -u)" != 0 ]; then
	echo "build-runtimes.sh must run as root (debootstrap and chroot)" >&2
	exit 1
fi
command -v debootstrap >/dev/null || { echo "debootstrap is missing: apt-get install debootstrap" >&2; exit 1; }

mirror="${DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
	mirror="$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
		awk '/^(deb|URIs:)/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:\/\/.*\/debian\/?$/) { print $i; exit } }' || true)"
fi
mirror="${mirror:-http://deb.debian.org/debian}"

mkdir -p "$dir"
# One build at a time (a parallel `make deps`).
exec 9>"$dir/.build.lock"
flock 9

# reap removes a work dir. debootstrap mounts proc and sys (and may bind
# /dev) in its target: whatever is still mounted under it is unmounted
# first, deepest first.
reap() {
	awk -v w="$1/" 'index($2, w) == 1 { print $2 }' /proc/self/mounts | sort -r |
		while read -r m; do umount -l "$m" || true; done
	rm -rf --one-file-system "$1"
}

work=
tmp_tar=
cleanup() {
	[ -z "$work" ] || [ ! -d "$work" ] || reap "$work"
	[ -z "$tmp_tar" ] || rm -f "$tmp_tar"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# What a run killed outright (SIGKILL, a reboot) left behind.
for stale in "$dir"/.build.*; do
	[ ! -d "$stale" ] || reap "$stale"
done
rm -f "$dir"/.python3.tar.* "$dir"/.python3-ml.tar.*

# trim removes what a function never needs: package lists and caches,
# documentation, manuals, translations, logs and the static device nodes
# (the container runtime provides /dev).
trim() {
	local root=$1
	rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/var/cache/debconf/*-old \
		"$root"/var/lib/dpkg/*-old "$root"/var/log/* "$root"/tmp/* "$root"/var/tmp/* \
		"$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
		"$root"/usr/share/locale/* "$root"/usr/share/lintian
	: >"$root/etc/resolv.conf"
}

# pack writes the root filesystem to $dir/$name.tar, sorted by name with
# numeric owners, through a temporary file renamed at the end.
pack() {
	local root=$1 name=$2
	tmp_tar="$(mktemp "$dir/.$name.tar.XXXXXX")"
	tar --sort=name --numeric-owner --exclude='./dev/*' -C "$root" -cf "$tmp_tar" .
	chmod 0644 "$tmp_tar"
	mv -f "$tmp_tar" "$dir/$name.tar"
	tmp_tar=
}

fresh() { [ -s "$dir/$1.tar" ] && [ "$dir/$1.tar" -nt "$script" ]; }

report() {
	local name=$1 start=$2
	echo "$name.tar: $(du -h "$dir/$name.tar" | cut -f1) ($(du -b "$dir/$name.tar" | cut -f1) bytes), built in $((SECONDS - start))s"
}

build_python3() {
	local start=$SECONDS root
	work="$(mktemp -d "$dir/.build.XXXXXX")"
	root="$work/root"
	echo "building python3.tar: debootstrap --variant=minbase $suite from $mirror"
	debootstrap --variant=minbase --include=python3,ca-certificates "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 || {
		tail -n 30 "$work/debootstrap.log" >&2
		[ ! -f "$root/debootstrap/debootstrap.log" ] || tail -n 30 "$root/debootstrap/debootstrap.log" >&2
		echo "debootstrap failed" >&2
		exit 1
	}
	# Packages added later (python3-ml) skip their documentation too.
	cat >"$root/etc/dpkg/dpkg.cfg.d/minik8s-excludes" <<-'EOF'
		path-exclude=/usr/share/doc/*
		path-include=/usr/share/doc/*/copyright
		path-exclude=/usr/share/man/*
		path-exclude=/usr/share/info/*
		path-exclude=/usr/share/locale/*
		path-exclude=/usr/share/lintian/*
	EOF
	chroot "$root" python3 -c 'import http.server, json, ast' || { echo "python3 does not run in the new root" >&2; exit 1; }
	trim "$root"
	pack "$root" python3
	cleanup
	work=
	report python3 "$start"
}

build_python3_ml() {
	local start=$SECONDS root
	work="$(mktemp -d "$dir/.build.XXXXXX")"
	root="$work/root"
	mkdir "$root"
	echo "building python3-ml.tar: python3.tar + python3-numpy python3-sklearn"
	tar --numeric-owner -C "$root" -xpf "$dir/python3.tar"
	# What apt and the maintainer scripts need in the chroot: name
	# resolution and the basic device nodes (packed without them).
	cp /etc/resolv.conf "$root/etc/resolv.conf"
	for dev in null:1:3 zero:1:5 random:1:8 urandom:1:9; do
		IFS=: read -r n major minor <<<"$dev"
		mknod -m 666 "$root/dev/$n" c "$major" "$minor"
	done
	# scipy names python3-pythran as a dependency, which brings a C++
	# toolchain and boost (some 500 MB) that nothing uses at run time; a
	# stand-in package provides it instead.
	mkdir -p "$root/tmp/no-pythran/DEBIAN"
	cat >"$root/tmp/no-pythran/DEBIAN/control" <<-'EOF'
		Package: minik8s-no-pythran
		Version: 1.0
		Architecture: all
		Maintainer: minik8s
		Provides: python3-pythran
		Description: stands in for python3-pythran
		 scipy depends on python3-pythran, a compiler it does not use at run time.
	EOF
	{
		chroot "$root" dpkg-deb --build /tmp/no-pythran /tmp/no-pythran.deb &&
			chroot "$root" dpkg -i /tmp/no-pythran.deb &&
			chroot "$root" apt-get -q update &&
			DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get -q install -y --no-install-recommends python3-numpy python3-sklearn &&
			chroot "$root" apt-get clean
	} >"$work/apt.log" 2>&1 || {
		tail -n 30 "$work/apt.log" >&2
		echo "installing python3-numpy python3-sklearn failed" >&2
		exit 1
	}
	# The libraries' own test suites (some 45 MB) are never imported.
	find "$root/usr/lib/python3/dist-packages" -depth -type d -name tests -exec rm -rf {} +
	trim "$root"
	chroot "$root" python3 -c 'import numpy, sklearn
from sklearn.datasets import load_digits
from sklearn.neighbors import KNeighborsClassifier
x, y = load_digits(return_X_y=True)
KNeighborsClassifier().fit(x[:200], y[:200]).predict(x[200:210])' ||
		{ echo "numpy or sklearn does not work in the new root" >&2; exit 1; }
	pack "$root" python3-ml
	cleanup
	work=
	report python3-ml "$start"
}

fresh python3 || build_python3
fresh python3-ml || build_python3_ml
