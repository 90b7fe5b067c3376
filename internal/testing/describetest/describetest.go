// Package describetest builds Cluster API object trees in a real API server for the describe
// tests: the Cluster API CRDs (with the contract labels `capctl init` would add), and scenarios
// (healthy, provisioning, rolling upgrade, machine pool, ClusterClass, broken references) whose
// status is written through the status subresource, as the controllers would.
package describetest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/capctl/capctl/internal/testing/testenv"
)

// Now is the fixed clock of the scenarios: condition times are set relative to it.
var Now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// CRD kinds the scenarios use, per fixture file.
var crdKinds = map[string][]string{
	"cluster.x-k8s.io.yaml":                {"Cluster", "Machine", "MachineSet", "MachineDeployment", "MachinePool", "MachineHealthCheck"},
	"addons.cluster.x-k8s.io.yaml":         {"ClusterResourceSet", "ClusterResourceSetBinding"},
	"controlplane.cluster.x-k8s.io.yaml":   {"KubeadmControlPlane"},
	"bootstrap.cluster.x-k8s.io.yaml":      {"KubeadmConfig"},
	"infrastructure.cluster.x-k8s.io.yaml": {"DockerCluster", "DockerMachine", "DockerMachinePool"},
}

// Unlabelled is a CRD left without the contract label, so that tests cover the fallback to the
// served version.
const Unlabelled = "DockerMachinePool"

// InstallCRDs installs the upstream Cluster API CRDs from the shared fixtures (skipping the test
// when they are absent), labelled as `init` labels them: `cluster.x-k8s.io/v1beta2: v1beta2`.
func InstallCRDs(tb testing.TB, env *testenv.Env) {
	tb.Helper()
	dir := filepath.Join(testenv.FixturesDir(tb), "crds")
	var crds []*apiextensionsv1.CustomResourceDefinition
	for file, kinds := range crdKinds {
		want := map[string]bool{}
		for _, k := range kinds {
			want[k] = true
		}
		f, err := os.Open(filepath.Join(dir, file))
		if err != nil {
			tb.Fatalf("reading CRD fixture: %v", err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(f, 1<<20)
		for {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := dec.Decode(crd); err != nil {
				if err.Error() == "EOF" {
					break
				}
				_ = f.Close()
				tb.Fatalf("decoding %s: %v", file, err)
			}
			if !want[crd.Spec.Names.Kind] {
				continue
			}
			if crd.Labels == nil {
				crd.Labels = map[string]string{}
			}
			if crd.Spec.Names.Kind != Unlabelled {
				crd.Labels["cluster.x-k8s.io/v1beta2"] = "v1beta2"
			}
			crd.Labels["clusterctl.cluster.x-k8s.io"] = ""
			crds = append(crds, crd)
		}
		_ = f.Close()
	}
	opts := testenv.CRDInstallOptions()
	opts.CRDs = crds
	if _, err := envtest.InstallCRDs(env.Config, opts); err != nil {
		tb.Fatalf("installing Cluster API CRDs: %v", err)
	}
}

// Apply creates objects and writes their status through the status subresource. Objects marked
// with Deleting get a finalizer and are then deleted, so they stay with a deletion timestamp.
func Apply(ctx context.Context, tb testing.TB, c client.Client, objs []*unstructured.Unstructured) {
	tb.Helper()
	ApplyConcurrently(ctx, tb, c, objs, 16)
}

// ApplyConcurrently is Apply with limit objects in flight at once (seeding a fleet of tens of
// thousands of objects wants more than Apply's 16). It stops at the first error.
func ApplyConcurrently(ctx context.Context, tb testing.TB, c client.Client, objs []*unstructured.Unstructured, limit int) {
	tb.Helper()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	for _, o := range objs {
		g.Go(func() error { return ApplyOne(gctx, c, o) })
	}
	if err := g.Wait(); err != nil {
		tb.Fatal(err)
	}
}

// deletingAnnotation marks fixture objects that should end up being deleted.
const deletingAnnotation = "describetest.capctl.io/deleting"

// ApplyOne creates one object, writes its status, and deletes it when marked. Transient errors
// of a busy test API server (timeouts, throttling, conflicts) are retried.
func ApplyOne(ctx context.Context, c client.Client, o *unstructured.Unstructured) error {
	transient := func(err error) bool {
		return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
			apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsConflict(err) || meta.IsNoMatchError(err)
	}
	return retry.OnError(retry.DefaultBackoff, transient, func() error { return applyOne(ctx, c, o) })
}

func applyOne(ctx context.Context, c client.Client, o *unstructured.Unstructured) error {
	o = o.DeepCopy()
	status, hasStatus := o.Object["status"]
	delete(o.Object, "status")
	deleting := o.GetAnnotations()[deletingAnnotation] == "true"
	if deleting {
		o.SetFinalizers(append(o.GetFinalizers(), "describetest.capctl.io/keep"))
	}
	if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
	}
	if hasStatus {
		b, err := json.Marshal(map[string]any{"status": status})
		if err != nil {
			return err
		}
		if err := c.Status().Patch(ctx, o, client.RawPatch(types.MergePatchType, b)); err != nil {
			return fmt.Errorf("writing status of %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	if deleting {
		if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
		}
	}
	return nil
}

// --- object builders ---

const (
	core  = "cluster.x-k8s.io/v1beta2"
	cp    = "controlplane.cluster.x-k8s.io/v1beta2"
	boot  = "bootstrap.cluster.x-k8s.io/v1beta2"
	infra = "infrastructure.cluster.x-k8s.io/v1beta2"
	addon = "addons.cluster.x-k8s.io/v1beta2"
)

// C is a condition: type, status, reason, message, and how long before Now it last changed.
type C struct {
	Type, Status, Reason, Message string
	Ago                           time.Duration
}

func conds(cs []C, severity bool) []any {
	out := make([]any, 0, len(cs))
	for _, c := range cs {
		m := map[string]any{
			"type": c.Type, "status": c.Status, "reason": c.Reason, "message": c.Message,
			"lastTransitionTime": Now.Add(-c.Ago).Format(time.RFC3339),
		}
		if severity && c.Status != "True" {
			m["severity"] = "Warning"
			if strings.Contains(c.Reason, "Failed") {
				m["severity"] = "Error"
			}
		}
		if c.Reason == "" {
			delete(m, "reason")
		}
		out = append(out, m)
	}
	return out
}

// Obj builds an object from its parts.
func Obj(apiVersion, kind, ns, name string, labels map[string]string, spec, status map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind}}
	u.SetNamespace(ns)
	u.SetName(name)
	if len(labels) > 0 {
		u.SetLabels(labels)
	}
	if spec != nil {
		u.Object["spec"] = spec
	}
	if status != nil {
		u.Object["status"] = status
	}
	return u
}

