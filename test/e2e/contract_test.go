package e2e

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/testing/classfixture"
	"github.com/capctl/capctl/internal/testing/cutovertest"
	"github.com/capctl/capctl/internal/testing/livemgmt"
	"github.com/capctl/capctl/internal/testing/testenv"
)

// v1beta1Version is the newest Cluster API release on the v1beta1 contract whose core and test
// modules the Go module proxy serves and that builds (hack/live-bins.sh, CAPI_E2E_SETS), and
// v1beta1K8s a Kubernetes version its kubeadm control plane accepts.
const (
	v1beta1Version = "v1.10.10"
	v1beta1K8s     = "v1.33.0"
)

// TestBlueGreenAcrossContractsLive replaces a v1beta1 management cluster by a v1beta2 one, both
// reconciling their own clusters at once:
//   - the source runs the v1.10.10 providers, set up by clusterctl v1.10.10 (capctl, like
//     clusterctl v1.14, refuses a v1beta1 core provider) and run by v1.10.10 managers, which
//     bring an in-memory cluster to Available; the target runs v1.14.0, set up by capctl;
//   - capctl diagnose v1beta1 names, on the source, the v1beta1 storage, the v1beta1-contract
//     providers and a ClusterClass patch written for v1beta1 (in a namespace not moved), and
//     after the move finds nothing on the target;
//   - clusterctl v1.14.2 refuses the move (the reason capctl's exists);
//   - capctl's runbook names the contract jump; its dry run lists the values v1beta2 has no
//     place for and refuses until they are accepted;
//   - capctl moves the cluster; while its settle check watches the target, the infrastructure is
//     handed over (the target's CAPD takes the in-memory machines, as a real provider adopts
//     real ones); the cluster is Available on the target with the same Machines (names and
//     provider IDs), no Machine was created or deleted, and nothing is left in the source.
func TestBlueGreenAcrossContractsLive(t *testing.T) {
	e := start(t, 2, v1beta1Version, "v1.14.2")
	src, dst := e.clusters[0], e.clusters[1]
	ctx := context.Background()

	out, err := e.capctl(src, "init", "--core", "cluster-api:"+v1beta1Version, "--bootstrap", "kubeadm:"+v1beta1Version,
		"--control-plane", "kubeadm:"+v1beta1Version, "--infrastructure", "docker:"+v1beta1Version)
	if err == nil || !strings.Contains(out, "v1beta1 contract") {
		t.Errorf("capctl init of a v1beta1 core provider: want the refusal naming the contract, got %v:\n%s", err, out)
	}
	parallel(func() { e.initV1Beta1(src) }, func() { e.initAt(dst, "v1.14.0") })
	if t.Failed() {
		t.FailNow()
	}
	if got := managerVersions(t, src); !allMinor(got, "v1.10.") {
		t.Fatalf("after init at %s the source's managers run %v", v1beta1Version, got)
	}
	if gvk := servedClusterGVK(src); gvk.Version != "v1beta1" {
		t.Fatalf("a %s management cluster serves Cluster at %s, want v1beta1", v1beta1Version, gvk.Version)
	}
	e.createCluster(src, ns, "old-1", v1beta1K8s, 1)
	e.waitAvailable(src, ns, "old-1", 8*time.Minute)
	out = e.mustCapctl(src, "describe", "cluster", "old-1", "-n", ns)
	if !strings.Contains(out, "Cluster "+ns+"/old-1") || !strings.Contains(out, "MachineDeployment "+ns+"/old-1-md-0") {
		t.Errorf("describe of the v1beta1 cluster:\n%s", out)
	}
	out = e.mustCapctl(src, "get", "providers")
	if !strings.Contains(out, "v1beta1") || !strings.Contains(out, v1beta1Version) {
		t.Errorf("get providers does not show the v1beta1 contract and %s:\n%s", v1beta1Version, out)
	}
	before := machineIDs(ctx, t, src, ns)

	// The v1beta1 cut-over check on the v1beta1 management cluster: its storage, its providers,
	// and a class in another namespace (not moved) whose patch is written for v1beta1.
	addV1Beta1PatchedClass(t, src, "cutover")
	out, err = e.capctl(src, "diagnose", "v1beta1")
	if code := exitCode(err); code != 2 {
		t.Errorf("diagnose v1beta1 on the v1beta1 management cluster: exit %d (%v), want 2 (findings):\n%s", code, err, out)
	}
	for _, want := range []string{
		"[storage]", "CustomResourceDefinition clusters.cluster.x-k8s.io (cluster-api)",
		"[provider]", "Provider capi-system/cluster-api " + v1beta1Version,
		"Provider capd-system/infrastructure-docker " + v1beta1Version,
		"[patch-selector]", `ClusterClass cutover/audited patch "audit" definition 0`, "[patch-path]",
		"path " + cutovertest.AuditPath + " exists in v1beta1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("diagnose v1beta1 on the v1beta1 management cluster does not say %q:\n%s", want, out)
		}
	}

	// The reference clusterctl refuses to move from a v1beta1 management cluster.
	ref := e.commandOf(ctx, src, testenv.Clusterctl(t), "move", "-n", ns, "--kubeconfig", src.Kubeconfig, "--to-kubeconfig", dst.Kubeconfig)
	var refOut bytes.Buffer
	ref.Stdout, ref.Stderr = &refOut, &refOut
	if err := ref.Run(); err == nil || !strings.Contains(refOut.String(), "v1beta2") {
		t.Errorf("clusterctl %s move from a v1beta1 management cluster: want a refusal naming v1beta2, got %v:\n%s", testenv.ClusterctlVersion, err, refOut.String())
	} else {
		t.Logf("$ clusterctl %s move -n %s --to-kubeconfig <target>\n%s", testenv.ClusterctlVersion, ns, refOut.String())
	}

	// The runbook names the jump, and the values v1beta2 has no place for (fields the v1beta2 API
	// removed: a MachineDeployment's revisionHistoryLimit, the references' uid, ...), so its move
	// command accepts them; the dry run without that flag lists them and refuses.
	out = e.mustCapctl(src, "move", "-n", ns, "--plan-replacement", "--to-kubeconfig", dst.Kubeconfig)
	if !strings.Contains(out, "v1beta1 -> v1beta2") || !strings.Contains(out, "--accept-conversion-loss") {
		t.Errorf("the runbook does not name the contract jump and the flag its move needs:\n%s", out)
	}
	out, err = e.capctl(src, "move", "-n", ns, "--dry-run", "--to-kubeconfig", dst.Kubeconfig)
	if err == nil || !strings.Contains(out, "spec.revisionHistoryLimit") || !strings.Contains(out, "--accept-conversion-loss") {
		t.Errorf("the dry run of a lossy move: want the losses listed and a refusal, got %v:\n%s", err, out)
	}
	out = e.mustCapctl(src, "move", "-n", ns, "--dry-run", "--accept-conversion-loss", "--to-kubeconfig", dst.Kubeconfig)
	if !strings.Contains(out, "v1beta2") {
		t.Errorf("the dry run lists no conversion to v1beta2:\n%s", out)
	}

	e.moveHandingOver(src, dst, ns, "old-1", "--accept-conversion-loss")
	e.waitAvailable(dst, ns, "old-1", 5*time.Minute)
	if gvk := servedClusterGVK(dst); gvk.Version != "v1beta2" {
		t.Errorf("the target serves Cluster at %s, want v1beta2", gvk.Version)
	}
	if after := machineIDs(ctx, t, dst, ns); !equalStrings(before, after) {
		t.Errorf("Machines (name=providerID) before the move on the v1beta1 source:\n  %s\nafter it on the v1beta2 target:\n  %s", strings.Join(before, "\n  "), strings.Join(after, "\n  "))
	}
	for _, k := range leftovers(t, src, ns) {
		t.Errorf("left in the source after the move: %s", k)
	}
	// The target, set up at v1.14 and holding the moved cluster, has nothing on v1beta1.
	out, err = e.capctl(dst, "diagnose", "v1beta1")
	if exitCode(err) != 0 || !strings.Contains(out, "Nothing found in management cluster") {
		t.Errorf("diagnose v1beta1 on the v1beta2 target after the move: exit %d (%v), want 0 and nothing found:\n%s", exitCode(err), err, out)
	}
}

