package move

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

// The API groups of the fixture CRDs a fleet needs, with the provider that installs each.
var fixtureProviders = map[string]string{
	"cluster.x-k8s.io.yaml":                "cluster-api",
	"addons.cluster.x-k8s.io.yaml":         "cluster-api",
	"bootstrap.cluster.x-k8s.io.yaml":      "bootstrap-kubeadm",
	"controlplane.cluster.x-k8s.io.yaml":   "control-plane-kubeadm",
	"infrastructure.cluster.x-k8s.io.yaml": "infrastructure-docker",
}

var groupProvider = map[string]string{
	"cluster.x-k8s.io":                "cluster-api",
	"addons.cluster.x-k8s.io":         "cluster-api",
	"bootstrap.cluster.x-k8s.io":      "bootstrap-kubeadm",
	"controlplane.cluster.x-k8s.io":   "control-plane-kubeadm",
	"infrastructure.cluster.x-k8s.io": "infrastructure-docker",
}

func crdPaths(tb testing.TB) []string {
	dir := filepath.Join(testenv.FixturesDir(tb), "crds")
	var out []string
	for f := range fixtureProviders {
		out = append(out, filepath.Join(dir, f))
	}
	return out
}

// prepareManagementCluster makes a bare API server with the fixture CRDs look like one `capctl
// init` prepared: the CRD labels clusterctl writes, conversion None, and the provider inventory.
func prepareManagementCluster(tb testing.TB, env *testenv.Env, providers ...inventory.Provider) {
	tb.Helper()
	ctx := context.Background()
	c := env.Client
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, crds); err != nil {
		tb.Fatal(err)
	}
	for i := range crds.Items {
		crd := &crds.Items[i]
		p, ok := groupProvider[crd.Spec.Group]
		if !ok {
			continue
		}
		// The contract label as the provider's release writes it: its storage version.
		stored := contract.StorageVersion(crd)
		patch := map[string]any{"metadata": map[string]any{"labels": map[string]any{
			inventory.ClusterctlLabel: "", inventory.ProviderLabel: p, contract.LabelPrefix + stored: stored,
		}}}
		if crd.Spec.Conversion != nil && crd.Spec.Conversion.Strategy == apiextensionsv1.WebhookConverter {
			patch["spec"] = map[string]any{"conversion": map[string]any{"strategy": "None", "webhook": nil}}
		}
		if err := mergePatch(ctx, c, crd, patch); err != nil {
			tb.Fatalf("labelling CRD %s: %v", crd.Name, err)
		}
	}
	if err := inventory.EnsureCRD(ctx, c); err != nil {
		tb.Fatal(err)
	}
	if len(providers) == 0 {
		providers = defaultProviders("v1.14.2")
	}
	for _, p := range providers {
		env.CreateNamespaces(tb, p.Namespace)
		if err := inventory.Write(ctx, c, p); err != nil {
			tb.Fatal(err)
		}
	}
	// Warm up: the first request for each kind builds its storage.
	if _, err := DiscoverTypes(ctx, c); err != nil {
		tb.Fatal(err)
	}
}

func defaultProviders(v string) []inventory.Provider {
	return []inventory.Provider{
		inventory.New("cluster-api", provider.CoreProviderType, v, "capi-system"),
		inventory.New("kubeadm", provider.BootstrapProviderType, v, "capi-kubeadm-bootstrap-system"),
		inventory.New("kubeadm", provider.ControlPlaneProviderType, v, "capi-kubeadm-control-plane-system"),
		inventory.New("docker", provider.InfrastructureProviderType, v, "capd-system"),
	}
}

// builder creates objects in a cluster, wiring owner references to objects it created before.
type builder struct {
	tb testing.TB
	c  *cluster.Client
	ns string
}

func obj(apiVersion, kind, name string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name}}}
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}

func ref(group, kind, name string) map[string]any {
	return map[string]any{"apiGroup": group, "kind": kind, "name": name}
}