func owned(u *unstructured.Unstructured, apiVersion, kind, name string) *unstructured.Unstructured {
	t := true
	u.Object["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{
		"apiVersion": apiVersion, "kind": kind, "name": name, "uid": "00000000-0000-0000-0000-" + fmt.Sprintf("%012x", len(name)), "controller": t,
	}}
	return u
}

func ref(apiVersion, kind, name string) map[string]any {
	group := strings.Split(apiVersion, "/")[0]
	return map[string]any{"apiGroup": group, "kind": kind, "name": name}
}

func clusterLabels(cluster string, extra ...string) map[string]string {
	l := map[string]string{"cluster.x-k8s.io/cluster-name": cluster}
	for i := 0; i+1 < len(extra); i += 2 {
		l[extra[i]] = extra[i+1]
	}
	return l
}

// Scenario is a named set of objects in one namespace.
type Scenario struct {
	Namespace string
	Cluster   string
	Objects   []*unstructured.Unstructured
}

type builder struct{ s *Scenario }

func (b *builder) add(u ...*unstructured.Unstructured) { b.s.Objects = append(b.s.Objects, u...) }

// Cluster adds a Cluster with a DockerCluster and a KubeadmControlPlane.
func (b *builder) cluster(topology map[string]any, clusterConds []C, cpStatus, workers map[string]any, infraConds []C, cpConds []C, cpReplicas int64, version string) {
	ns, name := b.s.Namespace, b.s.Cluster
	spec := map[string]any{
		"infrastructureRef": ref(infra, "DockerCluster", name),
		"controlPlaneRef":   ref(cp, "KubeadmControlPlane", name+"-control-plane"),
	}
	if topology != nil {
		spec["topology"] = topology
	}
	status := map[string]any{"conditions": conds(clusterConds, false)}
	if cpStatus != nil {
		status["controlPlane"] = cpStatus
	}
	if workers != nil {
		status["workers"] = workers
	}
	b.add(Obj(core, "Cluster", ns, name, nil, spec, status))
	b.add(Obj(infra, "DockerCluster", ns, name, clusterLabels(name), map[string]any{}, map[string]any{"conditions": conds(infraConds, false)}))
	kcpStatus := map[string]any{"conditions": conds(cpConds, false)}
	for k, v := range cpStatus {
		switch k {
		case "replicas", "readyReplicas", "availableReplicas", "upToDateReplicas":
			kcpStatus[k] = v
		}
	}
	b.add(Obj(cp, "KubeadmControlPlane", ns, name+"-control-plane", clusterLabels(name), map[string]any{
		"replicas": cpReplicas, "version": version,
		"kubeadmConfigSpec": map[string]any{"format": "cloud-config"},
		"machineTemplate": map[string]any{"spec": map[string]any{
			"infrastructureRef": ref(infra, "DockerMachineTemplate", name+"-control-plane"),
		}},
	}, kcpStatus))
}

