#!/usr/bin/env bash
# Installs what minik8s needs on a bare Debian 12: build tools and the Go
# modules. Idempotent: does nothing when everything is present.
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

if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then
	echo "Go 1.26 is required (https://go.dev/dl); it was not found on PATH or in /usr/local/go" >&2
	exit 1
fi
go mod download
