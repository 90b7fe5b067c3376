#!/usr/bin/env bash
# The end-to-end demo behind `make demo`: on a machine with no cloud and no Docker, start two
# throwaway Kubernetes API servers (kube-apiserver + etcd from `make envtest-bins`), then use capctl
# on them as a user would, printing each command before running it, and stop everything at the end
# (also when a step fails or on Ctrl-C).
#
# Environment: CAPCTL (the capctl binary; default: build bin/capctl), CAPCTL_ENVTEST_DIR (the
# kube-apiserver/etcd/kubectl folder), DEMO_KEEP=1 (leave the work folder for inspection).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
K8S_VERSION="${K8S_VERSION:-v1.37.2}"
BIN="${CAPCTL_ENVTEST_DIR:-${KUBEBUILDER_ASSETS:-${XDG_CACHE_HOME:-$HOME/.cache}/capctl/envtest/${K8S_VERSION}}}"
REPO="$ROOT/examples/repository"
CAPCTL="${CAPCTL:-}"

if [[ -t 1 && -z "${NO_COLOR:-}" ]]; then BOLD=$'\e[1m'; DIM=$'\e[2m'; YEL=$'\e[33m'; RST=$'\e[0m'; else BOLD= DIM= YEL= RST=; fi
say()  { printf '\n%s== %s%s\n' "$BOLD" "$*" "$RST"; }
note() { printf '%s%s%s\n' "$DIM" "$*" "$RST"; }
skip() { printf '%sSKIPPED: %s%s\n' "$YEL" "$*" "$RST"; SKIPPED+=("$*"); }
die()  { echo "demo: $*" >&2; exit 1; }
SKIPPED=()

for b in kube-apiserver etcd kubectl; do
  [[ -x "$BIN/$b" ]] || die "$BIN/$b not found: run \`make envtest-bins\` first (or set CAPCTL_ENVTEST_DIR)"
done
command -v openssl >/dev/null || die "openssl is needed to make the API servers' service-account keys"
if [[ -z "$CAPCTL" ]]; then
  (cd "$ROOT" && go build -o bin/capctl ./cmd/capctl)
  CAPCTL="$ROOT/bin/capctl"
