package rollout

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cluster"
	capenv "github.com/capctl/capctl/pkg/env"
)

func TestRequestValidate(t *testing.T) {
	for _, tc := range []struct {
		req  Request
		want string
	}{
		{Request{Action: "undo"}, `unknown rollout action "undo"`},
		{Request{Action: Restart}, "required resource not specified"},
		{Request{Action: Restart, Resources: []string{"md-0"}}, "arguments must be in resource/name format (e.g. machinedeployment/md-1)"},
		{Request{Action: Restart, Resources: []string{"machinedeployment", "machinedeployment/md-0"}}, "there is no need to specify a resource type"},
		{Request{Action: Restart, Resources: []string{"a/b/c"}}, "may not have more than one slash"},
		{Request{Action: Restart, Resources: []string{"/b"}}, "must have a single resource and name"},
		{Request{Action: Pause, All: true, Selector: "a=b"}, "--all and --selector exclude each other"},
		{Request{Action: Pause, All: true, Resources: []string{"md/x"}}, "not both"},
		{Request{Action: Pause, Cluster: "c", Resources: []string{"md/x"}}, "--cluster limits --all or --selector"},
		{Request{Action: Pause, Selector: "a in (b"}, "invalid --selector"},
		{Request{Action: Pause, All: true, Namespace: "Team_A"}, `invalid namespace "Team_A"`},
	} {
		err := tc.req.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err %v, want %q", tc.req, err, tc.want)
		}
	}
	for _, ok := range []Request{
		{Action: Restart, Resources: []string{"MachineDeployment/md-0", "kubeadmcontrolplane/cp"}},
		{Action: Pause, All: true, Cluster: "prod-1"},
		{Action: Resume, Selector: "tier=web"},
	} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
}

func TestMergePatch(t *testing.T) {
	if got := mergePatch([]string{"spec", "rollout", "after"}, `"x"`); got != `{"spec":{"rollout":{"after":"x"}}}` {
		t.Errorf("got %s", got)
	}
}

type fixture struct {
	env *testenv.Env
	ctx context.Context
}

func (f fixture) get(t *testing.T, kind, name string) *unstructured.Unstructured {
	t.Helper()
	return f.getIn(t, "team-a", kind, name)
}

func (f fixture) getIn(t *testing.T, ns, kind, name string) *unstructured.Unstructured {
	t.Helper()
	group := "cluster.x-k8s.io"
	if strings.HasSuffix(kind, "ControlPlane") {
		group = "controlplane.cluster.x-k8s.io"
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1beta2", Kind: kind})
	if err := f.env.Client.Get(f.ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		t.Fatal(err)
	}
	return u
}

func (f fixture) run(t *testing.T, req Request) (*Result, error) {
	t.Helper()
	req.Namespace = "team-a"
	return Run(f.ctx, capenv.One(f.env.Client), req)
}

// runAt runs req with the clock stopped at now.
func (f fixture) runAt(t *testing.T, now time.Time, req Request) (*Result, error) {
	t.Helper()
	req.Namespace = "team-a"
	return Run(f.ctx, atClock(f.env.Client, now), req)
}

// at is the Env of c with the clock stopped at now.
func atClock(c *cluster.Client, now time.Time) capenv.Env {
	e := capenv.One(c)
	e.Now = func() time.Time { return now }
	return e
}

func wantErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
}

