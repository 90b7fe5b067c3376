package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/livemgmt"
)

const (
	k8sVersion = "v1.34.2"
	ns         = "e2e"
)

// TestInitGenerateAvailable: init with capctl (default wait), generate an in-memory ClusterClass
// cluster, the controllers bring it to Available, describe shows the tree they built; delete
// with --include-crd is refused while the cluster exists.
func TestInitGenerateAvailable(t *testing.T) {
	e := start(t, 1)
	mgmt := e.clusters[0]
	e.initAt(mgmt, "v1.14.0")
	if t.Failed() {
		t.FailNow()
	}
	e.createCluster(mgmt, ns, "wl-1", k8sVersion, 1)
	e.waitAvailable(mgmt, ns, "wl-1", 5*time.Minute)
	// The MachineHealthChecks mark each Machine HealthCheckSucceeded once they have checked it,
	// a moment after Available (the worker's was there in one run and not yet in another): the
	// shape is compared once they have.
	e.waitMachinesCondition(mgmt, ns, "HealthCheckSucceeded", 2*time.Minute)

	out := e.mustCapctl(mgmt, "describe", "cluster", "wl-1", "-n", ns, "--show-conditions", "all", "--grouping=false")
	got := describeShape(out)
	golden := filepath.Join("testdata", "describe-available.golden")
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("describe tree shape differs from %s (UPDATE_GOLDEN=1 rewrites it)\n--- got\n%s\n--- want\n%s\n--- output\n%s", golden, got, want, out)
	}

	t.Run("delete --include-crd refused while a cluster exists", func(t *testing.T) {
		out, err := e.capctl(mgmt, "delete", "--all", "--include-crd", "--yes")
		if err == nil {
			t.Fatalf("delete --all --include-crd succeeded with a workload cluster on the management cluster:\n%s", out)
		}
		if !strings.Contains(out, "wl-1") && !strings.Contains(strings.ToLower(out), "cluster") {
			t.Errorf("the refusal does not name what blocks it:\n%s", out)
		}
		// Refused means nothing changed: the providers still run and the cluster is still Available.
		ctx := context.Background()
		u, err := getCluster(ctx, mgmt, ns, "wl-1")
		if err != nil {
			t.Fatalf("the workload cluster is gone after a refused delete: %v", err)
		}
		if st, msg := condition(u, "Available"); st != "True" {
			t.Errorf("after a refused delete the cluster is Available=%s: %s", st, msg)
		}
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(schema.GroupVersionKind{Group: "clusterctl.cluster.x-k8s.io", Version: "v1alpha3", Kind: "ProviderList"})
		if err := mgmt.Client.List(ctx, l); err != nil || len(l.Items) != 4 {
			t.Errorf("after a refused delete the inventory has %d providers (err %v), want 4", len(l.Items), err)
		}
	})
}

var (
	treeRe   = regexp.MustCompile(`^[│├└─ ]*`)
	suffixRe = regexp.MustCompile(`-[a-z0-9]{5}(-[a-z0-9]{5})?\b`)
	spaceRe  = regexp.MustCompile(`\s{2,}`)
)

// describeShape keeps what the controllers decided in a describe tree, not when: the tree's
// structure, object kinds and names (random suffixes folded to -xxxxx), and each condition's
// type and status. Counts, reasons, ages and messages go.
func describeShape(out string) string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == "" || strings.HasPrefix(l, "NAME ") {
			continue
		}
		prefix := treeRe.FindString(l)
		fields := spaceRe.Split(strings.TrimSpace(l[len(prefix):]), -1)
		name := suffixRe.ReplaceAllString(fields[0], "-xxxxx")
		if strings.HasPrefix(name, "MachineHealthCheck ") {
			// One per machine set, listed in the order of their random names.
			name = "MachineHealthCheck"
		}
		shape := strings.ReplaceAll(prefix, " ", "") + name
		// A condition row: one word, then its status.
		if !strings.Contains(fields[0], " ") && len(fields) > 1 && (fields[1] == "True" || fields[1] == "False" || fields[1] == "Unknown") {
			shape += " " + fields[1]
		}
		lines = append(lines, shape)
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestMoveLiveCluster moves a cluster the controllers keep reconciling, with the source's
// controllers running during the move: while the move has the cluster paused, a scale-up asked
// of the source creates no Machine there; on the target, the controllers bring the cluster to
// Available again, and nothing of it is left in the source.
func TestMoveLiveCluster(t *testing.T) {
	e := start(t, 2)
	src, dst := e.clusters[0], e.clusters[1]
	parallel(func() { e.initAt(src, "v1.14.0") }, func() { e.initAt(dst, "v1.14.0") })
	if t.Failed() {
		t.FailNow()
	}
	e.createCluster(src, ns, "wl-move", k8sVersion, 1)
	e.waitAvailable(src, ns, "wl-move", 5*time.Minute)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := watchPause(ctx, t, src, ns, "wl-move")

	e.moveHandingOver(src, dst, ns, "wl-move")
	cancel()
	w.wait()
	if !w.sawPause {
		t.Errorf("the source Cluster was never seen paused during the move")
	}
	if len(w.created) > 0 {
		t.Errorf("Machines created in the source while the move had the cluster paused: %v", w.created)
	}
	if w.scaleErr != "" {
		t.Logf("scale-up during the pause: %s", w.scaleErr)
	}

	e.waitAvailable(dst, ns, "wl-move", 5*time.Minute)
	if u, err := getCluster(context.Background(), dst, ns, "wl-move"); err == nil {
		if p, _, _ := unstructured.NestedBool(u.Object, "spec", "paused"); p {
			t.Errorf("the moved Cluster is still paused on the target")
		}
	}
	for _, k := range leftovers(t, src, ns) {
		t.Errorf("left in the source after the move: %s", k)
	}
}