// machine adds a Machine with its DockerMachine and KubeadmConfig (same name).
func (b *builder) machine(name, version, ownerKind, ownerName string, controlPlane bool, mConds, infraConds, bootConds []C, extraLabels ...string) *unstructured.Unstructured {
	ns, cl := b.s.Namespace, b.s.Cluster
	labels := clusterLabels(cl, extraLabels...)
	if controlPlane {
		labels["cluster.x-k8s.io/control-plane"] = ""
	}
	ownerAPI := core
	if ownerKind == "KubeadmControlPlane" {
		ownerAPI = cp
	}
	m := Obj(core, "Machine", ns, name, labels, map[string]any{
		"clusterName":       cl,
		"version":           version,
		"bootstrap":         map[string]any{"configRef": ref(boot, "KubeadmConfig", name)},
		"infrastructureRef": ref(infra, "DockerMachine", name),
	}, map[string]any{"conditions": conds(mConds, false)})
	if ownerKind != "" {
		owned(m, ownerAPI, ownerKind, ownerName)
	}
	b.add(m)
	b.add(Obj(infra, "DockerMachine", ns, name, clusterLabels(cl), map[string]any{}, map[string]any{"conditions": conds(infraConds, false)}))
	b.add(Obj(boot, "KubeadmConfig", ns, name, clusterLabels(cl), map[string]any{"format": "cloud-config"}, map[string]any{"conditions": conds(bootConds, false)}))
	return m
}

func (b *builder) machineDeployment(name string, replicas int64, version string, status map[string]any, cs []C) {
	ns, cl := b.s.Namespace, b.s.Cluster
	st := map[string]any{"conditions": conds(cs, false)}
	for k, v := range status {
		st[k] = v
	}
	b.add(Obj(core, "MachineDeployment", ns, name, clusterLabels(cl), map[string]any{
		"clusterName": cl, "replicas": replicas,
		"selector": map[string]any{"matchLabels": map[string]any{"cluster.x-k8s.io/deployment-name": name}},
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"cluster.x-k8s.io/deployment-name": name}},
			"spec": map[string]any{
				"clusterName": cl, "version": version,
				"bootstrap":         map[string]any{"configRef": ref(boot, "KubeadmConfigTemplate", name)},
				"infrastructureRef": ref(infra, "DockerMachineTemplate", name),
			},
		},
	}, st))
}

func (b *builder) machineSet(name, md string, replicas int64, version string, status map[string]any) {
	ns, cl := b.s.Namespace, b.s.Cluster
	ms := Obj(core, "MachineSet", ns, name, clusterLabels(cl, "cluster.x-k8s.io/deployment-name", md), map[string]any{
		"clusterName": cl, "replicas": replicas,
		"selector": map[string]any{"matchLabels": map[string]any{"cluster.x-k8s.io/set-name": name}},
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"cluster.x-k8s.io/set-name": name}},
			"spec": map[string]any{
				"clusterName": cl, "version": version,
				"bootstrap":         map[string]any{"configRef": ref(boot, "KubeadmConfigTemplate", md)},
				"infrastructureRef": ref(infra, "DockerMachineTemplate", md),
			},
		},
	}, status)
	b.add(owned(ms, core, "MachineDeployment", md))
}

func (b *builder) healthCheck(name string, matchLabels map[string]any, status map[string]any) {
	ns, cl := b.s.Namespace, b.s.Cluster
	b.add(Obj(core, "MachineHealthCheck", ns, name, clusterLabels(cl), map[string]any{
		"clusterName": cl,
		"selector":    map[string]any{"matchLabels": matchLabels},
	}, status))
}

func i64(v int64) int64 { return v }

var (
	ready     = []C{{Type: "Ready", Status: "True", Reason: "Ready", Ago: 50 * time.Minute}}
	available = C{Type: "Available", Status: "True", Reason: "Available", Ago: 45 * time.Minute}
	upToDate  = C{Type: "UpToDate", Status: "True", Reason: "UpToDate", Ago: 55 * time.Minute}
)

func healthyMachine() []C {
	return []C{available, {Type: "Ready", Status: "True", Reason: "Ready", Ago: 50 * time.Minute}, upToDate,
		{Type: "HealthCheckSucceeded", Status: "True", Reason: "Succeeded", Ago: 40 * time.Minute}}
}

func counts(desired, replicas, ready, available, upToDate int64) map[string]any {
	return map[string]any{"desiredReplicas": desired, "replicas": replicas, "readyReplicas": ready, "availableReplicas": available, "upToDateReplicas": upToDate}
}