// addV1Beta1PatchedClass creates, in namespace ns of a v1beta1 management cluster, the in-memory
// ClusterClass of v1beta1Version with its templates (through the providers' webhooks) and a copy
// of it, "audited", whose patch is written for v1beta1: its selector names the v1beta1
// KubeadmControlPlaneTemplate and its path a map key (v1beta2 has a list of arguments there).
func addV1Beta1PatchedClass(t *testing.T, c *livemgmt.Cluster, ns string) {
	t.Helper()
	ctx := context.Background()
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	classfixture.Create(t, c.Client, v1beta1Version, ns, func(o *unstructured.Unstructured) error {
		if o.GetKind() != "ClusterClass" {
			return nil
		}
		o.SetName("audited")
		return cutovertest.AddAuditPatch(o)
	})
}

// initV1Beta1 installs the four providers at v1beta1Version with that release's clusterctl, as
// the management cluster's owners did, under init's CPU gate (see initAt). Safe in parallel
// goroutines: it reports with Errorf.
func (e *e2e) initV1Beta1(c *livemgmt.Cluster) {
	e.t.Helper()
	bin := testenv.ClusterctlV1Beta1(e.t)
	initGate <- struct{}{}
	defer func() { <-initGate }()
	args := []string{"init", "--core", "cluster-api:" + v1beta1Version, "--bootstrap", "kubeadm:" + v1beta1Version,
		"--control-plane", "kubeadm:" + v1beta1Version, "--infrastructure", "docker:" + v1beta1Version,
		"--wait-providers", "--config", e.config, "--kubeconfig", c.Kubeconfig}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := e.commandOf(ctx, c, bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	err := cmd.Run()
	e.t.Logf("$ clusterctl %s %s (%s)\n%s", v1beta1Version, strings.Join(args, " "), time.Since(start).Round(100*time.Millisecond), out.String())
	if err != nil {
		e.t.Errorf("clusterctl %s init on %s: %v", v1beta1Version, c.Name, err)
		return
	}
	e.waitWebhooksAnswer(c)
}