// pauseWatch records, on the source, Machines created after the Cluster was paused.
type pauseWatch struct {
	mu       sync.Mutex
	done     chan struct{}
	sawPause bool
	created  []string
	scaleErr string
}

func (w *pauseWatch) wait() { <-w.done }

// watchPause polls the source fast: once the Cluster is paused it asks for one more worker
// through the topology (what a user or an autoscaler might do mid-move), then records any
// Machine that appears while the move runs.
func watchPause(ctx context.Context, t *testing.T, c *livemgmt.Cluster, ns, name string) *pauseWatch {
	w := &pauseWatch{done: make(chan struct{})}
	known := map[types.UID]bool{}
	if ms, err := listMachines(ctx, c, ns); err == nil {
		for _, m := range ms {
			known[m.GetUID()] = true
		}
	}
	go func() {
		defer close(w.done)
		for ctx.Err() == nil {
			u, err := getCluster(ctx, c, ns, name)
			if err == nil && !w.sawPause {
				if p, _, _ := unstructured.NestedBool(u.Object, "spec", "paused"); p {
					w.sawPause = true
					w.scaleErr = scaleWorkers(ctx, c, u, 1)
				}
			}
			ms, err := listMachines(ctx, c, ns)
			if err == nil {
				for _, m := range ms {
					if !known[m.GetUID()] {
						known[m.GetUID()] = true
						if w.sawPause {
							w.created = append(w.created, m.GetName())
						}
					}
				}
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	return w
}

// scaleWorkers adds n replicas to the first MachineDeployment topology; "" when it was written.
func scaleWorkers(ctx context.Context, c *livemgmt.Cluster, u *unstructured.Unstructured, n int64) string {
	mds, _, _ := unstructured.NestedSlice(u.Object, "spec", "topology", "workers", "machineDeployments")
	if len(mds) == 0 {
		return "no MachineDeployment topology"
	}
	md, _ := mds[0].(map[string]any)
	r, _ := md["replicas"].(int64)
	md["replicas"] = r + n
	mds[0] = md
	patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"topology": map[string]any{"workers": map[string]any{"machineDeployments": mds}}}})
	if err := c.Client.Patch(ctx, u, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return err.Error()
	}
	return ""
}

// leftovers lists Cluster API objects and cluster secrets still in namespace ns.
func leftovers(t *testing.T, c *livemgmt.Cluster, ns string) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	for _, gvk := range []schema.GroupVersionKind{
		{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterList"},
		{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "MachineDeploymentList"},
		{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "MachineSetList"},
		{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "MachineList"},
		{Group: "cluster.x-k8s.io", Version: "v1beta2", Kind: "ClusterClassList"},
		{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmControlPlaneList"},
		{Group: "bootstrap.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmConfigList"},
		{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "DevClusterList"},
		{Group: "infrastructure.cluster.x-k8s.io", Version: "v1beta2", Kind: "DevMachineList"},
		{Group: "", Version: "v1", Kind: "SecretList"},
	} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(served(c, gvk))
		if err := c.Client.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Errorf("listing %s on the source: %v", gvk.Kind, err)
			continue
		}
		for _, o := range l.Items {
			if gvk.Kind == "SecretList" && o.GetLabels()["cluster.x-k8s.io/cluster-name"] == "" {
				continue
			}
			out = append(out, strings.TrimSuffix(gvk.Kind, "List")+" "+o.GetName())
		}
	}
	sort.Strings(out)
	return out
}
