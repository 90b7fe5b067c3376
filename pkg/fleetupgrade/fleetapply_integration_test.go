package fleetupgrade

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/provider"
)

var (
	kcpGVK = schema.GroupVersionKind{Group: "controlplane.cluster.x-k8s.io", Version: "v1beta2", Kind: "KubeadmControlPlane"}
	mdGVK  = capiV1beta2.WithKind("MachineDeployment")
)

func u(gvk schema.GroupVersionKind, ns, name string, labels map[string]string, spec map[string]any) *unstructured.Unstructured {
	o := &unstructured.Unstructured{Object: map[string]any{"spec": spec}}
	o.SetGroupVersionKind(gvk)
	o.SetNamespace(ns)
	o.SetName(name)
	o.SetLabels(labels)
	return o
}

func infraRef(kind string) map[string]any {
	return map[string]any{"apiGroup": "infrastructure.cluster.x-k8s.io", "kind": kind, "name": "x"}
}

// createFleetCluster creates a cluster without topology: a KubeadmControlPlane of one replica
// and a MachineDeployment of one replica, at version, Available.
func createFleetCluster(t *testing.T, c client.Client, ns, name, version, wave string) {
	t.Helper()
	ctx := testenv.Context(t)
	l := map[string]string{}
	if wave != "" {
		l[PlainWaveLabel] = wave
	}
	cl := u(capiV1beta2.WithKind("Cluster"), ns, name, l, map[string]any{
		"controlPlaneRef": map[string]any{"apiGroup": kcpGVK.Group, "kind": kcpGVK.Kind, "name": name + "-cp"},
	})
	cp := u(kcpGVK, ns, name+"-cp", map[string]string{ClusterNameLabel: name}, map[string]any{
		"version": version, "replicas": int64(1),
		"machineTemplate": map[string]any{"spec": map[string]any{"infrastructureRef": infraRef("DockerMachineTemplate")}},
	})
	md := u(mdGVK, ns, name+"-md", map[string]string{ClusterNameLabel: name}, map[string]any{
		"clusterName": name, "replicas": int64(1),
		"selector": map[string]any{"matchLabels": map[string]any{deploymentNameLabel: name + "-md"}},
		"template": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{deploymentNameLabel: name + "-md"}},
			"spec": map[string]any{"clusterName": name, "version": version,
				"bootstrap": map[string]any{"dataSecretName": "x"}, "infrastructureRef": infraRef("DockerMachineTemplate")},
		},
	})
	for _, o := range []*unstructured.Unstructured{cl, cp, md} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	// Stand-in for the Cluster API controllers (no controller runs on envtest): the Cluster's
	// Available condition, written through the status subresource.
	setStatus(t, c, cl, map[string]any{"conditions": []any{testCondition("Available", "True")}})
}

func testCondition(typ, status string) map[string]any {
	return map[string]any{"type": typ, "status": status, "reason": typ, "message": "", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}
}

func setStatus(t testing.TB, c client.Client, o *unstructured.Unstructured, status map[string]any) {
	t.Helper()
	if err := setStatusErr(context.Background(), c, o, status); err != nil {
		t.Fatal(err)
	}
}

func setStatusErr(ctx context.Context, c client.Client, o *unstructured.Unstructured, status map[string]any) error {
	cur := &unstructured.Unstructured{}
	cur.SetGroupVersionKind(o.GroupVersionKind())
	if err := c.Get(ctx, client.ObjectKeyFromObject(o), cur); err != nil {
		return err
	}
	cur.Object["status"] = status
	return c.Status().Update(ctx, cur)
}

// standIn plays, on envtest where no controller runs, what the kubeadm control plane and
// MachineDeployment controllers do when a version changes: it replaces the Machines of an object
// whose version changed (deletes the old Machine, creates one at the new version) and writes the
// objects' status through the status subresource as those controllers would. Clusters in
// stuck are left alone, as when their infrastructure manager is stopped.
type standIn struct {
	c     client.Client
	mu    sync.Mutex
	stuck map[string]bool
	// log is the order in which it rolled objects out: "ns/object version".
	log []string
}

func (s *standIn) setStuck(key string, v bool) { s.mu.Lock(); s.stuck[key] = v; s.mu.Unlock() }

func (s *standIn) events() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.log...)
}

