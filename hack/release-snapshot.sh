#!/usr/bin/env bash
# `make release-snapshot`: builds every release artefact with goreleaser from a fresh clone of
# HEAD, then puts its dist/ in place of the work tree's. The clone makes the snapshot what a
# release of this commit would be (nothing uncommitted in it, the tree state "clean"), and gives
# goreleaser the git state it reads the commit from: without a remote it records the commit as
# "none" and the binaries' `capctl version` and the SBOMs would not name it.
#
# Usage: hack/release-snapshot.sh [goreleaser flags...]   (run from the repository root)
set -euo pipefail

root="$(git rev-parse --show-toplevel)"
if [[ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]]; then
  echo "release-snapshot: the work tree has uncommitted changes; the snapshot is built from HEAD ($(git -C "$root" rev-parse --short HEAD)) without them" >&2
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git clone -q "$root" "$work/capctl"
(cd "$work/capctl" && goreleaser release --snapshot --clean "$@")
rm -rf "$root/dist"
mv "$work/capctl/dist" "$root/dist"
echo "release-snapshot: artefacts of $(git -C "$root" rev-parse --short HEAD) in $root/dist"