func TestRolloutOnAPIServer(t *testing.T) {
	testenv.Integration(t)
	fixtures := testenv.FixturesDir(t)
	env := testenv.Start(t, testenv.Options{CRDPaths: []string{
		filepath.Join(fixtures, "crds", "cluster.x-k8s.io.yaml"),
		filepath.Join(fixtures, "crds", "controlplane.cluster.x-k8s.io.yaml"),
		filepath.Join("testdata", "example-controlplanes-crd.yaml"),
	}})
	env.CreateNamespaces(t, "team-a", "team-b")
	testenv.CreateFromFile(t, env.Client, filepath.Join("testdata", "objects.yaml"))
	testenv.CreateFromFile(t, env.Client, filepath.Join("testdata", "machines.yaml"))
	testenv.CreateFromFile(t, env.Client, filepath.Join("testdata", "topology.yaml"))
	f := fixture{env: env, ctx: testenv.Context(t)}
	now := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)

	t.Run("restart dry run lists the Machines and changes nothing", func(t *testing.T) {
		res, err := f.runAt(t, now, Request{Action: Restart, Resources: []string{"machinedeployment/prod-1-md-0"}, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Items) != 1 || len(res.Items[0].Machines) != 2 || res.Items[0].Machines[0].Name != "prod-1-md-0-aaaaa" || res.Items[0].Cluster != "prod-1" {
			t.Fatalf("result %+v", res.Items)
		}
		if _, ok, _ := unstructured.NestedString(f.get(t, "MachineDeployment", "prod-1-md-0").Object, "spec", "rollout", "after"); ok {
			t.Fatal("dry run set rollout.after")
		}
	})

	t.Run("a user who may not patch MachineDeployments is refused before the first patch", func(t *testing.T) {
		// The control plane comes first: without the preflight it was restarted before the
		// MachineDeployment's patch failed.
		env.GrantAllBut(t, "no-md-patch", map[string][]string{"machinedeployments.cluster.x-k8s.io": {"patch"}})
		operator := env.User(t, "no-md-patch")
		before := map[string]string{}
		for _, k := range [][2]string{{"KubeadmControlPlane", "prod-1-control-plane"}, {"MachineDeployment", "prod-1-md-0"}} {
			before[k[1]] = f.get(t, k[0], k[1]).GetResourceVersion()
		}
		for _, dry := range []bool{true, false} {
			_, err := Run(f.ctx, atClock(operator, now), Request{Namespace: "team-a", Action: Restart, DryRun: dry,
				Resources: []string{"kubeadmcontrolplane/prod-1-control-plane", "machinedeployment/prod-1-md-0"}})
			var perr *authz.PreflightError
			if !errors.As(err, &perr) {
				t.Fatalf("dry run %v: want a permission refusal, got %v", dry, err)
			}
			want := []authz.Permission{{Group: "cluster.x-k8s.io", Resource: "machinedeployments", Verb: "patch", Namespace: "team-a"}}
			if got := perr.Missing(); !reflect.DeepEqual(got, want) {
				t.Errorf("missing: got %v, want %v", got, want)
			}
			wantErr(t, err, "kind: Role")
		}
		for _, k := range [][2]string{{"KubeadmControlPlane", "prod-1-control-plane"}, {"MachineDeployment", "prod-1-md-0"}} {
			if rv := f.get(t, k[0], k[1]).GetResourceVersion(); rv != before[k[1]] {
				t.Errorf("the refused rollout changed %s %s", k[0], k[1])
			}
		}
	})

	t.Run("restart sets spec.rollout.after; a later restart before it is refused", func(t *testing.T) {
		if _, err := f.runAt(t, now, Request{Action: Restart, Resources: []string{"MachineDeployment/prod-1-md-0"}}); err != nil {
			t.Fatal(err)
		}
		got, _, _ := unstructured.NestedString(f.get(t, "MachineDeployment", "prod-1-md-0").Object, "spec", "rollout", "after")
		if got != "2026-12-01T09:30:00Z" {
			t.Fatalf("rollout.after = %q", got)
		}
		_, err := f.runAt(t, now.Add(-time.Hour), Request{Action: Restart, Resources: []string{"machinedeployment/prod-1-md-0"}})
		wantErr(t, err, "can't update MachineDeployment (remove 'spec.rollout.after' first): machinedeployment/prod-1-md-0")
		// Once that time has passed, a restart is accepted again.
		if _, err := f.runAt(t, now.Add(time.Hour), Request{Action: Restart, Resources: []string{"md/prod-1-md-0"}}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("a paused MachineDeployment refuses the whole command", func(t *testing.T) {
		before := f.get(t, "MachineDeployment", "prod-2-md-0").GetResourceVersion()
		_, err := f.runAt(t, now, Request{Action: Restart, Resources: []string{"machinedeployment/prod-2-md-0", "machinedeployment/prod-1-md-batch"}})
		wantErr(t, err, "can't restart paused MachineDeployment (run rollout resume first): machinedeployment/prod-1-md-batch")
		if f.get(t, "MachineDeployment", "prod-2-md-0").GetResourceVersion() != before {
			t.Fatal("prod-2-md-0 was changed although the command was refused")
		}
	})

	t.Run("pause and resume a MachineDeployment with clusterctl's errors", func(t *testing.T) {
		_, err := f.run(t, Request{Action: Pause, Resources: []string{"machinedeployment/prod-1-md-batch"}})
		wantErr(t, err, "MachineDeployment is already paused: machinedeployment/prod-1-md-batch")
		if _, err := f.run(t, Request{Action: Resume, Resources: []string{"machinedeployment/prod-1-md-batch"}}); err != nil {
			t.Fatal(err)
		}
		if p, _, _ := unstructured.NestedBool(f.get(t, "MachineDeployment", "prod-1-md-batch").Object, "spec", "paused"); p {
			t.Fatal("still paused")
		}
		_, err = f.run(t, Request{Action: Resume, Resources: []string{"machinedeployment/prod-1-md-batch"}})
		wantErr(t, err, "MachineDeployment is not currently paused: machinedeployment/prod-1-md-batch")
		if _, err := f.run(t, Request{Action: Pause, Resources: []string{"machinedeployment/prod-1-md-batch"}}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("KubeadmControlPlane: annotation pause, restart refused while paused", func(t *testing.T) {
		if _, err := f.run(t, Request{Action: Pause, Resources: []string{"kubeadmcontrolplane/prod-1-control-plane"}}); err != nil {
			t.Fatal(err)
		}
		if v, ok := f.get(t, "KubeadmControlPlane", "prod-1-control-plane").GetAnnotations()["cluster.x-k8s.io/paused"]; !ok || v != "true" {
			t.Fatalf("annotation %q %v", v, ok)
		}
		_, err := f.run(t, Request{Action: Pause, Resources: []string{"kubeadmcontrolplane/prod-1-control-plane"}})
		wantErr(t, err, "KubeadmControlPlane is already paused: kubeadmcontrolplane/prod-1-control-plane")
		_, err = f.runAt(t, now, Request{Action: Restart, Resources: []string{"kubeadmcontrolplane/prod-1-control-plane"}})
		wantErr(t, err, "can't restart paused KubeadmControlPlane (remove annotation 'cluster.x-k8s.io/paused' first): kubeadmcontrolplane/prod-1-control-plane")
		if _, err := f.run(t, Request{Action: Resume, Resources: []string{"kubeadmcontrolplane/prod-1-control-plane"}}); err != nil {
			t.Fatal(err)
		}
		if _, ok := f.get(t, "KubeadmControlPlane", "prod-1-control-plane").GetAnnotations()["cluster.x-k8s.io/paused"]; ok {
			t.Fatal("annotation still there")
		}
		_, err = f.run(t, Request{Action: Resume, Resources: []string{"kubeadmcontrolplane/prod-1-control-plane"}})
		wantErr(t, err, "KubeadmControlPlane is not currently paused: kubeadmcontrolplane/prod-1-control-plane")
		res, err := f.runAt(t, now, Request{Action: Restart, Resources: []string{"kubeadmcontrolplane/prod-1-control-plane"}})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Items[0].Machines) != 1 || res.Items[0].Machines[0].Name != "prod-1-control-plane-ccccc" {
			t.Fatalf("machines %+v", res.Items[0].Machines)
		}
		if got, _, _ := unstructured.NestedString(f.get(t, "KubeadmControlPlane", "prod-1-control-plane").Object, "spec", "rollout", "after"); got != "2026-12-01T09:30:00Z" {
			t.Fatalf("rollout.after = %q", got)
		}
	})

	t.Run("other control planes: restart only with the contract's rollout field", func(t *testing.T) {
		if _, err := f.runAt(t, now, Request{Action: Restart, Resources: []string{"ecp/prod-2-control-plane"}}); err != nil {
			t.Fatal(err)
		}
		if got, _, _ := unstructured.NestedString(f.get(t, "ExampleControlPlane", "prod-2-control-plane").Object, "spec", "rollout", "after"); got != "2026-12-01T09:30:00Z" {
			t.Fatalf("rollout.after = %q", got)
		}
		_, err := f.runAt(t, now, Request{Action: Restart, Resources: []string{"legacycontrolplane/prod-3-control-plane"}})
		wantErr(t, err, "can't restart LegacyControlPlane: its CRD has no spec.rollout.after")
		if _, err := f.run(t, Request{Action: Pause, Resources: []string{"legacycontrolplanes/prod-3-control-plane"}}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("--all and --selector over a cluster's MachineDeployments", func(t *testing.T) {
		before := env.Client.Requests()
		res, err := f.runAt(t, now.Add(2*time.Hour), Request{Action: Restart, Selector: "tier=web"})
		if err != nil {
			t.Fatal(err)
		}
		// Discovery once, one LIST of MachineDeployments, one of Machines, one PATCH per target.
		t.Logf("restart of %d MachineDeployments by selector: %d API requests", len(res.Items), env.Client.Requests()-before)
		if len(res.Items) != 2 || res.Items[0].Name != "prod-1-md-0" || res.Items[1].Name != "prod-2-md-0" {
			t.Fatalf("selector: %+v", res.Items)
		}
		res, err = f.run(t, Request{Action: Pause, Selector: "tier=web", Cluster: "prod-2"})
		if err != nil || len(res.Items) != 1 || res.Items[0].Name != "prod-2-md-0" {
			t.Fatalf("selector + cluster: %+v %v", res, err)
		}
		_, err = f.run(t, Request{Action: Pause, All: true, Cluster: "prod-1"})
		var re *RefusedError
		if !errors.As(err, &re) || len(re.Reasons) != 1 || !strings.Contains(err.Error(), "prod-1-md-batch") {
			t.Fatalf("--all with one paused: %v", err)
		}
		if p, _, _ := unstructured.NestedBool(f.get(t, "MachineDeployment", "prod-1-md-0").Object, "spec", "paused"); p {
			t.Fatal("prod-1-md-0 paused although the command was refused")
		}
		_, err = f.run(t, Request{Action: Pause, All: true, Cluster: "nope"})
		wantErr(t, err, "no MachineDeployments of cluster team-a/nope")
	})

	t.Run("unknown kinds and names", func(t *testing.T) {
		_, err := f.run(t, Request{Action: Restart, Resources: []string{"deployment/x"}})
		wantErr(t, err, `Invalid resource type "deployment", valid values are [machinedeployment kubeadmcontrolplane]`)
		_, err = f.run(t, Request{Action: Restart, Resources: []string{"machinedeployment/nope"}})
		wantErr(t, err, "failed to fetch machinedeployment/nope: failed to get MachineDeployment team-a/nope")
	})

	t.Run("a topology's objects restart through their Cluster", func(t *testing.T) {
		testRestartThroughTopology(t, f, now)
	})
}

// testRestartThroughTopology: a MachineDeployment or control plane a Cluster's topology manages
// is restarted by setting rollout.after in the Cluster's topology (the topology controller copies
// it, and would undo a direct write), never by patching the object; the Cluster is patched once
// for all of its targets, only as it was read; refusals change nothing.
func testRestartThroughTopology(t *testing.T, f fixture, now time.Time) {
	run := func(at time.Time, req Request) (*Result, error) {
		req.Namespace = "team-b"
		return Run(f.ctx, atClock(f.env.Client, at), req)
	}
	cluster := func(name string) *unstructured.Unstructured { return f.getIn(t, "team-b", "Cluster", name) }
	mdAfter := func(cl *unstructured.Unstructured, name string) string {
		mds, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "workers", "machineDeployments")
		for _, md := range mds {
			m := md.(map[string]any)
			if m["name"] == name {
				s, _, _ := unstructured.NestedString(m, "rollout", "after")
				return s
			}
		}
		t.Fatalf("no MachineDeployment topology %s", name)
		return ""
	}
	objects := [][2]string{{"MachineDeployment", "topo-1-md-0-x7k2p"}, {"MachineDeployment", "topo-1-md-a-9qz4m"}, {"KubeadmControlPlane", "topo-1-cp-5rtw2"}}
	versions := func() map[string]string {
		out := map[string]string{}
		for _, o := range objects {
			out[o[1]] = f.getIn(t, "team-b", o[0], o[1]).GetResourceVersion()
		}
		return out
	}
	untouched := versions()

	// A dry run names the Cluster field and changes nothing.
	before := cluster("topo-1").GetResourceVersion()
	res, err := run(now, Request{Action: Restart, Resources: []string{"machinedeployment/topo-1-md-0-x7k2p"}, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Items[0].Via; got != "Cluster team-b/topo-1 spec.topology.workers.machineDeployments[name=md-0].rollout.after" {
		t.Fatalf("via %q", got)
	}
	if cluster("topo-1").GetResourceVersion() != before {
		t.Fatal("a dry run changed the Cluster")
	}

	// md-0 is the second MachineDeployment topology: its own rollout is added; md-a keeps its
	// strategy beside the new time.
	if _, err := run(now, Request{Action: Restart, Resources: []string{"machinedeployment/topo-1-md-0-x7k2p"}}); err != nil {
		t.Fatal(err)
	}
	cl := cluster("topo-1")
	if got := mdAfter(cl, "md-0"); got != "2026-12-01T09:30:00Z" {
		t.Fatalf("md-0 rollout.after = %q", got)
	}
	if got := mdAfter(cl, "md-a"); got != "" {
		t.Fatalf("md-a rollout.after = %q, want none", got)
	}

	// --all over the cluster: both MachineDeployment topologies in one patch of the Cluster.
	later := now.Add(time.Hour)
	res, err = run(later, Request{Action: Restart, All: true, Cluster: "topo-1"})
	if err != nil || len(res.Items) != 2 {
		t.Fatalf("--all: %+v %v", res, err)
	}
	cl = cluster("topo-1")
	for _, md := range []string{"md-0", "md-a"} {
		if got := mdAfter(cl, md); got != "2026-12-01T10:30:00Z" {
			t.Fatalf("%s rollout.after = %q", md, got)
		}
	}
	mds, _, _ := unstructured.NestedSlice(cl.Object, "spec", "topology", "workers", "machineDeployments")
	if typ, _, _ := unstructured.NestedString(mds[0].(map[string]any), "rollout", "strategy", "type"); typ != "RollingUpdate" {
		t.Fatalf("md-a's rollout strategy lost: %v", mds[0])
	}

	// The control plane: spec.topology.controlPlane, absent until now, is added.
	if _, err := run(now, Request{Action: Restart, Resources: []string{"kubeadmcontrolplane/topo-1-cp-5rtw2"}}); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(cluster("topo-1").Object, topologyRolloutPath...); got != "2026-12-01T09:30:00Z" {
		t.Fatalf("controlPlane rollout.after = %q", got)
	}

	// A rollout.after in the future is not moved earlier; a paused Cluster rolls nothing out.
	before = cluster("topo-1").GetResourceVersion()
	_, err = run(now, Request{Action: Restart, All: true, Cluster: "topo-1"})
	wantErr(t, err, "can't update MachineDeployment (remove 'spec.topology.workers.machineDeployments[name=md-0].rollout.after' of Cluster team-b/topo-1 first): machinedeployment/topo-1-md-0-x7k2p")
	_, err = run(now, Request{Action: Restart, Resources: []string{"kubeadmcontrolplane/topo-paused-cp-8hh3d"}})
	wantErr(t, err, "can't restart KubeadmControlPlane: it is managed by the topology of Cluster team-b/topo-paused, which is paused (spec.paused)")
	if cluster("topo-1").GetResourceVersion() != before {
		t.Fatal("a refused restart changed the Cluster")
	}

	// A Cluster whose topology changed between the read and the patch is not patched: the patch
	// tests the rollout the decision read. A change elsewhere (a label, the status the
	// controllers write all the time) does not stop it.
	targets := []*Target{{Kind: "KubeadmControlPlane", Ref: "kubeadmcontrolplane/topo-1-cp-5rtw2", obj: f.getIn(t, "team-b", "KubeadmControlPlane", "topo-1-cp-5rtw2")}}
	cl = cluster("topo-1")
	if err := restartThroughTopology(targets[0], cl, later.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	stale := cl.DeepCopy()
	future := later.Add(48 * time.Hour).UTC().Format(time.RFC3339)
	if err := unstructured.SetNestedField(cl.Object, future, topologyRolloutPath...); err != nil {
		t.Fatal(err)
	}
	if err := f.env.Client.Update(f.ctx, cl); err != nil {
		t.Fatal(err)
	}
	body, err := clusterPatch(targets)
	if err != nil {
		t.Fatal(err)
	}
	err = f.env.Client.Patch(f.ctx, stale, client.RawPatch("application/json-patch+json", body))
	if err == nil {
		t.Fatal("a patch over a rollout.after set meanwhile was applied")
	}
	if got, _, _ := unstructured.NestedString(cluster("topo-1").Object, topologyRolloutPath...); got != future {
		t.Fatalf("controlPlane rollout.after = %q after a refused patch, want the one set meanwhile %q", got, future)
	}
	if err := unstructured.SetNestedField(cl.Object, "2026-12-01T09:30:00Z", topologyRolloutPath...); err != nil {
		t.Fatal(err)
	}
	if err := f.env.Client.Update(f.ctx, cl); err != nil {
		t.Fatal(err)
	}
	cl = cluster("topo-1")
	if err := restartThroughTopology(targets[0], cl, later.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	read := cl.DeepCopy()
	cl.SetLabels(map[string]string{"changed": "meanwhile"})
	if err := f.env.Client.Update(f.ctx, cl); err != nil {
		t.Fatal(err)
	}
	if body, err = clusterPatch(targets); err != nil {
		t.Fatal(err)
	}
	if err := f.env.Client.Patch(f.ctx, read, client.RawPatch("application/json-patch+json", body)); err != nil {
		t.Fatalf("a label changed meanwhile stopped the restart: %v", err)
	}
	if got, _, _ := unstructured.NestedString(cluster("topo-1").Object, topologyRolloutPath...); got != later.Add(time.Hour).UTC().Format(time.RFC3339) {
		t.Fatalf("controlPlane rollout.after = %q after a label changed meanwhile", got)
	}

	// Least privilege: patching the Cluster is what it takes, not patching the objects.
	f.env.GrantAllBut(t, "topology-operator", map[string][]string{
		"machinedeployments.cluster.x-k8s.io": {"patch", "update"}, "kubeadmcontrolplanes.controlplane.cluster.x-k8s.io": {"patch", "update"}})
	if _, err := Run(f.ctx, atClock(f.env.User(t, "topology-operator"), later.Add(time.Hour)),
		Request{Namespace: "team-b", Action: Restart, Resources: []string{"machinedeployment/topo-1-md-0-x7k2p", "kubeadmcontrolplane/topo-1-cp-5rtw2"}}); err != nil {
		t.Fatalf("a user who may patch Clusters but not the objects their topology owns: %v", err)
	}

	// The objects the topology owns were never written.
	for name, rv := range versions() {
		if untouched[name] != rv {
			t.Errorf("%s was patched directly", name)
		}
	}
}
