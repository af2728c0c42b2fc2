#!/usr/bin/env bash
# Installs what minik8s needs on a bare Debian 12: build tools, the container
# runtime packages (as root) and the Go modules. Idempotent: does nothing when
# everything is present.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
for cmd_pkg in "git:git" "make:make" "gcc:gcc" "curl:curl"; do
	command -v "${cmd_pkg%%:*}" >/dev/null 2>&1 || need+=("${cmd_pkg##*:}")
done
if [ ${#need[@]} -gt 0 ]; then
	if [ "$(id -u)" != 0 ]; then
		echo "missing packages ${need[*]}; run as root or install them" >&2
		exit 1
	fi
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${need[@]}"
fi

# The node runtime: containerd + runc, the CNI plugins, busybox for the built-in
# image, the kernel plumbing tools, nginx for the gateway (pkg/gateway), and for
# serverless functions debootstrap (the runtimes' root filesystems, below),
# python3 (the build checks function code with it) and wrk (load tests), and
# for the Slurm provider munge, slurmctld, slurmd and slurm-client (Slurm
# 22.05): its tests run a one-host cluster of their own (pkg/kubelet/slurm/
# slurmtest) with its own key, config and ports, never the packages' services;
# and glusterfs-client (with glusterfs-common's brick daemon glusterfsd) for
# shared volumes (pkg/glusterfs): minik8s runs glusterfsd itself, no glusterd.
# prometheus-node-exporter is each node's exporter for the monitoring; Debian's
# prometheus is not used (built without Kubernetes service discovery), see
# Prometheus below.
# Installed only as root and only when
# missing; without root the runtime tests skip and say why.
runtime_pkgs=()
for pkg in containerd runc containernetworking-plugins busybox-static iproute2 iptables nftables nginx debootstrap python3 wrk munge slurmctld slurmd slurm-client glusterfs-client prometheus-node-exporter; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$' || runtime_pkgs+=("$pkg")
done
if [ ${#runtime_pkgs[@]} -gt 0 ]; then
	if [ "$(id -u)" = 0 ]; then
		export DEBIAN_FRONTEND=noninteractive
		# Wait for another apt (a parallel install) rather than fail on its lock.
		apt-get -o DPkg::Lock::Timeout=600 update -qq
		# --no-install-recommends: containerd must not pull in a systemd unit
		# start or docker; we start containerd ourselves when none is running.
		# Packages must not start their services (nginx would take port 80):
		# minik8s runs nginx itself, with its own configuration. Without this
		# munge's postinst starts a system munged (invoke-rc.d munge start,
		# with the key it generates in /etc/munge) that would keep running;
		# slurmctld's and slurmd's init scripts do nothing without
		# /etc/slurm/slurm.conf, which the packages do not ship.
		own_policy=
		if [ ! -e /usr/sbin/policy-rc.d ]; then
			printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
			chmod +x /usr/sbin/policy-rc.d
			own_policy=1
		fi
		apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${runtime_pkgs[@]}"
		[ -z "$own_policy" ] || rm -f /usr/sbin/policy-rc.d
	else
		echo "note: not root, so not installing ${runtime_pkgs[*]} (the container runtime tests will skip)" >&2
	fi
fi

if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then
	echo "Go 1.26 is required (https://go.dev/dl); it was not found on PATH or in /usr/local/go" >&2
	exit 1
fi
go mod download

# CoreDNS, the cluster DNS (pkg/dns runs it as a child of `minik8s up`; the
# DNS integration test needs it). Built from source with the Go toolchain,
# the only download path the project relies on; a few minutes on 2 cores.
COREDNS_VERSION=v1.15.0
coredns_bin="$(go env GOPATH)/bin/coredns"
if [ -x "$coredns_bin" ] && "$coredns_bin" -version 2>/dev/null | grep -qx "CoreDNS-${COREDNS_VERSION#v}"; then
	:
else
	echo "installing coredns ${COREDNS_VERSION} into $(go env GOPATH)/bin (go install; takes a few minutes)"
	go install "github.com/coredns/coredns@${COREDNS_VERSION}"
fi

# The distribution registry, the cluster's image registry (serverless function
# images are pushed to it). Built from source like CoreDNS.
REGISTRY_VERSION=v3.1.2
registry_bin="$(go env GOPATH)/bin/registry"
if [ -x "$registry_bin" ] && "$registry_bin" --version 2>/dev/null | grep -Eq " ${REGISTRY_VERSION}(\+[a-z]+)?\$"; then
	:
else
	echo "installing the distribution registry ${REGISTRY_VERSION} into $(go env GOPATH)/bin (go install)"
	go install "github.com/distribution/distribution/v3/cmd/registry@${REGISTRY_VERSION}"
fi

# Prometheus, the cluster's monitoring (pkg/prometheus runs it as a child of
# `minik8s up`; its tests need it), with promtool. Debian's package is built
# without Kubernetes service discovery, the way it finds its targets here
# (docs/design/0026-monitoring.md), so it is built from source like CoreDNS.
# Its go.mod has replace and exclude directives, which `go install
# pkg@version` refuses, so it is built in a throwaway module that repeats the
# replace. Takes several minutes.
PROMETHEUS_VERSION=3.5.1
PROMETHEUS_MODULE_VERSION=v0.305.1 # Prometheus 3.5.1's Go module version
prometheus_bin="$(go env GOPATH)/bin/prometheus"
if [ -x "$prometheus_bin" ] && [ -x "$(go env GOPATH)/bin/promtool" ] &&
	"$prometheus_bin" --version 2>/dev/null | grep -q "^prometheus, version ${PROMETHEUS_VERSION} "; then
	:
else
	echo "building prometheus ${PROMETHEUS_VERSION} into $(go env GOPATH)/bin (go build; takes several minutes)"
	prometheus_src="$(mktemp -d)"
	printf '%s\n' "module minik8s.local/prometheus-build" "" "go 1.24" "" \
		"require github.com/prometheus/prometheus ${PROMETHEUS_MODULE_VERSION}" "" \
		"replace github.com/fsnotify/fsnotify v1.8.0 => github.com/fsnotify/fsnotify v1.7.0" > "$prometheus_src/go.mod"
	(cd "$prometheus_src" && GOFLAGS=-mod=mod go build -trimpath \
		-ldflags "-X github.com/prometheus/common/version.Version=${PROMETHEUS_VERSION}" \
		-o "$(go env GOPATH)/bin/" github.com/prometheus/prometheus/cmd/prometheus github.com/prometheus/prometheus/cmd/promtool)
	rm -rf "$prometheus_src"
fi

# The serverless runtimes' root filesystems (python3, python3-ml), built from
# Debian packages with debootstrap; quiet when they are already built.
if [ "$(id -u)" = 0 ]; then
	hack/build-runtimes.sh
elif [ ! -e "${MINIK8S_RUNTIMES_DIR:-/var/lib/minik8s/runtimes}/python3.tar" ]; then
	echo "note: not root, so not building the function runtimes (run hack/build-runtimes.sh as root)" >&2
fi

# The web dashboard (docs/design/0027-dashboard.md): Debian's node and npm,
# then web/dashboard/build.sh bundles it (npm ci, esbuild) into
# pkg/dashboard/dist, which the apiserver embeds.
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
	if [ "$(id -u)" = 0 ]; then
		apt-get -o DPkg::Lock::Timeout=600 update -qq
		apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends nodejs npm
	else
		echo "note: not root, so not installing nodejs npm (the dashboard is not built)" >&2
	fi
fi
if command -v npm >/dev/null; then
	web/dashboard/build.sh
fi
