package move

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/conversion"
)

// The cross-contract pair: a management cluster on Cluster API v1.10.10 (CRDs storing v1beta1)
// and one on v1.14.0 (v1beta2), started once for the package's tests (each uses its own
// namespace). Both serve only their storage versions (testenv.ComponentCRDs says why).
var (
	contractOnce     sync.Once
	contractOld      *testenv.Env
	contractNew      *testenv.Env
	contractErr      error
	contractOldCRDs  string
	contractNewCRDs  string
	contractProvider = []string{"cluster-api", "bootstrap-kubeadm", "control-plane-kubeadm", "infrastructure-docker"}
)

func contractPair(t *testing.T) (old, new *testenv.Env) {
	t.Helper()
	testenv.Integration(t)
	oldCRDs := testenv.ComponentCRDs(t, "v1.10.10", contractProvider...)
	newCRDs := testenv.ComponentCRDs(t, "v1.14.0", contractProvider...)
	contractOnce.Do(func() {
		contractOldCRDs, contractNewCRDs = oldCRDs, newCRDs
		var wg sync.WaitGroup
		envs := make([]*testenv.Env, 2)
		errs := make([]error, 2)
		for i, crds := range []string{oldCRDs, newCRDs} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				envs[i], errs[i] = testenv.StartForMain(testenv.Options{CRDPaths: []string{crds}})
			}()
		}
		wg.Wait()
		for _, e := range envs {
			if e != nil {
				testenv.AfterTests(e.Stop)
			}
		}
		if contractErr = errors.Join(errs...); contractErr != nil {
			return
		}
		contractOld, contractNew = envs[0], envs[1]
		prepareManagementCluster(t, contractOld, defaultProviders("v1.10.10")...)
		prepareManagementCluster(t, contractNew, defaultProviders("v1.14.0")...)
	})
	if contractErr != nil {
		t.Fatalf("starting the v1.10 and v1.14 API servers: %v", contractErr)
	}
	if contractOld == nil {
		t.Fatal("the cross-contract API servers failed to start in an earlier test")
	}
	return contractOld, contractNew
}

// TestMoveToOlderContractRefused moves from the v1beta2 management cluster to the v1beta1 one:
// refused before anything is written, with the contracts named, and both clusters unchanged
// (no pause, no journal, no lock in the source; nothing in the target).
func TestMoveToOlderContractRefused(t *testing.T) {
	old, new := contractPair(t)
	ctx := testenv.Context(t)
	const ns = "reverse"
	new.CreateNamespaces(t, ns)
	b := &builder{tb: t, c: new.Client, ns: ns}
	b.addCluster("a", clusterOpts{cpCount: 1, workers: 1})
	before := snapshot(t, new.Client, ns)
	leasesBefore := countLeases(t, new)

	_, err := Move(ctx, new.Client, old.Client, Options{Scope: Scope{Namespace: ns}})
	if !errors.Is(err, ErrOlderContract) || !strings.Contains(err.Error(), "stores Clusters as v1beta2") || !strings.Contains(err.Error(), "stores them as v1beta1") {
		t.Fatalf("move v1beta2 -> v1beta1: %v", err)
	}
	after := snapshot(t, new.Client, ns)
	if len(after) != len(before) {
		t.Errorf("the source has %d objects, had %d: %v", len(after), len(before), keys(after))
	}
	for k, o := range before {
		a := after[k]
		if a == nil || a.GetResourceVersion() != o.GetResourceVersion() || !equality.Semantic.DeepEqual(content(a), content(o)) {
			t.Errorf("%s changed in the source", k)
		}
	}
	if n := countLeases(t, new); n != leasesBefore {
		t.Errorf("the refused move left %d leases in the source, there were %d", n, leasesBefore)
	}
	if p, _ := PendingMoves(ctx, new.Client); len(p) != 0 {
		t.Errorf("the refused move left a journal: %v", p)
	}
	if got := snapshot(t, old.Client, ns); len(got) != 0 {
		t.Errorf("the refused move wrote to the target: %v", keys(got))
	}
}

