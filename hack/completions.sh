#!/usr/bin/env bash
# Writes capctl's shell completion scripts (bash, zsh, fish, PowerShell) into DIR, from the
# command tree itself (`capctl completion SHELL`), for the release archives.
#
# Usage: hack/completions.sh DIR
set -euo pipefail
dir="${1:?usage: hack/completions.sh DIR}"
mkdir -p "$dir"
bin="$(mktemp -d)/capctl"
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/capctl
"$bin" completion bash >"$dir/capctl.bash"
"$bin" completion zsh >"$dir/_capctl"
"$bin" completion fish >"$dir/capctl.fish"
"$bin" completion powershell >"$dir/capctl.ps1"
