package move

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/internal/testing/testenv"
	"github.com/capctl/capctl/pkg/cluster"
)

// denyPolicy makes the API server refuse an operation on a resource with a
// ValidatingAdmissionPolicy, and returns a function that lifts it. Both wait until the server
// enforces the change (probing with a server-side dry run).
func denyPolicy(t *testing.T, c *cluster.Client, name string, op admissionv1.OperationType, group, resource string, probe func() error) func() {
	t.Helper()
	ctx := context.Background()
	fail := admissionv1.Fail
	pol := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{op},
					Rule:       admissionv1.Rule{APIGroups: []string{group}, APIVersions: []string{"*"}, Resources: []string{resource}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "false", Message: "refused by the test's fault injection"}},
		},
	}
	bind := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       admissionv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny}},
	}
	if err := c.Create(ctx, pol); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, bind); err != nil {
		t.Fatal(err)
	}
	waitFor := func(denied bool) {
		err := cluster.Poll(ctx, 200*time.Millisecond, time.Minute, func(context.Context) (bool, error) {
			err := probe()
			return (err != nil && strings.Contains(err.Error(), "fault injection")) == denied, nil
		})
		if err != nil {
			t.Fatalf("the admission policy %s never took effect (denied=%v)", name, denied)
		}
	}
	waitFor(true)
	return func() {
		if err := c.Delete(ctx, bind); err != nil {
			t.Fatal(err)
		}
		if err := c.Delete(ctx, pol); err != nil {
			t.Fatal(err)
		}
		waitFor(false)
	}
}

func pausedState(t *testing.T, objs map[string]*unstructured.Unstructured) []string {
	t.Helper()
	var out []string
	for k, o := range objs {
		if p, _, _ := unstructured.NestedBool(o.Object, "spec", "paused"); p && o.GetKind() == "Cluster" {
			out = append(out, k)
		}
		if _, ok := o.GetAnnotations()[MovePausedAnnotation]; ok {
			out = append(out, k+" (annotated)")
		}
	}
	return out
}

// TestMoveCreateFailureThenReRun makes the target refuse MachineSets: the move stops before
// deleting anything, the source is intact and unpaused, and re-running the same move after the
// fault is gone completes it without duplicates.
func TestMoveCreateFailureThenReRun(t *testing.T) {
	src, dst := sharedPair(t)
	ctx := testenv.Context(t)
	const ns = "fault-create"
	src.CreateNamespaces(t, ns)
	dst.CreateNamespaces(t, ns)
	b := &builder{tb: t, c: src.Client, ns: ns}
	total := b.addCluster("a", clusterOpts{cpCount: 1, workers: 2}) + b.addCluster("b", clusterOpts{cpCount: 1, workers: 2})
	before := snapshot(t, src.Client, ns)

	probeMS := obj(vCore, "MachineSet", "probe", map[string]any{"clusterName": "x", "selector": map[string]any{},
		"template": map[string]any{"spec": map[string]any{"clusterName": "x", "bootstrap": map[string]any{"dataSecretName": "x"}, "infrastructureRef": ref(gInfra, "DockerMachine", "x")}}})
	probeMS.SetNamespace(ns)
	probe := func() error { return dst.Client.Create(ctx, probeMS.DeepCopy(), client.DryRunAll) }
	lift := denyPolicy(t, dst.Client, "deny-machinesets", admissionv1.Create, "cluster.x-k8s.io", "machinesets", probe)

	_, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns}, Parallelism: 4})
	if err == nil {
		t.Fatal("the move succeeded although the target refused MachineSets")
	}
	if !strings.Contains(err.Error(), "fault injection") || !strings.Contains(err.Error(), "source is intact and unpaused") || !strings.Contains(err.Error(), "re-run") {
		t.Errorf("the error does not explain the state: %v", err)
	}
	after := withoutJournal(t, snapshot(t, src.Client, ns), true)
	if len(after) != len(before) {
		t.Errorf("source changed: %d objects before, %d after", len(before), len(after))
	}
	if p := pausedState(t, after); len(p) > 0 {
		t.Errorf("source left paused: %v", p)
	}
	partial := snapshot(t, dst.Client, ns)
	if len(partial) == 0 || len(partial) >= total {
		t.Errorf("target holds %d of %d objects; the fault should stop it part way", len(partial), total)
	}
	if p, _, _ := unstructured.NestedBool(partial["Cluster/a"].Object, "spec", "paused"); !p {
		t.Error("the partial copy in the target is not paused")
	}

	lift()
	rep, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns}})
	if err != nil {
		t.Fatalf("re-running the move: %v", err)
	}
	if !rep.Resumed || rep.Created+rep.Updated+rep.AlreadyPresent != total || rep.Created == 0 || rep.Deleted != total || len(rep.Differences) != 0 || !rep.Verified {
		t.Errorf("re-run report: resumed %v created %d updated %d present %d deleted %d diffs %v (total %d)", rep.Resumed, rep.Created, rep.Updated, rep.AlreadyPresent, rep.Deleted, rep.Differences, total)
	}
	if left := snapshot(t, src.Client, ns); len(left) != 0 {
		t.Errorf("left in the source: %v", keys(left))
	}
	moved := snapshot(t, dst.Client, ns)
	if len(moved) != total {
		t.Errorf("target holds %d objects, want %d (no duplicates, nothing lost)", len(moved), total)
	}
	if p := pausedState(t, moved); len(p) > 0 {
		t.Errorf("target left paused: %v", p)
	}
}

