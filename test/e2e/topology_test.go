package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/capctl/capctl/internal/testing/livemgmt"
	"github.com/capctl/capctl/pkg/topology"
	"github.com/capctl/capctl/pkg/topologyengine"
)

// TestTopologyPlanLive holds `capctl topology plan` to the real topology controller: on a live
// management cluster with three Clusters of one ClusterClass, each change is planned, then
// applied, and what the controllers did (control plane Machines replaced, MachineSets created)
// must match the prediction cluster by cluster. A change the admission webhook refuses is
// refused by the plan, and then by the real webhook, with the same reason. Then a class change is
// rolled out as a rebase through the fleet engine (rebaseLive).
func TestTopologyPlanLive(t *testing.T) {
	const topoNS = "topo"
	e := start(t, 1)
	mgmt := e.clusters[0]
	e.initAt(mgmt, "v1.14.0")
	if t.Failed() {
		t.FailNow()
	}
	names := []string{"t-1", "t-2", "t-3"}
	for _, n := range names {
		e.createCluster(mgmt, topoNS, n, k8sVersion, 1)
	}
	for _, n := range names {
		e.waitAvailable(mgmt, topoNS, n, 8*time.Minute)
	}
	tp := &topoPlan{e: e, c: mgmt, ns: topoNS, names: names, dir: t.TempDir()}

	// A label in the class's metadata: propagated in place, nothing rolls out.
	class := tp.live(classGVK, "in-memory")
	mds, _, _ := unstructured.NestedSlice(class.Object, "spec", "workers", "machineDeployments")
	md0 := mds[0].(map[string]any)
	_ = unstructured.SetNestedField(md0, "blue", "metadata", "labels", "team")
	_ = unstructured.SetNestedSlice(class.Object, mds, "spec", "workers", "machineDeployments")
	_ = unstructured.SetNestedField(class.Object, "blue", "spec", "controlPlane", "metadata", "labels", "team")
	tp.check("class metadata label", []*unstructured.Unstructured{class}, names, expect{cp: false, md: false, label: "team"})

	// A field of the MachineDeployment class's infrastructure template: every worker rolls out,
	// no control plane does. Templates are immutable, so the change is a new template.
	worker := tp.live(gvk("infrastructure.cluster.x-k8s.io", "DevMachineTemplate"), "in-memory-default-worker-machinetemplate")
	worker.SetName("in-memory-default-worker-machinetemplate-v2")
	_ = unstructured.SetNestedField(worker.Object, "4s", "spec", "template", "spec", "backend", "inMemory", "vm", "provisioning", "startupDuration")
	class = tp.live(classGVK, "in-memory")
	mds, _, _ = unstructured.NestedSlice(class.Object, "spec", "workers", "machineDeployments")
	_ = unstructured.SetNestedField(mds[0].(map[string]any), worker.GetName(), "infrastructure", "templateRef", "name")
	_ = unstructured.SetNestedSlice(class.Object, mds, "spec", "workers", "machineDeployments")
	tp.check("worker machine template", []*unstructured.Unstructured{worker, class}, names, expect{cp: false, md: true})

	// A patch in the class that reaches only the control plane's kubeadm configuration (an
	// inline JSON patch of the KubeadmControlPlaneTemplate): every control plane rolls out, no
	// MachineDeployment does, and no template is rotated (the KubeadmControlPlane itself changes).
	class = tp.live(classGVK, "in-memory")
	patches := []any{map[string]any{"name": "control-plane-san", "definitions": []any{map[string]any{
		"selector": map[string]any{"apiVersion": "controlplane.cluster.x-k8s.io/v1beta2", "kind": "KubeadmControlPlaneTemplate",
			"matchResources": map[string]any{"controlPlane": true}},
		"jsonPatches": []any{map[string]any{"op": "add", "path": "/spec/template/spec/kubeadmConfigSpec/clusterConfiguration/apiServer/certSANs/-", "value": "kube.example"}},
	}}}}
	_ = unstructured.SetNestedSlice(class.Object, patches, "spec", "patches")
	tp.check("class patch to the control plane", []*unstructured.Unstructured{class}, names, expect{cp: true, md: false})

	// One Cluster's version raised one minor: its control plane and then its workers roll; the
	// other clusters are not planned and not touched.
	t2 := tp.live(clusterGVK, "t-2")
	_ = unstructured.SetNestedField(t2.Object, "v1.35.0", "spec", "topology", "version")
	res := tp.check("one cluster's version", []*unstructured.Unstructured{t2}, []string{"t-2"}, expect{cp: true, md: true, untouched: []string{"t-1", "t-3"}})
	if c := res.Clusters[0]; !slices.Equal(c.UpgradePlan, []string{"v1.35.0"}) || !slices.Equal(c.WorkersUpgradePlan, []string{"v1.35.0"}) {
		t.Errorf("one cluster's version: upgrade plans %v (control plane) and %v (workers); want [v1.35.0] for both", c.UpgradePlan, c.WorkersUpgradePlan)
	}

	// A MachineDeployment class removed while Clusters use it: the plan refuses, and so does
	// the real webhook when the change is applied.
	class = tp.live(classGVK, "in-memory")
	mds, _, _ = unstructured.NestedSlice(class.Object, "spec", "workers", "machineDeployments")
	_ = unstructured.SetNestedField(mds[0].(map[string]any), "other-worker", "class")
	_ = unstructured.SetNestedSlice(class.Object, mds, "spec", "workers", "machineDeployments")
	res, code := tp.plan(class)
	if code != topology.ExitRefused || len(res.Clusters) != 3 {
		t.Fatalf("removed MachineDeployment class: exit %d, %d clusters; want %d and 3", code, len(res.Clusters), topology.ExitRefused)
	}
	err := tp.apply(class)
	if err == nil {
		t.Fatal("the webhook accepted a ClusterClass without the MachineDeployment class its Clusters use")
	}
	for _, c := range res.Clusters {
		if c.Refused == "" || !strings.Contains(c.Refused, "default-worker") || !strings.Contains(err.Error(), "default-worker") {
			t.Errorf("%s refused %q; the webhook said %v", c.Name, c.Refused, err)
		}
		if !sameRefusal(c.Refused, err.Error()) {
			t.Errorf("%s: the plan's reason %q is not the webhook's %q", c.Name, c.Refused, err)
		}
	}

	// The same clusters rebased onto a changed class, wave by wave (topology apply).
	rebaseLive(t, tp)
}