func countLeases(t *testing.T, env *testenv.Env) int {
	t.Helper()
	list := &coordinationv1.LeaseList{}
	if err := env.Client.List(testenv.Context(t), list); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

const (
	vCore1  = "cluster.x-k8s.io/v1beta1"
	vInfra1 = "infrastructure.cluster.x-k8s.io/v1beta1"
	vBoot1  = "bootstrap.cluster.x-k8s.io/v1beta1"
	vCP1    = "controlplane.cluster.x-k8s.io/v1beta1"
)

// ref1 is a v1beta1 reference (apiVersion, kind, namespace, name).
func (b *builder) ref1(apiVersion, kind, name string) map[string]any {
	return map[string]any{"apiVersion": apiVersion, "kind": kind, "name": name, "namespace": b.ns}
}

// addClusterV1beta1 writes one cluster as Cluster API v1.10 controllers would have left it, at
// v1beta1: Cluster, DockerCluster, KubeadmControlPlane with one control-plane Machine, a
// MachineDeployment with a MachineSet and worker Machines, their DockerMachines and
// KubeadmConfigs (with provider IDs), templates, kubeconfig and CA Secrets. md is extra spec of
// the MachineDeployment. It returns the number of objects written.
func (b *builder) addClusterV1beta1(name string, workers int, md map[string]any) int {
	n := 0
	add := func(u *unstructured.Unstructured, owners ...*unstructured.Unstructured) *unstructured.Unstructured {
		n++
		return b.create(u, owners...)
	}
	c := obj(vCore1, "Cluster", name, map[string]any{
		"infrastructureRef": b.ref1(vInfra1, "DockerCluster", name),
		"controlPlaneRef":   b.ref1(vCP1, "KubeadmControlPlane", name),
		"clusterNetwork":    map[string]any{"pods": map[string]any{"cidrBlocks": []any{"192.168.0.0/16"}}},
	})
	c.SetFinalizers([]string{"cluster.cluster.x-k8s.io"})
	c.Object["status"] = map[string]any{"infrastructureReady": true, "controlPlaneReady": true, "phase": "Provisioned",
		"conditions": []any{map[string]any{"type": "ControlPlaneInitialized", "status": "True", "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)}}}
	c = add(c)
	dc := obj(vInfra1, "DockerCluster", name, map[string]any{})
	dc.SetFinalizers([]string{"dockercluster.infrastructure.cluster.x-k8s.io"})
	add(dc, c)
	cpTmpl := add(obj(vInfra1, "DockerMachineTemplate", name+"-cp", map[string]any{"template": map[string]any{"spec": map[string]any{"extraMounts": []any{map[string]any{"containerPath": "/var/run/docker.sock", "hostPath": "/var/run/docker.sock"}}}}}), c)
	kcp := obj(vCP1, "KubeadmControlPlane", name, map[string]any{
		"version":           "v1.32.0",
		"replicas":          int64(1),
		"machineTemplate":   map[string]any{"infrastructureRef": b.ref1(vInfra1, "DockerMachineTemplate", cpTmpl.GetName()), "nodeDrainTimeout": "30s"},
		"kubeadmConfigSpec": map[string]any{"format": "cloud-config", "clusterConfiguration": map[string]any{"apiServer": map[string]any{"certSANs": []any{"localhost"}}}},
	})
	kcp.SetFinalizers([]string{"kubeadm.controlplane.cluster.x-k8s.io"})
	kcp = add(kcp, c)
	machine := func(mname string, owner *unstructured.Unstructured, cp bool) {
		m := obj(vCore1, "Machine", mname, map[string]any{
			"clusterName":       name,
			"version":           "v1.32.0",
			"providerID":        "docker:////" + mname,
			"bootstrap":         map[string]any{"configRef": b.ref1(vBoot1, "KubeadmConfig", mname), "dataSecretName": mname},
			"infrastructureRef": b.ref1(vInfra1, "DockerMachine", mname),
		})
		labels := map[string]string{"cluster.x-k8s.io/cluster-name": name}
		if cp {
			labels["cluster.x-k8s.io/control-plane"] = ""
		}
		m.SetLabels(labels)
		m.SetFinalizers([]string{"machine.cluster.x-k8s.io"})
		m.Object["status"] = map[string]any{"nodeRef": map[string]any{"apiVersion": "v1", "kind": "Node", "name": mname}, "bootstrapReady": true, "infrastructureReady": true}
		m = add(m, owner)
		add(obj(vBoot1, "KubeadmConfig", mname, map[string]any{"format": "cloud-config"}), m)
		dm := obj(vInfra1, "DockerMachine", mname, map[string]any{"providerID": "docker:////" + mname})
		dm.SetFinalizers([]string{"dockermachine.infrastructure.cluster.x-k8s.io"})
		add(dm, m)
	}
	machine(name+"-cp-0", kcp, true)
	if workers > 0 {
		wTmpl := add(obj(vInfra1, "DockerMachineTemplate", name+"-md-0", map[string]any{"template": map[string]any{"spec": map[string]any{}}}), c)
		bTmpl := add(obj(vBoot1, "KubeadmConfigTemplate", name+"-md-0", map[string]any{"template": map[string]any{"spec": map[string]any{"format": "cloud-config"}}}), c)
		tmpl := map[string]any{"spec": map[string]any{
			"clusterName":       name,
			"version":           "v1.32.0",
			"bootstrap":         map[string]any{"configRef": b.ref1(vBoot1, "KubeadmConfigTemplate", bTmpl.GetName())},
			"infrastructureRef": b.ref1(vInfra1, "DockerMachineTemplate", wTmpl.GetName()),
		}}
		sel := map[string]any{"matchLabels": map[string]any{"cluster.x-k8s.io/deployment-name": name + "-md-0"}}
		mdSpec := map[string]any{"clusterName": name, "replicas": int64(workers), "selector": sel, "template": tmpl}
		for k, v := range md {
			mdSpec[k] = v
		}
		mdo := obj(vCore1, "MachineDeployment", name+"-md-0", mdSpec)
		mdo.SetFinalizers([]string{"cluster.x-k8s.io/machinedeployment"})
		mdo = add(mdo, c)
		ms := obj(vCore1, "MachineSet", name+"-md-0-abcde", map[string]any{"clusterName": name, "replicas": int64(workers), "selector": sel, "template": tmpl})
		ms.SetFinalizers([]string{"cluster.x-k8s.io/machineset"})
		ms = add(ms, mdo)
		for i := range workers {
			machine(fmt.Sprintf("%s-md-0-abcde-%d", name, i), ms, false)
		}
	}
	add(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name + "-kubeconfig"},
		"type": "cluster.x-k8s.io/secret", "stringData": map[string]any{"value": "kubeconfig-of-" + name + "-SECRETVALUE"}}})
	add(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name + "-ca"},
		"type": "cluster.x-k8s.io/secret", "stringData": map[string]any{"tls.crt": "cert", "tls.key": "KEY-SECRETVALUE"}}}, kcp)
	return n
}

