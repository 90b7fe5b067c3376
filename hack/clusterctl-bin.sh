#!/usr/bin/env bash
# Builds the reference clusterctl (the tool capctl must stay compatible with) from the Go module
# proxy into a cache folder, so the compatibility tests can run it against clusters capctl set up.
# `go install sigs.k8s.io/cluster-api/cmd/clusterctl@VERSION` is refused (replace directives in its
# go.mod), so it is built in a wrapper module (hack/lib/wrapper-build.sh). Idempotent.
#
# CLUSTERCTL_VERSION picks the release: the reference v1.14.2 by default; the live test of a
# v1beta1 management cluster uses v1.10.10, the clusterctl such a cluster was set up with.
#
# Usage: hack/clusterctl-bin.sh [FILE]   (default: ~/.cache/capctl/clusterctl/<version>/clusterctl)
set -euo pipefail
source "$(dirname "$0")/lib/wrapper-build.sh"

CLUSTERCTL_VERSION="${CLUSTERCTL_VERSION:-v1.14.2}"
OUT="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/capctl/clusterctl/${CLUSTERCTL_VERSION}/clusterctl}"

# The API types moved to their own module (sigs.k8s.io/cluster-api/api) in v1.11.
MODULES=("sigs.k8s.io/cluster-api@${CLUSTERCTL_VERSION}")
case "$CLUSTERCTL_VERSION" in
  v1.[0-9].*|v1.10.*) ;;
  *) MODULES+=("sigs.k8s.io/cluster-api/api@${CLUSTERCTL_VERSION}") ;;
esac

wrapper_build "clusterctl ${CLUSTERCTL_VERSION}" "$OUT" sigs.k8s.io/cluster-api/cmd/clusterctl \
  "-X sigs.k8s.io/cluster-api/version.gitVersion=${CLUSTERCTL_VERSION} -X sigs.k8s.io/cluster-api/version.gitMajor=1 -X sigs.k8s.io/cluster-api/version.gitTreeState=clean" \
  "${MODULES[@]}"