fi
[[ -x "$CAPCTL" ]] || die "capctl binary $CAPCTL not found"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/capctl-demo.XXXXXX")"
PIDS=()
cleanup() {
  local rc=$?
  set +e
  if ((${#PIDS[@]})); then
    say "Stopping the API servers"
    # API servers first (they may ignore SIGTERM once etcd is gone), then etcd; our own pids only.
    local i
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill -TERM "${PIDS[i]}" 2>/dev/null; done
    for _ in $(seq 50); do
      local alive=0
      for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
      ((alive)) || break
      sleep 0.1
    done
    for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; wait "$p" 2>/dev/null; done
  fi
  if [[ -n "${DEMO_KEEP:-}" ]]; then note "work folder kept: $WORK"; else rm -rf "$WORK"; fi
  if ((rc != 0)); then echo "demo: FAILED (exit $rc)" >&2; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'exit 129' HUP
# A closed stdout (demo.sh | head) must not kill the script before it stops the servers.
trap '' PIPE

# free_port: a random loopback port that nothing listens on, below Linux's ephemeral range
# (32768+, where outgoing connections take theirs) and not handed out before by this script.
USED_PORTS=" "
# Sets PORT (no subshell, so USED_PORTS is kept).
free_port() {
  local p
  for _ in $(seq 200); do
    p=$((20000 + RANDOM % 12000))
    [[ "$USED_PORTS" == *" $p "* ]] && continue
    if ! (: <"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then USED_PORTS+="$p "; PORT=$p; return; fi
  done
  die "no free port found"
}

# launch_etcd NAME: etcd on free loopback ports, in the background.
launch_etcd() {
  local name="$1" dir="$WORK/$1"
  mkdir -p "$dir/certs"
  free_port; local etcd_port=$PORT
  free_port; local peer_port=$PORT
  "$BIN/etcd" --name "$name" --data-dir "$dir/etcd" \
    --listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
    --listen-peer-urls "http://127.0.0.1:$peer_port" --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
    --initial-cluster "$name=http://127.0.0.1:$peer_port" --unsafe-no-fsync >"$dir/etcd.log" 2>&1 &
  PIDS+=($!)
  echo $! >"$dir/etcd.pid"
  echo "$etcd_port" >"$dir/etcd.port"
}

# await_etcd NAME: wait until etcd accepts connections (it can take a while on a busy machine).
await_etcd() {
  local name="$1" dir="$WORK/$1" port pid
  port="$(cat "$dir/etcd.port")"; pid="$(cat "$dir/etcd.pid")"
  for _ in $(seq 600); do
    if (: <"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    kill -0 "$pid" 2>/dev/null || { tail -5 "$dir/etcd.log" >&2; die "$name: etcd exited (log above)"; }
    sleep 0.1
  done
  tail -5 "$dir/etcd.log" >&2
  die "$name: etcd not listening after 60s"
}

# launch_apiserver NAME: kube-apiserver on a free loopback port backed by that etcd, with a
# static token for the admin user, in the background.
launch_apiserver() {
  local name="$1" dir="$WORK/$1"
  free_port; local api_port=$PORT
  [[ -s "$dir/sa.key" ]] || {
    openssl genrsa -out "$dir/sa.key" 2048 2>/dev/null
    openssl rsa -in "$dir/sa.key" -pubout -out "$dir/sa.pub" 2>/dev/null
    openssl rand -hex 24 >"$dir/token"
    echo "$(cat "$dir/token"),demo-admin,demo-admin,system:masters" >"$dir/tokens.csv"
  }
  "$BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$(cat "$dir/etcd.port")" \
    --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
    --endpoint-reconciler-type none --allow-privileged=true --cert-dir "$dir/certs" \
    --service-cluster-ip-range 10.0.0.0/24 --authorization-mode RBAC --token-auth-file "$dir/tokens.csv" \
    --service-account-issuer https://kubernetes.default.svc --service-account-key-file "$dir/sa.pub" \
    --service-account-signing-key-file "$dir/sa.key" --disable-admission-plugins ServiceAccount \
    >>"$dir/apiserver.log" 2>&1 &
  PIDS+=($!)
  echo $! >"$dir/apiserver.pid"
  echo "$api_port" >"$dir/port"
}

# await_server NAME: wait for /readyz (relaunching the API server up to twice if it dies while
# starting, as it can on a loaded machine), then write $WORK/NAME/kubeconfig trusting exactly the
# server's self-signed certificate.
await_server() {
  local name="$1" dir="$WORK/$1" kc="$WORK/$1/kubeconfig" attempt pid
  for attempt in 1 2 3; do
    pid="$(cat "$dir/apiserver.pid")"
    for _ in $(seq 900); do
      if [[ -s "$dir/certs/apiserver.crt" ]]; then
        if [[ ! -s "$kc" ]]; then
          (
            export KUBECONFIG="$kc"
            "$BIN/kubectl" config set-cluster "$name" --server "https://127.0.0.1:$(cat "$dir/port")" \
              --certificate-authority "$dir/certs/apiserver.crt" --embed-certs=true >/dev/null
            "$BIN/kubectl" config set-credentials "$name-admin" --token "$(cat "$dir/token")" >/dev/null
            "$BIN/kubectl" config set-context "$name" --cluster "$name" --user "$name-admin" >/dev/null
            "$BIN/kubectl" config use-context "$name" >/dev/null
          )
          chmod 600 "$kc"
        fi
        if "$BIN/kubectl" --kubeconfig "$kc" get --raw /readyz >/dev/null 2>&1; then return 0; fi
      fi
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    kill -0 "$pid" 2>/dev/null && break # alive but not ready in 90s: give up below
    note "$name: kube-apiserver exited while starting (attempt $attempt); starting it again"
    rm -f "$kc"
    launch_apiserver "$name"
  done
  tail -20 "$dir/apiserver.log" >&2
  die "$name: kube-apiserver not ready (log above)"
}

# finish_namespaces KUBECONFIG: a stand-in for kube-controller-manager's namespace controller,
# which these bare API servers do not have: a deleted namespace would otherwise stay Terminating
# forever (cert-manager's readiness probe deletes its test namespace and creates it again). Once a
# second, namespaces being deleted are finalized. Unlike the real controller it does not empty
# them first; what the tools here delete is already empty.
finish_namespaces() {
  local kc="$1" ns
  while true; do
    for ns in $("$BIN/kubectl" --kubeconfig "$kc" get namespaces \
        -o jsonpath='{range .items[?(@.metadata.deletionTimestamp)]}{.metadata.name}{" "}{end}' 2>/dev/null); do
      printf '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"%s"},"spec":{"finalizers":[]}}' "$ns" |
        "$BIN/kubectl" --kubeconfig "$kc" replace --raw "/api/v1/namespaces/$ns/finalize" -f - >/dev/null 2>&1
    done
    sleep 1
  done
}

# has_cmd WORDS...: whether capctl has that (sub)command on this build.
has_cmd() {
  local parent=("${@:1:$#-1}") last="${*: -1}"
  "$CAPCTL" "${parent[@]}" --help 2>/dev/null | grep -qE "^  ${last}( |$)"
}

# run CMD...: print the command as a user would type it, then run it.
run() {
  local shown=("$@")
  [[ "${shown[0]}" == "$CAPCTL" ]] && shown[0]=capctl
  [[ "${shown[0]}" == "$BIN/kubectl" ]] && shown[0]=kubectl
  local a line=""
  for a in "${shown[@]}"; do
    if [[ "$a" =~ ^[A-Za-z0-9_./:=,@%+-]+$ ]]; then line+="$a "; else line+="'${a//\'/\'\\\'\'}' "; fi
  done
  printf '\n%s$ %s%s\n' "$BOLD" "${line% }" "$RST"
  "$@"
}
capctl() { run "$CAPCTL" "$@"; }
kubectl() { run "$BIN/kubectl" "$@"; }
kubectl_quiet() { "$BIN/kubectl" "$@"; }

# ---------------------------------------------------------------------------------------------
start=$(date +%s)
say "Starting two throwaway API servers (kube-apiserver + etcd ${K8S_VERSION}, loopback only)"
launch_etcd management
launch_etcd target
await_etcd management
await_etcd target
launch_apiserver management
launch_apiserver target
await_server management
await_server target
MGMT="$WORK/management/kubeconfig"
TARGET="$WORK/target/kubeconfig"
note "management cluster: $MGMT"
note "second cluster (move target): $TARGET"
note "ready after $(( $(date +%s) - start ))s"
note "No kube-controller-manager runs here: a small loop finalizes deleted namespaces in its place."
finish_namespaces "$MGMT" &
PIDS+=($!)
finish_namespaces "$TARGET" &
PIDS+=($!)

# capctl reads its config from $XDG_CONFIG_HOME/cluster-api/clusterctl.yaml and caches under
# $XDG_CACHE_HOME: point both into the work folder so the demo leaves the user's own alone.
export XDG_CONFIG_HOME="$WORK/config" XDG_CACHE_HOME="$WORK/cache"
export KUBECONFIG="$MGMT"
mkdir -p "$XDG_CONFIG_HOME/cluster-api"
cat >"$XDG_CONFIG_HOME/cluster-api/clusterctl.yaml" <<YAML
# The demo's providers all come from the local repository in examples/repository.
providers:
  - name: cluster-api
    type: CoreProvider
    url: $REPO/cluster-api/latest/core-components.yaml
  - name: kubeadm
    type: BootstrapProvider
    url: $REPO/bootstrap-kubeadm/latest/bootstrap-components.yaml
  - name: kubeadm
    type: ControlPlaneProvider
    url: $REPO/control-plane-kubeadm/latest/control-plane-components.yaml
  - name: demo
    type: InfrastructureProvider
    url: $REPO/infrastructure-demo/latest/infrastructure-components.yaml
cert-manager:
  # CRDs only: no cert-manager controller can run here, and capctl's readiness probe (create an
  # Issuer and a Certificate) needs nothing more.
  url: $REPO/cert-manager/v1.21.1/cert-manager-crds.yaml
  version: v1.21.1
YAML
say "Configuration: $XDG_CONFIG_HOME/cluster-api/clusterctl.yaml"
cat "$XDG_CONFIG_HOME/cluster-api/clusterctl.yaml"

run "$CAPCTL" version -o short

CORE=cluster-api:v1.14.0 KUBEADM=kubeadm:v1.14.0 INFRA=demo:v0.1.0
INIT_ARGS=(--core "$CORE" --bootstrap "$KUBEADM" --control-plane "$KUBEADM" --infrastructure "$INFRA" --wait-providers=false)
INITIALIZED=0

# drop_webhooks KUBECONFIG: the providers' webhook configurations point at Services with no pods
# behind them (no kubelet runs here), so every create of a Cluster API object would fail.
drop_webhooks() {
  note "No controller pods can run here: remove the providers' webhook configurations so the API server does not call them."
  kubectl --kubeconfig "$1" delete validatingwebhookconfigurations,mutatingwebhookconfigurations -l cluster.x-k8s.io/provider
}

say "1. Initialise the management cluster from the local repository (older versions, to upgrade later)"
if has_cmd init; then
  capctl init "${INIT_ARGS[@]}"
  INITIALIZED=1
  kubectl get providers.clusterctl.cluster.x-k8s.io -A
  drop_webhooks "$MGMT"
else
  skip "capctl init is not built yet: the steps that need an initialised management cluster are skipped too"
fi

# ---------------------------------------------------------------------------------------------
# What the controllers would write, written by hand: no controller runs on these API servers.
NOW="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
uid() { "$BIN/kubectl" get "$1" "$2" -n "$NS" -o jsonpath='{.metadata.uid}'; }
owner() { # owner APIVERSION KIND NAME UID [controller]
  printf '  ownerReferences:\n  - apiVersion: %s\n    kind: %s\n    name: %s\n    uid: %s\n    controller: true\n    blockOwnerDeletion: true\n' "$1" "$2" "$3" "$4"
}
cond() { # cond TYPE STATUS REASON [MESSAGE]
  printf '{"type":"%s","status":"%s","reason":"%s","message":"%s","lastTransitionTime":"%s"}' "$1" "$2" "$3" "${4:-}" "$NOW"
}
status() { # status KIND NAME JSON: a merge patch of the status subresource, kept in a file
  mkdir -p "$WORK/status"
  local file="$WORK/status/$1-$2.json"
  printf '%s\n' "$3" >"$file"
  kubectl patch "$1" "$2" -n "$NS" --subresource=status --type=merge --patch-file "$file"
}

# machine NAME OWNER_APIVERSION OWNER_KIND OWNER_NAME OWNER_UID ROLE_LABELS TEMPLATE: a Machine
# with its KubeadmConfig and DemoMachine, as the KubeadmControlPlane/MachineSet controllers make them.
machine_yaml() {
  local name="$1" oapi="$2" okind="$3" oname="$4" ouid="$5" labels="$6" tmpl="$7"
  cat <<YAML
---
apiVersion: bootstrap.cluster.x-k8s.io/v1beta2
kind: KubeadmConfig
metadata:
  name: $name
  namespace: $NS
  labels: {cluster.x-k8s.io/cluster-name: $CLUSTER$labels}
$(owner "$oapi" "$okind" "$oname" "$ouid")
spec:
  joinConfiguration:
    nodeRegistration:
      criSocket: unix:///var/run/containerd/containerd.sock
---
apiVersion: infrastructure.cluster.x-k8s.io/v1beta2
kind: DemoMachine
metadata:
  name: $name
  namespace: $NS
  labels: {cluster.x-k8s.io/cluster-name: $CLUSTER$labels}
  annotations: {cluster.x-k8s.io/cloned-from-name: $tmpl, cluster.x-k8s.io/cloned-from-groupkind: DemoMachineTemplate.infrastructure.cluster.x-k8s.io}
$(owner "$oapi" "$okind" "$oname" "$ouid")
spec:
  providerID: demo:///$name
---
apiVersion: cluster.x-k8s.io/v1beta2
kind: Machine
metadata:
  name: $name
  namespace: $NS
  labels: {cluster.x-k8s.io/cluster-name: $CLUSTER$labels}
$(owner "$oapi" "$okind" "$oname" "$ouid")
spec:
  clusterName: $CLUSTER
  version: $K8S
  providerID: demo:///$name
  bootstrap:
    configRef: {apiGroup: bootstrap.cluster.x-k8s.io, kind: KubeadmConfig, name: $name}
    dataSecretName: $name
  infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DemoMachine, name: $name}
YAML
}

machine_status() { # machine_status NAME READY(True|False) [REASON MESSAGE]
  local name="$1" ok="$2" reason="${3:-Ready}" msg="${4:-}"
  local avail="$ok"
  status machine "$name" "{\"status\":{\"phase\":\"Running\",\"nodeRef\":{\"name\":\"$name\"},
    \"initialization\":{\"infrastructureProvisioned\":true,\"bootstrapDataSecretCreated\":true},
    \"conditions\":[$(cond Available "$avail" "$([[ $ok == True ]] && echo Available || echo NotAvailable)" "$([[ $ok == True ]] || echo "* NodeHealthy: $msg")"),
      $(cond Ready "$ok" "$([[ $ok == True ]] && echo Ready || echo NotReady)" "$([[ $ok == True ]] || echo "* NodeHealthy: $msg")"),
      $(cond UpToDate True UpToDate),
      $(cond BootstrapConfigReady True Ready),
      $(cond InfrastructureReady True Ready),
      $(cond NodeHealthy "$ok" "$reason" "$msg")]}}"
  status demomachine "$name" "{\"status\":{\"initialization\":{\"provisioned\":true},\"addresses\":[{\"type\":\"InternalIP\",\"address\":\"10.10.0.$((RANDOM % 250 + 2))\"}],
    \"conditions\":[$(cond Ready True Ready)]}}"
  status kubeadmconfig "$name" "{\"status\":{\"initialization\":{\"dataSecretCreated\":true},\"dataSecretName\":\"$name\",
    \"conditions\":[$(cond Ready True Ready)]}}"
}

bring_to_life() {
  local life="$WORK/life.yaml" kcp_uid md_uid ms_uid cluster_uid ms="$CLUSTER-md-0-7d9f4"
  cluster_uid="$(uid cluster "$CLUSTER")"
  kcp_uid="$(uid kubeadmcontrolplane "$CLUSTER-control-plane")"
  md_uid="$(uid machinedeployment "$CLUSTER-md-0")"
  # The Cluster owns its infrastructure, control plane, MachineDeployments and their templates
  # (the controllers set these owner references; move follows them).
  note "Owner references, as the Cluster API controllers set them:"
  local ref="{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"cluster.x-k8s.io/v1beta2\",\"kind\":\"Cluster\",\"name\":\"$CLUSTER\",\"uid\":\"$cluster_uid\"}]}}"
  printf '%s\n' "$ref" >"$WORK/owned-by-cluster.json"
  kubectl patch democluster "$CLUSTER" -n "$NS" --type=merge --patch-file "$WORK/owned-by-cluster.json"
  kubectl patch kubeadmcontrolplane "$CLUSTER-control-plane" -n "$NS" --type=merge --patch-file "$WORK/owned-by-cluster.json"
  kubectl patch machinedeployment "$CLUSTER-md-0" -n "$NS" --type=merge --patch-file "$WORK/owned-by-cluster.json"
  kubectl patch demomachinetemplate "$CLUSTER-control-plane" -n "$NS" --type=merge --patch-file "$WORK/owned-by-cluster.json"
  kubectl patch demomachinetemplate "$CLUSTER-md-0" -n "$NS" --type=merge --patch-file "$WORK/owned-by-cluster.json"
  kubectl patch kubeadmconfigtemplate "$CLUSTER-md-0" -n "$NS" --type=merge --patch-file "$WORK/owned-by-cluster.json"
  note "The cluster-name label the defaulting webhooks would add (tools select a cluster's objects by it):"
  kubectl label machinedeployment,kubeadmcontrolplane,democluster -n "$NS" --all "cluster.x-k8s.io/cluster-name=$CLUSTER"
  # The MachineSet the MachineDeployment controller would create.
  cat >"$WORK/machineset.yaml" <<YAML
apiVersion: cluster.x-k8s.io/v1beta2
kind: MachineSet
metadata:
  name: $ms
  namespace: $NS
  labels: {cluster.x-k8s.io/cluster-name: $CLUSTER, cluster.x-k8s.io/deployment-name: $CLUSTER-md-0}
$(owner cluster.x-k8s.io/v1beta2 MachineDeployment "$CLUSTER-md-0" "$md_uid")
spec:
  clusterName: $CLUSTER
  replicas: 2
  selector:
    matchLabels: {cluster.x-k8s.io/deployment-name: $CLUSTER-md-0}
  template:
    metadata:
      labels: {cluster.x-k8s.io/deployment-name: $CLUSTER-md-0}
    spec:
      clusterName: $CLUSTER
      version: $K8S
      bootstrap:
        configRef: {apiGroup: bootstrap.cluster.x-k8s.io, kind: KubeadmConfigTemplate, name: $CLUSTER-md-0}
      infrastructureRef: {apiGroup: infrastructure.cluster.x-k8s.io, kind: DemoMachineTemplate, name: $CLUSTER-md-0}
YAML
  kubectl apply -f "$WORK/machineset.yaml"
  ms_uid="$(uid machineset "$ms")"
  {
    machine_yaml "$CLUSTER-control-plane-x7k2p" controlplane.cluster.x-k8s.io/v1beta2 KubeadmControlPlane "$CLUSTER-control-plane" "$kcp_uid" \
      ", cluster.x-k8s.io/control-plane: \"\"" "$CLUSTER-control-plane"
    for m in "$ms-abcde" "$ms-fghij"; do
      machine_yaml "$m" cluster.x-k8s.io/v1beta2 MachineSet "$ms" "$ms_uid" \
        ", cluster.x-k8s.io/deployment-name: $CLUSTER-md-0, cluster.x-k8s.io/set-name: $ms" "$CLUSTER-md-0"
    done
    # The workload cluster's kubeconfig and CA, as the control plane provider writes them.
    cat <<YAML
---
apiVersion: v1
kind: Secret
metadata:
  name: $CLUSTER-kubeconfig
  namespace: $NS
  labels: {cluster.x-k8s.io/cluster-name: $CLUSTER}
$(owner controlplane.cluster.x-k8s.io/v1beta2 KubeadmControlPlane "$CLUSTER-control-plane" "$kcp_uid")
type: cluster.x-k8s.io/secret
stringData:
  value: |
    apiVersion: v1
    kind: Config
    clusters:
    - name: $CLUSTER
      cluster: {server: "https://$CLUSTER.demo.example:6443"}
    contexts:
    - name: $CLUSTER-admin@$CLUSTER
      context: {cluster: $CLUSTER, user: $CLUSTER-admin}
    current-context: $CLUSTER-admin@$CLUSTER
    users:
    - name: $CLUSTER-admin
      user: {token: "demo-token-for-a-cluster-that-does-not-exist"}
---
apiVersion: v1
kind: Secret
metadata:
  name: $CLUSTER-ca
  namespace: $NS
  labels: {cluster.x-k8s.io/cluster-name: $CLUSTER}
$(owner controlplane.cluster.x-k8s.io/v1beta2 KubeadmControlPlane "$CLUSTER-control-plane" "$kcp_uid")
type: cluster.x-k8s.io/secret
stringData: {tls.crt: demo, tls.key: demo}
YAML
  } >"$life"
  kubectl apply -f "$life"

  note "Status, through the status subresource (what the controllers would report):"
  status democluster "$CLUSTER" "{\"status\":{\"initialization\":{\"provisioned\":true},\"conditions\":[$(cond Ready True Ready)]}}"
  machine_status "$CLUSTER-control-plane-x7k2p" True
  machine_status "$ms-abcde" True
  machine_status "$ms-fghij" False NodeNotReady "Node $ms-fghij: kubelet stopped posting node status"
  status kubeadmcontrolplane "$CLUSTER-control-plane" "{\"status\":{\"initialization\":{\"controlPlaneInitialized\":true},
    \"replicas\":1,\"readyReplicas\":1,\"availableReplicas\":1,\"upToDateReplicas\":1,\"version\":\"$K8S\",
    \"selector\":\"cluster.x-k8s.io/cluster-name=$CLUSTER,cluster.x-k8s.io/control-plane\",
    \"conditions\":[$(cond Available True Available),$(cond Initialized True Initialized),$(cond MachinesReady True Ready),$(cond EtcdClusterHealthy True Healthy),$(cond ControlPlaneComponentsHealthy True Healthy)]}}"
  status machineset "$ms" "{\"status\":{\"replicas\":2,\"readyReplicas\":1,\"availableReplicas\":1,\"upToDateReplicas\":2,
    \"selector\":\"cluster.x-k8s.io/deployment-name=$CLUSTER-md-0\",
    \"conditions\":[$(cond MachinesReady False NotReady "* Machine $ms-fghij: NodeNotReady"),$(cond ScalingUp False NotScalingUp)]}}"
  status machinedeployment "$CLUSTER-md-0" "{\"status\":{\"phase\":\"Running\",\"replicas\":2,\"readyReplicas\":1,\"availableReplicas\":1,\"upToDateReplicas\":2,
    \"selector\":\"cluster.x-k8s.io/deployment-name=$CLUSTER-md-0\",
    \"conditions\":[$(cond Available True Available),$(cond MachinesReady False NotReady "* Machine $ms-fghij: NodeNotReady")]}}"
  status cluster "$CLUSTER" "{\"status\":{\"phase\":\"Provisioned\",
    \"initialization\":{\"infrastructureProvisioned\":true,\"controlPlaneInitialized\":true},
    \"controlPlane\":{\"desiredReplicas\":1,\"replicas\":1,\"readyReplicas\":1,\"availableReplicas\":1,\"upToDateReplicas\":1},
    \"workers\":{\"desiredReplicas\":2,\"replicas\":2,\"readyReplicas\":1,\"availableReplicas\":1,\"upToDateReplicas\":2},
    \"conditions\":[$(cond Available True Available),$(cond InfrastructureReady True Ready),$(cond ControlPlaneInitialized True Initialized),
      $(cond ControlPlaneAvailable True Available),$(cond WorkersAvailable True Available),$(cond RemoteConnectionProbe True ProbeSucceeded),
      $(cond WorkerMachinesReady False NotReady "* Machine $ms-fghij: NodeNotReady"),$(cond MachinesUpToDate True UpToDate)]}}"
}