// seedV1beta1 writes cluster "a" (addClusterV1beta1) into namespace ns of env and returns the
// number of objects and the namespace's snapshot.
func seedV1beta1(t *testing.T, env *testenv.Env, ns string, workers int, md map[string]any) (int, map[string]*unstructured.Unstructured) {
	t.Helper()
	env.CreateNamespaces(t, ns)
	n := (&builder{tb: t, c: env.Client, ns: ns}).addClusterV1beta1("a", workers, md)
	return n, snapshot(t, env.Client, ns)
}

// convertedBefore is what the target must hold after a cross-contract move: every object of
// the source before the move, each Cluster API object converted to v1beta2 by pkg/convert (its
// status is not moved) and owner references to Cluster API owners at v1beta2. It is computed
// here from the snapshot, not with the move's own code.
func convertedBefore(t *testing.T, before map[string]*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	out := map[string]*unstructured.Unstructured{}
	for k, o := range before {
		c := o.DeepCopy()
		if strings.HasSuffix(c.GroupVersionKind().Group, "cluster.x-k8s.io") {
			conv, rep := conversion.Object(c.Object)
			if rep.Action != conversion.Converted {
				t.Fatalf("%s: %s %s", k, rep.Action, rep.Error)
			}
			c = &unstructured.Unstructured{}
			if err := c.UnmarshalJSON(mustJSON(conv)); err != nil {
				t.Fatal(err)
			}
		}
		refs := c.GetOwnerReferences()
		for i := range refs {
			refs[i].APIVersion = strings.Replace(refs[i].APIVersion, "/v1beta1", "/v1beta2", 1)
		}
		if len(refs) > 0 {
			c.SetOwnerReferences(refs)
		}
		out[k] = c
	}
	return out
}

