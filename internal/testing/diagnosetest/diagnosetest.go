// Package diagnosetest puts a real API server into the states the diagnose rules recognise: a
// management side (inventory, provider CRDs labelled with their provider and contract, controller
// Deployments, cert-manager) and clusters stuck in each runbook case. Status is written through the
// status subresource, as the controllers would; no controller runs in these servers.
package diagnosetest

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/describetest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

// Now is the clock of the scenarios: condition times are set relative to it.
var Now = describetest.Now

// Provider is one installed provider of the management side.
type Provider struct {
	Name, Namespace, Deployment string
	Type                        provider.Type
	// Group is the API group of its CRDs.
	Group string
}

// Label is the provider's manifest label.
func (p Provider) Label() string { return provider.ManifestLabel(p.Name, p.Type) }

// Providers are the four providers of a quick-start management cluster, at clusterctl's names.
var Providers = []Provider{
	{Name: "cluster-api", Namespace: "capi-system", Deployment: "capi-controller-manager", Type: provider.CoreProviderType, Group: "cluster.x-k8s.io"},
	{Name: "kubeadm", Namespace: "capi-kubeadm-bootstrap-system", Deployment: "capi-kubeadm-bootstrap-controller-manager", Type: provider.BootstrapProviderType, Group: "bootstrap.cluster.x-k8s.io"},
	{Name: "kubeadm", Namespace: "capi-kubeadm-control-plane-system", Deployment: "capi-kubeadm-control-plane-controller-manager", Type: provider.ControlPlaneProviderType, Group: "controlplane.cluster.x-k8s.io"},
	{Name: "docker", Namespace: "capd-system", Deployment: "capd-controller-manager", Type: provider.InfrastructureProviderType, Group: "infrastructure.cluster.x-k8s.io"},
}

// ProviderOf returns the provider with a manifest label.
func ProviderOf(label string) Provider {
	for _, p := range Providers {
		if p.Label() == label {
			return p
		}
	}
	panic("no provider " + label)
}

// Management installs the Cluster API CRDs (labelled with their provider and contract), the
// inventory, a controller Deployment per provider (Available, with --*-concurrency flags) and a
// ready cert-manager (its CRDs from the fixtures and its three Deployments).
func Management(ctx context.Context, tb testing.TB, env *testenv.Env) {
	tb.Helper()
	describetest.InstallCRDs(tb, env)
	if err := inventory.EnsureCRD(ctx, env.Client); err != nil {
		tb.Fatal(err)
	}
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := env.Client.List(ctx, crds); err != nil {
		tb.Fatal(err)
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		for _, p := range Providers {
			if crd.Spec.Group == p.Group || (p.Type == provider.CoreProviderType && crd.Spec.Group == "addons.cluster.x-k8s.io") {
				patchLabels(ctx, tb, env.Client, crd, map[string]any{inventory.ProviderLabel: p.Label()})
			}
		}
	}
	for _, p := range Providers {
		env.CreateNamespaces(tb, p.Namespace)
		if err := inventory.Write(ctx, env.Client, inventory.New(p.Name, p.Type, "v1.14.0", p.Namespace)); err != nil {
			tb.Fatal(err)
		}
		args := []string{"--leader-elect", "--diagnostics-address=:8443"}
		switch p.Type {
		case provider.CoreProviderType:
			args = append(args, "--cluster-concurrency=10", "--machine-concurrency=10")
		case provider.InfrastructureProviderType:
			args = append(args, "--concurrency", "5")
		case provider.BootstrapProviderType:
			args = append(args, "--kubeadmconfig-concurrency=10")
		}
		Deployment(ctx, tb, env.Client, p.Namespace, p.Deployment, map[string]string{inventory.ProviderLabel: p.Label()}, args, true)
	}
	env.InstallCRDs(tb, filepath.Join(testenv.FixturesDir(tb), "repository", "cert-manager", "v1.21.1", "cert-manager-crds.yaml"))
	env.CreateNamespaces(tb, "cert-manager")
	for _, d := range []string{"cert-manager", "cert-manager-cainjector", "cert-manager-webhook"} {
		Deployment(ctx, tb, env.Client, "cert-manager", d, map[string]string{"app.kubernetes.io/instance": "cert-manager"}, nil, true)
	}
}

