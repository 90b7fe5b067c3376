#!/usr/bin/env bash
# Builds the release tools from the Go module proxy into a cache folder, once per version:
# goreleaser (archives, checksums, krew manifest, Homebrew formula) and syft (the SBOM of each
# archive, which goreleaser's `sboms:` step runs). Pinned versions, so a release is reproducible and
# `make release-snapshot` never depends on whatever @latest means today. Idempotent: prints the bin
# folder to put on PATH.
#
# Usage: hack/release-tools.sh [DIR]   (default: ~/.cache/capctl/tools/bin)
set -euo pipefail

GORELEASER_VERSION="${GORELEASER_VERSION:-v2.15.1}"
SYFT_VERSION="${SYFT_VERSION:-v1.57.1}"
BIN="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/capctl/tools/bin}"
mkdir -p "$BIN"
export GOWORK=off CGO_ENABLED=0

# install NAME VERSION PACKAGE: the binary lands as NAME-VERSION, and NAME links to it, so two
# versions can share the folder and a version bump rebuilds.
install() {
  local name="$1" version="$2" pkg="$3"
  if [[ ! -x "$BIN/$name-$version" ]]; then
    echo "release-tools: building $name $version (a few minutes on a cold cache)" >&2
    local work
    work="$(mktemp -d)"
    GOBIN="$work" go install -trimpath -ldflags "-X main.version=${version#v}" "$pkg@$version"
    mv "$work/$name" "$BIN/$name-$version"
    rm -rf "$work"
  fi
  ln -sf "$name-$version" "$BIN/$name"
}

install goreleaser "$GORELEASER_VERSION" github.com/goreleaser/goreleaser/v2
install syft "$SYFT_VERSION" github.com/anchore/syft/cmd/syft
echo "$BIN"