// requireOwnerVersions checks the owner references of the target's objects name their owners at
// the version the target stores them.
func requireOwnerVersions(t *testing.T, got map[string]*unstructured.Unstructured) {
	t.Helper()
	for k, o := range got {
		for _, r := range o.GetOwnerReferences() {
			if strings.Contains(r.APIVersion, "cluster.x-k8s.io/") && !strings.HasSuffix(r.APIVersion, "/v1beta2") {
				t.Errorf("%s: owner %s/%s at %s in the target", k, r.Kind, r.Name, r.APIVersion)
			}
		}
	}
}

// TestMoveAcrossContracts moves a v1beta1 namespace (Cluster API v1.10 CRDs) to a v1beta2
// management cluster (v1.14): every Cluster API object is converted, the target equals the
// converted pre-move state field by field, the source is empty, and the report names each
// conversion and the contract jump.
func TestMoveAcrossContracts(t *testing.T) {
	old, new := contractPair(t)
	ctx := testenv.Context(t)
	const ns = "jump"
	total, before := seedV1beta1(t, old, ns, 2, nil)
	want := convertedBefore(t, before)

	rep, err := Move(ctx, old.Client, new.Client, Options{Scope: Scope{Namespace: ns}})
	if err != nil {
		t.Fatalf("move v1beta1 -> v1beta2: %v (differences %v)", err, rep.Differences)
	}
	if rep.Contracts != (Contracts{Source: "v1beta1", Target: "v1beta2"}) || !rep.Verified {
		t.Errorf("report: contracts %+v verified %v", rep.Contracts, rep.Verified)
	}
	capi := 0
	for k := range before {
		if !strings.HasPrefix(k, "Secret/") {
			capi++
		}
	}
	if len(rep.Conversions) != capi || len(Lost(rep.Conversions)) != 0 {
		t.Errorf("%d conversions (%d Cluster API objects of %d), losses %v", len(rep.Conversions), capi, total, Lost(rep.Conversions))
	}
	requireMoved(t, want, old.Client, new.Client, ns)
	got := snapshot(t, new.Client, ns)
	requireOwnerVersions(t, got)
	if p := pausedState(t, got); len(p) != 0 {
		t.Errorf("paused in the target: %v", p)
	}
}