func patchLabels(ctx context.Context, tb testing.TB, c client.Client, obj client.Object, labels map[string]any) {
	tb.Helper()
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, b)); err != nil {
		tb.Fatalf("labelling %s: %v", obj.GetName(), err)
	}
}

// RelabelContract makes every CRD of a provider declare contract to instead of from (the label
// cluster.x-k8s.io/<from> goes, cluster.x-k8s.io/<to> comes).
func RelabelContract(ctx context.Context, tb testing.TB, c client.Client, label, from, to string) {
	tb.Helper()
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, crds, client.MatchingLabels{inventory.ProviderLabel: label}); err != nil {
		tb.Fatal(err)
	}
	for i := range crds.Items {
		patchLabels(ctx, tb, c, &crds.Items[i], map[string]any{"cluster.x-k8s.io/" + from: nil, "cluster.x-k8s.io/" + to: to})
	}
}

// Deployment creates (or updates the status of) a Deployment, Available or not.
func Deployment(ctx context.Context, tb testing.TB, c client.Client, ns, name string, labels map[string]string, args []string, available bool) {
	tb.Helper()
	one := int32(1)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}}
	err := c.Get(ctx, client.ObjectKeyFromObject(d), d)
	if apierrors.IsNotFound(err) {
		sel := map[string]string{"app": name}
		d.Spec = appsv1.DeploymentSpec{Replicas: &one, Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "manager", Image: "registry.k8s.io/" + name + ":v1.14.0", Args: args}}}}}
		if err := c.Create(ctx, d); err != nil {
			tb.Fatalf("creating Deployment %s/%s: %v", ns, name, err)
		}
	} else if err != nil {
		tb.Fatal(err)
	}
	st := corev1.ConditionTrue
	var avail int32 = 1
	reason, msg := "MinimumReplicasAvailable", "Deployment has minimum availability."
	if !available {
		st, avail, reason, msg = corev1.ConditionFalse, 0, "MinimumReplicasUnavailable", "Deployment does not have minimum availability."
	}
	d.Status = appsv1.DeploymentStatus{Replicas: 1, ReadyReplicas: avail, AvailableReplicas: avail, UpdatedReplicas: 1, ObservedGeneration: d.Generation,
		Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: st, Reason: reason, Message: msg,
			LastUpdateTime: metav1.NewTime(Now.Add(-10 * time.Minute)), LastTransitionTime: metav1.NewTime(Now.Add(-10 * time.Minute))}}}
	if err := c.Status().Update(ctx, d); err != nil {
		tb.Fatalf("writing the status of Deployment %s/%s: %v", ns, name, err)
	}
}

// --- clusters ---

// C is a condition: type, status, reason, message, and how long before Now it last changed.
type C = describetest.C

func conds(cs ...C) []any {
	out := make([]any, 0, len(cs))
	for _, c := range cs {
		m := map[string]any{"type": c.Type, "status": c.Status, "reason": c.Reason, "message": c.Message, "lastTransitionTime": Now.Add(-c.Ago).Format(time.RFC3339)}
		out = append(out, m)
	}
	return out
}

const (
	coreAV  = "cluster.x-k8s.io/v1beta2"
	cpAV    = "controlplane.cluster.x-k8s.io/v1beta2"
	bootAV  = "bootstrap.cluster.x-k8s.io/v1beta2"
	infraAV = "infrastructure.cluster.x-k8s.io/v1beta2"
)

func ref(apiVersion, kind, name string) map[string]any {
	return map[string]any{"apiGroup": strings.Split(apiVersion, "/")[0], "kind": kind, "name": name}
}

// Cluster is a cluster under construction: its objects, created together by Create.
type Cluster struct {
	Namespace, Name string
	Objects         []*unstructured.Unstructured
	cluster         *unstructured.Unstructured
	infra           *unstructured.Unstructured
}