var classGVK = gvk("cluster.x-k8s.io", "ClusterClass")

func gvk(group, kind string) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: group, Version: "v1beta2", Kind: kind}
}

// sameRefusal compares the plan's reason with the webhook's: the field error each carries after
// their own prefixes ("ClusterClass ns/name: " and the API server's "admission webhook ... denied
// the request: ").
func sameRefusal(plan, webhook string) bool {
	p, w := refusalCauses(plan), refusalCauses(webhook)
	return len(p) > 0 && strings.Join(p, "\n") == strings.Join(w, "\n")
}

// refusalCauses are the causes of an admission refusal ("spec.FIELD: Forbidden: ..."), sorted:
// the webhook lists them in the order its cache gives the Clusters, which is not always the
// plan's (a CI run saw t-3, t-1, t-2 against t-1, t-2, t-3).
func refusalCauses(msg string) []string {
	i := strings.Index(msg, "spec.")
	if i < 0 {
		return nil
	}
	body := strings.TrimSuffix(strings.TrimSpace(msg[i:]), "]")
	causes := strings.Split(body, ", spec.")
	for j := 1; j < len(causes); j++ {
		causes[j] = "spec." + causes[j]
	}
	sort.Strings(causes)
	return causes
}

type topoPlan struct {
	e     *e2e
	c     *livemgmt.Cluster
	ns    string
	names []string
	dir   string
	n     int
}

// expect is what a change should do to each planned cluster.
type expect struct {
	cp, md    bool
	untouched []string
	// label is a label the change propagates in place to the control plane's and md-0's
	// machine templates: its arrival says the controller has acted.
	label string
}