// TestMoveAcrossContractsFaultMatrix kills the cross-contract move (v1beta1 -> v1beta2) while it
// creates, verifies and deletes, then finishes it by re-running it and, separately, with
// --resume: the target always ends equal to the converted pre-move state and the source empty.
func TestMoveAcrossContractsFaultMatrix(t *testing.T) {
	old, new := contractPair(t)
	for _, row := range []struct {
		name, phase string
		at          int // 0: half of the objects
	}{
		{"create-half", "create", 0},
		{"verify", "verify", 1},
		{"delete-half", "delete", 0},
	} {
		for _, how := range []string{"rerun", "resume"} {
			t.Run(row.name+"/"+how, func(t *testing.T) {
				t.Parallel()
				ctx := testenv.Context(t)
				ns := "xfm-" + row.name + "-" + how
				total, before := seedV1beta1(t, old, ns, 1, nil)
				at := row.at
				if at == 0 {
					at = total / 2
				}
				faultChild(t, "move", old, new, ns, "", row.phase, at, "KILL")
				rep, err := Move(ctx, old.Client, new.Client, Options{Scope: Scope{Namespace: ns}, Resume: how == "resume"})
				if err != nil {
					t.Fatalf("finishing the move after a kill at %s %d: %v (differences %v)", row.phase, at, err, rep.Differences)
				}
				if !rep.Verified || !rep.Resumed || rep.Created+rep.Updated+rep.AlreadyPresent != total || rep.Deleted+rep.AlreadyDeleted != total {
					t.Errorf("report: verified %v resumed %v created %d updated %d present %d deleted %d already %d, want %d",
						rep.Verified, rep.Resumed, rep.Created, rep.Updated, rep.AlreadyPresent, rep.Deleted, rep.AlreadyDeleted, total)
				}
				requireMoved(t, convertedBefore(t, before), old.Client, new.Client, ns)
				requireOwnerVersions(t, snapshot(t, new.Client, ns))
			})
		}
	}
}

// TestMoveAcrossContractsLossRefused moves a v1beta1 MachineDeployment whose
// spec.progressDeadlineSeconds has no place in v1beta2: the dry run towards the v1beta2 target
// names the object and the path and refuses; the move refuses before any write; with
// AcceptConversionLoss it moves, and the report lists the loss.
func TestMoveAcrossContractsLossRefused(t *testing.T) {
	old, new := contractPair(t)
	ctx := testenv.Context(t)
	const ns = "lossy"
	total, before := seedV1beta1(t, old, ns, 1, map[string]any{"progressDeadlineSeconds": int64(900)})
	const lossAt = "MachineDeployment/lossy/a-md-0: spec.progressDeadlineSeconds"

	fl := Flags{Source: cluster.Options{Kubeconfig: old.Kubeconfig}, Target: &cluster.Options{Kubeconfig: new.Kubeconfig}}
	res, err := Run(ctx, fl.Connections(), &DryRunRequest{Options{Scope: Scope{Namespace: ns}}})
	if !errors.Is(err, ErrConversionLoss) || !strings.Contains(err.Error(), lossAt) || !strings.Contains(err.Error(), "--accept-conversion-loss") {
		t.Fatalf("dry run: %v", err)
	}
	if res == nil || res.Plan == nil || res.Plan.Count() != total || res.Contracts.String() != "v1beta1 -> v1beta2" {
		t.Fatalf("dry run result: %+v", res)
	}
	if lost := Lost(res.Conversions); len(lost) != 1 || !strings.HasPrefix(lost[0], lossAt) {
		t.Errorf("dry run losses: %v", lost)
	}

	_, err = Move(ctx, old.Client, new.Client, Options{Scope: Scope{Namespace: ns}})
	if !errors.Is(err, ErrConversionLoss) {
		t.Fatalf("move without --accept-conversion-loss: %v", err)
	}
	after := snapshot(t, old.Client, ns)
	for k, o := range before {
		if a := after[k]; a == nil || a.GetResourceVersion() != o.GetResourceVersion() {
			t.Errorf("%s changed in the source by the refused move", k)
		}
	}
	if len(after) != len(before) {
		t.Errorf("the refused move left %v in the source", keys(after))
	}
	if got := snapshot(t, new.Client, ns); len(got) != 0 {
		t.Errorf("the refused move wrote to the target: %v", keys(got))
	}

	// While the move runs (after the verification, before the first delete) its journal lists
	// the accepted loss.
	var journaled []string
	hook := func(phase string, _ int) {
		if phase != "verify" {
			return
		}
		js, err := listJournals(ctx, old.Client)
		if err != nil {
			t.Error(err)
		}
		for _, j := range js {
			if j.namespace == ns {
				journaled = j.ConversionLosses
			}
		}
	}
	rep, err := Move(ctx, old.Client, new.Client, Options{Scope: Scope{Namespace: ns}, AcceptConversionLoss: true, Hook: hook})
	if len(journaled) != 1 || !strings.HasPrefix(journaled[0], lossAt) {
		t.Errorf("the journal lists the losses %v", journaled)
	}
	if err != nil {
		t.Fatalf("move with --accept-conversion-loss: %v (differences %v)", err, rep.Differences)
	}
	if lost := Lost(rep.Conversions); len(lost) != 1 || !strings.HasPrefix(lost[0], lossAt) || !rep.Verified {
		t.Errorf("report: losses %v verified %v", lost, rep.Verified)
	}
	md := snapshot(t, new.Client, ns)["MachineDeployment/a-md-0"]
	if _, ok, _ := unstructured.NestedFieldNoCopy(md.Object, "spec", "progressDeadlineSeconds"); ok || md.GetAPIVersion() != vCore {
		t.Errorf("target MachineDeployment: %v", md.Object["spec"])
	}
}

