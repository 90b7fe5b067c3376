#!/usr/bin/env bash
# Regenerates the example provider repository under examples/repository that `make demo` installs.
#
# The CRDs of the core, kubeadm bootstrap and kubeadm control-plane providers are generated from
# Cluster API's Go types (module sigs.k8s.io/cluster-api/api, v1beta2 packages only, descriptions
# dropped to keep the files small) with controller-gen, both from the Go module proxy. The rest of
# each provider's components (examples/src/provider-base.yaml), the hand-written infrastructure
# provider "demo", the cert-manager CRDs stand-in and the cluster template come from examples/src.
#
# Usage: hack/gen-examples.sh        (needs Go and the Go module proxy; ~1-2 min on a cold cache)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT="$PWD"
SRC="$ROOT/examples/src"
REPO="$ROOT/examples/repository"
CONTROLLER_TOOLS_VERSION="${CONTROLLER_TOOLS_VERSION:-v0.21.0}"
CAPI_VERSIONS=(v1.14.0 v1.14.2)  # the api module versions the two example releases are generated from
DEMO_VERSIONS=(v0.1.0 v0.1.1)
CERT_MANAGER_VERSION=v1.21.1

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOWORK=off GOFLAGS=-mod=mod

log() { echo "gen-examples: $*" >&2; }

# gen_module VERSION: a throwaway module that requires controller-tools and the api module.
gen_module() {
  local dir="$work/mod-$1"
  mkdir -p "$dir"
  (
    cd "$dir"
    go mod init examplesgen >/dev/null 2>&1
    printf '//go:build tools\n\npackage tools\n\nimport (\n\t_ "sigs.k8s.io/cluster-api/api/core/v1beta2"\n\t_ "sigs.k8s.io/controller-tools/cmd/controller-gen"\n)\n' > tools.go
    go get "sigs.k8s.io/controller-tools@${CONTROLLER_TOOLS_VERSION}" "sigs.k8s.io/cluster-api/api@$1" >/dev/null 2>&1
    go mod tidy >/dev/null 2>&1
  )
  echo "$dir"
}

# crds DIR OUT LABEL PKG...: generate the CRDs of the packages into one multi-document file, with
# the provider label and the v1beta2 contract label (Cluster API tools resolve references with it).
crds() {
  local dir="$1" out="$2" label="$3"; shift 3
  local args=() p f
  for p in "$@"; do args+=("paths=sigs.k8s.io/cluster-api/api/$p"); done
  rm -rf "$dir/out" && mkdir -p "$dir/out"
  (cd "$dir" && "$work/controller-gen" crd:maxDescLen=0 "${args[@]}" output:crd:dir=out)
  : > "$out"
  for f in "$dir"/out/*.yaml; do
    echo "---" >> "$out"
    # metadata.name is the only two-space-indented "name:" key of a generated CRD.
    sed "s/^  name: \(.*\)$/  labels:\n    cluster.x-k8s.io\/provider: $label\n    cluster.x-k8s.io\/v1beta2: v1beta2\n  name: \1/" "$f" | grep -v '^---$' >> "$out"
  done
}

# base LABEL NS PREFIX VARPREFIX IMAGE GROUP RESOURCE KIND: the non-CRD components.
base() {
  sed -e "s|__LABEL__|$1|g" -e "s|__NS__|$2|g" -e "s|__PREFIX__|$3|g" -e "s|__VARPREFIX__|$4|g" \
      -e "s|__IMAGE__|$5|g" -e "s|__WEBHOOK_GROUP_DASHED__|${6//./-}|g" -e "s|__WEBHOOK_GROUP__|$6|g" \
      -e "s|__WEBHOOK_RESOURCE__|$7|g" -e "s|__WEBHOOK_KIND_LOWER__|$8|g" "$SRC/provider-base.yaml" | grep -v '^#'
}

first=1
for v in "${CAPI_VERSIONS[@]}"; do
  log "generating Cluster API ${v} CRDs"
  mod="$(gen_module "$v")"
  if [[ $first == 1 ]]; then
    (cd "$mod" && go build -o "$work/controller-gen" sigs.k8s.io/controller-tools/cmd/controller-gen)
    first=0
  fi
  for p in cluster-api bootstrap-kubeadm control-plane-kubeadm; do mkdir -p "$REPO/$p/$v"; done

  f="$REPO/cluster-api/$v/core-components.yaml"
  base cluster-api capi-system capi CAPI "registry.k8s.io/cluster-api/cluster-api-controller:$v" \
    cluster.x-k8s.io clusters cluster > "$f"
  crds "$mod" "$work/core.yaml" cluster-api core/v1beta2 addons/v1beta2 ipam/v1beta2 runtime/v1beta2
  cat "$work/core.yaml" >> "$f"

  f="$REPO/bootstrap-kubeadm/$v/bootstrap-components.yaml"
  base bootstrap-kubeadm capi-kubeadm-bootstrap-system capi-kubeadm-bootstrap CAPI_KUBEADM_BOOTSTRAP \
    "registry.k8s.io/cluster-api/kubeadm-bootstrap-controller:$v" bootstrap.cluster.x-k8s.io kubeadmconfigs kubeadmconfig > "$f"
  crds "$mod" "$work/bootstrap.yaml" bootstrap-kubeadm bootstrap/kubeadm/v1beta2
  cat "$work/bootstrap.yaml" >> "$f"

  f="$REPO/control-plane-kubeadm/$v/control-plane-components.yaml"
  base control-plane-kubeadm capi-kubeadm-control-plane-system capi-kubeadm-control-plane CAPI_KUBEADM_CONTROL_PLANE \
    "registry.k8s.io/cluster-api/kubeadm-control-plane-controller:$v" controlplane.cluster.x-k8s.io kubeadmcontrolplanes kubeadmcontrolplane > "$f"
  crds "$mod" "$work/controlplane.yaml" control-plane-kubeadm controlplane/kubeadm/v1beta2
  cat "$work/controlplane.yaml" >> "$f"

  for p in cluster-api bootstrap-kubeadm control-plane-kubeadm; do cp "$SRC/metadata-capi.yaml" "$REPO/$p/$v/metadata.yaml"; done
done

for v in "${DEMO_VERSIONS[@]}"; do
  log "assembling infrastructure-demo ${v}"
  d="$REPO/infrastructure-demo/$v"
  mkdir -p "$d"
  {
    base infrastructure-demo capdemo-system capdemo CAPDEMO "registry.example.com/capdemo-manager:$v" \
      infrastructure.cluster.x-k8s.io democlusters democluster
    echo "---"
    grep -v '^#' "$SRC/infrastructure-demo-crds.yaml"
  } > "$d/infrastructure-components.yaml"
  cp "$SRC/metadata-demo.yaml" "$d/metadata.yaml"
  cp "$SRC/cluster-template.yaml" "$d/cluster-template.yaml"
done

mkdir -p "$REPO/cert-manager/$CERT_MANAGER_VERSION"
cp "$SRC/cert-manager-crds.yaml" "$REPO/cert-manager/$CERT_MANAGER_VERSION/cert-manager-crds.yaml"
log "done: $(du -sh "$REPO" | cut -f1) in $REPO"