func (b *builder) create(u *unstructured.Unstructured, owners ...*unstructured.Unstructured) *unstructured.Unstructured {
	b.tb.Helper()
	if u.GetNamespace() == "" {
		u.SetNamespace(b.ns)
	}
	var refs []metav1.OwnerReference
	for i, o := range owners {
		refs = append(refs, metav1.OwnerReference{APIVersion: o.GetAPIVersion(), Kind: o.GetKind(), Name: o.GetName(), UID: o.GetUID(), Controller: ptr(i == 0), BlockOwnerDeletion: ptr(true)})
	}
	if len(refs) > 0 {
		u.SetOwnerReferences(refs)
	}
	status, hasStatus := u.Object["status"]
	if err := b.c.Create(context.Background(), u); err != nil {
		b.tb.Fatalf("creating %s %s/%s: %v", u.GetKind(), u.GetNamespace(), u.GetName(), err)
	}
	if hasStatus {
		raw, _ := json.Marshal(map[string]any{"status": status})
		if err := b.c.Status().Patch(context.Background(), u, client.RawPatch(types.MergePatchType, raw)); err != nil {
			b.tb.Fatalf("writing status of %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	return u
}

func ptr[T any](v T) *T { return &v }

func provisionedClusterStatus() map[string]any {
	return map[string]any{
		"initialization": map[string]any{"infrastructureProvisioned": true, "controlPlaneInitialized": true},
		"conditions": []any{map[string]any{
			"type": "ControlPlaneInitialized", "status": "True", "reason": "Initialized", "message": "",
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}},
	}
}

const (
	gCore  = "cluster.x-k8s.io"
	gInfra = "infrastructure.cluster.x-k8s.io"
	gBoot  = "bootstrap.cluster.x-k8s.io"
	gCP    = "controlplane.cluster.x-k8s.io"
	vCore  = "cluster.x-k8s.io/v1beta2"
	vInfra = "infrastructure.cluster.x-k8s.io/v1beta2"
	vBoot  = "bootstrap.cluster.x-k8s.io/v1beta2"
	vCP    = "controlplane.cluster.x-k8s.io/v1beta2"
)

// clusterOpts vary one fleet cluster.
type clusterOpts struct {
	class    string // ClusterClass name: a topology cluster
	paused   bool   // paused by its user
	workers  int
	cpCount  int
	annotate map[string]string // annotations on the infra cluster (block-move)
}

// addCluster writes one cluster as controllers would have left it: Cluster, DockerCluster,
// KubeadmControlPlane with control-plane Machines, a MachineDeployment with a MachineSet and
// worker Machines, their DockerMachines and KubeadmConfigs, templates, kubeconfig and CA Secrets.
// It returns the number of objects written.
func (b *builder) addCluster(name string, o clusterOpts) int {
	n := 0
	add := func(u *unstructured.Unstructured, owners ...*unstructured.Unstructured) *unstructured.Unstructured {
		n++
		return b.create(u, owners...)
	}
	spec := map[string]any{
		"infrastructureRef": ref(gInfra, "DockerCluster", name),
		"controlPlaneRef":   ref(gCP, "KubeadmControlPlane", name),
	}
	if o.class != "" {
		spec["topology"] = map[string]any{"classRef": map[string]any{"name": o.class}, "version": "v1.34.0"}
	}
	if o.paused {
		spec["paused"] = true
	}
	// Finalizers as the controllers set them: a move must carry them over exactly.
	c := obj(vCore, "Cluster", name, spec)
	c.SetFinalizers([]string{"cluster.cluster.x-k8s.io"})
	c.Object["status"] = provisionedClusterStatus()
	c = add(c)
	dc := obj(vInfra, "DockerCluster", name, map[string]any{})
	dc.SetFinalizers([]string{"dockercluster.infrastructure.cluster.x-k8s.io"})
	if o.annotate != nil {
		dc.SetAnnotations(o.annotate)
	}
	add(dc, c)
	cpTmpl := add(obj(vInfra, "DockerMachineTemplate", name+"-cp", map[string]any{"template": map[string]any{"spec": map[string]any{}}}), c)
	kcp := obj(vCP, "KubeadmControlPlane", name, map[string]any{
		"version":           "v1.34.0",
		"replicas":          int64(o.cpCount),
		"machineTemplate":   map[string]any{"spec": map[string]any{"infrastructureRef": ref(gInfra, "DockerMachineTemplate", cpTmpl.GetName())}},
		"kubeadmConfigSpec": map[string]any{"format": "cloud-config"},
	})
	kcp.SetFinalizers([]string{"kubeadm.controlplane.cluster.x-k8s.io"})
	kcp = add(kcp, c)
	machine := func(mname string, owner *unstructured.Unstructured, cp bool) {
		m := obj(vCore, "Machine", mname, map[string]any{
			"clusterName":       name,
			"version":           "v1.34.0",
			"bootstrap":         map[string]any{"configRef": ref(gBoot, "KubeadmConfig", mname)},
			"infrastructureRef": ref(gInfra, "DockerMachine", mname),
		})
		labels := map[string]string{"cluster.x-k8s.io/cluster-name": name}
		if cp {
			labels["cluster.x-k8s.io/control-plane"] = ""
		}
		m.SetLabels(labels)
		m.SetFinalizers([]string{"machine.cluster.x-k8s.io"})
		m.Object["status"] = map[string]any{"nodeRef": map[string]any{"name": mname}}
		m = add(m, owner)
		add(obj(vBoot, "KubeadmConfig", mname, map[string]any{"format": "cloud-config"}), m)
		dm := obj(vInfra, "DockerMachine", mname, map[string]any{})
		dm.SetFinalizers([]string{"dockermachine.infrastructure.cluster.x-k8s.io"})
		add(dm, m)
	}
	for i := range o.cpCount {
		machine(fmt.Sprintf("%s-cp-%d", name, i), kcp, true)
	}
	if o.workers > 0 {
		wTmpl := add(obj(vInfra, "DockerMachineTemplate", name+"-md-0", map[string]any{"template": map[string]any{"spec": map[string]any{}}}), c)
		bTmpl := add(obj(vBoot, "KubeadmConfigTemplate", name+"-md-0", map[string]any{"template": map[string]any{"spec": map[string]any{"format": "cloud-config"}}}), c)
		tmpl := map[string]any{"spec": map[string]any{
			"clusterName":       name,
			"bootstrap":         map[string]any{"configRef": ref(gBoot, "KubeadmConfigTemplate", bTmpl.GetName())},
			"infrastructureRef": ref(gInfra, "DockerMachineTemplate", wTmpl.GetName()),
		}}
		sel := map[string]any{"matchLabels": map[string]any{"cluster.x-k8s.io/deployment-name": name + "-md-0"}}
		md := obj(vCore, "MachineDeployment", name+"-md-0", map[string]any{"clusterName": name, "replicas": int64(o.workers), "selector": sel, "template": tmpl})
		md.SetFinalizers([]string{"cluster.x-k8s.io/machinedeployment"})
		md = add(md, c)
		ms := obj(vCore, "MachineSet", name+"-md-0-abcde", map[string]any{"clusterName": name, "replicas": int64(o.workers), "selector": sel, "template": tmpl})
		ms.SetFinalizers([]string{"cluster.x-k8s.io/machineset"})
		ms = add(ms, md)
		for i := range o.workers {
			machine(fmt.Sprintf("%s-md-0-abcde-%d", name, i), ms, false)
		}
	}
	// The kubeconfig Secret is soft-owned (by name only); the CA Secret is owned by the control plane.
	kc := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name + "-kubeconfig"},
		"type": "cluster.x-k8s.io/secret", "stringData": map[string]any{"value": "kubeconfig-of-" + name + "-SECRETVALUE"}}}
	add(kc)
	ca := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name + "-ca"},
		"type": "cluster.x-k8s.io/secret", "stringData": map[string]any{"tls.crt": "cert", "tls.key": "KEY-SECRETVALUE"}}}
	add(ca, kcp)
	return n
}