// TestBackupV1beta1RestoreV1beta2 backs a v1beta1 namespace up to a directory (the objects as the
// source stores them) and restores it into the v1beta2 management cluster: the restore converts
// every Cluster API object and the target equals the converted backup.
func TestBackupV1beta1RestoreV1beta2(t *testing.T) {
	old, new := contractPair(t)
	ctx := testenv.Context(t)
	const ns = "jump-dir"
	total, before := seedV1beta1(t, old, ns, 1, nil)
	dir := filepath.Join(t.TempDir(), "backup")
	if rep, err := ToDirectory(ctx, old.Client, dir, Options{Scope: Scope{Namespace: ns}}); err != nil || rep.Written != total {
		t.Fatalf("backup: %v (%d written of %d)", err, rep.Written, total)
	}
	rep, err := FromDirectory(ctx, new.Client, dir, Options{})
	if err != nil {
		t.Fatalf("restore into v1beta2: %v (differences %v)", err, rep.Differences)
	}
	if !rep.Verified || rep.Created != total || rep.Contracts.String() != "v1beta1 -> v1beta2" || len(rep.Conversions) == 0 {
		t.Errorf("report: verified %v created %d of %d contracts %s conversions %d", rep.Verified, rep.Created, total, rep.Contracts, len(rep.Conversions))
	}
	got := snapshot(t, new.Client, ns)
	want := convertedBefore(t, before)
	for k, w := range want {
		g := got[k]
		if g == nil || !equality.Semantic.DeepEqual(content(w), content(g)) || owners(w) != owners(g) ||
			!equality.Semantic.DeepEqual(nilIfEmpty(w.GetLabels()), nilIfEmpty(g.GetLabels())) {
			t.Errorf("%s: the target does not hold the converted backup", k)
		}
	}
	if len(got) != len(want) {
		t.Errorf("target: %v", keys(got))
	}
	requireOwnerVersions(t, got)
	if p := pausedState(t, got); len(p) != 0 {
		t.Errorf("paused in the target: %v", p)
	}
}

// TestMoveAcrossContractsLossResumed kills a move that accepted a conversion loss, while it
// creates and while it deletes: re-running it without --accept-conversion-loss finishes it (the
// journal holds the accepted losses), and the target equals the converted pre-move state.
func TestMoveAcrossContractsLossResumed(t *testing.T) {
	old, new := contractPair(t)
	t.Setenv("FAULT_ACCEPT_LOSS", "1") // the killed child accepted the loss
	for _, phase := range []string{"create", "delete"} {
		ctx := testenv.Context(t)
		ns := "lossy-" + phase
		total, before := seedV1beta1(t, old, ns, 1, map[string]any{"progressDeadlineSeconds": int64(900)})
		faultChild(t, "move", old, new, ns, "", phase, total/2, "KILL")
		rep, err := Move(ctx, old.Client, new.Client, Options{Scope: Scope{Namespace: ns}})
		if err != nil {
			t.Fatalf("re-running the move killed at %s %d, without --accept-conversion-loss: %v", phase, total/2, err)
		}
		if !rep.Resumed || !rep.Verified || len(Lost(rep.Conversions)) != 1 {
			t.Errorf("%s: resumed %v verified %v losses %v", phase, rep.Resumed, rep.Verified, Lost(rep.Conversions))
		}
		requireMoved(t, convertedBefore(t, before), old.Client, new.Client, ns)
	}
}

