package e2e

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/testing/livemgmt"
	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/conversion"
	"github.com/capctl/capctl/pkg/convert"
	"github.com/capctl/capctl/pkg/repository"
	"github.com/capctl/capctl/pkg/variables"
)

// TestRolloutRestartLive: `capctl alpha rollout restart` on a live cluster really replaces the
// in-memory worker Machines (the controllers create new ones and delete the old ones), after
// listing the Machines it will replace; pause refuses a restart, resume allows it again; and the
// fixtures' converted v1beta1 in-memory ClusterClass, templates and Cluster pass the live webhooks.
func TestRolloutRestartLive(t *testing.T) {
	e := start(t, 1)
	mgmt := e.clusters[0]
	e.initAt(mgmt, "v1.14.0")
	if t.Failed() {
		t.FailNow()
	}
	e.createCluster(mgmt, ns, "wl-roll", k8sVersion, 2)
	e.waitAvailable(mgmt, ns, "wl-roll", 5*time.Minute)
	ctx := context.Background()

	workers := func() ([]string, int) {
		return liveMachines(t, mgmt, func(l map[string]string) bool { return l["cluster.x-k8s.io/deployment-name"] != "" })
	}
	var before []string
	deadline := time.Now().Add(5 * time.Minute)
	for {
		names, running := workers()
		if len(names) == 2 && running == 2 {
			before = names
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker Machines not Running: %v (%d running)", names, running)
		}
		time.Sleep(2 * time.Second)
	}

	out := e.mustCapctl(mgmt, "alpha", "rollout", "pause", "--all", "--cluster", "wl-roll", "-n", ns)
	if !strings.Contains(out, "paused") {
		t.Errorf("pause output:\n%s", out)
	}
	if out, err := e.capctl(mgmt, "alpha", "rollout", "restart", "--all", "--cluster", "wl-roll", "-n", ns); err == nil || !strings.Contains(out, "can't restart paused MachineDeployment (run rollout resume first)") {
		t.Errorf("restart of a paused MachineDeployment: %v\n%s", err, out)
	}
	e.mustCapctl(mgmt, "alpha", "rollout", "resume", "--all", "--cluster", "wl-roll", "-n", ns)

	out = e.mustCapctl(mgmt, "alpha", "rollout", "restart", "--all", "--cluster", "wl-roll", "-n", ns)
	for _, m := range before {
		if !strings.Contains(out, m) {
			t.Errorf("restart did not list Machine %s as replaced:\n%s", m, out)
		}
	}
	start := time.Now()
	deadline = start.Add(8 * time.Minute)
	for {
		names, running := workers()
		replaced := len(names) == 2 && running == 2
		for _, n := range names {
			for _, b := range before {
				if n == b {
					replaced = false
				}
			}
		}
		if replaced {
			t.Logf("worker Machines %v replaced by %v in %s", before, names, time.Since(start).Round(time.Second))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker Machines not replaced after %s: now %v (%d running), before %v\n%s", time.Since(start).Round(time.Second), names, running, before,
				e.host.Diagnose(ctx, mgmt, capctlBin, ns, "wl-roll"))
		}
		time.Sleep(2 * time.Second)
	}

	// The in-memory flavor is a ClusterClass: the restart was set in the Cluster's topology and
	// the topology controller copied it onto the MachineDeployment.
	if !strings.Contains(out, "set in Cluster "+ns+"/wl-roll spec.topology.workers.machineDeployments[name=md-0].rollout.after") {
		t.Errorf("restart did not go through the Cluster's topology:\n%s", out)
	}
	topologyRestart(t, e, "wl-roll")

	t.Run("converted v1beta1 templates pass the live webhooks", func(t *testing.T) {
		convertedPassWebhooks(t, e)
	})
}

// convertedPassWebhooks converts the fixtures' CAPD v1.10.10 (v1beta1) in-memory ClusterClass and
// cluster template, creates the class and its templates, and sends the Cluster as a server-side
// dry run: the Cluster API webhooks (topology validation against the class included) accept them.
func convertedPassWebhooks(t *testing.T, e *e2e) {
	mgmt := e.clusters[0]
	ctx := context.Background()
	const convNS = "converted"
	if err := mgmt.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: convNS}}); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(testenv.FixturesDir(t), "repository", "infrastructure-docker", "v1.10.10")
	vars := variables.FromMap(map[string]string{"CLUSTER_NAME": "conv-1", "NAMESPACE": convNS, "KUBERNETES_VERSION": k8sVersion,
		"CONTROL_PLANE_MACHINE_COUNT": "1", "WORKER_MACHINE_COUNT": "1"})
	sent := 0
	for _, name := range []string{"clusterclass-in-memory.yaml", "cluster-template-in-memory.yaml"} {
		raw, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		rendered, err := variables.Process(raw, vars)
		if err != nil {
			t.Fatal(err)
		}
		fr := convert.ConvertText(name, rendered)
		for _, o := range fr.Objects {
			if o.Action != conversion.Converted || len(o.Warnings) > 0 || o.Error != "" {
				t.Errorf("%s %s: %s %q %s", name, o.Object(), o.Action, o.Warnings, o.Error)
			}
		}
		for _, d := range repository.SplitDocuments(fr.Output) {
			u := &unstructured.Unstructured{}
			if err := sigsyaml.Unmarshal(d.Text, &u.Object); err != nil || len(u.Object) == 0 {
				continue
			}
			u.SetNamespace(convNS)
			opts := []client.CreateOption{client.FieldValidation("Strict")}
			if u.GetKind() == "Cluster" {
				opts = append(opts, client.DryRunAll)
			}
			if err := mgmt.Client.Create(ctx, u, opts...); err != nil {
				t.Errorf("the live management cluster refuses the converted %s %s: %v\n%s", u.GetKind(), u.GetName(), err, d.Text)
			}
			sent++
		}
	}
	t.Logf("%d converted objects accepted by the live webhooks", sent)
}

