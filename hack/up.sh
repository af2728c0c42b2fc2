#!/usr/bin/env bash
# Starts `minik8s up` (control plane and this machine as its node) in the
# background and waits until the node is Ready.
set -euo pipefail
cd "$(dirname "$0")/.."
data_dir=$1 port=$2
mkdir -p "$data_dir" _output
pidfile="$data_dir/minik8s.pid"
if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
	echo "minik8s is already running (pid $(cat "$pidfile"))"
else
	if [ "$(id -u)" != 0 ]; then
		echo "make up runs containers and pod networking: run it as root" >&2
		exit 1
	fi
	rm -f "$data_dir/admin.kubeconfig"
	nohup bin/minik8s up --data-dir "$data_dir" --port "$port" >_output/minik8s.log 2>&1 &
	echo $! >"$pidfile"
	for _ in $(seq 1 120); do
		[ -s "$data_dir/admin.kubeconfig" ] && break
		kill -0 "$(cat "$pidfile")" 2>/dev/null || { echo "minik8s exited; see _output/minik8s.log" >&2; tail -20 _output/minik8s.log >&2; exit 1; }
		sleep 0.5
	done
	[ -s "$data_dir/admin.kubeconfig" ] || { echo "minik8s did not become ready; see _output/minik8s.log" >&2; exit 1; }
	for _ in $(seq 1 120); do
		bin/kubectl --kubeconfig "$data_dir/admin.kubeconfig" wait --for=condition=Ready node --all --timeout=1s >/dev/null 2>&1 && break
		kill -0 "$(cat "$pidfile")" 2>/dev/null || { echo "minik8s exited; see _output/minik8s.log" >&2; tail -20 _output/minik8s.log >&2; exit 1; }
		sleep 0.5
	done
fi
cat <<MSG
minik8s is up. Use it with:
  export KUBECONFIG=$data_dir/admin.kubeconfig
  bin/kubectl get nodes
Stop it with: make down
MSG