func (s *standIn) run(ctx context.Context) {
	for ctx.Err() == nil {
		for _, gvk := range []schema.GroupVersionKind{kcpGVK, mdGVK} {
			list := &unstructured.UnstructuredList{}
			list.SetGroupVersionKind(gvk)
			if err := s.c.List(ctx, list); err != nil {
				continue
			}
			for i := range list.Items {
				_ = s.reconcile(ctx, &list.Items[i])
			}
		}
		_ = cluster.Sleep(ctx, 50*time.Millisecond)
	}
}

func (s *standIn) reconcile(ctx context.Context, o *unstructured.Unstructured) error {
	cluster := o.GetLabels()[ClusterNameLabel]
	s.mu.Lock()
	stuck := s.stuck[o.GetNamespace()+"/"+cluster]
	s.mu.Unlock()
	if stuck {
		return nil
	}
	isCP := o.GetKind() == kcpGVK.Kind
	path := []string{"spec", "template", "spec", "version"}
	if isCP {
		path = []string{"spec", "version"}
	}
	want, _, _ := unstructured.NestedString(o.Object, path...)
	og, _, _ := unstructured.NestedInt64(o.Object, "status", "observedGeneration")
	if og == o.GetGeneration() {
		return nil
	}
	ml := map[string]string{ClusterNameLabel: cluster}
	if isCP {
		ml[controlPlaneMachineLabel] = ""
	} else {
		ml[deploymentNameLabel] = o.GetName()
	}
	machines := &unstructured.UnstructuredList{}
	machines.SetGroupVersionKind(capiV1beta2.WithKind("MachineList"))
	if err := s.c.List(ctx, machines, client.InNamespace(o.GetNamespace()), client.MatchingLabels(ml)); err != nil {
		return err
	}
	// spec.rollout.after replaces the Machines created before it, as the controllers do.
	var after time.Time
	if a, _, _ := unstructured.NestedString(o.Object, "spec", "rollout", "after"); a != "" {
		after, _ = time.Parse(time.RFC3339, a)
	}
	for i := range machines.Items {
		m := &machines.Items[i]
		if v, _, _ := unstructured.NestedString(m.Object, "spec", "version"); v != want || m.GetCreationTimestamp().Time.Before(after) {
			if err := s.c.Delete(ctx, m); err != nil {
				return err
			}
		}
	}
	name := fmt.Sprintf("%s-%s", o.GetName(), strings.ReplaceAll(want, ".", "-"))
	if !after.IsZero() {
		name += fmt.Sprintf("-r%d", after.Unix())
	}
	m := u(capiV1beta2.WithKind("Machine"), o.GetNamespace(), name, ml, map[string]any{
		"clusterName": cluster, "version": want, "bootstrap": map[string]any{"dataSecretName": "x"}, "infrastructureRef": infraRef("DockerMachine"),
	})
	if err := s.c.Create(ctx, m); err != nil && !strings.Contains(err.Error(), "already exists") {
		return err
	}
	if err := setStatusErr(ctx, s.c, m, map[string]any{"conditions": []any{testCondition("UpToDate", "True")}}); err != nil {
		return err
	}
	st := map[string]any{"observedGeneration": o.GetGeneration(), "replicas": int64(1), "upToDateReplicas": int64(1)}
	if isCP {
		st["version"] = want
	}
	if err := setStatusErr(ctx, s.c, o, st); err != nil {
		return err
	}
	s.mu.Lock()
	s.log = append(s.log, o.GetNamespace()+"/"+o.GetName()+" "+want)
	s.mu.Unlock()
	return nil
}

// startStandIn runs a standIn until the test ends, once it has rolled out its first events (two
// per cluster createFleetCluster made: control plane and workers).
func startStandIn(t *testing.T, c client.Client, events int) *standIn {
	t.Helper()
	si := &standIn{c: c, stuck: map[string]bool{}}
	ctx, stop := context.WithCancel(testenv.Context(t))
	t.Cleanup(stop)
	go si.run(ctx)
	waitFor(t, func() bool { return len(si.events()) >= events })
	return si
}

func generations(t *testing.T, c client.Client, ns string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, gvk := range []schema.GroupVersionKind{capiV1beta2.WithKind("Cluster"), kcpGVK, mdGVK} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk)
		if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			out[o.GetKind()+"/"+o.GetName()] = o.GetGeneration()
		}
	}
	return out
}

func specVersion(t *testing.T, c client.Client, gvk schema.GroupVersionKind, ns, name string) string {
	t.Helper()
	o := &unstructured.Unstructured{}
	o.SetGroupVersionKind(gvk)
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, o); err != nil {
		t.Fatal(err)
	}
	path := []string{"spec", "version"}
	if gvk.Kind == mdGVK.Kind {
		path = []string{"spec", "template", "spec", "version"}
	}
	v, _, _ := unstructured.NestedString(o.Object, path...)
	return v
}