// Healthy conditions of a Cluster whose infrastructure and control plane are up.
var healthyClusterConds = []C{
	{Type: "Available", Status: "True", Reason: "Available", Ago: time.Hour},
	{Type: "InfrastructureReady", Status: "True", Reason: "Ready", Ago: time.Hour},
	{Type: "ControlPlaneInitialized", Status: "True", Reason: "Initialized", Ago: time.Hour},
	{Type: "RemoteConnectionProbe", Status: "True", Reason: "ProbeSucceeded", Ago: time.Hour},
	{Type: "Paused", Status: "False", Reason: "NotPaused", Ago: 2 * time.Hour},
}

// NewCluster is a Cluster with a DockerCluster and a KubeadmControlPlane, healthy unless the
// caller changes it: endpoint 10.0.0.1:6443, every condition in its normal state.
func NewCluster(ns, name string) *Cluster {
	cl := &Cluster{Namespace: ns, Name: name}
	labels := map[string]string{"cluster.x-k8s.io/cluster-name": name}
	cl.cluster = describetest.Obj(coreAV, "Cluster", ns, name, nil, map[string]any{
		"infrastructureRef":    ref(infraAV, "DockerCluster", name),
		"controlPlaneRef":      ref(cpAV, "KubeadmControlPlane", name+"-cp"),
		"controlPlaneEndpoint": map[string]any{"host": "10.0.0.1", "port": int64(6443)},
	}, map[string]any{"conditions": conds(healthyClusterConds...)})
	cl.infra = describetest.Obj(infraAV, "DockerCluster", ns, name, labels, map[string]any{},
		map[string]any{"conditions": conds(C{Type: "Ready", Status: "True", Reason: "Ready", Ago: time.Hour})})
	kcp := describetest.Obj(cpAV, "KubeadmControlPlane", ns, name+"-cp", labels, map[string]any{
		"replicas": int64(1), "version": "v1.34.1", "kubeadmConfigSpec": map[string]any{"format": "cloud-config"},
		"machineTemplate": map[string]any{"spec": map[string]any{"infrastructureRef": ref(infraAV, "DockerMachineTemplate", name+"-cp")}},
	}, map[string]any{"conditions": conds(C{Type: "Available", Status: "True", Reason: "Available", Ago: time.Hour})})
	cl.Objects = []*unstructured.Unstructured{cl.cluster, cl.infra, kcp}
	return cl
}

// SetCondition replaces (or adds) a condition of the Cluster.
func (cl *Cluster) SetCondition(c C) *Cluster {
	setCondition(cl.cluster, c)
	return cl
}

// SetInfraCondition replaces (or adds) a condition of the DockerCluster.
func (cl *Cluster) SetInfraCondition(c C) *Cluster {
	setCondition(cl.infra, c)
	return cl
}

func setCondition(u *unstructured.Unstructured, c C) {
	cs, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	nc := conds(c)[0]
	for i, it := range cs {
		if it.(map[string]any)["type"] == c.Type {
			cs[i] = nc
			_ = unstructured.SetNestedSlice(u.Object, cs, "status", "conditions")
			return
		}
	}
	_ = unstructured.SetNestedSlice(u.Object, append(cs, nc), "status", "conditions")
}

// NoEndpoint removes the control-plane endpoint (the infrastructure has not set it yet).
func (cl *Cluster) NoEndpoint() *Cluster {
	unstructured.RemoveNestedField(cl.cluster.Object, "spec", "controlPlaneEndpoint")
	return cl
}

// Pause sets spec.paused, with the Paused condition the core writes.
func (cl *Cluster) Pause() *Cluster {
	_ = unstructured.SetNestedField(cl.cluster.Object, true, "spec", "paused")
	return cl.SetCondition(C{Type: "Paused", Status: "True", Reason: "Paused", Ago: 30 * time.Minute})
}

// Machine is a Machine of the cluster, with its DockerMachine and KubeadmConfig.
type Machine struct {
	Name         string
	ControlPlane bool
	// Phase, NodeName, ProviderID, DataSecret are written to the Machine; Deleting deletes it
	// (held by a finalizer).
	Phase, NodeName, ProviderID string
	DataSecret                  bool
	Deleting                    bool
	Conditions                  []C
	InfraConditions             []C
	BootConditions              []C
	// NoInfra leaves the DockerMachine out (a reference that points nowhere).
	NoInfra bool
}