// Healthy: 3 control plane machines, one MachineDeployment of 3 machines, a health check and a
// ClusterResourceSet, all ready.
func Healthy() *Scenario {
	s := &Scenario{Namespace: "healthy", Cluster: "prod"}
	b := &builder{s}
	b.cluster(nil,
		[]C{{Type: "Available", Status: "True", Reason: "Available", Ago: 2 * time.Hour}, {Type: "Ready", Status: "True", Reason: "Ready", Ago: 2 * time.Hour},
			{Type: "RemoteConnectionProbe", Status: "True", Reason: "ProbeSucceeded", Ago: 2 * time.Hour}, {Type: "Paused", Status: "False", Reason: "NotPaused", Ago: 3 * time.Hour}},
		counts(3, 3, 3, 3, 3), counts(3, 3, 3, 3, 3), ready,
		[]C{{Type: "Available", Status: "True", Reason: "Available", Ago: 90 * time.Minute}, {Type: "Ready", Status: "True", Reason: "Ready", Ago: 90 * time.Minute}},
		3, "v1.34.1")
	for i := 0; i < 3; i++ {
		b.machine(fmt.Sprintf("prod-control-plane-%c", 'a'+i), "v1.34.1", "KubeadmControlPlane", "prod-control-plane", true, healthyMachine(), ready, ready)
	}
	b.machineDeployment("prod-md-0", 3, "v1.34.1", map[string]any{"replicas": i64(3), "readyReplicas": i64(3), "availableReplicas": i64(3), "upToDateReplicas": i64(3)},
		[]C{{Type: "Available", Status: "True", Reason: "Available", Ago: 80 * time.Minute}})
	b.machineSet("prod-md-0-7d9f", "prod-md-0", 3, "v1.34.1", map[string]any{"replicas": i64(3), "readyReplicas": i64(3), "availableReplicas": i64(3), "upToDateReplicas": i64(3)})
	for i := 0; i < 3; i++ {
		b.machine(fmt.Sprintf("prod-md-0-7d9f-%c", 'x'+i), "v1.34.1", "MachineSet", "prod-md-0-7d9f", false, healthyMachine(), ready, ready, "cluster.x-k8s.io/deployment-name", "prod-md-0")
	}
	b.healthCheck("prod-workers", map[string]any{"cluster.x-k8s.io/deployment-name": "prod-md-0"}, map[string]any{
		"expectedMachines": i64(3), "currentHealthy": i64(3),
		"conditions": conds([]C{{Type: "RemediationAllowed", Status: "True", Reason: "RemediationAllowed", Ago: time.Hour}}, false),
	})
	b.add(Obj(addon, "ClusterResourceSet", s.Namespace, "cni", nil, map[string]any{
		"clusterSelector": map[string]any{"matchLabels": map[string]any{"cni": "calico"}},
		"resources":       []any{map[string]any{"kind": "ConfigMap", "name": "calico"}},
	}, map[string]any{"conditions": conds([]C{{Type: "ResourcesApplied", Status: "True", Reason: "Applied", Ago: time.Hour}}, false)}))
	b.add(Obj(addon, "ClusterResourceSetBinding", s.Namespace, s.Cluster, nil, map[string]any{
		"clusterName": s.Cluster,
		"bindings":    []any{map[string]any{"clusterResourceSetName": "cni"}},
	}, nil))
	return s
}

// Provisioning: the infrastructure is not ready, so nothing else is; messages at several levels,
// one of them multi-line and one long enough to wrap.
func Provisioning() *Scenario {
	s := &Scenario{Namespace: "provisioning", Cluster: "stuck"}
	b := &builder{s}
	long := "Failed to create load balancer: the cloud provider rejected the request because the quota of load balancers in region eu-west-1 is exhausted (limit 20, used 20); ask for a higher quota"
	b.cluster(nil,
		[]C{{Type: "Available", Status: "False", Reason: "NotAvailable", Ago: 20 * time.Minute,
			Message: "* InfrastructureReady: Failed to create load balancer\n* ControlPlaneAvailable: Control plane not yet initialized\n* WorkersAvailable: 0 of 2 machines available"},
			{Type: "InfrastructureReady", Status: "False", Reason: "LoadBalancerFailed", Message: "Failed to create load balancer", Ago: 20 * time.Minute},
			{Type: "ControlPlaneInitialized", Status: "False", Reason: "WaitingForInfrastructure", Message: "Waiting for the infrastructure", Ago: 20 * time.Minute},
			{Type: "Paused", Status: "False", Reason: "NotPaused", Ago: 20 * time.Minute}},
		map[string]any{"desiredReplicas": i64(1), "replicas": i64(0)}, map[string]any{"desiredReplicas": i64(2), "replicas": i64(0)},
		[]C{{Type: "Ready", Status: "False", Reason: "LoadBalancerProvisioningFailed", Message: long, Ago: 19 * time.Minute}},
		[]C{{Type: "Available", Status: "False", Reason: "WaitingForInfrastructure", Message: "Waiting for the cluster infrastructure to be ready", Ago: 20 * time.Minute}},
		1, "v1.34.1")
	b.machineDeployment("stuck-md-0", 2, "v1.34.1", map[string]any{"replicas": i64(0)},
		[]C{{Type: "Available", Status: "False", Reason: "WaitingForAvailableMachines", Message: "0 available replicas, at least 2 required", Ago: 20 * time.Minute}})
	return s
}

