#!/usr/bin/env bash
# Builds the OCI registry the OCI provider-repository tests push to and read from (CNCF
# distribution, the registry `docker run registry` serves) from the Go module proxy into a cache
# folder, so the tests run against a real registry with TLS and htpasswd on loopback. Built in a
# wrapper module (hack/lib/wrapper-build.sh): the module's own go.mod pins more than it needs.
# Idempotent; about 9 minutes on a cold cache on 2 cores.
#
# Usage: hack/registry-bin.sh [FILE]   (default: ~/.cache/capctl/registry/<version>/registry)
set -euo pipefail
source "$(dirname "$0")/lib/wrapper-build.sh"

REGISTRY_VERSION="${REGISTRY_VERSION:-v3.1.2}"
OUT="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/capctl/registry/${REGISTRY_VERSION}/registry}"

wrapper_build "registry (distribution) ${REGISTRY_VERSION}" "$OUT" \
  github.com/distribution/distribution/v3/cmd/registry \
  "-X github.com/distribution/distribution/v3/version.version=${REGISTRY_VERSION}" \
  "github.com/distribution/distribution/v3@${REGISTRY_VERSION}"