// live reads an object as a team's Git repository would hold it: no status, no server fields.
func (tp *topoPlan) live(k schema.GroupVersionKind, name string) *unstructured.Unstructured {
	tp.e.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(k)
	if err := tp.c.Client.Get(context.Background(), client.ObjectKey{Namespace: tp.ns, Name: name}, u); err != nil {
		tp.e.t.Fatal(err)
	}
	out := &unstructured.Unstructured{Object: map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(), "spec": u.Object["spec"]}}
	out.SetName(u.GetName())
	out.SetNamespace(u.GetNamespace())
	out.SetLabels(u.GetLabels())
	return out
}

// writeObjects writes objs as one multi-document YAML file, as a user's change file.
func writeObjects(t *testing.T, path string, objs ...*unstructured.Unstructured) {
	t.Helper()
	var docs []string
	for _, o := range objs {
		b, err := sigsyaml.Marshal(o.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(b))
	}
	if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// plan runs topology plan -o json on objs (written as one multi-document file).
func (tp *topoPlan) plan(objs ...*unstructured.Unstructured) (*topology.PlanResult, int) {
	t := tp.e.t
	t.Helper()
	tp.n++
	path := filepath.Join(tp.dir, fmt.Sprintf("change-%d.yaml", tp.n))
	writeObjects(t, path, objs...)
	out, err := tp.e.capctl(tp.c, "topology", "plan", "-f", path, "-o", "json")
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	res := &topology.PlanResult{}
	if err := json.Unmarshal([]byte(jsonPart(out)), res); err != nil {
		t.Fatalf("topology plan output is not its JSON (exit %d): %v\n%s", code, err, out)
	}
	return res, code
}

// jsonPart drops what capctl printed before its JSON (nothing, unless warnings).
func jsonPart(out string) string {
	if i := strings.Index(out, "{"); i > 0 {
		return out[i:]
	}
	return out
}

// check plans the change, applies it, waits for the controllers and compares, per cluster.
func (tp *topoPlan) check(what string, objs []*unstructured.Unstructured, planned []string, want expect) *topology.PlanResult {
	t := tp.e.t
	t.Helper()
	res, code := tp.plan(objs...)
	if code != topology.ExitChanges {
		t.Fatalf("%s: exit %d, want %d (changes)", what, code, topology.ExitChanges)
	}
	var got []string
	for _, c := range res.Clusters {
		got = append(got, c.Name)
		if c.Refused != "" || c.Partial != "" {
			t.Fatalf("%s: %s refused %q, partial %q", what, c.Name, c.Refused, c.Partial)
		}
		if c.ControlPlane.RollsOut != want.cp || len(c.MachineDeployments) != 1 || c.MachineDeployments[0].RollsOut != want.md {
			t.Errorf("%s: %s predicted control plane rolls %v (%s), md-0 rolls %v; want %v and %v", what, c.Name, c.ControlPlane.RollsOut, c.ControlPlane.Reason, c.MachineDeployments, want.cp, want.md)
		}
	}
	if !slices.Equal(got, planned) {
		t.Fatalf("%s: planned clusters %v, want %v", what, got, planned)
	}
	before := map[string]machinesOf{}
	refsBefore := map[string]map[string]string{}
	for _, n := range tp.names {
		before[n] = tp.machines(n)
		refsBefore[n] = tp.templateRefs(n)
	}
	for _, o := range objs {
		if err := tp.apply(o); err != nil {
			t.Fatalf("%s: applying %s %s: %v", what, o.GetKind(), o.GetName(), err)
		}
	}
	start := time.Now()
	for _, c := range res.Clusters {
		tp.waitDone(what, c.Name, before[c.Name], want)
	}
	t.Logf("%s: the controllers finished in %s", what, time.Since(start).Round(time.Second))
	for _, c := range res.Clusters {
		after := tp.machines(c.Name)
		cpRolled := added(before[c.Name].cp, after.cp)
		mdRolled := added(before[c.Name].ms, after.ms)
		if cpRolled != c.ControlPlane.RollsOut || mdRolled != c.MachineDeployments[0].RollsOut {
			t.Errorf("%s: %s: the controllers rolled the control plane %v and md-0 %v; the plan said %v and %v", what, c.Name, cpRolled, mdRolled, c.ControlPlane.RollsOut, c.MachineDeployments[0].RollsOut)
		}
		// The templates the controller rotated (a reference now names a new template) are the
		// ones the plan said it would rotate.
		var rotated, predicted []string
		refsAfter := tp.templateRefs(c.Name)
		for slot, ref := range refsBefore[c.Name] {
			if refsAfter[slot] != ref {
				rotated = append(rotated, ref)
			}
		}
		for _, ch := range c.Changes {
			if ch.Action == topologyengine.Rotate {
				predicted = append(predicted, ch.Kind+"/"+ch.Name)
			}
		}
		sort.Strings(rotated)
		sort.Strings(predicted)
		if !slices.Equal(rotated, predicted) {
			t.Errorf("%s: %s: the controller rotated the templates %v; the plan said %v", what, c.Name, rotated, predicted)
		}
	}
	for _, n := range want.untouched {
		if after := tp.machines(n); added(before[n].cp, after.cp) || added(before[n].ms, after.ms) {
			t.Errorf("%s: %s was not planned but its machines changed: %+v → %+v", what, n, before[n], after)
		}
	}
	return res
}

// machinesOf is what a rollout changes: the control plane's Machines and md-0's MachineSets.
type machinesOf struct{ cp, ms []string }

func (tp *topoPlan) machines(cluster string) machinesOf {
	tp.e.t.Helper()
	ctx := context.Background()
	var m machinesOf
	ms, err := listMachines(ctx, tp.c, tp.ns)
	if err != nil {
		tp.e.t.Fatal(err)
	}
	for _, x := range ms {
		l := x.GetLabels()
		if l["cluster.x-k8s.io/cluster-name"] == cluster && hasKey(l, "cluster.x-k8s.io/control-plane") && x.GetDeletionTimestamp() == nil {
			m.cp = append(m.cp, x.GetName())
		}
	}
	sets := &unstructured.UnstructuredList{}
	sets.SetGroupVersionKind(gvk("cluster.x-k8s.io", "MachineSetList"))
	if err := tp.c.Client.List(ctx, sets, client.InNamespace(tp.ns), client.MatchingLabels{"cluster.x-k8s.io/cluster-name": cluster}); err != nil {
		tp.e.t.Fatal(err)
	}
	for _, s := range sets.Items {
		m.ms = append(m.ms, s.GetName())
	}
	sort.Strings(m.cp)
	sort.Strings(m.ms)
	return m
}

// templateRefs are the templates the cluster's control plane and MachineDeployments name, by
// slot ("kcp infrastructure", "md md-0 bootstrap", ...): KIND/NAME.
func (tp *topoPlan) templateRefs(cluster string) map[string]string {
	tp.e.t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	for _, k := range []struct {
		slot  string
		list  schema.GroupVersionKind
		paths map[string][]string
	}{
		{"kcp", gvk("controlplane.cluster.x-k8s.io", "KubeadmControlPlaneList"), map[string][]string{
			"infrastructure": {"spec", "machineTemplate", "spec", "infrastructureRef"}}},
		{"md", gvk("cluster.x-k8s.io", "MachineDeploymentList"), map[string][]string{
			"infrastructure": {"spec", "template", "spec", "infrastructureRef"},
			"bootstrap":      {"spec", "template", "spec", "bootstrap", "configRef"}}},
	} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(k.list)
		if err := tp.c.Client.List(ctx, l, client.InNamespace(tp.ns), client.MatchingLabels{"cluster.x-k8s.io/cluster-name": cluster}); err != nil {
			tp.e.t.Fatal(err)
		}
		for _, it := range l.Items {
			topo := it.GetLabels()["topology.cluster.x-k8s.io/deployment-name"]
			for part, p := range k.paths {
				ref, ok, _ := unstructured.NestedStringMap(it.Object, p...)
				if ok && ref["name"] != "" {
					out[strings.TrimSpace(k.slot+" "+topo+" "+part)] = ref["kind"] + "/" + ref["name"]
				}
			}
		}
	}
	return out
}

