#!/usr/bin/env bash
# Builds the upstream Cluster API test fixtures (the folder the tests and the demo read, see
# testenv.FixturesDir) from the Go module proxy into a cache folder shared by every clone:
#   repository/  a clusterctl local repository: {provider label}/{version}/{file} for cluster-api,
#                bootstrap-kubeadm, control-plane-kubeadm and infrastructure-docker at each
#                FIXTURES_CAPI_VERSIONS entry, and cert-manager/{version}/cert-manager-crds.yaml;
#   crds/        one file per API group of the Cluster API v1.14.2 CRDs (config/crd/bases) plus
#                clusterctl's Provider CRD.
# Nothing upstream is kept in this repository: each module is fetched with
# `go mod download -json MODULE@VERSION`, its read-only folder copied into a temporary one, the
# release Makefile's edits applied (the sed rewrites of image: and imagePullPolicy: in
# manager_image_patch.yaml and manager_pull_policy.yaml) and `kustomize build` run, as upstream's
# `release-manifests` and `release-manifests-dev` targets do.
#
# Idempotent: each unit (one Cluster API version, one cert-manager version, the CRDs) has a stamp
# file holding its recipe; a unit whose stamp matches is left alone, so a second run takes about a
# second. Atomic: a unit is built in a temporary folder inside DIR and moved into place, and its
# stamp is written last; .stamps/complete, which the readers look for, is removed before any build
# and written again only when every unit is there. A killed build leaves no folder that looks
# complete.
#
# Usage: hack/fixtures.sh [DIR]   (default: $CAPCTL_FIXTURES_CACHE or ~/.cache/capctl/fixtures)
#   prints DIR when done.
#
# FIXTURES_CAPI_VERSIONS lists VERSION[=CORE[:TEST]]: the fixture version (image tags, folder
# names) and the sigs.k8s.io/cluster-api and sigs.k8s.io/cluster-api/test module versions its
# sources come from (default: the same). The module proxy refuses some tags (see the defaults
# below); a neighbouring patch release of the same series stands in, and the faithfulness test
# (internal/testing/testenv/fixtures_test.go) checks the result against the shared folder.
set -euo pipefail

CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/capctl"
DIR="${1:-${CAPCTL_FIXTURES_CACHE:-$CACHE/fixtures}}"
KUSTOMIZE_DIR="${CAPCTL_KUSTOMIZE_DIR:-$CACHE/tools/kustomize}"
# The proxy refuses sigs.k8s.io/cluster-api@v1.12.11 and .../test@v1.12.11 (403 "This module
# version is not available"; so are test v1.12.6, v1.12.7, v1.12.9, while test v1.12.8, v1.12.10
# and v1.13.5 are 404 Not Found). Stand-ins: core v1.12.10 and test v1.12.5 for v1.12.11, test
# v1.13.4 for v1.13.5; the built files equal the shared folder's (test v1.12.1, for one, does not:
# its CAPD lacks a webhook).
FIXTURES_CAPI_VERSIONS="${FIXTURES_CAPI_VERSIONS:-v1.10.10 v1.12.11=v1.12.10:v1.12.5 v1.13.4 v1.13.5=v1.13.5:v1.13.4 v1.14.0}"
# VERSION=TEST:WEBHOOK: a CAPD webhook that VERSION has but its stand-in source lacks, taken from
# config/webhook/manifests.yaml of sigs.k8s.io/cluster-api/test@TEST. v1.12.11 got the DockerMachine
# validating webhook as a backport after v1.12.5; its entry is the one v1.13.4 has (only
# admissionReviewVersions v1, unlike v1.12's older entries), placed in name order as controller-gen
# writes it.
FIXTURES_CAPD_WEBHOOK_BACKPORTS="${FIXTURES_CAPD_WEBHOOK_BACKPORTS-v1.12.11=v1.13.4:validation.dockermachine.infrastructure.cluster.x-k8s.io}"
FIXTURES_CERT_MANAGER_VERSIONS="${FIXTURES_CERT_MANAGER_VERSIONS:-v1.20.3 v1.21.1}"
FIXTURES_CRDS_VERSION="${FIXTURES_CRDS_VERSION:-v1.14.2}"
# Bump when the recipe below changes: every stamp is then stale and its unit rebuilt.
RECIPE=1

export GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0
LABELS="cluster-api bootstrap-kubeadm control-plane-kubeadm infrastructure-docker"

log() { echo "fixtures: $(date -u +%H:%M:%S) $*" >&2; }
die() { echo "fixtures: $*" >&2; exit 1; }

