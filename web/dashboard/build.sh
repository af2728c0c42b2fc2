#!/usr/bin/env bash
# Builds the dashboard (docs/design/0027-dashboard.md) into pkg/dashboard/dist,
# which the apiserver embeds: esbuild bundles src/ with its npm libraries
# (Chart.js, cytoscape, cytoscape-dagre) into one app.js and app.css, so the
# page needs nothing from the network. `make deps` runs it; needs node and npm.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="$here/../../pkg/dashboard/dist"
cd "$here"

# npm ci when node_modules is missing or older than the lock file (npm
# writes node_modules/.package-lock.json on each install).
if [ ! -e node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
	npm ci --no-audit --no-fund
fi

mkdir -p "$out"
node_modules/.bin/esbuild src/main.js --bundle --minify \
	--format=iife --target=es2020 --log-level=warning --outfile="$out/app.js"
node_modules/.bin/esbuild src/app.css --bundle --minify --log-level=warning --outfile="$out/app.css"
cp index.html "$out/index.html"
echo "dashboard built into ${out#"$here/../../"}"
