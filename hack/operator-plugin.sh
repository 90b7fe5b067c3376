#!/usr/bin/env bash
# Builds the Cluster API Operator's clusterctl plugin (clusterctl-operator, the command behind
# `clusterctl operator` and so `capctl operator`) from the Go module proxy into a cache folder,
# for the test that runs it through capctl's plugin dispatch. A throwaway wrapper module requires
# the operator module and builds its cmd/plugin (the module's replace directives make a plain
# `go install ...@VERSION` refuse). Idempotent: prints the binary's path.
#
# Usage: hack/operator-plugin.sh [FILE]   (default: ~/.cache/capctl/operator/<version>/clusterctl-operator)
set -euo pipefail

OPERATOR_VERSION="${OPERATOR_VERSION:-v0.29.0}"
OUT="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/capctl/operator/${OPERATOR_VERSION}/clusterctl-operator}"

if [[ -x "$OUT" ]]; then
  echo "$OUT"
  exit 0
fi
mkdir -p "$(dirname "$OUT")"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0

echo "operator-plugin: building clusterctl-operator ${OPERATOR_VERSION} (a few minutes on a cold cache)" >&2
cd "$work"
go mod init operatorpluginwrapper >/dev/null 2>&1
cat >tools.go <<'GO'
//go:build tools

package tools

import _ "sigs.k8s.io/cluster-api-operator/cmd/plugin"
GO
go get "sigs.k8s.io/cluster-api-operator@${OPERATOR_VERSION}"
go mod tidy >/dev/null 2>&1 || go mod tidy
go build -trimpath -o "$OUT.tmp" sigs.k8s.io/cluster-api-operator/cmd/plugin
mv "$OUT.tmp" "$OUT"
echo "$OUT"
