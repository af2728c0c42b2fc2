#!/usr/bin/env bash
# Runs the upstream Kubernetes conformance suite (e2e.test of k8s.io/kubernetes
# v1.37.2) against a minik8s cluster with a node, offline: the test images the
# suite's pods name are built on this machine and imported into the node's
# containerd under those very names (docs/design/0038-conformance-images.md).
#
# Usage: hack/conformance.sh [all|suite|images|up|run|down]     (default all)
#   suite   build e2e.test (../shared/tools/conformance.sh build)
#   images  build the test images and import them into containerd
#   up      start the cluster (hack/up.sh), unless KUBECONFIG names one
#   run     conformance.sh runeach over FOCUS/SKIP, then the per-sig table
#   down    stop the cluster `up` started
#   all     suite, images, up, run, and down when this run started the cluster
#
# Environment (all optional):
#   CONFORMANCE_SH  the conformance tool (default ../shared/tools/conformance.sh)
#   K8S_VERSION     k8s.io/kubernetes version of the suite   (default v1.37.2)
#   CACHE           the tool's cache  (default ~/.cache/minik8s-conformance)
#   IMAGES_DIR      root file system, binaries, image tarball
#                                         (default _output/conformance/images)
#   DATA_DIR, PORT  the cluster's data dir and apiserver port, as `make up`'s
#                                           (default _output/cluster, 6443)
#   KUBECONFIG      use this cluster instead of starting one
#   CONTAINERD      containerd socket    (default /run/containerd/containerd.sock)
#   FOCUS, SKIP     spec selection, Go regexps       (default '\[Conformance\]')
#   PROCS           specs run at once              (default: 2 per CPU, 4 to 12)
#   SPEC_TIMEOUT    seconds per spec                              (default 700)
#   OUT             reports of the run   (default _output/conformance/run-<stamp>)
#   KEEP=1          leave the cluster running after `all`
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
script="$root/hack/conformance.sh"

K8S_VERSION=${K8S_VERSION:-v1.37.2}
CACHE=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/minik8s-conformance}
CONFORMANCE_SH=${CONFORMANCE_SH:-$root/../shared/tools/conformance.sh}
IMAGES_DIR=${IMAGES_DIR:-$root/_output/conformance/images}
DATA_DIR=${DATA_DIR:-$root/_output/cluster}
PORT=${PORT:-6443}
CONTAINERD=${CONTAINERD:-/run/containerd/containerd.sock}
FOCUS=${FOCUS:-'\[Conformance\]'}
SKIP=${SKIP:-}
SPEC_TIMEOUT=${SPEC_TIMEOUT:-700}
if [ -z "${PROCS:-}" ]; then
	PROCS=$(($(nproc) * 2))
	[ "$PROCS" -ge 4 ] || PROCS=4
	[ "$PROCS" -le 12 ] || PROCS=12
fi
export K8S_VERSION CACHE SPEC_TIMEOUT PROCS
export PATH=$PATH:/usr/local/go/bin:$HOME/go/bin:/usr/local/sbin:/usr/sbin:/sbin

die() { echo "conformance: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" = 0 ] || die "$1 needs root"; }

tool() {
	[ -x "$CONFORMANCE_SH" ] || die "the conformance tool is missing: $CONFORMANCE_SH
  It builds e2e.test from k8s.io/kubernetes@$K8S_VERSION (served by the Go module
  proxy) in a throwaway module under \$CACHE, and runs it spec by spec. Point
  CONFORMANCE_SH at a copy of it."
	"$CONFORMANCE_SH" "$@"
}

suite() { tool build; }

# --- images ----------------------------------------------------------------