func hasKey(m map[string]string, k string) bool { _, ok := m[k]; return ok }

// added reports whether after holds a name before did not: a Machine or MachineSet created.
func added(before, after []string) bool {
	for _, n := range after {
		if !slices.Contains(before, n) {
			return true
		}
	}
	return false
}

// apply writes a changed object as kubectl apply would leave it: its spec and labels over the
// live object, or the object created.
func (tp *topoPlan) apply(o *unstructured.Unstructured) error {
	ctx := context.Background()
	// The controllers write the object too (a Cluster's topology references): a conflicting
	// update is read again and retried, as kubectl apply would.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(o.GroupVersionKind())
		if err := tp.c.Client.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
			return tp.c.Client.Create(ctx, o.DeepCopy())
		}
		cur.Object["spec"] = o.Object["spec"]
		cur.SetLabels(o.GetLabels())
		return tp.c.Client.Update(ctx, cur)
	})
}

// waitDone waits until the controllers have done what was predicted for the cluster (a new
// MachineSet, new control plane Machines, or the propagated label) and the Cluster is settled
// again: Available, not rolling out, topology reconciled.
func (tp *topoPlan) waitDone(what, name string, before machinesOf, want expect) {
	t := tp.e.t
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(8 * time.Minute)
	var last string
	for time.Now().Before(deadline) {
		now := tp.machines(name)
		acted := true
		if want.cp && !added(before.cp, now.cp) {
			acted, last = false, "no new control plane Machine"
		}
		if want.md && !added(before.ms, now.ms) {
			acted, last = false, "no new MachineSet"
		}
		// Settled: one control plane Machine and one MachineSet (the old ones are deleted once
		// a rollout is done), so the next change starts from a still cluster.
		if acted && (len(now.cp) != 1 || len(now.ms) != 1) {
			acted, last = false, fmt.Sprintf("rolling out: control plane Machines %v, MachineSets %v", now.cp, now.ms)
		}
		if want.label != "" && !tp.labelled(name, want.label) {
			acted, last = false, "label "+want.label+" not yet on the control plane and md-0"
		}
		if acted {
			u, err := getCluster(ctx, tp.c, tp.ns, name)
			if err != nil {
				last = err.Error()
			} else {
				avail, _ := condition(u, "Available")
				rolling, _ := condition(u, "RollingOut")
				reconciled, msg := condition(u, "TopologyReconciled")
				if avail == "True" && rolling == "False" && reconciled == "True" {
					return
				}
				last = fmt.Sprintf("Available=%s RollingOut=%s TopologyReconciled=%s %s", avail, rolling, reconciled, msg)
			}
		}
		time.Sleep(2 * time.Second)
	}
	t.Fatalf("%s: Cluster %s not done after 8m: %s\n%s", what, name, last, tp.e.host.Diagnose(ctx, tp.c, capctlBin, tp.ns, name))
}

// labelled reports whether the cluster's KubeadmControlPlane and md-0 MachineDeployment carry
// label in their machine templates' metadata.
func (tp *topoPlan) labelled(cluster, label string) bool {
	ctx := context.Background()
	for _, k := range []struct {
		gvk  schema.GroupVersionKind
		path []string
	}{
		{gvk("controlplane.cluster.x-k8s.io", "KubeadmControlPlaneList"), []string{"spec", "machineTemplate", "metadata", "labels", label}},
		{gvk("cluster.x-k8s.io", "MachineDeploymentList"), []string{"spec", "template", "metadata", "labels", label}},
	} {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(k.gvk)
		if err := tp.c.Client.List(ctx, l, client.InNamespace(tp.ns), client.MatchingLabels{"cluster.x-k8s.io/cluster-name": cluster}); err != nil || len(l.Items) == 0 {
			return false
		}
		for _, it := range l.Items {
			if _, ok, _ := unstructured.NestedString(it.Object, k.path...); !ok {
				return false
			}
		}
	}
	return true
}