// addClusterClass writes a ClusterClass and its templates (templates are referenced, not owned:
// they are soft-owned through the class). It returns the number of objects written.
func (b *builder) addClusterClass(name string) int {
	b.create(obj(vInfra, "DockerClusterTemplate", name, map[string]any{"template": map[string]any{"spec": map[string]any{}}}))
	b.create(obj(vCP, "KubeadmControlPlaneTemplate", name, map[string]any{"template": map[string]any{"spec": map[string]any{"kubeadmConfigSpec": map[string]any{"format": "cloud-config"}}}}))
	b.create(obj(vInfra, "DockerMachineTemplate", name+"-cp", map[string]any{"template": map[string]any{"spec": map[string]any{}}}))
	b.create(obj(vCore, "ClusterClass", name, map[string]any{
		"infrastructure": map[string]any{"templateRef": map[string]any{"apiVersion": vInfra, "kind": "DockerClusterTemplate", "name": name}},
		"controlPlane": map[string]any{
			"templateRef":           map[string]any{"apiVersion": vCP, "kind": "KubeadmControlPlaneTemplate", "name": name},
			"machineInfrastructure": map[string]any{"templateRef": map[string]any{"apiVersion": vInfra, "kind": "DockerMachineTemplate", "name": name + "-cp"}},
		},
	}))
	return 4
}

// sharedPair is one source/target pair for the package's tests (each test uses its own namespace).
var (
	pairOnce sync.Once
	pairSrc  *testenv.Env
	pairDst  *testenv.Env
	pairErr  error
	pairCRDs []string
)

func sharedPair(t *testing.T) (*testenv.Env, *testenv.Env) {
	t.Helper()
	testenv.Integration(t)
	paths := crdPaths(t)
	pairOnce.Do(func() {
		pairCRDs = paths
		var wg sync.WaitGroup
		envs := make([]*testenv.Env, 2)
		errs := make([]error, 2)
		for i := range envs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				envs[i], errs[i] = testenv.StartForMain(testenv.Options{CRDPaths: paths})
			}()
		}
		wg.Wait()
		for _, e := range envs {
			if e != nil {
				testenv.AfterTests(e.Stop)
			}
		}
		if pairErr = errorsJoin(errs...); pairErr != nil {
			return
		}
		pairSrc, pairDst = envs[0], envs[1]
		prepareManagementCluster(t, pairSrc)
		prepareManagementCluster(t, pairDst)
	})
	if pairErr != nil {
		t.Fatalf("starting the test API servers: %v", pairErr)
	}
	if pairSrc == nil {
		t.Fatal("the shared API servers failed to start in an earlier test")
	}
	return pairSrc, pairDst
}

func errorsJoin(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func nsObj(name string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func runtimeFromUnstructured(u *unstructured.Unstructured, into any) error {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into)
}