# kustomize version per Cluster API series, as upstream's Makefile pins it (v5.6.0 for v1.10;
# v5.7.0 for v1.12-v1.14, which the proxy does not serve, so v5.7.1).
kustomize_version() {
  case "$1" in v1.10.*) echo v5.6.0 ;; *) echo v5.7.1 ;; esac
}

# backports_of VERSION: its FIXTURES_CAPD_WEBHOOK_BACKPORTS entries, as TEST:WEBHOOK lines.
backports_of() {
  local b
  for b in $FIXTURES_CAPD_WEBHOOK_BACKPORTS; do
    [[ "${b%%=*}" == "$1" ]] && echo "${b#*=}"
  done
  return 0
}

# The recipe of each unit, written to its stamp.
units() {
  local s
  for s in $FIXTURES_CAPI_VERSIONS; do
    echo "capi-${s%%=*} recipe=$RECIPE sources=$s kustomize=$(kustomize_version "${s%%=*}")$(backports_of "${s%%=*}" | sed 's/^/ webhook=/' | tr -d '\n')"
  done
  for s in $FIXTURES_CERT_MANAGER_VERSIONS; do echo "cert-manager-$s recipe=$RECIPE"; done
  echo "crds recipe=$RECIPE cluster-api=$FIXTURES_CRDS_VERSION"
}

up_to_date() {
  local line
  [[ -f "$DIR/.stamps/complete" && "$(cat "$DIR/.stamps/complete")" == "$(units)" ]] || return 1
  while read -r line; do
    [[ -f "$DIR/.stamps/${line%% *}" && "$(cat "$DIR/.stamps/${line%% *}")" == "$line" ]] || return 1
  done < <(units)
}

if up_to_date; then
  echo "$DIR"
  exit 0
fi

mkdir -p "$DIR/.stamps"
# One build at a time per folder (make test and make integration may both ask for it).
exec 9>"$DIR/.lock"
flock 9
if up_to_date; then
  echo "$DIR"
  exit 0
fi
rm -f "$DIR/.stamps/complete"
# Leftovers of a killed build.
chmod -R u+w "$DIR"/.tmp.* 2>/dev/null || true
rm -rf "$DIR"/.tmp.*

