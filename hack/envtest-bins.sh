#!/usr/bin/env bash
# Builds the binaries that controller-runtime's envtest needs (kube-apiserver, etcd) plus kubectl,
# from the Go module proxy, into a cache folder. The usual envtest download host is not reachable
# from our build machines, so we compile them instead. Idempotent: a complete folder is left alone.
#
# Usage: hack/envtest-bins.sh [DIR]     (default: $CAPCTL_ENVTEST_DIR or ~/.cache/capctl/envtest/<k8s>)
#
# K8S_CMDS names the k8s.io/kubernetes/cmd/* commands to build (default: kube-apiserver kubectl
# kube-controller-manager: the live management clusters run the last beside the API server). They
# compile mostly the same packages, so they are built by one `go build` (one package graph, the
# shared packages compiled once and the two cores kept busy) rather than one after another.
set -euo pipefail

K8S_VERSION="${K8S_VERSION:-v1.37.2}"
ETCD_VERSION="${ETCD_VERSION:-v3.7.3}"
STAGING_VERSION="v0${K8S_VERSION#v1}" # v1.37.2 -> v0.37.2
DIR="${1:-${CAPCTL_ENVTEST_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/capctl/envtest/${K8S_VERSION}}}"
K8S_CMDS="${K8S_CMDS:-kube-apiserver kubectl kube-controller-manager}"

missing_cmds() {
  local c
  for c in $K8S_CMDS; do [[ -x "$DIR/$c" ]] || echo "$c"; done
}
if [[ -x "$DIR/etcd" && -z "$(missing_cmds)" ]]; then
  echo "$DIR"
  exit 0
fi
mkdir -p "$DIR"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0

log() { echo "envtest-bins: $*" >&2; }

# --- etcd ---------------------------------------------------------------------------------------
if [[ ! -x "$DIR/etcd" ]]; then
  log "building etcd ${ETCD_VERSION}"
  mkdir -p "$work/etcd"
  (
    cd "$work/etcd"
    go mod init envtestbins/etcd >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@${ETCD_VERSION}" >/dev/null 2>&1
    go build -trimpath -o "$DIR/etcd.tmp" go.etcd.io/etcd/server/v3
  )
  mv "$DIR/etcd.tmp" "$DIR/etcd"
fi

# --- kube-apiserver, kubectl (or the commands in K8S_CMDS) --------------------------------------
todo="$(missing_cmds | tr '\n' ' ')"
if [[ -n "${todo// /}" ]]; then
  log "building ${todo}${K8S_VERSION} (several minutes on a cold cache)"
  mkdir -p "$work/k8s"
  kgomod="$(go mod download -json "k8s.io/kubernetes@${K8S_VERSION}" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
  [[ -f "$kgomod" ]] || { log "could not download k8s.io/kubernetes@${K8S_VERSION}"; exit 1; }
  # Staging modules that kubernetes requires at v0.0.0 and replaces with ./staging/...:
  # point them at their published versions instead.
  staged="$(sed -n 's#^[[:space:]]*\(k8s.io/[^ ]*\) => ./staging/.*#\1#p' "$kgomod" | sort -u)"
  {
    echo "module envtestbins/k8s"
    echo
    grep -E '^go [0-9]' "$kgomod"
    grep -E '^godebug' "$kgomod" || true
    echo
    echo "require k8s.io/kubernetes ${K8S_VERSION}"
    echo
    for m in $staged; do
      case "$m" in k8s.io/sample-cli-plugin|k8s.io/sample-controller) continue ;; esac
      echo "replace $m => $m ${STAGING_VERSION}"
    done
  } >"$work/k8s/go.mod"
  {
    printf '//go:build tools\n\npackage tools\n\nimport (\n'
    for c in $todo; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done
    printf ')\n'
  } >"$work/k8s/tools.go"
  minor="${K8S_VERSION#v1.}"; minor="${minor%%.*}"
  ld=""
  for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ld+=" -X $p.gitVersion=${K8S_VERSION} -X $p.gitMajor=1 -X $p.gitMinor=${minor}"
    ld+=" -X $p.gitTreeState=clean -X $p.buildDate=1970-01-01T00:00:00Z"
  done
  (
    cd "$work/k8s"
    go mod tidy -e >/dev/null 2>&1 || go mod tidy
    pkgs=()
    for c in $todo; do pkgs+=("k8s.io/kubernetes/cmd/$c"); done
    mkdir -p "$work/out"
    go build -trimpath -ldflags "$ld" -o "$work/out/" "${pkgs[@]}"
  )
  # Copied next to their place, then renamed: a killed copy never leaves a half binary in DIR.
  for c in $todo; do
    cp "$work/out/$c" "$DIR/$c.tmp"
    mv "$DIR/$c.tmp" "$DIR/$c"
  done
fi
echo "$DIR"