CLUSTER=demo-1 NS=demo K8S=v1.34.1
GENERATED=0
say "2. Generate a workload cluster from the demo provider's template"
if has_cmd generate cluster; then
  capctl generate cluster "$CLUSTER" --infrastructure demo:v0.1.0 --list-variables
  capctl generate cluster "$CLUSTER" --infrastructure demo:v0.1.0 --kubernetes-version "$K8S" \
    --control-plane-machine-count 1 --worker-machine-count 2 --target-namespace "$NS" --write-to "$WORK/$CLUSTER.yaml"
  run grep -E '^(kind|  name):' "$WORK/$CLUSTER.yaml"
  if ((INITIALIZED)); then
    kubectl create namespace "$NS"
    kubectl apply -f "$WORK/$CLUSTER.yaml"
    GENERATED=1
  else
    skip "applying the cluster needs the providers' CRDs, which capctl init installs"
  fi
else
  skip "capctl generate cluster is not built yet: no workload cluster to show"
fi

say "3. Write what the controllers would: owner references, Machines, a MachineSet, the kubeconfig Secret, status"
if ((GENERATED)); then
  bring_to_life
  kubectl get clusters,machinedeployments,machines -n "$NS"
else
  skip "no workload cluster was applied"
fi

say "4. Describe the workload cluster"
if ((GENERATED)) && has_cmd describe cluster; then
  capctl describe cluster "$CLUSTER" -n "$NS" --show-conditions all