// RollingUpgrade: a MachineDeployment moving from v1.33.5 to v1.34.1 with two MachineSets; one
// old machine is being deleted, one new machine is not ready yet and its health check fails.
func RollingUpgrade() *Scenario {
	s := &Scenario{Namespace: "upgrade", Cluster: "rolling"}
	b := &builder{s}
	b.cluster(nil,
		[]C{{Type: "Available", Status: "True", Reason: "Available", Ago: 5 * time.Hour}, {Type: "RollingOut", Status: "True", Reason: "RollingOut", Message: "Rolling out 2 not up-to-date replicas", Ago: 10 * time.Minute}},
		counts(1, 1, 1, 1, 1), counts(3, 4, 3, 3, 2), ready,
		[]C{{Type: "Available", Status: "True", Reason: "Available", Ago: 5 * time.Hour}}, 1, "v1.34.1")
	b.machine("rolling-cp-1", "v1.34.1", "KubeadmControlPlane", "rolling-control-plane", true, healthyMachine(), ready, ready)
	b.machineDeployment("rolling-md-0", 3, "v1.34.1", map[string]any{"replicas": i64(4), "readyReplicas": i64(3), "availableReplicas": i64(3), "upToDateReplicas": i64(2)},
		[]C{{Type: "Available", Status: "True", Reason: "Available", Ago: 5 * time.Hour},
			{Type: "RollingOut", Status: "True", Reason: "RollingOut", Message: "Rolling out 2 not up-to-date replicas\n* Version v1.33.5, v1.34.1 required", Ago: 10 * time.Minute}})
	b.machineSet("rolling-md-0-old", "rolling-md-0", 1, "v1.33.5", map[string]any{"replicas": i64(2), "readyReplicas": i64(2), "availableReplicas": i64(2), "upToDateReplicas": i64(0)})
	b.machineSet("rolling-md-0-new", "rolling-md-0", 3, "v1.34.1", map[string]any{"replicas": i64(2), "readyReplicas": i64(1), "availableReplicas": i64(1), "upToDateReplicas": i64(2)})
	outdated := []C{{Type: "Available", Status: "True", Reason: "Available", Ago: 5 * time.Hour}, {Type: "Ready", Status: "True", Reason: "Ready", Ago: 5 * time.Hour},
		{Type: "UpToDate", Status: "False", Reason: "NotUpToDate", Message: "* Version v1.33.5, v1.34.1 required", Ago: 10 * time.Minute}}
	old1 := b.machine("rolling-md-0-old-a", "v1.33.5", "MachineSet", "rolling-md-0-old", false, outdated, ready, ready, "cluster.x-k8s.io/deployment-name", "rolling-md-0")
	_ = old1
	deleting := append([]C{}, outdated...)
	deleting = append(deleting, C{Type: "Deleting", Status: "True", Reason: "DrainingNode", Message: "Drain not completed yet (started at 2026-01-01T11:58:00Z):\n* Pods with deletionTimestamp that still exist: web-0", Ago: 2 * time.Minute})
	deleting[1] = C{Type: "Ready", Status: "False", Reason: "Deleting", Message: "Machine deletion in progress, stage: DrainingNode", Ago: 2 * time.Minute}
	del := b.machine("rolling-md-0-old-b", "v1.33.5", "MachineSet", "rolling-md-0-old", false, deleting, ready, ready, "cluster.x-k8s.io/deployment-name", "rolling-md-0")
	del.SetAnnotations(map[string]string{deletingAnnotation: "true"})
	b.machine("rolling-md-0-new-a", "v1.34.1", "MachineSet", "rolling-md-0-new", false, healthyMachine(), ready, ready, "cluster.x-k8s.io/deployment-name", "rolling-md-0")
	b.machine("rolling-md-0-new-b", "v1.34.1", "MachineSet", "rolling-md-0-new", false,
		[]C{{Type: "Available", Status: "False", Reason: "NotReady", Ago: 8 * time.Minute},
			{Type: "Ready", Status: "False", Reason: "NotReady", Message: "* NodeHealthy: Waiting for a Node with spec.providerID docker:////rolling-md-0-new-b to exist", Ago: 8 * time.Minute},
			upToDate,
			{Type: "HealthCheckSucceeded", Status: "False", Reason: "NodeStartupTimeout", Message: "Node failed to report startup in 10m0s", Ago: time.Minute}},
		[]C{{Type: "Ready", Status: "False", Reason: "ContainerProvisioning", Message: "Waiting for the container to start", Ago: 8 * time.Minute}},
		ready, "cluster.x-k8s.io/deployment-name", "rolling-md-0")
	b.healthCheck("rolling-workers", map[string]any{"cluster.x-k8s.io/deployment-name": "rolling-md-0"}, map[string]any{
		"expectedMachines": i64(4), "currentHealthy": i64(3),
		"conditions": conds([]C{{Type: "RemediationAllowed", Status: "True", Reason: "RemediationAllowed", Ago: time.Hour}}, false),
	})
	return s
}

