#!/usr/bin/env bash
# Builds the Cluster API Operator's clusterctl plugin (clusterctl-operator, the command behind
# `clusterctl operator` and so `capctl operator`) from the Go module proxy into a cache folder,
# for the test that runs it through capctl's plugin dispatch. The module's replace directives make
# a plain `go install ...@VERSION` refuse, so it is built in a wrapper module
# (hack/lib/wrapper-build.sh). Idempotent: prints the binary's path.
#
# Usage: hack/operator-plugin.sh [FILE]   (default: ~/.cache/capctl/operator/<version>/clusterctl-operator)
set -euo pipefail
source "$(dirname "$0")/lib/wrapper-build.sh"

OPERATOR_VERSION="${OPERATOR_VERSION:-v0.29.0}"
OUT="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/capctl/operator/${OPERATOR_VERSION}/clusterctl-operator}"

wrapper_build "clusterctl-operator ${OPERATOR_VERSION}" "$OUT" sigs.k8s.io/cluster-api-operator/cmd/plugin "" \
  "sigs.k8s.io/cluster-api-operator@${OPERATOR_VERSION}"
