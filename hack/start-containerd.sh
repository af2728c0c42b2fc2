#!/usr/bin/env bash
# Starts containerd when none answers on its socket (root only), with the
# configuration minik8s uses: runc via the runc.v2 shim, cgroupfs, overlayfs,
# no CRI plugin. Idempotent: does nothing when a daemon already answers.
# Usage: hack/start-containerd.sh [socket]   (default /run/containerd/containerd.sock)
set -euo pipefail
addr=${1:-/run/containerd/containerd.sock}
dir=/run/minik8s/containerd
export PATH=$PATH:/usr/local/sbin:/usr/sbin:/sbin

if ctr --address "$addr" version >/dev/null 2>&1; then
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "containerd is not running on $addr and starting it needs root" >&2
	exit 1
fi
command -v containerd >/dev/null || { echo "containerd is not installed (run hack/install-deps.sh as root)" >&2; exit 1; }

mkdir -p "$dir"
exec 9>"$dir/lock"
flock 9
if ctr --address "$addr" version >/dev/null 2>&1; then
	exit 0
fi
cat >"$dir/config.toml" <<TOML
version = 2
root = "/var/lib/containerd"
state = "/run/containerd"
disabled_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = "$addr"
TOML
rm -f "$addr"
setsid containerd --config "$dir/config.toml" --address "$addr" </dev/null >>"$dir/containerd.log" 2>&1 9>&- &
for _ in $(seq 1 300); do
	ctr --address "$addr" version >/dev/null 2>&1 && { echo "containerd started on $addr (log $dir/containerd.log)"; exit 0; }
	sleep 0.1
done
echo "containerd did not start; see $dir/containerd.log:" >&2
tail -20 "$dir/containerd.log" >&2
exit 1