// AddMachine adds a machine (with its DockerMachine and KubeadmConfig).
func (cl *Cluster) AddMachine(m Machine) *Cluster {
	labels := map[string]string{"cluster.x-k8s.io/cluster-name": cl.Name}
	if m.ControlPlane {
		labels["cluster.x-k8s.io/control-plane"] = ""
	}
	spec := map[string]any{
		"clusterName":       cl.Name,
		"bootstrap":         map[string]any{"configRef": ref(bootAV, "KubeadmConfig", m.Name)},
		"infrastructureRef": ref(infraAV, "DockerMachine", m.Name),
	}
	status := map[string]any{"conditions": conds(m.Conditions...)}
	init := map[string]any{}
	if m.DataSecret {
		spec["bootstrap"].(map[string]any)["dataSecretName"] = m.Name
		init["bootstrapDataSecretCreated"] = true
	}
	if m.ProviderID != "" {
		spec["providerID"] = m.ProviderID
		init["infrastructureProvisioned"] = true
	}
	if len(init) > 0 {
		status["initialization"] = init
	}
	if m.Phase != "" {
		status["phase"] = m.Phase
	}
	if m.NodeName != "" {
		status["nodeRef"] = map[string]any{"name": m.NodeName}
	}
	mu := describetest.Obj(coreAV, "Machine", cl.Namespace, m.Name, labels, spec, status)
	if m.Deleting {
		mu.SetAnnotations(map[string]string{"describetest.capctl.io/deleting": "true"})
	}
	cl.Objects = append(cl.Objects, mu)
	if !m.NoInfra {
		cl.Objects = append(cl.Objects, describetest.Obj(infraAV, "DockerMachine", cl.Namespace, m.Name, map[string]string{"cluster.x-k8s.io/cluster-name": cl.Name}, map[string]any{},
			map[string]any{"conditions": conds(m.InfraConditions...)}))
	}
	cl.Objects = append(cl.Objects, describetest.Obj(bootAV, "KubeadmConfig", cl.Namespace, m.Name, map[string]string{"cluster.x-k8s.io/cluster-name": cl.Name}, map[string]any{"format": "cloud-config"},
		map[string]any{"conditions": conds(m.BootConditions...)}))
	return cl
}

// AddHealthCheck adds a MachineHealthCheck selecting the cluster's machines, with its status.
func (cl *Cluster) AddHealthCheck(name string, expected, healthy int64, cs ...C) *Cluster {
	cl.Objects = append(cl.Objects, describetest.Obj(coreAV, "MachineHealthCheck", cl.Namespace, name, map[string]string{"cluster.x-k8s.io/cluster-name": cl.Name},
		map[string]any{"clusterName": cl.Name, "selector": map[string]any{"matchLabels": map[string]any{"cluster.x-k8s.io/cluster-name": cl.Name}}},
		map[string]any{"expectedMachines": expected, "currentHealthy": healthy, "conditions": conds(cs...)}))
	return cl
}

// Create makes the namespace and objects (status through the status subresource).
func (cl *Cluster) Create(ctx context.Context, tb testing.TB, env *testenv.Env) {
	tb.Helper()
	env.CreateNamespaces(tb, cl.Namespace)
	describetest.Apply(ctx, tb, env.Client, cl.Objects)
}

// KubeconfigSecret writes the cluster's kubeconfig Secret (<name>-kubeconfig, key value), as
// Cluster API does, with the given kubeconfig.
func KubeconfigSecret(ctx context.Context, tb testing.TB, c client.Client, ns, name string, kubeconfig []byte) {
	tb.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-kubeconfig", Labels: map[string]string{"cluster.x-k8s.io/cluster-name": name}},
		Type: "cluster.x-k8s.io/secret", Data: map[string][]byte{"value": kubeconfig}}
	if err := c.Create(ctx, s); err != nil {
		tb.Fatal(err)
	}
}

// UnreachableKubeconfig points at a port where nothing listens.
var UnreachableKubeconfig = KubeconfigFor("https://127.0.0.1:1")

// KubeconfigFor is a kubeconfig for an API server at a URL (TLS not verified: test servers only),
// with a made-up token.
func KubeconfigFor(server string) []byte {
	return []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}]