func resultsOf(r *FleetApplyReport) map[string]string {
	out := map[string]string{}
	for _, w := range r.Waves {
		for _, c := range w.Clusters {
			out[c.Namespace+"/"+c.Name] = c.Result
		}
	}
	return out
}

// startFleetEnv starts an API server serving Cluster API's core and control plane kinds, or
// skips under -short.
func startFleetEnv(t *testing.T) *testenv.Env {
	t.Helper()
	testenv.Integration(t)
	crds := filepath.Join(testenv.FixturesDir(t), "crds")
	return testenv.Start(t, testenv.Options{CRDPaths: []string{
		filepath.Join(crds, "cluster.x-k8s.io.yaml"), filepath.Join(crds, "controlplane.cluster.x-k8s.io.yaml"),
	}})
}

// TestApplyFleetOnAPIServer runs the fleet apply over clusters without topology on a real API
// server; the standIn above does, through the status subresource, what the controllers would.
func TestApplyFleetOnAPIServer(t *testing.T) {
	// Each test has its own API servers: two at once (go test -parallel, GOMAXPROCS) halve
	// the package's wall time, most of which is waiting for the stand-ins and the polls.
	t.Parallel()
	env := startFleetEnv(t)
	ctx := testenv.Context(t)
	c := env.Client
	env.CreateNamespaces(t, "ok", "bad", "stuck", "intr")
	createFleetCluster(t, c, "ok", "a", "v1.34.2", "1")
	createFleetCluster(t, c, "ok", "b", "v1.34.2", "2")
	createFleetCluster(t, c, "ok", "c", "v1.34.2", "2")
	createFleetCluster(t, c, "bad", "newer", "v1.36.0", "1")
	createFleetCluster(t, c, "bad", "far", "v1.33.1", "1")
	createFleetCluster(t, c, "stuck", "s", "v1.34.2", "1")
	createFleetCluster(t, c, "stuck", "t", "v1.34.2", "2")
	createFleetCluster(t, c, "intr", "i", "v1.34.2", "1")
	createFleetCluster(t, c, "intr", "j", "v1.34.2", "2")

	si := &standIn{c: c, stuck: map[string]bool{"stuck/s": true, "intr/i": true}}
	sctx, stop := context.WithCancel(ctx)
	defer stop()
	// The initial rollout: every object gets its first Machine and status.
	si.setStuck("stuck/s", false)
	si.setStuck("intr/i", false)
	go si.run(sctx)
	waitFor(t, func() bool { return len(si.events()) == 18 })
	si.setStuck("stuck/s", true)
	si.setStuck("intr/i", true)

	req := func(ns string) FleetApplyRequest {
		return FleetApplyRequest{KubernetesVersion: "v1.35.0", Selection: FleetSelection{Namespace: ns}, Rollout: Rollout{MaxParallel: 2}, Timeout: 20 * time.Second, PollInterval: 100 * time.Millisecond}
	}

	t.Run("preflight refuses every unplannable cluster and changes nothing", func(t *testing.T) {
		before := generations(t, c, "ok")
		_, err := ApplyFleet(ctx, c, req(""))
		var pe *PreflightError
		if !errors.As(err, &pe) {
			t.Fatalf("err = %v, want a PreflightError", err)
		}
		msg := err.Error()
		for _, want := range []string{"bad/newer: the control plane runs v1.36.0, newer than v1.35.0: Kubernetes cannot be downgraded", "bad/far: the path to v1.35.0 goes through v1.34", "--kubernetes-version v1.34.0"} {
			if !strings.Contains(msg, want) {
				t.Errorf("refusal %q\nlacks %q", msg, want)
			}
		}
		if _, err := ApplyFleet(ctx, c, FleetApplyRequest{KubernetesVersion: "v1.35"}); err == nil || !strings.Contains(err.Error(), "is not a version like") {
			t.Errorf("bad target: %v", err)
		}
		three := 3
		r := req("ok")
		r.Selection.Wave = &three
		if _, err := ApplyFleet(ctx, c, r); err == nil || !strings.Contains(err.Error(), "no selected cluster is in wave 3") {
			t.Errorf("missing wave: %v", err)
		}
		two := 2
		r.Selection.Wave = &two
		if _, err := ApplyFleet(ctx, c, r); err == nil || !strings.Contains(err.Error(), "ok/a of the earlier wave 1 is not at v1.35.0 yet: roll wave 1 first") {
			t.Errorf("wave 2 before wave 1: %v", err)
		}
		if after := generations(t, c, "ok"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("a refused apply changed objects: %v -> %v", before, after)
		}
	})

	t.Run("dry run changes nothing", func(t *testing.T) {
		before := generations(t, c, "ok")
		r := req("ok")
		r.DryRun = true
		rep, err := ApplyFleet(ctx, c, r)
		if err != nil {
			t.Fatal(err)
		}
		if got := resultsOf(rep); got["ok/a"] != ResultWouldPatch || got["ok/c"] != ResultWouldPatch {
			t.Errorf("results %v", got)
		}
		if after := generations(t, c, "ok"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("dry run changed objects: %v -> %v", before, after)
		}
	})

	t.Run("two waves, control plane then workers, wave after wave", func(t *testing.T) {
		n := len(si.events())
		rep, err := ApplyFleet(ctx, c, req("ok"))
		if err != nil {
			t.Fatalf("%v: %+v", err, rep)
		}
		for k, v := range resultsOf(rep) {
			if v != ResultUpgraded {
				t.Errorf("%s: %s", k, v)
			}
		}
		a := rep.Waves[0].Clusters[0]
		if len(a.Steps) != 2 || a.Steps[0].Component != ControlPlane || a.Steps[1].Component != Workers ||
			fmt.Sprint(a.Steps[0].Patched) != "[KubeadmControlPlane a-cp spec.version]" || fmt.Sprint(a.Steps[1].Patched) != "[MachineDeployment a-md spec.template.spec.version]" {
			t.Errorf("cluster a steps %+v", a.Steps)
		}
		ev := si.events()[n:]
		if len(ev) != 6 || ev[0] != "ok/a-cp v1.35.0" || ev[1] != "ok/a-md v1.35.0" {
			t.Errorf("rollout order %v: wave 1 control plane, its workers, then wave 2", ev)
		}
		for _, cl := range []string{"a", "b", "c"} {
			if v := specVersion(t, c, mdGVK, "ok", cl+"-md"); v != "v1.35.0" {
				t.Errorf("%s workers at %s", cl, v)
			}
		}
		// A re-run continues from the clusters' state: nothing left, nothing patched twice.
		before := generations(t, c, "ok")
		rep, err = ApplyFleet(ctx, c, req("ok"))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range resultsOf(rep) {
			if v != ResultUpToDate {
				t.Errorf("re-run %s: %s", k, v)
			}
		}
		if after := generations(t, c, "ok"); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("re-run patched: %v -> %v", before, after)
		}
	})

	t.Run("a cluster that cannot finish stops the fleet with the reason", func(t *testing.T) {
		r := req("stuck")
		r.Timeout = 2 * time.Second
		rep, err := ApplyFleet(ctx, c, r)
		if !errors.Is(err, ErrFleetStopped) || rep == nil || rep.Failure == nil {
			t.Fatalf("err = %v, report %+v", err, rep)
		}
		f := rep.Failure
		if f.Name != "s" || f.Step != "control plane v1.35.0" || !strings.Contains(f.Reason, "timed out after 2s") {
			t.Errorf("failure %+v", f)
		}
		if !strings.Contains(strings.Join(f.Pending, "\n"), "KubeadmControlPlane s-cp reports version v1.34.2, wants v1.35.0") {
			t.Errorf("pending %q", f.Pending)
		}
		if !strings.Contains(strings.Join(f.Describe, "\n"), "Cluster stuck/s") {
			t.Errorf("describe lines %q", f.Describe)
		}
		if got := resultsOf(rep); got["stuck/s"] != ResultFailed || got["stuck/t"] != ResultNotStarted {
			t.Errorf("results %v", got)
		}
		if v := specVersion(t, c, kcpGVK, "stuck", "t-cp"); v != "v1.34.2" {
			t.Errorf("the next wave was touched: t at %s", v)
		}
	})

	t.Run("interrupted after a patch, the same command resumes", func(t *testing.T) {
		ictx, cancel := context.WithCancel(ctx)
		defer cancel()
		r := req("intr")
		r.Progress = func(format string, args ...any) {
			if strings.Contains(fmt.Sprintf(format, args...), "set KubeadmControlPlane i-cp") {
				cancel() // Ctrl-C right after the first patch
			}
		}
		rep, err := ApplyFleet(ictx, c, r)
		if !errors.Is(err, ErrFleetInterrupted) || !rep.Interrupted {
			t.Fatalf("err = %v, report %+v", err, rep)
		}
		if v := specVersion(t, c, kcpGVK, "intr", "i-cp"); v != "v1.35.0" {
			t.Errorf("the patch before the interrupt is missing: %s", v)
		}
		if v := specVersion(t, c, mdGVK, "intr", "i-md"); v != "v1.34.2" {
			t.Errorf("a patch after the interrupt: workers at %s", v)
		}
		if v := specVersion(t, c, kcpGVK, "intr", "j-cp"); v != "v1.34.2" {
			t.Errorf("the next wave was touched: %s", v)
		}
		// The resumed run finds the control plane's rollout under way and says so; only then do
		// the controllers go on (still stuck, a run that missed it would time out).
		r = req("intr")
		r.Progress = func(format string, args ...any) {
			if strings.Contains(fmt.Sprintf(format, args...), "intr/i: control plane v1.35.0 already set, waiting") {
				si.setStuck("intr/i", false)
			}
		}
		rep, err = ApplyFleet(ctx, c, r)
		if err != nil {
			t.Fatalf("resumed: %v", err)
		}
		i := rep.Waves[0].Clusters[0]
		if i.Result != ResultUpgraded || len(i.Steps) != 2 ||
			i.Steps[0].Component != ControlPlane || i.Steps[0].Version != "v1.35.0" || len(i.Steps[0].Patched) != 0 || !i.Steps[0].Done ||
			i.Steps[1].Component != Workers || len(i.Steps[1].Patched) != 1 {
			t.Errorf("resumed cluster i: %+v (the control plane's rollout under way, not patched again, then the workers)", i)
		}
		if got := resultsOf(rep); got["intr/j"] != ResultUpgraded {
			t.Errorf("results %v", got)
		}
	})
}