// TestMoveDeleteFailureThenResume makes the source refuse deleting Machines: every object is in
// the target, the error says so, and --resume finishes the move.
func TestMoveDeleteFailureThenResume(t *testing.T) {
	src, dst := sharedPair(t)
	ctx := testenv.Context(t)
	const ns = "fault-delete"
	src.CreateNamespaces(t, ns)
	b := &builder{tb: t, c: src.Client, ns: ns}
	total := b.addCluster("c", clusterOpts{cpCount: 1, workers: 1})
	original := snapshot(t, src.Client, ns)

	probeObj := obj(vCore, "Machine", "c-cp-0", nil)
	probeObj.SetNamespace(ns)
	probe := func() error { return src.Client.Delete(ctx, probeObj.DeepCopy(), client.DryRunAll) }
	lift := denyPolicy(t, src.Client, "deny-machine-deletes", admissionv1.Delete, "cluster.x-k8s.io", "machines", probe)

	_, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns}})
	if err == nil || !strings.Contains(err.Error(), "every object is in the target") || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("want a delete-phase failure that says how to finish; got %v", err)
	}
	if got := snapshot(t, dst.Client, ns); len(got) != total {
		t.Errorf("target holds %d of %d objects", len(got), total)
	}
	// A different move is refused while this one is unfinished.
	if _, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns, Clusters: []string{"c"}}}); err == nil || !strings.Contains(err.Error(), "unfinished move") {
		t.Errorf("a second move during an unfinished one: %v", err)
	}

	lift()
	// --resume without -n finds the journal in whichever namespace holds it.
	rep, err := Move(ctx, src.Client, dst.Client, Options{Resume: true})
	if errors.Is(err, ErrNamespaceNotFound) {
		t.Fatalf("--resume did not take the scope from the journal: %v", err)
	}
	if err != nil {
		t.Fatalf("--resume: %v", err)
	}
	if !rep.Resumed || len(rep.Differences) != 0 {
		t.Errorf("resume report: %+v", rep)
	}
	if left := snapshot(t, src.Client, ns); len(left) != 0 {
		t.Errorf("left in the source: %v", keys(left))
	}
	moved := snapshot(t, dst.Client, ns)
	for k := range original {
		if moved[k] == nil {
			t.Errorf("%s lost", k)
		}
	}
	if p := pausedState(t, moved); len(p) > 0 {
		t.Errorf("target left paused: %v", p)
	}
}

// TestMoveTargetStopsMidway stops the target API server after a few creates: the source must be
// left intact and unpaused, with the journal recording the unfinished move.
func TestMoveTargetStopsMidway(t *testing.T) {
	src, _ := sharedPair(t)
	dst := testenv.Start(t, testenv.Options{CRDPaths: pairCRDs})
	prepareManagementCluster(t, dst)
	ctx := testenv.Context(t)
	const ns = "fault-stop"
	src.CreateNamespaces(t, ns)
	b := &builder{tb: t, c: src.Client, ns: ns}
	b.addCluster("d", clusterOpts{cpCount: 3, workers: 3})
	before := snapshot(t, src.Client, ns)

	var once sync.Once
	_, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns}, Parallelism: 2,
		Hook: func(phase string, created int) {
			if phase == "create" && created >= 5 {
				once.Do(dst.Stop)
			}
		}})
	if err == nil {
		t.Fatal("the move succeeded although the target went away")
	}
	if !strings.Contains(err.Error(), "source is intact and unpaused") {
		t.Errorf("the error does not say the source is intact: %v", err)
	}
	after := withoutJournal(t, snapshot(t, src.Client, ns), true)
	if len(after) != len(before) {
		t.Errorf("source changed: %d objects before, %d after", len(before), len(after))
	}
	if p := pausedState(t, after); len(p) > 0 {
		t.Errorf("source left paused: %v", p)
	}
	// Clean up the journal so the shared source stays tidy.
	if err := finishJournal(ctx, src.Client, &journal{namespace: ns, DataSecrets: 1}); err != nil {
		t.Fatal(err)
	}
}

