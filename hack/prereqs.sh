#!/usr/bin/env bash
# Checks, before the first long build, what `make test` / `make demo` need from this machine, and
# stops within about 10 s naming each missing thing and how to get it:
#   - Go at least the go.mod `go` version;
#   - free disk where the caches grow (the capctl cache and the Go build and module caches);
#   - root and `ip` (Debian's iproute2), with which the live harness gives each management cluster
#     its own network namespace (internal/testing/livemgmt/netns.go; LIVEMGMT_NETNS=off, the
#     harness's own switch, lets the clusters share the host's network instead and skips this);
#   - the upstream Cluster API fixtures: present ($CAPCTL_FIXTURES, ../shared/fixtures, or a complete
#     `make fixtures` build), or buildable (the Go module proxy answers `go mod download`).
#   - Node.js (node and npm) for the MCP server's conformance and external-client tests, under
#     CI=true only: elsewhere those tests skip, naming it.
#
# Usage: hack/prereqs.sh [test|demo|integration]   (default: test)
# PREREQS_MIN_FREE_GIB overrides the free disk asked for; PREREQS_IP_FALLBACKS the places besides
# PATH where `ip` is looked for (as the harness does).
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET="${1:-test}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/capctl"
FIXTURES_CACHE="${CAPCTL_FIXTURES_CACHE:-$CACHE/fixtures}"
# Measured on a cold machine (README, "Set-up for development"): the capctl cache reaches 1.6 GiB
# after `make test` (1.0 GiB of managers, 0.4 GiB of API server binaries, 0.1 GiB of clusterctl,
# 16 MiB of fixtures) and the Go build cache grows by several GiB compiling Kubernetes and Cluster
# API; the demo builds about half of it.
case "$TARGET" in
  demo) need_gib=6 ;;
  integration) need_gib=6 ;;
  *) need_gib=10 ;;
esac
need_gib="${PREREQS_MIN_FREE_GIB:-$need_gib}"
IP_FALLBACKS="${PREREQS_IP_FALLBACKS-/usr/sbin/ip /sbin/ip /usr/bin/ip}"

problems=()
problem() { problems+=("$*"); }

# --- Go ------------------------------------------------------------------------------------------
want_go="$(sed -n 's/^go \([0-9.]*\)$/\1/p' go.mod)"
if ! command -v go >/dev/null 2>&1; then
  problem "go is not on PATH: install Go ${want_go} or newer (https://go.dev/doc/install; on Debian the golang-go package may be older)"
else
  # The Go that will build: GOTOOLCHAIN when set, else the local one (no toolchain download here).
  have_go="$(GOTOOLCHAIN="${GOTOOLCHAIN:-local}" timeout 5 go env GOVERSION 2>/dev/null || true)"
  have_go="${have_go#go}"
  if [[ -z "$have_go" ]]; then
    problem "\`go env GOVERSION\` did not answer: check the Go installation (go.mod needs go ${want_go})"
  elif [[ "$(printf '%s\n%s\n' "$want_go" "$have_go" | sort -V | head -1)" != "$want_go" ]]; then
    problem "Go ${have_go} is older than go.mod's go ${want_go}: install Go ${want_go} or newer, or export GOTOOLCHAIN=go${want_go}"
  fi
fi

# --- free disk -----------------------------------------------------------------------------------
existing() { # $1, or its nearest existing parent
  local d="$1"
  while [[ ! -e "$d" && "$d" != / ]]; do d="$(dirname "$d")"; done
  echo "$d"
}
gocache="$(timeout 5 go env GOCACHE 2>/dev/null || echo "$HOME/.cache/go-build")"
declare -A seen=()
for d in "$CACHE" "$gocache"; do
  e="$(existing "$d")"
  dev="$(stat -c %d "$e")"
  [[ -z "${seen[$dev]-}" ]] || continue
  seen[$dev]=1
  free="$(df -Pk "$e" | awk 'NR == 2 { printf "%d", $4 / 1048576 }')"
  if ((free < need_gib)); then
    problem "only ${free} GiB free for ${d} (make ${TARGET} needs about ${need_gib} GiB for its builds): free some disk, or point XDG_CACHE_HOME / GOCACHE at a larger disk"
  fi
done

# --- root and ip, for the live harness's network namespaces ---------------------------------------
if [[ "$TARGET" != integration ]]; then
  netns="${LIVEMGMT_NETNS:-}"
  if [[ "$netns" == off || "$netns" == 0 || "$netns" == false ]]; then
    : # the harness shares the host's network; nothing to check
  else
    if [[ "$(id -u)" != 0 ]]; then
      problem "not root: the live management clusters need root for their network namespaces (run as root, or set LIVEMGMT_NETNS=off to share the host's network)"
    fi
    ipbin="$(command -v ip 2>/dev/null || true)"
    if [[ -z "$ipbin" ]]; then
      for c in $IP_FALLBACKS; do [[ -x "$c" ]] && { ipbin="$c"; break; }; done
    fi
    if [[ -z "$ipbin" ]]; then
      problem "the ip command is missing: apt-get install iproute2 (or set LIVEMGMT_NETNS=off to share the host's network)"
    fi
  fi
fi

# --- Node, for the MCP server's tests --------------------------------------------------------------
if [[ "$TARGET" != demo && "${CI:-}" == true ]]; then
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    problem "node and npm are missing: install Node.js 20 or later (the MCP conformance suite and TypeScript client run on it; without CI=true those tests skip)"
  fi
fi

# --- the fixtures --------------------------------------------------------------------------------
fixtures_found() {
  if [[ -n "${CAPCTL_FIXTURES:-}" ]]; then
    [[ -d "$CAPCTL_FIXTURES/repository" ]]
    return
  fi
  [[ -d ../shared/fixtures/repository || -f "$FIXTURES_CACHE/.stamps/complete" ]]
}
if [[ -n "${CAPCTL_FIXTURES:-}" ]] && ! fixtures_found; then
  problem "CAPCTL_FIXTURES=${CAPCTL_FIXTURES} has no repository/: unset it to use the built fixtures, or point it at a fixtures folder"
elif ! fixtures_found && command -v go >/dev/null 2>&1; then
  # Not there yet: `make fixtures` will build them, if the module proxy answers.
  probe="sigs.k8s.io/kustomize/kustomize/v5@v5.7.1"
  tmp="$(mktemp -d)"
  if ! out="$(cd "$tmp" && GOWORK=off GOFLAGS=-mod=mod timeout 8 go mod download -json "$probe" 2>&1)"; then
    err="$(sed -n 's/^[[:space:]]*"Error": "\(.*\)",*$/\1/p' <<<"$out")"
    problem "the fixtures are not built and the Go module proxy did not serve ${probe} (${err:-${out:-no answer in 8 s}}): check GOPROXY and the network, or set CAPCTL_FIXTURES to a fixtures folder"
  fi
  rm -rf "$tmp"
fi

if ((${#problems[@]})); then
  echo "prereqs: make ${TARGET} cannot run on this machine yet:" >&2
  for p in "${problems[@]}"; do echo "  - $p" >&2; done
  exit 1
fi