// Pool: workers from a MachinePool backed by a DockerMachinePool, whose CRD has no contract label.
func Pool() *Scenario {
	s := &Scenario{Namespace: "pool", Cluster: "pooled"}
	b := &builder{s}
	b.cluster(nil, []C{{Type: "Available", Status: "True", Reason: "Available", Ago: 3 * time.Hour}},
		counts(1, 1, 1, 1, 1), counts(2, 2, 2, 2, 2), ready, []C{{Type: "Available", Status: "True", Reason: "Available", Ago: 3 * time.Hour}}, 1, "v1.34.1")
	b.machine("pooled-cp-1", "v1.34.1", "KubeadmControlPlane", "pooled-control-plane", true, healthyMachine(), ready, ready)
	mp := Obj(core, "MachinePool", s.Namespace, "pooled-mp-0", clusterLabels(s.Cluster), map[string]any{
		"clusterName": s.Cluster, "replicas": i64(2),
		"template": map[string]any{"spec": map[string]any{
			"clusterName": s.Cluster, "version": "v1.34.1",
			"bootstrap":         map[string]any{"configRef": ref(boot, "KubeadmConfig", "pooled-mp-0")},
			"infrastructureRef": ref(infra, "DockerMachinePool", "pooled-mp-0"),
		}},
	}, map[string]any{"replicas": i64(2), "readyReplicas": i64(2), "availableReplicas": i64(2), "upToDateReplicas": i64(2),
		"conditions": conds([]C{{Type: "Available", Status: "True", Reason: "Available", Ago: 2 * time.Hour}}, false)})
	b.add(mp)
	b.add(Obj(infra, "DockerMachinePool", s.Namespace, "pooled-mp-0", clusterLabels(s.Cluster), map[string]any{},
		map[string]any{"conditions": conds([]C{{Type: "Ready", Status: "False", Reason: "ScalingUp", Message: "Scaling up to 2 instances", Ago: 2 * time.Hour}}, false)}))
	b.add(Obj(boot, "KubeadmConfig", s.Namespace, "pooled-mp-0", clusterLabels(s.Cluster), map[string]any{"format": "cloud-config"},
		map[string]any{"conditions": conds(ready, false)}))
	for _, n := range []string{"pooled-mp-0-a", "pooled-mp-0-b"} {
		b.machine(n, "v1.34.1", "MachinePool", "pooled-mp-0", false, healthyMachine(), ready, ready)
	}
	return s
}