// topologyRestart holds the topology-aware restart to the real topology controller on the
// Cluster name (its md-0 just restarted through the Cluster): the controller has copied the
// Cluster's rollout.after onto the MachineDeployment, and reverts a direct write of it; a
// restart of the control plane through the Cluster replaces the control plane Machine.
func topologyRestart(t *testing.T, e *e2e, name string) {
	mgmt := e.clusters[0]
	ctx := context.Background()
	cl, err := getCluster(ctx, mgmt, ns, name)
	if err != nil {
		t.Fatal(err)
	}
	mds, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "workers", "machineDeployments")
	want, _, _ := unstructured.NestedString(mds[0].(map[string]any), "rollout", "after")
	if want == "" {
		t.Fatalf("Cluster %s has no rollout.after for md-0: %v", name, mds[0])
	}
	md := func() *unstructured.Unstructured {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(served(mgmt, gvk("cluster.x-k8s.io", "MachineDeploymentList")))
		if err := mgmt.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{
			"cluster.x-k8s.io/cluster-name": name, "topology.cluster.x-k8s.io/deployment-name": "md-0"}); err != nil || len(list.Items) != 1 {
			t.Fatalf("MachineDeployment md-0 of %s: %v (%d found)", name, err, len(list.Items))
		}
		return &list.Items[0]
	}
	mdAfter := func() string {
		s, _, _ := unstructured.NestedString(md().Object, "spec", "rollout", "after")
		return s
	}
	if got := mdAfter(); got != want {
		t.Fatalf("the MachineDeployment's rollout.after is %q, the Cluster's %q", got, want)
	}

	// A direct write to a field the topology sets is undone by the topology controller.
	direct := md()
	patch := []byte(`{"spec":{"rollout":{"after":"2020-01-01T00:00:00Z"}}}`)
	if err := mgmt.Client.Patch(ctx, direct, client.RawPatch(types.MergePatchType, patch), client.FieldOwner("e2e-direct-write")); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	for mdAfter() != want {
		if time.Since(begin) > 3*time.Minute {
			t.Fatalf("the topology controller did not revert a direct write of the MachineDeployment's rollout.after in %s: %q", time.Since(begin).Round(time.Second), mdAfter())
		}
		time.Sleep(time.Second)
	}
	t.Logf("a direct write of the MachineDeployment's rollout.after reverted by the topology controller in %s", time.Since(begin).Round(time.Second))

	// The control plane, restarted through the Cluster.
	controlPlane := func() ([]string, int) {
		return liveMachines(t, mgmt, func(l map[string]string) bool {
			_, cp := l["cluster.x-k8s.io/control-plane"]
			return cp && l["cluster.x-k8s.io/cluster-name"] == name
		})
	}
	before, _ := controlPlane()
	kcp, _, _ := unstructured.NestedString(cl.Object, "spec", "controlPlaneRef", "name")
	out := e.mustCapctl(mgmt, "alpha", "rollout", "restart", "kubeadmcontrolplane/"+kcp, "-n", ns)
	if !strings.Contains(out, "spec.topology.controlPlane.rollout.after") || len(before) != 1 || !strings.Contains(out, before[0]) {
		t.Errorf("control plane restart (Machines %v):\n%s", before, out)
	}
	begin = time.Now()
	for {
		names, running := controlPlane()
		if len(names) == 1 && running == 1 && names[0] != before[0] {
			t.Logf("control plane Machine %s replaced by %s in %s, restarted through the Cluster's topology", before[0], names[0], time.Since(begin).Round(time.Second))
			break
		}
		if time.Since(begin) > 8*time.Minute {
			t.Fatalf("control plane Machine %v not replaced after %s: now %v (%d running)\n%s", before, time.Since(begin).Round(time.Second), names, running,
				e.host.Diagnose(ctx, mgmt, capctlBin, ns, name))
		}
		time.Sleep(2 * time.Second)
	}
}

// liveMachines are the names (sorted) of the Machines of namespace ns whose labels keep picks and
// that are not being deleted, and how many of them are Running.
func liveMachines(t *testing.T, mgmt *livemgmt.Cluster, keep func(labels map[string]string) bool) (names []string, running int) {
	t.Helper()
	ms, err := listMachines(context.Background(), mgmt, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if !keep(m.GetLabels()) || m.GetDeletionTimestamp() != nil {
			continue
		}
		names = append(names, m.GetName())
		if p, _, _ := unstructured.NestedString(m.Object, "status", "phase"); p == "Running" {
			running++
		}
	}
	sort.Strings(names)
	return names, running
}
