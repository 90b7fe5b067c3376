package cutover_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/classfixture"
	"github.com/capctl/capctl/internal/testing/cutovertest"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cutover"
	"github.com/capctl/capctl/pkg/env"
)

// mgmtAt is a test API server with the CRDs of the four providers at one release (served at
// their storage version, as the fixtures' components declare them), their inventory, and the
// in-memory ClusterClass of that release with its templates in namespace fleet.
func mgmtAt(t *testing.T, version string) *testenv.Env {
	t.Helper()
	crds := testenv.ComponentCRDs(t, version, "cluster-api", "bootstrap-kubeadm", "control-plane-kubeadm", "infrastructure-docker")
	te := testenv.Start(t, testenv.Options{CRDPaths: []string{crds, filepath.Join(testenv.FixturesDir(t), "crds", "clusterctl.cluster.x-k8s.io.yaml")}})
	te.CreateNamespaces(t, "fleet", "capi-system")
	classfixture.WriteInventory(t, te.Client, version, "capi-system")
	classfixture.Create(t, te.Client, version, "fleet", nil)
	return te
}

// addPatchedClass adds a ClusterClass like the in-memory one with a patch written for v1beta1:
// its selector names the v1beta1 KubeadmControlPlaneTemplate and its path a map key where v1beta2
// has a list.
func addPatchedClass(t *testing.T, te *testenv.Env, apiVersion string) {
	t.Helper()
	ctx := context.Background()
	cc := &unstructured.Unstructured{}
	cc.SetAPIVersion(apiVersion)
	cc.SetKind("ClusterClass")
	if err := te.Client.Get(ctx, clientKey("fleet", "in-memory"), cc); err != nil {
		t.Fatal(err)
	}
	patched := &unstructured.Unstructured{Object: map[string]any{"apiVersion": apiVersion, "kind": "ClusterClass", "spec": cc.Object["spec"]}}
	patched.SetNamespace("fleet")
	patched.SetName("audited")
	if err := cutovertest.AddAuditPatch(patched); err != nil {
		t.Fatal(err)
	}
	if err := te.Client.Create(ctx, patched); err != nil {
		t.Fatal(err)
	}
}

// TestV1Beta1ManagementCluster: a management cluster of the v1beta1 contract (v1.10.10's CRDs,
// stored at v1beta1) shows every kind of finding, and the check writes nothing.
func TestV1Beta1ManagementCluster(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	te := mgmtAt(t, "v1.10.10")
	addPatchedClass(t, te, "cluster.x-k8s.io/v1beta1")
	before := testenv.Snapshot(t, te.Client)
	rep, err := cutover.Run(context.Background(), env.One(te.Client), cutover.Request{})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Unchanged(t, te.Client, before, "diagnose v1beta1")
	byCheck := map[string][]cutover.Finding{}
	for _, f := range rep.Findings {
		byCheck[f.Check] = append(byCheck[f.Check], f)
	}
	storage := findingFor(byCheck[cutover.CheckStorage], "clusterclasses.cluster.x-k8s.io")
	if storage == nil || !strings.Contains(storage.Message, "stores its objects at v1beta1") || !strings.Contains(storage.Message, "2 objects") {
		t.Errorf("the ClusterClass CRD's v1beta1 storage (2 classes): %+v", byCheck[cutover.CheckStorage])
	}
	if f := findingFor(byCheck[cutover.CheckStorage], "devmachinetemplates.infrastructure.cluster.x-k8s.io (infrastructure-docker)"); f == nil || !strings.Contains(f.Message, "2 objects") {
		t.Errorf("the DevMachineTemplate CRD (2 templates), with its owner: %+v", f)
	}
	if len(byCheck[cutover.CheckProvider]) != 4 {
		t.Errorf("providers on the v1beta1 contract: %+v, want the four", byCheck[cutover.CheckProvider])
	}
	if f := findingFor(byCheck[cutover.CheckProvider], "capi-system/infrastructure-docker v1.10.10"); f == nil || !strings.Contains(f.Fix, "capctl upgrade plan") {
		t.Errorf("the Docker provider's finding: %+v", f)
	}
	if f := findingFor(byCheck[cutover.CheckPatchSelector], `ClusterClass fleet/audited patch "audit" definition 0`); f == nil {
		t.Errorf("the v1beta1 selector: %+v", byCheck[cutover.CheckPatchSelector])
	}
	if f := findingFor(byCheck[cutover.CheckPatchPath], `ClusterClass fleet/audited patch "audit" definition 0 jsonPatch 0`); f == nil || !strings.Contains(f.Message, cutovertest.AuditPath+" exists in v1beta1") {
		t.Errorf("the v1beta1 patch path: %+v", byCheck[cutover.CheckPatchPath])
	}
	if rep.Partial() || rep.ExitCode() != 2 {
		t.Errorf("exit %d, not checked %v, unread %v; want 2 and a complete view", rep.ExitCode(), rep.NotChecked, rep.Unread)
	}

	// Without list on ClusterClasses the patches are not checked: said, and the view is partial.
	te.GrantAllBut(t, "no-classes", map[string][]string{"clusterclasses.cluster.x-k8s.io": {"list"}})
	rep, err = cutover.Run(context.Background(), env.One(te.User(t, "no-classes")), cutover.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.ExitCode() != 3 || !strings.Contains(strings.Join(rep.NotChecked, "\n"), "patch-selector: the ClusterClasses cannot be read") ||
		len(rep.Unread) != 1 || rep.Unread[0].Resource != "clusterclasses.cluster.x-k8s.io" {
		t.Errorf("without list on clusterclasses: exit %d, not checked %v, unread %v", rep.ExitCode(), rep.NotChecked, rep.Unread)
	}
}

// TestV1Beta2ManagementCluster: a management cluster set up at v1.14 has nothing on v1beta1
// (its CRDs store v1beta2, its providers declare v1beta2, its class has no patch): exit 0.
func TestV1Beta2ManagementCluster(t *testing.T) {
	testenv.Integration(t)
	t.Parallel()
	te := mgmtAt(t, "v1.14.0")
	rep, err := cutover.Run(context.Background(), env.One(te.Client), cutover.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 0 || rep.ExitCode() != 0 {
		t.Fatalf("findings %+v, not checked %v, exit %d; want none", rep.Findings, rep.NotChecked, rep.ExitCode())
	}
	// A class whose patch still selects v1beta1 is found on a v1beta2 management cluster too.
	addPatchedClass(t, te, "cluster.x-k8s.io/v1beta2")
	rep, err = cutover.Run(context.Background(), env.One(te.Client), cutover.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Findings) != 2 || rep.Findings[0].Check != cutover.CheckPatchSelector || rep.Findings[1].Check != cutover.CheckPatchPath {
		t.Errorf("the v1beta2 class with a v1beta1 patch: %+v", rep.Findings)
	}
}

func findingFor(fs []cutover.Finding, objectPart string) *cutover.Finding {
	for i := range fs {
		if strings.Contains(fs[i].Object, objectPart) {
			return &fs[i]
		}
	}
	return nil
}

func clientKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