// Topology: a ClusterClass-based cluster (version in the Cluster row), with one machine whose
// infrastructure reference is broken and one whose bootstrap kind is not installed at all.
func Topology() *Scenario {
	s := &Scenario{Namespace: "topology", Cluster: "classy"}
	b := &builder{s}
	b.cluster(map[string]any{"classRef": map[string]any{"name": "quick-start"}, "version": "v1.34.1"},
		[]C{{Type: "Available", Status: "False", Reason: "NotAvailable", Message: "* WorkersAvailable: 1 of 2 machines available", Ago: 30 * time.Minute},
			{Type: "TopologyReconciled", Status: "True", Reason: "ReconcileSucceeded", Ago: 30 * time.Minute}},
		counts(1, 1, 1, 1, 1), counts(2, 2, 1, 1, 2), ready, []C{{Type: "Available", Status: "True", Reason: "Available", Ago: time.Hour}}, 1, "v1.34.1")
	b.machine("classy-cp-1", "v1.34.1", "KubeadmControlPlane", "classy-control-plane", true, healthyMachine(), ready, ready)
	b.machineDeployment("classy-md-0", 2, "v1.34.1", map[string]any{"replicas": i64(2), "readyReplicas": i64(1), "availableReplicas": i64(1), "upToDateReplicas": i64(2)},
		[]C{{Type: "Available", Status: "False", Reason: "NotAvailable", Message: "1 available replicas, at least 2 required", Ago: 30 * time.Minute}})
	b.machineSet("classy-md-0-abc", "classy-md-0", 2, "v1.34.1", map[string]any{"replicas": i64(2)})
	b.machine("classy-md-0-abc-1", "v1.34.1", "MachineSet", "classy-md-0-abc", false, healthyMachine(), ready, ready)
	broken := b.machine("classy-md-0-abc-2", "v1.34.1", "MachineSet", "classy-md-0-abc", false,
		[]C{{Type: "Available", Status: "False", Reason: "NotReady", Ago: 30 * time.Minute},
			{Type: "Ready", Status: "False", Reason: "InfrastructureNotReady", Message: "* InfrastructureReady: DockerMachine does not exist", Ago: 30 * time.Minute}, upToDate}, ready, ready)
	// Break both references: the infra object is dropped below, the bootstrap kind does not exist.
	broken.Object["spec"].(map[string]any)["bootstrap"] = map[string]any{"configRef": map[string]any{"apiGroup": "bootstrap.example.com", "kind": "FooConfig", "name": "classy-md-0-abc-2"}}
	var kept []*unstructured.Unstructured
	for _, o := range s.Objects {
		if (o.GetKind() == "DockerMachine" || o.GetKind() == "KubeadmConfig") && o.GetName() == "classy-md-0-abc-2" {
			continue
		}
		kept = append(kept, o)
	}
	s.Objects = kept
	return s
}

// All returns every v1beta2 scenario.
func All() []*Scenario {
	return []*Scenario{Healthy(), Provisioning(), RollingUpgrade(), Pool(), Topology()}
}

// Create makes the scenario's namespace and objects.
func (s *Scenario) Create(ctx context.Context, tb testing.TB, env *testenv.Env) {
	tb.Helper()
	env.CreateNamespaces(tb, s.Namespace)
	Apply(ctx, tb, env.Client, s.Objects)
}

// Large is a cluster with a control plane of cpMachines machines and one MachineDeployment of
// workers machines, each with its DockerMachine and KubeadmConfig; one worker in a hundred is
// not ready. It is the benchmark's cluster.
func Large(namespace string, cpMachines, workers int) *Scenario {
	s := &Scenario{Namespace: namespace, Cluster: "big"}
	b := &builder{s}
	w := int64(workers)
	b.cluster(nil, []C{{Type: "Available", Status: "True", Reason: "Available", Ago: time.Hour}},
		counts(int64(cpMachines), int64(cpMachines), int64(cpMachines), int64(cpMachines), int64(cpMachines)),
		counts(w, w, w-int64(workers/100), w-int64(workers/100), w), ready,
		[]C{{Type: "Available", Status: "True", Reason: "Available", Ago: time.Hour}}, int64(cpMachines), "v1.34.1")
	for i := 0; i < cpMachines; i++ {
		b.machine(fmt.Sprintf("big-cp-%d", i), "v1.34.1", "KubeadmControlPlane", "big-control-plane", true, healthyMachine(), ready, ready)
	}
	b.machineDeployment("big-md-0", w, "v1.34.1", map[string]any{"replicas": w, "readyReplicas": w, "availableReplicas": w, "upToDateReplicas": w},
		[]C{{Type: "Available", Status: "True", Reason: "Available", Ago: time.Hour}})
	b.machineSet("big-md-0-1", "big-md-0", w, "v1.34.1", map[string]any{"replicas": w})
	notReady := []C{{Type: "Available", Status: "False", Reason: "NotReady", Ago: 5 * time.Minute},
		{Type: "Ready", Status: "False", Reason: "NotReady", Message: "* NodeHealthy: Node not ready", Ago: 5 * time.Minute}, upToDate}
	for i := 0; i < workers; i++ {
		mc := healthyMachine()
		if i%100 == 99 {
			mc = notReady
		}
		m := b.machine(fmt.Sprintf("big-md-0-1-%04d", i), "v1.34.1", "MachineSet", "big-md-0-1", false, mc, nil, nil, "cluster.x-k8s.io/deployment-name", "big-md-0")
		_ = m
	}
	// Infrastructure and bootstrap objects without conditions: no status write needed.
	for _, o := range s.Objects {
		if o.GetKind() == "DockerMachine" || o.GetKind() == "KubeadmConfig" {
			delete(o.Object, "status")
		}
	}
	return s
}

