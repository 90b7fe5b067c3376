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
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/testing/testenv"
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

	workers := func() (names []string, running int) {
		ms, err := listMachines(ctx, mgmt, ns)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.GetLabels()["cluster.x-k8s.io/deployment-name"] == "" || m.GetDeletionTimestamp() != nil {
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
			if o.Action != convert.Converted || len(o.Warnings) > 0 || o.Error != "" {
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