# The Debian root file system under agnhost, nginx, glibc-dns-testing and
# nonroot: what their upstream bases (Alpine, nginx:alpine, debian-base)
# give the commands the specs run (sh, dig, nslookup, getent, curl, wget,
# nc, ip, socat, ping, ps), nginx, and the user and group agnhost's image
# defines. Built with debootstrap from the Debian mirror; kept until this
# recipe changes (its hash is kept beside the tarball).
base_rootfs() {
	local out=$IMAGES_DIR/debian-base.tar recipe
	recipe=$(declare -f base_rootfs | sha256sum | cut -d' ' -f1)
	if [ -s "$out" ] && [ "$(cat "$out.recipe" 2>/dev/null)" = "$recipe" ]; then return; fi
	need_root "building the Debian base (debootstrap, chroot)"
	command -v debootstrap >/dev/null || die "debootstrap is missing: apt-get install debootstrap"
	local mirror=${DEBIAN_MIRROR:-}
	if [ -z "$mirror" ]; then
		mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
			awk '/^(deb|URIs:)/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:\/\/.*\/debian\/?$/) { print $i; exit } }' || true)
	fi
	mirror=${mirror:-http://deb.debian.org/debian}
	work=$(mktemp -d "$IMAGES_DIR/.base.XXXXXX")
	trap reap EXIT
	echo "building debian-base.tar: debootstrap --variant=minbase bookworm from $mirror"
	debootstrap --variant=minbase \
		--include=bind9-dnsutils,curl,wget,netcat-openbsd,iproute2,socat,iputils-ping,procps,nginx-light,ca-certificates \
		bookworm "$work/root" "$mirror" >"$work/debootstrap.log" 2>&1 ||
		{ tail -n 30 "$work/debootstrap.log" >&2; die "debootstrap failed"; }
	local r=$work/root
	chroot "$r" useradd -u 1000 -M -s /bin/sh user-defined-in-image
	chroot "$r" groupadd -g 50000 group-defined-in-image
	chroot "$r" usermod -a -G group-defined-in-image user-defined-in-image
	# nginx as its upstream image runs it: IPv4 port 80, logs to the
	# container's output
	cat >"$r/etc/nginx/sites-available/default" <<-'EOF'
		server {
			listen 80 default_server;
			root /var/www/html;
			index index.html index.htm index.nginx-debian.html;
			server_name _;
			location / { try_files $uri $uri/ =404; }
		}
	EOF
	ln -sf /dev/stdout "$r/var/log/nginx/access.log"
	ln -sf /dev/stderr "$r/var/log/nginx/error.log"
	mkdir -p "$r/uploads"
	rm -rf "$r"/var/lib/apt/lists/* "$r"/var/cache/apt/* "$r"/var/log/*.log "$r"/tmp/* \
		"$r"/usr/share/doc/* "$r"/usr/share/man/* "$r"/usr/share/info/* "$r"/usr/share/locale/*
	: >"$r/etc/resolv.conf"
	tar --sort=name --numeric-owner --mtime=@0 --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' \
		-C "$r" -cf "$work/base.tar" .
	mv -f "$work/base.tar" "$out"
	echo "$recipe" >"$out.recipe"
	reap
	echo "debian-base.tar: $(du -h "$out" | cut -f1)"
}

# reap removes the work dir of base_rootfs. debootstrap mounts proc and sys
# in its target: what is still mounted under it is unmounted, deepest first.
work=
reap() {
	[ -n "$work" ] && [ -d "$work" ] || return 0
	awk -v w="$work/" 'index($2, w) == 1 { print $2 }' /proc/self/mounts | sort -r |
		while read -r m; do umount -l "$m" || true; done
	rm -rf --one-file-system "$work"
}

# agnhost and nonewprivs' nnp, static, from the k8s.io/kubernetes module the
# conformance tool's throwaway module requires; the aggregator spec's
# sample-apiserver (k8s.io/sample-apiserver, which that module pins to the
# suite's version) and etcd (go.etcd.io/etcd/server/v3, at the version
# k8s.io/kubernetes requires) from the same module.
test_programs() {
	local mod=$CACHE/mod-$K8S_VERSION
	[ -f "$mod/go.mod" ] || die "no $mod/go.mod: run '$0 suite' first (the conformance tool makes it)"
	local name pkg out
	for name in agnhost nonewprivs sample-apiserver etcd; do
		case "$name" in
			sample-apiserver) pkg=k8s.io/sample-apiserver ;;
			etcd) pkg=go.etcd.io/etcd/server/v3 ;;
			*) pkg=k8s.io/kubernetes/test/images/$name ;;
		esac
		out=$IMAGES_DIR/$name
		[ -x "$out" ] && [ "$out" -nt "$mod/go.mod" ] && continue
		echo "building $name ($pkg, static)"
		(cd "$mod" && CGO_ENABLED=0 GOFLAGS="-mod=mod ${GOFLAGS:-}" \
			go build -trimpath -ldflags "-s -w" -o "$out.tmp" "$pkg")
		mv -f "$out.tmp" "$out"
	done
}

images() {
	mkdir -p "$IMAGES_DIR"
	base_rootfs
	test_programs
	local kdir
	kdir=$(cd "$CACHE/mod-$K8S_VERSION" && go list -m -f '{{.Dir}}' k8s.io/kubernetes)
	[ -x bin/minik8s ] || die "bin/minik8s is missing: make build"
	local e2e=$CACHE/e2e-$K8S_VERSION.test
	[ -x "$e2e" ] || die "no $e2e: run '$0 suite' first"
	# the names the suite's pods use (KUBE_TEST_REPO_LIST re-points them)
	"$e2e" --list-images | sort >"$IMAGES_DIR/names.txt"
	go run ./hack/conformance-images -list "$IMAGES_DIR/names.txt" -base "$IMAGES_DIR/debian-base.tar" -agnhost "$IMAGES_DIR/agnhost" \
		-nnp "$IMAGES_DIR/nonewprivs" -sample-apiserver "$IMAGES_DIR/sample-apiserver" -etcd "$IMAGES_DIR/etcd" \
		-kubernetes "$kdir" -o "$IMAGES_DIR/images.tar"
	need_root "importing images into containerd"
	hack/start-containerd.sh "$CONTAINERD"
	bin/minik8s image import --containerd "$CONTAINERD" "$IMAGES_DIR/images.tar"
}

# --- cluster -----------------------------------------------------------------

kubeconfig() { echo "${KUBECONFIG:-$DATA_DIR/admin.kubeconfig}"; }

up() {
	if [ -n "${KUBECONFIG:-}" ]; then
		echo "using the cluster of $KUBECONFIG"
		return
	fi
	[ -x bin/minik8s ] && [ -x bin/kubectl ] || die "bin/minik8s or bin/kubectl is missing: make build"
	hack/up.sh "$DATA_DIR" "$PORT"
	# the suite's setup reads default/kubernetes; `minik8s up` publishes it
	local ok=
	for _ in $(seq 1 60); do
		bin/kubectl --kubeconfig "$(kubeconfig)" -n default get service kubernetes >/dev/null 2>&1 && { ok=1; break; }
		sleep 1
	done
	[ -n "$ok" ] || die "the cluster publishes no default/kubernetes Service"
	# a node under disk pressure is tainted and takes no pod: every spec
	# with a pod would time out
	if bin/kubectl --kubeconfig "$(kubeconfig)" get nodes \
		-o jsonpath='{.items[*].status.conditions[?(@.type=="DiskPressure")].status}' | grep -q True; then
		echo "conformance: warning: the node reports DiskPressure (under 10% of the file system of $DATA_DIR is free," \
			"Kubernetes' nodefs.available<10%): it takes no pods. Free space, or put DATA_DIR on another file system." >&2
	fi
}

down() { [ -n "${KUBECONFIG:-}" ] || hack/down.sh "$DATA_DIR"; }

run() {
	local out=${OUT:-$root/_output/conformance/run-$(date +%Y%m%d-%H%M%S)}
	# one line per spec as it ends, then the per-sig table (conformance.sh
	# summary)
	OUT=$out KUBECTL=${KUBECTL:-$root/bin/kubectl} tool runeach "$(kubeconfig)" "$FOCUS" "$SKIP"
	echo "reports: $out (summary.txt, results.tsv, junit.xml, spec/*/log)"
}

all() {
	suite
	images
	local started=
	if [ -z "${KUBECONFIG:-}" ] && ! { [ -f "$DATA_DIR/minik8s.pid" ] && kill -0 "$(cat "$DATA_DIR/minik8s.pid")" 2>/dev/null; }; then
		started=1
	fi
	up
	local rc=0
	run || rc=$?
	[ -z "$started" ] || [ "${KEEP:-}" = 1 ] || down
	return "$rc"
}

cmd=${1:-all}
case "$cmd" in
	all | suite | images | up | run | down) "$cmd" ;;
	base_rootfs | test_programs) mkdir -p "$IMAGES_DIR"; "$cmd" ;; # steps of images
	*) sed -n '2,30p' "$script"; exit 2 ;;
esac