elif ((GENERATED)); then skip "capctl describe is not built yet"; else skip "describe needs a generated cluster"; fi

say "5. Read the workload cluster's kubeconfig"
if ((GENERATED)); then
  capctl get kubeconfig "$CLUSTER" -n "$NS" --write-to "$WORK/$CLUSTER.kubeconfig"
  run ls -l "$WORK/$CLUSTER.kubeconfig"
else skip "get kubeconfig needs a generated cluster"; fi

say "6. Plan upgrades (the local repository has newer provider releases)"
if ((INITIALIZED)) && has_cmd upgrade plan; then
  probe="$("$CAPCTL" upgrade plan 2>&1 || true)"
  if [[ "$probe" == *"not available in this build"* ]]; then
    skip "capctl upgrade plan for providers is not built yet (only --kubernetes-version is)"
  else
    capctl upgrade plan
  fi
  if ((GENERATED)); then capctl upgrade plan --kubernetes-version v1.36.0; fi
elif ((INITIALIZED)); then skip "capctl upgrade plan is not built yet"; else skip "upgrade plan needs capctl init"; fi

UPGRADED=0
say "7. Upgrade the providers to the newest releases of the v1beta2 contract"
if ((INITIALIZED)) && has_cmd upgrade apply; then
  capctl upgrade apply --contract v1beta2
  UPGRADED=1
  drop_webhooks "$MGMT"
  kubectl get providers.clusterctl.cluster.x-k8s.io -A
