#!/usr/bin/env bash
# Builds what a live management cluster runs besides kube-apiserver and etcd, from the Go module
# proxy, into the cache folder shared by every clone:
#   - the Cluster API managers (core, kubeadm bootstrap, kubeadm control plane, and the Docker
#     infrastructure provider CAPD, whose in-memory backend simulates workload machines), one set
#     per entry of CAPI_SETS, into $CAPCTL_CAPI_BINS/<cluster-api version>/<provider label>;
#   - kube-controller-manager (garbage collector, namespace controller) next to kube-apiserver,
#     through hack/envtest-bins.sh (same Kubernetes module, same wrapper).
# `go install pkg@version` is refused for these (replace directives), so a throwaway wrapper module
# requires the modules and builds the main packages. Idempotent: binaries present are left alone.
#
# CAPI_SETS is a list of CORE[:TEST] pairs: the sigs.k8s.io/cluster-api version and the
# sigs.k8s.io/cluster-api/test module version CAPD comes from (default: the same). The proxy serves
# cluster-api v1.13.4-v1.13.6 but the test module only from v1.13.7, hence "v1.13.5:v1.13.7".
#
# Usage: hack/live-bins.sh            (CAPI_SETS, CAPCTL_CAPI_BINS, CAPCTL_ENVTEST_DIR from the env)
set -euo pipefail
cd "$(dirname "$0")/.."

CAPI_SETS="${CAPI_SETS-v1.14.2 v1.13.5:v1.13.7}"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/capctl"
BINS="${CAPCTL_CAPI_BINS:-$CACHE/capi}"
K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ENVTEST_DIR="${CAPCTL_ENVTEST_DIR:-$CACHE/envtest/$K8S_VERSION}"
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0

log() { echo "live-bins: $(date -u +%H:%M:%S) $*" >&2; }

# provider label -> main package, for a cluster-api version (the core manager moved to ./core in v1.14).
pkg_of() {
  local label="$1" version="$2"
  case "$label" in
    cluster-api)
      case "$version" in v1.1[0-3].*) echo "sigs.k8s.io/cluster-api" ;; *) echo "sigs.k8s.io/cluster-api/core" ;; esac ;;
    bootstrap-kubeadm) echo "sigs.k8s.io/cluster-api/bootstrap/kubeadm" ;;
    control-plane-kubeadm) echo "sigs.k8s.io/cluster-api/controlplane/kubeadm" ;;
    infrastructure-docker) echo "sigs.k8s.io/cluster-api/test/infrastructure/docker" ;;
  esac
}
LABELS="cluster-api bootstrap-kubeadm control-plane-kubeadm infrastructure-docker"

# The version a manager reports: CAPD's is the test module's, the others' the core module's.
stamp_of() {
  local label="$1" core="$2" test="$3"
  if [[ "$label" == infrastructure-docker ]]; then echo "$test"; else echo "$core"; fi
}

build_set() {
  local core="${1%%:*}" test="${1#*:}"
  [[ "$test" == "$1" ]] && test="$core"
  local dir="$BINS/$core" todo="" l
  for l in $LABELS; do [[ -x "$dir/$l" ]] || todo+="$l "; done
  [[ -n "$todo" ]] || { echo "$dir"; return 0; }
  mkdir -p "$dir"
  local work rc=0; work="$(mktemp -d)"
  log "building Cluster API ${core} managers (CAPD from test ${test}): ${todo}"
  (
    cd "$work"
    go mod init livebins >/dev/null 2>&1
    {
      printf '//go:build tools\n\npackage tools\n\nimport (\n'
      for l in $todo; do printf '\t_ "%s"\n' "$(pkg_of "$l" "$core")"; done
      printf ')\n'
    } >tools.go
    # The api module exists from v1.14 on; before that the types live in the main module.
    local mods=("sigs.k8s.io/cluster-api@${core}" "sigs.k8s.io/cluster-api/test@${test}")
    case "$core" in v1.1[0-3].*) ;; *) mods+=("sigs.k8s.io/cluster-api/api@${core}") ;; esac
    go get "${mods[@]}" >/dev/null 2>&1 || go get "${mods[@]}"
    go mod tidy >/dev/null 2>&1 || go mod tidy
    # One `go build` per group of managers that carry the same version stamp: it compiles the
    # packages they share once and links them side by side. `go build -o DIR/` names each binary
    # after its package's last path element, so the two kubeadm managers go in separate groups.
    local -A groups=() names=()
    local key n bin g
    for l in $todo; do
      bin="$(basename "$(pkg_of "$l" "$core")")" n=0
      key="$(stamp_of "$l" "$core" "$test")"
      while [[ " ${names[$key#$n]-} " == *" $bin "* ]]; do n=$((n + 1)); done
      groups[$key#$n]+="$l " names[$key#$n]+="$bin "
    done
    for key in "${!groups[@]}"; do
      g="${groups[$key]% }"
      local v="${key%#*}"
      local minor="${v#v1.}"; minor="${minor%%.*}"
      local pkgs=() t0 out="$work/out/"
      for l in $g; do pkgs+=("$(pkg_of "$l" "$core")"); done
      t0=$(date +%s)
      rm -rf "$out"
      go build -trimpath \
        -ldflags "-X sigs.k8s.io/cluster-api/version.gitVersion=${v} -X sigs.k8s.io/cluster-api/version.gitMajor=1 -X sigs.k8s.io/cluster-api/version.gitMinor=${minor} -X sigs.k8s.io/cluster-api/version.gitTreeState=clean" \
        -o "$out" "${pkgs[@]}"
      for l in $g; do
        # Renamed beside its final name: each manager appears whole or not at all.
        mv "$out/$(basename "$(pkg_of "$l" "$core")")" "$dir/$l.tmp"
        mv "$dir/$l.tmp" "$dir/$l"
      done
      log "built ${g// /, } (${v}) into $dir in $(( $(date +%s) - t0 ))s"
    done
  ) || rc=$?
  rm -rf "$work"
  return $rc
}

# kube-controller-manager is built by envtest-bins with kube-apiserver and kubectl, in one go build
# (a no-op when they are there).
k8s() {
  K8S_VERSION="$K8S_VERSION" hack/envtest-bins.sh "$ENVTEST_DIR" >/dev/null
  log "kube-controller-manager ready in $ENVTEST_DIR"
}

first=1
for set in $CAPI_SETS; do
  build_set "$set" >/dev/null
  if [[ $first == 1 ]]; then
    first=0
    [[ "${LIVE_BINS_SKIP_K8S:-}" == 1 ]] || k8s
  fi
done
[[ -n "$CAPI_SETS" || "${LIVE_BINS_SKIP_K8S:-}" == 1 ]] || k8s
echo "$BINS"