# Every temporary folder of this run lives in WORK, on the same file system as DIR (so that the
# final moves are renames), and goes when the script ends.
WORK="$(mktemp -d "$DIR/.tmp.XXXXXX")"
cleanup() {
  chmod -R u+w "$WORK" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
newwork() { mktemp -d "$WORK/unit.XXXXXX"; }
# done_work W: free a unit's copied module sources as soon as its output is in place.
done_work() {
  chmod -R u+w "$1" 2>/dev/null || true
  rm -rf "$1"
}

# moddir MODULE@VERSION: the module's folder in the (read-only) module cache.
moddir() {
  local json dir err
  json="$(cd "$TMPDIR_GO" && go mod download -json "$1" 2>&1)" || true
  dir="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$/\1/p' <<<"$json")"
  if [[ -z "$dir" || ! -d "$dir" ]]; then
    err="$(sed -n 's/^[[:space:]]*"Error": "\(.*\)",*$/\1/p' <<<"$json")"
    die "go mod download $1 failed: ${err:-$json}"
  fi
  echo "$dir"
}

# kustomize VERSION: the path of that kustomize, installed from the module proxy once.
kustomize_bin() {
  local v="$1" bin="$KUSTOMIZE_DIR/$1/kustomize"
  if [[ ! -x "$bin" ]]; then
    log "installing kustomize $v into $KUSTOMIZE_DIR/$v"
    mkdir -p "$KUSTOMIZE_DIR/$v"
    (cd "$TMPDIR_GO" && GOBIN="$KUSTOMIZE_DIR/$v" go install "sigs.k8s.io/kustomize/kustomize/v5@$v")
  fi
  echo "$bin"
}

# The release Makefile's set-manifest-image and set-manifest-pull-policy.
set_image() { sed -i -e 's@image: .*@image: '"$2"'@' "$1"; }
set_pull_policy() { sed -i -e 's@imagePullPolicy: .*@imagePullPolicy: IfNotPresent@' "$1"; }

# backport_webhook SRC DST NAME: copy the webhook entry NAME (one item of a webhooks: list) from
# the controller-gen output SRC into DST's ValidatingWebhookConfiguration, before the first entry
# whose name sorts after it.
backport_webhook() {
  local src="$1" dst="$2" name="$3" item
  item="$(mktemp)"
  awk -v name="$name" '
    function flush() { if (hit) { printf "%s", buf; done = 1 } buf = ""; hit = 0 }
    /^- / || /^---/ { flush(); if (done) exit }
    /^- / { initem = 1 }
    /^---/ { initem = 0 }
    initem { buf = buf $0 "\n"; if ($0 == "  name: " name) hit = 1 }
    END { if (!done) flush() }
  ' "$src" >"$item"
  [[ -s "$item" ]] || die "webhook $name not found in $src"
  ! grep -qx "  name: $name" "$dst" || die "webhook $name is already in $dst: drop its backport"
  awk -v name="$name" -v itemfile="$item" '
    BEGIN { while ((getline l < itemfile) > 0) item = item l "\n" }
    function put() { if (invalid && !done) { printf "%s", item; done = 1 } }
    function flush() { if (buf != "" && bufname > name) put(); printf "%s", buf; buf = ""; bufname = "" }
    /^- / || /^---/ { flush() }
    /^---/ { put(); invalid = 0; initem = 0 }
    /^kind: ValidatingWebhookConfiguration$/ { invalid = 1 }
    /^- / { initem = 1 }
    { if (initem) { buf = buf $0 "\n"; if ($0 ~ /^  name: /) bufname = substr($0, 9) } else print }
    END { flush(); put() }
  ' "$dst" >"$dst.new"
  rm -f "$item"
  mv "$dst.new" "$dst"
}

# install_unit WORK UNIT PATH...: move each PATH (relative to WORK/out) into DIR, then stamp UNIT.
install_unit() {
  local work="$1" unit="$2" p
  shift 2
  for p in "$@"; do
    mkdir -p "$(dirname "$DIR/$p")"
    rm -rf "$DIR/$p"
    mv "$work/out/$p" "$DIR/$p"
  done
  units | grep "^$unit " >"$DIR/.stamps/$unit.tmp"
  mv "$DIR/.stamps/$unit.tmp" "$DIR/.stamps/$unit"
}

stamped() {
  local line
  line="$(units | grep "^$1 ")"
  [[ -f "$DIR/.stamps/$1" && "$(cat "$DIR/.stamps/$1")" == "$line" ]]
}

build_capi() {
  local spec="$1" v src core test
  v="${spec%%=*}"
  src="${spec#*=}"
  [[ "$src" == "$spec" ]] && src="$v"
  core="${src%%:*}"
  test="${src#*:}"
  [[ "$test" == "$src" ]] && test="$core"
  stamped "capi-$v" && return 0
  local t0 kz coredir testdir work
  t0=$(date +%s)
  log "building Cluster API $v (sources: cluster-api@$core, cluster-api/test@$test; kustomize $(kustomize_version "$v"))"
  kz="$(kustomize_bin "$(kustomize_version "$v")")"
  coredir="$(moddir "sigs.k8s.io/cluster-api@$core")"
  testdir="$(moddir "sigs.k8s.io/cluster-api/test@$test")"
  work="$(newwork)"
  # The git tree's layout: the test module is the folder test/ of the repository.
  cp -r "$coredir" "$work/src"
  rm -rf "$work/src/test"
  cp -r "$testdir" "$work/src/test"
  chmod -R u+w "$work/src"
  local b bdir
  for b in $(backports_of "$v"); do
    bdir="$(moddir "sigs.k8s.io/cluster-api/test@${b%%:*}")"
    log "adding CAPD webhook ${b#*:} from cluster-api/test@${b%%:*}"
    backport_webhook "$bdir/infrastructure/docker/config/webhook/manifests.yaml" \
      "$work/src/test/infrastructure/docker/config/webhook/manifests.yaml" "${b#*:}"
  done
  (
    cd "$work/src"
    local coredef=config/default capd=test/infrastructure/docker out="$work/out/repository" l
    [[ -d core/config/default ]] && coredef=core/config/default # the core manager moved in v1.14
    set_image "$coredef/manager_image_patch.yaml" "registry.k8s.io/cluster-api/cluster-api-controller:$v"
    set_image bootstrap/kubeadm/config/default/manager_image_patch.yaml "registry.k8s.io/cluster-api/kubeadm-bootstrap-controller:$v"
    set_image controlplane/kubeadm/config/default/manager_image_patch.yaml "registry.k8s.io/cluster-api/kubeadm-control-plane-controller:$v"
    set_image "$capd/config/default/manager_image_patch.yaml" "gcr.io/k8s-staging-cluster-api/capd-manager:$v"
    for f in "$coredef" bootstrap/kubeadm/config/default controlplane/kubeadm/config/default "$capd/config/default"; do
      set_pull_policy "$f/manager_pull_policy.yaml"
    done
    for l in $LABELS; do mkdir -p "$out/$l/$v"; cp metadata.yaml "$out/$l/$v/metadata.yaml"; done
    "$kz" build "$coredef" >"$out/cluster-api/$v/core-components.yaml"
    "$kz" build bootstrap/kubeadm/config/default >"$out/bootstrap-kubeadm/$v/bootstrap-components.yaml"
    "$kz" build controlplane/kubeadm/config/default >"$out/control-plane-kubeadm/$v/control-plane-components.yaml"
    (cd "$capd" && "$kz" build config/default) >"$out/infrastructure-docker/$v/infrastructure-components.yaml"
    find "$capd/templates" -maxdepth 1 -type f -exec cp {} "$out/infrastructure-docker/$v/" \;
  )
  local paths=() l
  for l in $LABELS; do paths+=("repository/$l/$v"); done
  install_unit "$work" "capi-$v" "${paths[@]}"
  done_work "$work"
  log "built Cluster API $v in $(($(date +%s) - t0))s"
}

build_cert_manager() {
  local v="$1" src work f
  stamped "cert-manager-$v" && return 0
  log "building cert-manager $v CRDs"
  src="$(moddir "github.com/cert-manager/cert-manager@$v")"
  work="$(newwork)"
  mkdir -p "$work/out/repository/cert-manager/$v"
  # deploy/crds/*.yaml in file-name order, each already starting with ---.
  while read -r f; do cat "$src/deploy/crds/$f"; done < <(cd "$src/deploy/crds" && LC_ALL=C ls -- *.yaml) \
    >"$work/out/repository/cert-manager/$v/cert-manager-crds.yaml"
  install_unit "$work" "cert-manager-$v" "repository/cert-manager/$v"
}

# append_crd OUT MODULE@VERSION MODDIR PATH [NOTE]: one CRD file, preceded by --- and a comment
# naming its source, without its own leading --- line.
append_crd() {
  local out="$1" mod="$2" dir="$3" path="$4" note="${5:-}"
  {
    echo "---"
    echo "# source: $mod/$path${note:+ $note}"
    sed '1{/^---$/d}' "$dir/$path"
  } >>"$out"
}

build_crds() {
  local v="$FIXTURES_CRDS_VERSION" core test work out rel f
  stamped crds && return 0
  log "building the Cluster API $v CRDs"
  core="$(moddir "sigs.k8s.io/cluster-api@$v")"
  test="$(moddir "sigs.k8s.io/cluster-api/test@$v")"
  work="$(newwork)"
  out="$work/out/crds"
  mkdir -p "$out"
  local coredir=config
  [[ -d "$core/core/config/crd/bases" ]] && coredir=core/config
  for rel in "$coredir/crd/bases" bootstrap/kubeadm/config/crd/bases controlplane/kubeadm/config/crd/bases; do
    while read -r f; do
      append_crd "$out/${f%%_*}.yaml" "sigs.k8s.io/cluster-api@$v" "$core" "$rel/$f"
    done < <(cd "$core/$rel" && LC_ALL=C ls -- *.yaml)
  done
  rel=infrastructure/docker/config/crd/bases
  while read -r f; do
    append_crd "$out/${f%%_*}.yaml" "sigs.k8s.io/cluster-api/test@$v" "$test" "$rel/$f"
  done < <(cd "$test/$rel" && LC_ALL=C ls -- *.yaml)
  append_crd "$out/clusterctl.cluster.x-k8s.io.yaml" "sigs.k8s.io/cluster-api@$v" "$core" \
    cmd/clusterctl/config/manifest/clusterctl-api.yaml "(= the inventory CRD clusterctl embeds and installs itself)"
  cat >"$out/README.md" <<EOF
Built by capctl's hack/fixtures.sh from sigs.k8s.io/cluster-api@$v and sigs.k8s.io/cluster-api/test@$v
(Go module proxy): config/crd/bases of core, kubeadm bootstrap, kubeadm control plane and CAPD, one
file per API group, plus cmd/clusterctl/config/manifest/clusterctl-api.yaml. Apache License 2.0.
EOF
  install_unit "$work" crds crds
}

TMPDIR_GO="$(newwork)" # where the go commands run: outside any module
t_start=$(date +%s)
for s in $FIXTURES_CAPI_VERSIONS; do build_capi "$s"; done
for v in $FIXTURES_CERT_MANAGER_VERSIONS; do build_cert_manager "$v"; done
build_crds
cat >"$DIR/README.md" <<EOF
Upstream Cluster API and cert-manager test fixtures, built by capctl's hack/fixtures.sh (\`make fixtures\`)
from the Go module proxy: a clusterctl local repository in repository/ and CRDs in crds/. The recipe of each
part is in .stamps/. Cluster API and cert-manager are licensed under the Apache License 2.0.
EOF
units >"$DIR/.stamps/complete.tmp"
mv "$DIR/.stamps/complete.tmp" "$DIR/.stamps/complete"
log "fixtures ready in $DIR ($(($(date +%s) - t_start))s)"
echo "$DIR"