elif ((INITIALIZED)); then skip "capctl upgrade apply is not built yet"; else skip "upgrade apply needs capctl init"; fi

MOVED=0
say "8. Move the workload cluster to the second API server"
if ((GENERATED)) && has_cmd move; then
  note "The target needs the same providers at the same versions: initialise it likewise."
  TARGET_INIT_ARGS=("${INIT_ARGS[@]}")
  ((UPGRADED)) && TARGET_INIT_ARGS=(--core cluster-api --bootstrap kubeadm --control-plane kubeadm --infrastructure demo --wait-providers=false)
  capctl init "${TARGET_INIT_ARGS[@]}" --kubeconfig "$TARGET"
  drop_webhooks "$TARGET"
  capctl move -n "$NS" --to-kubeconfig "$TARGET" --dry-run
  capctl move -n "$NS" --to-kubeconfig "$TARGET"
  MOVED=1
  kubectl --kubeconfig "$TARGET" get clusters,machines -n "$NS"
  note "Moved objects arrive without status; the controllers of the new management cluster rebuild it."
  if has_cmd describe cluster; then
    capctl describe cluster "$CLUSTER" -n "$NS" --kubeconfig "$TARGET"
  else skip "capctl describe is not built yet"; fi
elif ((GENERATED)); then skip "capctl move is not built yet"; else skip "move needs a generated cluster"; fi

say "9. Delete the providers from the management cluster"
if ((INITIALIZED)); then
  if ((MOVED)); then
    note "Nothing is left on the management cluster after the move, so the CRDs can go too."
    capctl delete --all --include-crd --yes
  else
    capctl delete --infrastructure demo --yes
  fi
  kubectl get providers.clusterctl.cluster.x-k8s.io -A
else skip "delete needs capctl init"; fi

say "Done in $(( $(date +%s) - start ))s"
if ((${#SKIPPED[@]})); then
  echo "Skipped steps:"
  printf '  - %s\n' "${SKIPPED[@]}"
fi