// TestApplyFleetResumesTopologyBeforeItPropagates: a run interrupted right after it set a
// topology cluster's spec.topology.version leaves the control plane and workers asking the old
// version until the topology controller passes the new one on. The re-run must wait for that
// step, not find the objects settled at the old version and go on to the next wave. (No
// controller runs here: the step cannot finish, so the run must stop at the timeout.)
func TestApplyFleetResumesTopologyBeforeItPropagates(t *testing.T) {
	// Each test has its own API servers: two at once (go test -parallel, GOMAXPROCS) halve
	// the package's wall time, most of which is waiting for the stand-ins and the polls.
	t.Parallel()
	testenv.Integration(t)
	crds := filepath.Join(testenv.FixturesDir(t), "crds")
	env := testenv.Start(t, testenv.Options{CRDPaths: []string{
		filepath.Join(crds, "cluster.x-k8s.io.yaml"), filepath.Join(crds, "controlplane.cluster.x-k8s.io.yaml"),
	}})
	ctx := testenv.Context(t)
	c := env.Client
	env.CreateNamespaces(t, "topo")
	cc := u(capiV1beta2.WithKind("ClusterClass"), "topo", "class", nil, map[string]any{
		"controlPlane":   map[string]any{"templateRef": map[string]any{"apiVersion": kcpGVK.GroupVersion().String(), "kind": "KubeadmControlPlaneTemplate", "name": "cp"}},
		"infrastructure": map[string]any{"templateRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": "DockerClusterTemplate", "name": "infra"}},
	})
	cl := u(capiV1beta2.WithKind("Cluster"), "topo", "p", map[string]string{PlainWaveLabel: "1"}, map[string]any{
		"topology":        map[string]any{"classRef": map[string]any{"name": "class"}, "version": "v1.35.0"},
		"controlPlaneRef": map[string]any{"apiGroup": kcpGVK.Group, "kind": kcpGVK.Kind, "name": "p-cp"},
	})
	next := u(capiV1beta2.WithKind("Cluster"), "topo", "q", map[string]string{PlainWaveLabel: "2"}, map[string]any{
		"topology": map[string]any{"classRef": map[string]any{"name": "class"}, "version": "v1.34.2"},
	})
	cp := u(kcpGVK, "topo", "p-cp", map[string]string{ClusterNameLabel: "p"}, map[string]any{
		"version": "v1.34.2", "replicas": int64(1),
		"machineTemplate": map[string]any{"spec": map[string]any{"infrastructureRef": infraRef("DockerMachineTemplate")}},
	})
	for _, o := range []*unstructured.Unstructured{cc, cl, next, cp} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
		}
	}
	setStatus(t, c, cl, map[string]any{"conditions": []any{testCondition("Available", "True")}})
	setStatus(t, c, next, map[string]any{"conditions": []any{testCondition("Available", "True")}})
	setStatus(t, c, cp, map[string]any{"version": "v1.34.2", "replicas": int64(1), "upToDateReplicas": int64(1), "observedGeneration": int64(1)})

	rep, err := ApplyFleet(ctx, c, FleetApplyRequest{KubernetesVersion: "v1.35.0", Selection: FleetSelection{Namespace: "topo"},
		Timeout: 2 * time.Second, PollInterval: 100 * time.Millisecond})
	if !errors.Is(err, ErrFleetStopped) || rep == nil || rep.Failure == nil {
		t.Fatalf("err = %v, report %+v: the re-run did not wait for the step its topology asks", err, rep)
	}
	if f := rep.Failure; f.Name != "p" || f.Step != "control plane v1.35.0" || !strings.Contains(strings.Join(f.Pending, "\n"), "KubeadmControlPlane p-cp spec.version is v1.34.2, not v1.35.0 yet") {
		t.Errorf("failure %+v", f)
	}
	if got := resultsOf(rep); got["topo/p"] != ResultFailed || got["topo/q"] != ResultNotStarted {
		t.Errorf("results %v", got)
	}
	q := &unstructured.Unstructured{}
	q.SetGroupVersionKind(capiV1beta2.WithKind("Cluster"))
	if err := c.Get(ctx, client.ObjectKey{Namespace: "topo", Name: "q"}, q); err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(q.Object, "spec", "topology", "version"); v != "v1.34.2" {
		t.Errorf("the next wave was touched: q at %s", v)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the stand-in controllers")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// resourceVersions reads the resource version of every object a fleet apply could write, in
// every namespace: a refused apply must leave all of them as they were.
func resourceVersions(t *testing.T, c client.Client) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, gvk := range []schema.GroupVersionKind{capiV1beta2.WithKind("Cluster"), capiV1beta2.WithKind("ClusterClass"), kcpGVK, mdGVK, capiV1beta2.WithKind("Machine")} {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk)
		if err := c.List(context.Background(), list); err != nil {
			t.Fatal(err)
		}
		for _, o := range list.Items {
			out[o.GetKind()+"/"+o.GetNamespace()+"/"+o.GetName()] = o.GetResourceVersion()
		}
	}
	return out
}

