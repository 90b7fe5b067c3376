#!/usr/bin/env bash
# Builds the reference clusterctl (the tool capctl must stay compatible with) from the Go module
# proxy into a cache folder, so the compatibility tests can run it against clusters capctl set up.
# `go install sigs.k8s.io/cluster-api/cmd/clusterctl@VERSION` is refused (replace directives in its
# go.mod), so a throwaway wrapper module requires it and builds the command. Idempotent.
#
# Usage: hack/clusterctl-bin.sh [FILE]   (default: ~/.cache/capctl/clusterctl/<version>/clusterctl)
set -euo pipefail

CLUSTERCTL_VERSION="${CLUSTERCTL_VERSION:-v1.14.2}"
OUT="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/capctl/clusterctl/${CLUSTERCTL_VERSION}/clusterctl}"

if [[ -x "$OUT" ]]; then
  echo "$OUT"
  exit 0
fi
mkdir -p "$(dirname "$OUT")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0

echo "clusterctl-bin: building clusterctl ${CLUSTERCTL_VERSION} (a few minutes on a cold cache)" >&2
cd "$work"
go mod init clusterctlwrapper >/dev/null 2>&1
cat >tools.go <<'GO'
//go:build tools

package tools

import _ "sigs.k8s.io/cluster-api/cmd/clusterctl"
GO
go get "sigs.k8s.io/cluster-api@${CLUSTERCTL_VERSION}" "sigs.k8s.io/cluster-api/api@${CLUSTERCTL_VERSION}" >/dev/null 2>&1
go mod tidy >/dev/null 2>&1 || go mod tidy
go build -trimpath \
  -ldflags "-X sigs.k8s.io/cluster-api/version.gitVersion=${CLUSTERCTL_VERSION} -X sigs.k8s.io/cluster-api/version.gitMajor=1 -X sigs.k8s.io/cluster-api/version.gitTreeState=clean" \
  -o "$OUT.tmp" sigs.k8s.io/cluster-api/cmd/clusterctl
mv "$OUT.tmp" "$OUT"
echo "$OUT"