// Varied is a cluster whose machines differ in every way the grouped view tells apart, and in
// ways it does not: healthy, not ready for several reasons, not up to date, being deleted, paused,
// failing their health check, Ready with another reason, conditions changed at different times,
// and two Kubernetes versions in two MachineSets; control-plane machines with one not ready. The
// equality tests of describe's fetch paths read it (a wrong grouping shows as a different row).
func Varied(namespace string) *Scenario {
	s := &Scenario{Namespace: namespace, Cluster: "varied"}
	b := &builder{s}
	b.cluster(nil, []C{{Type: "Available", Status: "False", Reason: "NotAvailable", Message: "* WorkersAvailable: 40 of 48 machines available", Ago: time.Hour}},
		counts(3, 3, 2, 2, 3), counts(48, 48, 40, 40, 40), ready,
		[]C{{Type: "Available", Status: "True", Reason: "Available", Ago: time.Hour}}, 3, "v1.34.1")
	for i := 0; i < 3; i++ {
		mc := healthyMachine()
		if i == 2 {
			mc = []C{{Type: "Available", Status: "False", Reason: "NotReady", Ago: 3 * time.Minute},
				{Type: "Ready", Status: "False", Reason: "NotReady", Message: "* EtcdMemberHealthy: member not ready", Ago: 3 * time.Minute}, upToDate}
		}
		b.machine(fmt.Sprintf("varied-cp-%d", i), "v1.34.1", "KubeadmControlPlane", "varied-control-plane", true, mc, ready, ready)
	}
	b.machineDeployment("varied-md-0", 48, "v1.34.1", map[string]any{"replicas": i64(48), "readyReplicas": i64(40), "availableReplicas": i64(40), "upToDateReplicas": i64(40)},
		[]C{{Type: "Available", Status: "True", Reason: "Available", Ago: time.Hour}})
	b.machineSet("varied-md-0-old", "varied-md-0", 8, "v1.33.5", map[string]any{"replicas": i64(8)})
	b.machineSet("varied-md-0-new", "varied-md-0", 40, "v1.34.1", map[string]any{"replicas": i64(40)})
	notUpToDate := C{Type: "UpToDate", Status: "False", Reason: "NotUpToDate", Message: "* Version v1.33.5, v1.34.1 required", Ago: 20 * time.Minute}
	for i := 0; i < 48; i++ {
		set, version := "varied-md-0-new", "v1.34.1"
		if i < 8 {
			set, version = "varied-md-0-old", "v1.33.5"
		}
		mc := healthyMachine()
		mc[1].Ago = time.Duration(30+i) * time.Minute // Ready since different times: the group shows the earliest
		if i < 8 {
			mc[2] = notUpToDate
		}
		var annotations map[string]string
		switch i % 12 {
		case 3:
			mc = []C{{Type: "Available", Status: "False", Reason: "NotReady", Ago: 5 * time.Minute},
				{Type: "Ready", Status: "False", Reason: "NotReady", Message: "* NodeHealthy: Node not ready", Ago: 5 * time.Minute}, upToDate,
				{Type: "HealthCheckSucceeded", Status: "False", Reason: "UnhealthyNode", Ago: 4 * time.Minute}}
		case 5:
			mc = []C{{Type: "Available", Status: "False", Reason: "NotReady", Ago: 9 * time.Minute},
				{Type: "Ready", Status: "False", Reason: "InfrastructureNotReady", Message: "* InfrastructureReady: Waiting for the container", Ago: 9 * time.Minute}, upToDate}
		case 7:
			mc = append(mc, C{Type: "Deleting", Status: "True", Reason: "DrainingNode", Message: "Drain not completed yet", Ago: time.Minute})
			mc[1] = C{Type: "Ready", Status: "False", Reason: "Deleting", Message: "Machine deletion in progress", Ago: time.Minute}
			annotations = map[string]string{deletingAnnotation: "true"}
		case 9:
			mc = append(mc, C{Type: "Paused", Status: "True", Reason: "Paused", Ago: 2 * time.Hour})
			annotations = map[string]string{"cluster.x-k8s.io/paused": ""}
		case 10:
			mc[1] = C{Type: "Ready", Status: "True", Reason: "ReadyWithWarnings", Message: "* NodeHealthy: disk pressure", Ago: 7 * time.Minute}
		case 11:
			mc[0] = C{Type: "Available", Status: "Unknown", Reason: "ProbeFailed", Ago: 6 * time.Minute}
		}
		m := b.machine(fmt.Sprintf("varied-md-0-%02d", i), version, "MachineSet", set, false, mc, ready, ready, "cluster.x-k8s.io/deployment-name", "varied-md-0")
		if annotations != nil {
			m.SetAnnotations(annotations)
		}
	}
	b.healthCheck("varied-workers", map[string]any{"cluster.x-k8s.io/deployment-name": "varied-md-0"}, map[string]any{
		"expectedMachines": i64(48), "currentHealthy": i64(44),
		"conditions": conds([]C{{Type: "RemediationAllowed", Status: "True", Reason: "RemediationAllowed", Ago: time.Hour}}, false),
	})
	return s
}