// withoutJournal drops the journal ConfigMap and its data Secrets from a snapshot, checking they
// are there when want is set.
func withoutJournal(t *testing.T, objs map[string]*unstructured.Unstructured, want bool) map[string]*unstructured.Unstructured {
	t.Helper()
	found := 0
	for k, o := range objs {
		if _, ok := o.GetLabels()[JournalLabel]; ok {
			delete(objs, k)
			found++
		}
	}
	if want && found < 2 {
		t.Errorf("the journal (ConfigMap and data Secrets) is not there: %d objects", found)
	}
	return objs
}

// TestMoveWhileASourceControllerReAddsFinalizers stands in for a source controller that is still
// running during the delete phase: as Cluster API's reconcilers do before they look at the pause,
// it puts its finalizer back on any object that has none and is not being deleted, right after
// the move stripped it. The move must still empty the source (a delete after the re-add would
// leave the object behind for good, its paused controller never removing the finalizer).
func TestMoveWhileASourceControllerReAddsFinalizers(t *testing.T) {
	src, dst := sharedPair(t)
	ctx := testenv.Context(t)
	const ns = "fault-live-controller"
	src.CreateNamespaces(t, ns)
	b := &builder{tb: t, c: src.Client, ns: ns}
	total := b.addCluster("c", clusterOpts{cpCount: 1, workers: 1})
	original := snapshot(t, src.Client, ns)
	kinds, err := DiscoverTypes(ctx, src.Client)
	if err != nil {
		t.Fatal(err)
	}

	const finalizer = "test.capctl.io/controller"
	var mu sync.Mutex
	var reAdded []string
	var hookErr error
	controller := func(phase string, _ int) {
		if phase != "unfinalized" {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		objs, err := listAll(ctx, src.Client, kinds, []string{ns}, nil, allFieldOwners)
		if err != nil {
			hookErr = err
			return
		}
		for i := range objs {
			o := &objs[i]
			if _, marked := o.GetAnnotations()[DeleteForMoveAnnotation]; !marked || len(o.GetFinalizers()) > 0 || o.GetDeletionTimestamp() != nil {
				continue
			}
			o.SetFinalizers([]string{finalizer})
			err := src.Client.Update(ctx, o)
			if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
				continue // deleted or changed meanwhile: a controller would requeue
			}
			if err != nil {
				hookErr = fmt.Errorf("re-adding the finalizer to %s/%s: %w", o.GetKind(), o.GetName(), err)
				return
			}
			reAdded = append(reAdded, o.GetKind()+"/"+o.GetName())
		}
	}

	rep, err := Move(ctx, src.Client, dst.Client, Options{Scope: Scope{Namespace: ns}, Hook: controller})
	if hookErr != nil {
		t.Fatalf("the stand-in controller failed: %v", hookErr)
	}
	if len(reAdded) == 0 {
		t.Fatal("the stand-in controller re-added no finalizer: the test proves nothing")
	}
	if err != nil {
		t.Fatalf("move with a running source controller: %v", err)
	}
	if !rep.Verified {
		t.Errorf("report not verified: %+v", rep)
	}
	if left := snapshot(t, src.Client, ns); len(left) != 0 {
		t.Errorf("left in the source after finalizers were re-added to %v: %v", reAdded, keys(left))
	}
	moved := snapshot(t, dst.Client, ns)
	if len(moved) != total {
		t.Errorf("target holds %d of %d objects", len(moved), total)
	}
	for k, o := range moved {
		if _, marked := o.GetAnnotations()[DeleteForMoveAnnotation]; marked {
			t.Errorf("%s carries %s in the target", k, DeleteForMoveAnnotation)
		}
		if was := original[k]; was != nil && fmt.Sprint(was.GetFinalizers()) != fmt.Sprint(o.GetFinalizers()) {
			t.Errorf("%s finalizers in the target %v, before the move %v", k, o.GetFinalizers(), was.GetFinalizers())
		}
	}
}