current-context: ctx
`, server))
}

// --- workload cluster objects ---

// WorkloadNode creates a Node of the workload cluster with its Ready condition.
func WorkloadNode(ctx context.Context, tb testing.TB, c client.Client, name string, ready corev1.ConditionStatus, reason, message string, ago time.Duration) {
	tb.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{ProviderID: "docker:////" + name}}
	if err := c.Create(ctx, n); err != nil {
		tb.Fatal(err)
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: reason, Message: message,
		LastHeartbeatTime: metav1.NewTime(Now), LastTransitionTime: metav1.NewTime(Now.Add(-ago))}}
	if err := c.Status().Update(ctx, n); err != nil {
		tb.Fatalf("writing Node %s status: %v", name, err)
	}
}

// BlockingPDB creates a PodDisruptionBudget (minAvailable 2) that allows no disruption, with a
// pod it covers running on node.
func BlockingPDB(ctx context.Context, tb testing.TB, c client.Client, ns, name, node string) {
	tb.Helper()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		tb.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		tb.Fatal(err)
	}
	no := false
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-0", Labels: map[string]string{"app": name}},
		Spec: corev1.PodSpec{NodeName: node, AutomountServiceAccountToken: &no, Containers: []corev1.Container{{Name: "web", Image: "nginx"}}}}
	if err := c.Create(ctx, pod); err != nil {
		tb.Fatalf("creating pod: %v", err)
	}
	two := intstr.FromInt32(2)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}}}}
	if err := c.Create(ctx, pdb); err != nil {
		tb.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 0, CurrentHealthy: 1, DesiredHealthy: 2, ExpectedPods: 2, ObservedGeneration: pdb.Generation}
	if err := c.Status().Update(ctx, pdb); err != nil {
		tb.Fatalf("writing PDB status: %v", err)
	}
}

// CNIDaemonSet creates a calico-node DaemonSet with ready pods.
func CNIDaemonSet(ctx context.Context, tb testing.TB, c client.Client, ready int32) {
	tb.Helper()
	sel := map[string]string{"k8s-app": "calico-node"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "calico-node"},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: sel}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "calico-node", Image: "calico/node"}}}}}}
	if err := c.Create(ctx, ds); err != nil {
		tb.Fatal(err)
	}
	ds.Status = appsv1.DaemonSetStatus{DesiredNumberScheduled: ready, CurrentNumberScheduled: ready, NumberReady: ready, NumberAvailable: ready}
	if err := c.Status().Update(ctx, ds); err != nil {
		tb.Fatalf("writing DaemonSet status: %v", err)
	}
}

// WebhookWithoutEndpoints registers a validating webhook of a provider whose Service has no
// ready endpoint (failurePolicy Ignore, on a kind the tests never write, so the server stays usable).
func WebhookWithoutEndpoints(ctx context.Context, tb testing.TB, c client.Client, p Provider) string {
	tb.Helper()
	svc := strings.TrimSuffix(p.Deployment, "-controller-manager") + "-webhook-service"
	if err := c.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: svc},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": p.Deployment}, Ports: []corev1.ServicePort{{Port: 443, TargetPort: intstr.FromInt32(9443)}}}}); err != nil {
		tb.Fatal(err)
	}
	hook := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
		"metadata": map[string]any{"name": p.Label() + "-validating-webhook-configuration", "labels": map[string]any{inventory.ProviderLabel: p.Label()}},
		"webhooks": []any{map[string]any{
			"name": "validation.kubeadmconfigtemplate." + p.Group, "admissionReviewVersions": []any{"v1"}, "sideEffects": "None", "failurePolicy": "Ignore",
			"clientConfig": map[string]any{"service": map[string]any{"namespace": p.Namespace, "name": svc, "path": "/validate"}, "caBundle": "Y2E="},
			"rules":        []any{map[string]any{"apiGroups": []any{p.Group}, "apiVersions": []any{"v1beta2"}, "operations": []any{"CREATE"}, "resources": []any{"kubeadmconfigtemplates"}}},
		}},
	}}
	if err := c.Create(ctx, hook); err != nil {
		tb.Fatal(fmt.Errorf("creating webhook configuration: %w", err))
	}
	return svc
}
