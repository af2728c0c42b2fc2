#!/usr/bin/env bash
# Stops the cluster `make up` started; its state stays in the data dir.
set -euo pipefail
pidfile="$1/minik8s.pid"
if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
	kill "$(cat "$pidfile")"
	for _ in $(seq 1 40); do kill -0 "$(cat "$pidfile")" 2>/dev/null || break; sleep 0.25; done
	echo "minik8s stopped"
fi
rm -f "$pidfile"