// TestFleetPreflightOnAPIServer runs the fleet apply's preflight against a real API server: the
// installed providers' supported Kubernetes range (from clusterctl's inventory), a first patch the
// API server's admission refuses (a ValidatingAdmissionPolicy stands in for the Cluster API
// webhooks, which do not run on envtest; both refuse through the same admission step a server-side
// dry run goes through), a ClusterClass missing a step, a downgrade and an unplannable cluster.
// Each refusal alone and all together list every problem and change nothing.
func TestFleetPreflightOnAPIServer(t *testing.T) {
	// Each test has its own API servers: two at once (go test -parallel, GOMAXPROCS) halve
	// the package's wall time, most of which is waiting for the stand-ins and the polls.
	t.Parallel()
	env := startFleetEnv(t)
	ctx := testenv.Context(t)
	c := env.Client
	env.CreateNamespaces(t, "good", "hooked", "classy", "down", "noplan", "capi-system")
	createFleetCluster(t, c, "good", "g1", "v1.35.2", "1")
	createFleetCluster(t, c, "hooked", "h1", "v1.35.2", "1")
	createFleetCluster(t, c, "down", "d1", "v1.37.0", "1")
	if err := c.Create(ctx, u(capiV1beta2.WithKind("Cluster"), "noplan", "n1", nil, map[string]any{
		"controlPlaneRef": map[string]any{"apiGroup": kcpGVK.Group, "kind": kcpGVK.Kind, "name": "n1-gone"},
	})); err != nil {
		t.Fatal(err)
	}
	templateRef := func(kind string) map[string]any {
		return map[string]any{"templateRef": map[string]any{"apiVersion": "infrastructure.cluster.x-k8s.io/v1beta2", "kind": kind, "name": "x"}}
	}
	cc := u(capiV1beta2.WithKind("ClusterClass"), "classy", "no-v1-35", nil, map[string]any{
		"kubernetesVersions": []any{"v1.34.0", "v1.36.0"},
		"controlPlane":       map[string]any{"templateRef": map[string]any{"apiVersion": kcpGVK.GroupVersion().String(), "kind": "KubeadmControlPlaneTemplate", "name": "cp"}},
		"infrastructure":     templateRef("DockerClusterTemplate"),
	})
	topo := u(capiV1beta2.WithKind("Cluster"), "classy", "c1", map[string]string{PlainWaveLabel: "2"}, map[string]any{
		"topology": map[string]any{"classRef": map[string]any{"name": "no-v1-35"}, "version": "v1.34.0"},
	})
	for _, o := range []*unstructured.Unstructured{cc, topo} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetKind(), err)
		}
	}
	// Admission that refuses any KubeadmControlPlane version change in namespace hooked.
	policy := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
		"metadata": map[string]any{"name": "freeze-hooked"},
		"spec": map[string]any{
			"failurePolicy": "Fail",
			"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{
				"apiGroups": []any{kcpGVK.Group}, "apiVersions": []any{"*"}, "operations": []any{"UPDATE"}, "resources": []any{"kubeadmcontrolplanes"},
			}}},
			"validations": []any{map[string]any{
				"expression": "object.metadata.namespace != 'hooked' || object.spec.version == oldObject.spec.version",
				"message":    "versions are frozen in namespace hooked",
			}},
		},
	}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": "freeze-hooked"},
		"spec":     map[string]any{"policyName": "freeze-hooked", "validationActions": []any{"Deny"}},
	}}
	for _, o := range []*unstructured.Unstructured{policy, binding} {
		if err := c.Create(ctx, o); err != nil {
			t.Fatalf("creating %s: %v", o.GetKind(), err)
		}
	}
	// The policy takes effect once the API server has loaded it: probe with a dry run.
	waitFor(t, func() bool {
		cp := &unstructured.Unstructured{}
		cp.SetGroupVersionKind(kcpGVK)
		cp.SetNamespace("hooked")
		cp.SetName("h1-cp")
		err := c.Patch(ctx, cp, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"version":"v1.35.3"}}`)), client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "versions are frozen")
	})

	req := func(ns string, dry bool) FleetApplyRequest {
		return FleetApplyRequest{KubernetesVersion: "v1.36.0", Selection: FleetSelection{Namespace: ns}, DryRun: dry, Timeout: 5 * time.Second, PollInterval: 50 * time.Millisecond}
	}
	// refused runs r, wants a PreflightError of n problems whose text holds every want, and
	// checks that no object changed.
	refused := func(t *testing.T, r FleetApplyRequest, n int, want ...string) *PreflightError {
		t.Helper()
		before := resourceVersions(t, c)
		rep, err := ApplyFleet(ctx, c, r)
		var pe *PreflightError
		if !errors.As(err, &pe) || rep != nil {
			t.Fatalf("err = %v, report %+v: want a PreflightError", err, rep)
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("refusal\n%s\nlacks %q", err, w)
			}
		}
		if len(pe.Problems) != n {
			t.Errorf("%d problems, want %d: %q", len(pe.Problems), n, pe.Problems)
		}
		if after := resourceVersions(t, c); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("a refused apply changed objects:\n%v\n%v", before, after)
		}
		return pe
	}
	writeInventory := func(t *testing.T, version string) {
		t.Helper()
		if err := inventory.EnsureCRD(ctx, c); err != nil {
			t.Fatal(err)
		}
		for _, p := range []inventory.Provider{
			inventory.New("cluster-api", provider.CoreProviderType, version, "capi-system"),
			inventory.New("kubeadm", provider.BootstrapProviderType, version, "capi-system"),
			inventory.New("kubeadm", provider.ControlPlaneProviderType, version, "capi-system"),
			inventory.New("docker", provider.InfrastructureProviderType, "v1.14.2", "capi-system"),
		} {
			if err := inventory.Write(ctx, c, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	hooked := "cluster hooked/h1: the API server refuses its first patch (control plane v1.36.0, server-side dry run)"
	classy := "cluster classy/c1: ClusterClass classy/no-v1-35 lists no v1.35 version, and Kubernetes cannot skip a minor"
	down := "cluster down/d1: the control plane runs v1.37.0, newer than v1.36.0: Kubernetes cannot be downgraded"
	noplan := "cluster noplan/n1: control plane KubeadmControlPlane n1-gone not found"

	t.Run("without an inventory the providers are not checked, and said so", func(t *testing.T) {
		// No controller has reported on g1's objects yet: its rollout is not settled, so the
		// preflight does not dry-run its patch (the apply would wait first) and says so.
		before := resourceVersions(t, c)
		rep, err := ApplyFleet(ctx, c, req("good", true))
		if err != nil {
			t.Fatal(err)
		}
		notes := strings.Join(rep.Preflight.Notes, "\n")
		if pf := rep.Preflight; len(pf.Providers) != 0 || pf.DryRunPatches != 0 || !strings.Contains(notes, "no provider inventory") ||
			!strings.Contains(notes, "cluster good/g1 is not settled (KubeadmControlPlane g1-cp") {
			t.Errorf("preflight %+v", rep.Preflight)
		}
		if after := resourceVersions(t, c); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("dry run changed objects")
		}
	})

	// The initial rollout, as the controllers would report it; then they stop (nothing below
	// writes a version, so nothing more would be reconciled).
	si := &standIn{c: c, stuck: map[string]bool{}}
	sctx, stopStandIn := context.WithCancel(ctx)
	go si.run(sctx)
	waitFor(t, func() bool { return len(si.events()) == 6 })
	stopStandIn()
	time.Sleep(100 * time.Millisecond)

	t.Run("supported providers pass, a provider without a declared range is listed", func(t *testing.T) {
		writeInventory(t, "v1.14.2")
		var lines []string
		r := req("good", true)
		r.Progress = func(format string, args ...any) { lines = append(lines, fmt.Sprintf(format, args...)) }
		before := resourceVersions(t, c)
		rep, err := ApplyFleet(ctx, c, r)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, p := range rep.Preflight.Providers {
			got[p.Provider] = string(p.Status) + " " + p.Range
		}
		want := map[string]string{
			"cluster-api": "Supported v1.31.x -> v1.37.x", "bootstrap-kubeadm": "Supported v1.31.x -> v1.37.x",
			"control-plane-kubeadm": "Supported v1.31.x -> v1.37.x", "infrastructure-docker": "NotDeclared ",
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("providers %v\nwant %v", got, want)
		}
		if n := strings.Join(rep.Preflight.Notes, "\n"); !strings.Contains(n, "capi-system/docker v1.14.2: infrastructure-docker does not declare which workload Kubernetes versions it supports: not checked") {
			t.Errorf("notes %q", n)
		}
		if p := strings.Join(lines, "\n"); !strings.Contains(p, "Preflight: control-plane-kubeadm v1.14.2 supports workload clusters v1.31.x -> v1.37.x") || !strings.Contains(p, "infrastructure-docker v1.14.2: infrastructure-docker does not declare") {
			t.Errorf("progress %q", p)
		}
		if got := resultsOf(rep); got["good/g1"] != ResultWouldPatch || rep.Preflight.DryRunPatches != 1 {
			t.Errorf("results %v, %d dry-run patches in the preflight", got, rep.Preflight.DryRunPatches)
		}
		if after := resourceVersions(t, c); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("dry run changed objects")
		}
	})

	t.Run("each refusal alone changes nothing", func(t *testing.T) {
		refused(t, req("hooked", false), 1, hooked, "versions are frozen in namespace hooked")
		refused(t, req("hooked", true), 1, hooked)
		refused(t, req("classy", false), 1, classy)
		refused(t, req("down", false), 1, down)
		refused(t, req("noplan", false), 1, noplan)
	})

	t.Run("providers whose range does not hold the target", func(t *testing.T) {
		writeInventory(t, "v1.13.0")
		pe := refused(t, req("good", false), 3, "provider capi-system/cluster-api: cluster-api v1.13.0 supports workload clusters v1.30.x -> v1.35.x (Cluster API v1.13.0 release notes); the upgrade would set v1.36.0 (good/g1): upgrade the providers first",
			"bootstrap-kubeadm v1.13.0 supports", "control-plane-kubeadm v1.13.0 supports")
		if n := strings.Join(pe.Notes, "\n"); !strings.Contains(n, "infrastructure-docker does not declare") {
			t.Errorf("notes %q", n)
		}
	})

	t.Run("every problem of every cluster at once", func(t *testing.T) {
		// Providers at v1.13.0 still: three range problems name both clusters that would get
		// v1.36.0 (hooked/h1 and good/g1).
		pe := refused(t, req("", false), 7, classy, down, noplan, "(good/g1, hooked/h1)", "bootstrap-kubeadm v1.13.0", "control-plane-kubeadm v1.13.0", hooked)
		if !strings.Contains(pe.Error(), "not checked:") {
			t.Errorf("refusal without the notes: %v", pe)
		}
	})
}