// TestMoveAcrossContractsWithSharedClass moves a v1beta1 namespace whose Cluster uses a
// ClusterClass of another namespace (v1beta1 spec.topology.classNamespace): the class and its
// templates are converted, created in the target in their namespace, and kept in the source.
func TestMoveAcrossContractsWithSharedClass(t *testing.T) {
	old, new := contractPair(t)
	ctx := testenv.Context(t)
	const classes, team = "xc-classes", "xc-team"
	old.CreateNamespaces(t, classes)
	b := &builder{tb: t, c: old.Client, ns: classes}
	b.create(obj(vInfra1, "DockerClusterTemplate", "shared", map[string]any{"template": map[string]any{"spec": map[string]any{}}}))
	b.create(obj(vCP1, "KubeadmControlPlaneTemplate", "shared", map[string]any{"template": map[string]any{"spec": map[string]any{"kubeadmConfigSpec": map[string]any{"format": "cloud-config"}}}}))
	b.create(obj(vInfra1, "DockerMachineTemplate", "shared-cp", map[string]any{"template": map[string]any{"spec": map[string]any{}}}))
	b.create(obj(vCore1, "ClusterClass", "shared", map[string]any{
		"infrastructure": map[string]any{"ref": b.ref1(vInfra1, "DockerClusterTemplate", "shared")},
		"controlPlane": map[string]any{
			"ref":                   b.ref1(vCP1, "KubeadmControlPlaneTemplate", "shared"),
			"machineInfrastructure": map[string]any{"ref": b.ref1(vInfra1, "DockerMachineTemplate", "shared-cp")},
		},
	}))
	classesBefore := snapshot(t, old.Client, classes)
	total, _ := seedV1beta1(t, old, team, 1, nil)
	c := obj(vCore1, "Cluster", "a", nil)
	c.SetNamespace(team)
	if err := mergePatch(ctx, old.Client, c, map[string]any{"spec": map[string]any{"topology": map[string]any{
		"class": "shared", "classNamespace": classes, "version": "v1.32.0"}}}); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, old.Client, team)

	rep, err := Move(ctx, old.Client, new.Client, Options{Scope: Scope{Namespace: team}})
	if err != nil {
		t.Fatalf("move: %v (differences %v)", err, rep.Differences)
	}
	if rep.Objects != total+4 || rep.KeptInSource != 4 || len(rep.Conversions) != rep.Objects-2 || !rep.Verified {
		t.Errorf("report: objects %d (want %d), kept %d, conversions %d, verified %v", rep.Objects, total+4, rep.KeptInSource, len(rep.Conversions), rep.Verified)
	}
	requireMoved(t, convertedBefore(t, before), old.Client, new.Client, team)
	want := convertedBefore(t, classesBefore)
	got := snapshot(t, new.Client, classes)
	left := snapshot(t, old.Client, classes)
	for k, w := range want {
		if g := got[k]; g == nil || !equality.Semantic.DeepEqual(content(w), content(g)) || g.GetAPIVersion() != w.GetAPIVersion() {
			t.Errorf("%s: the target does not hold the converted class or template", k)
		}
		if l := left[k]; l == nil || !equality.Semantic.DeepEqual(content(l), content(classesBefore[k])) || len(l.GetAnnotations()) != 0 {
			t.Errorf("%s: not kept as it was in the source", k)
		}
	}
	if len(got) != 4 || len(left) != 4 {
		t.Errorf("%s: target %v, source %v", classes, keys(got), keys(left))
	}
}
