#!/usr/bin/env bash
# Installs the Node tools of the MCP server's tests into a cache folder: the official MCP
# conformance suite (npm @modelcontextprotocol/conformance) and, as its dependency, the
# TypeScript SDK whose client the external-client test drives. Idempotent: prints the folder.
#
# 0.1.12 rather than 0.1.16: 0.1.13 and later import fs.globSync, which needs Node 22, and this
# machine's Node is 20; the scenarios a tools-only server answers are the same.
#
# Usage: hack/mcp-tools.sh [DIR]   (default: ~/.cache/capctl/npm/mcp-conformance-<version>)
set -euo pipefail

CONFORMANCE_VERSION="${CONFORMANCE_VERSION:-0.1.12}"
OUT="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/capctl/npm/mcp-conformance-${CONFORMANCE_VERSION}}"

if [[ -x "$OUT/node_modules/.bin/conformance" && -f "$OUT/node_modules/@modelcontextprotocol/sdk/package.json" ]]; then
  echo "$OUT"
  exit 0
fi
if ! command -v npm >/dev/null; then
  echo "mcp-tools: npm not found: install Node.js (20 or later) to run the MCP conformance tests; they skip without it (and fail under CI=true)" >&2
  [[ "${CI:-}" == true ]] && exit 1
  exit 0
fi
tmp="$OUT.tmp.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT
echo '{"private": true}' >"$tmp/package.json"
echo "mcp-tools: npm install @modelcontextprotocol/conformance@${CONFORMANCE_VERSION} into $OUT" >&2
(cd "$tmp" && npm install --no-audit --no-fund --loglevel=error "@modelcontextprotocol/conformance@${CONFORMANCE_VERSION}" >&2)
rm -rf "$OUT"
mv "$tmp" "$OUT"
trap - EXIT
echo "$OUT"
