package move

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/cluster"
)

// WaitBlockMove waits until no moved object carries the block-move annotation, within one budget
// for all of them (opts.BlockMoveTimeout). Each round is one metadata LIST per blocked kind and
// namespace, never a GET per object.
func WaitBlockMove(ctx context.Context, c *cluster.Client, g *Graph, opts Options) error {
	opts.defaults()
	blocked := map[types.UID]*Node{}
	for _, n := range g.Moved() {
		if n.blocked {
			blocked[n.Ref.UID] = n
		}
	}
	if len(blocked) == 0 {
		return nil
	}
	opts.Log.Info("Move blocked by the clusterctl.cluster.x-k8s.io/block-move annotation, waiting for it to be removed", "objects", len(blocked), "timeout", opts.BlockMoveTimeout.String())
	type job struct {
		gvk schema.GroupVersionKind
		ns  string
	}
	err := cluster.Poll(ctx, opts.PollInterval, opts.BlockMoveTimeout, func(ctx context.Context) (bool, error) {
		jobs := map[job]bool{}
		for _, n := range blocked {
			jobs[job{n.Obj.GroupVersionKind(), n.Ref.Namespace}] = true
		}
		for j := range jobs {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(j.gvk.GroupVersion().WithKind(j.gvk.Kind + "List"))
			if err := c.List(ctx, list, client.InNamespace(j.ns)); err != nil {
				return false, fmt.Errorf("waiting for the block-move annotation to go: listing %s: %w", j.gvk.Kind, err)
			}
			present := map[types.UID]bool{}
			for _, o := range list.Items {
				present[o.UID] = true
				if _, ok := blocked[o.UID]; ok {
					if _, still := o.Annotations[BlockMoveAnnotation]; !still {
						delete(blocked, o.UID)
					}
				}
			}
			for u, n := range blocked {
				if n.Obj.GroupVersionKind() == j.gvk && n.Ref.Namespace == j.ns && !present[u] {
					return false, fmt.Errorf("%s disappeared from the source while the move waited for it", n.Ref)
				}
			}
		}
		return len(blocked) == 0, nil
	})
	if errors.Is(err, cluster.ErrTimedOut) {
		var names []string
		for _, n := range blocked {
			names = append(names, n.Ref.String())
		}
		sort.Strings(names)
		return fmt.Errorf("timed out after %s waiting for the %s annotation to be removed from: %s (its provider removes it once the object is paused; raise --block-move-timeout if it is slow)",
			opts.BlockMoveTimeout, BlockMoveAnnotation, strings.Join(names, ", "))
	}
	if err != nil {
		return err
	}
	opts.Log.Info("Every block-move annotation is gone")
	return nil
}

// Difference is one way the target differs from the objects as they were before the move.
type Difference struct {
	Object  Ref    `json:"object"`
	Problem string `json:"problem"`
}

func objKey(n *Node) string {
	return n.Obj.GroupVersionKind().GroupKind().String() + "/" + n.Ref.Namespace + "/" + n.Ref.Name
}

// listedKey is objKey of a listed object.
func listedKey(o *unstructured.Unstructured) string {
	return o.GroupVersionKind().GroupKind().String() + "/" + o.GetNamespace() + "/" + o.GetName()
}

// movedKindJobs are the LISTs of every kind of the graph in the graph's namespaces.
func movedKindJobs(g *Graph) []listJob {
	var typesToList []TypeInfo
	seenType := map[schema.GroupVersionKind]bool{}
	nsSet := map[string]bool{}
	for _, n := range g.Moved() {
		gvk := n.Obj.GroupVersionKind()
		if !seenType[gvk] {
			seenType[gvk] = true
			typesToList = append(typesToList, TypeInfo{GVK: gvk, Namespaced: n.Ref.Namespace != ""})
		}
		if n.Ref.Namespace != "" {
			nsSet[n.Ref.Namespace] = true
		}
	}
	var namespaces []string
	for ns := range nsSet {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	if len(namespaces) > 3 {
		namespaces = []string{""} // one cluster-wide LIST per kind is cheaper
	}
	return listJobs(typesToList, namespaces, nil)
}

// listMovedKinds lists, in c, every kind of the graph in the graph's namespaces, by objKey.
func listMovedKinds(ctx context.Context, c client.Reader, g *Graph) (map[string]*unstructured.Unstructured, error) {
	var mu sync.Mutex
	byKey := map[string]*unstructured.Unstructured{}
	byJob := map[int][]string{}
	err := eachListed(ctx, c, movedKindJobs(g), func(job int, items []unstructured.Unstructured, restart bool) {
		mu.Lock()
		defer mu.Unlock()
		if restart {
			for _, k := range byJob[job] {
				delete(byKey, k)
			}
			byJob[job] = nil
		}
		for i := range items {
			k := listedKey(&items[i])
			byKey[k] = &items[i]
			byJob[job] = append(byJob[job], k)
		}
	})
	if err != nil {
		return nil, err
	}
	return byKey, nil
}

// diffObject compares the target's object got with want (what the target must hold): labels,
// annotations, finalizers, owner references, and everything but metadata and status (spec,
// data). capctl's pause is not compared (it is set while the move runs and lifted at its end).
// Values are never shown: they may be Secret data.
func diffObject(want, got *unstructured.Unstructured, n *Node) []string {
	if canPause(n) {
		want, got = withoutPause(want, n), withoutPause(got, n)
	}
	var out []string
	if p := mapDiff(want.GetLabels(), got.GetLabels()); p != "" {
		out = append(out, "labels differ ("+p+")")
	}
	if p := mapDiff(want.GetAnnotations(), got.GetAnnotations()); p != "" {
		out = append(out, "annotations differ ("+p+")")
	}
	if a, b := want.GetFinalizers(), got.GetFinalizers(); !(len(a) == 0 && len(b) == 0) && !equality.Semantic.DeepEqual(a, b) {
		out = append(out, fmt.Sprintf("finalizers differ (want %v; target %v)", a, b))
	}
	if a, b := want.GetOwnerReferences(), got.GetOwnerReferences(); !(len(a) == 0 && len(b) == 0) && !equality.Semantic.DeepEqual(a, b) {
		out = append(out, fmt.Sprintf("owners differ (want %s; target %s)", owners(want), owners(got)))
	}
	if !equality.Semantic.DeepEqual(content(want), content(got)) {
		what := "spec differs"
		if n.Ref.APIVersion == "v1" {
			what = "data differs" // values are never shown
		}
		out = append(out, what)
	}
	return out
}

// withoutPause returns o with capctl's pause marks replaced by the pre-move values of n.
func withoutPause(o *unstructured.Unstructured, n *Node) *unstructured.Unstructured {
	o = o.DeepCopy()
	ann := o.GetAnnotations()
	delete(ann, MovePausedAnnotation)
	if isClusterNode(n) {
		if v, ok, _ := unstructured.NestedFieldCopy(n.Obj.Object, "spec", "paused"); ok {
			_ = unstructured.SetNestedField(o.Object, v, "spec", "paused")
		} else {
			unstructured.RemoveNestedField(o.Object, "spec", "paused")
		}
	} else {
		if _, ok := n.Obj.GetAnnotations()[PausedAnnotation]; ok {
			ann[PausedAnnotation] = n.Obj.GetAnnotations()[PausedAnnotation]
		} else {
			delete(ann, PausedAnnotation)
		}
	}
	if len(ann) == 0 {
		ann = nil
	}
	o.SetAnnotations(ann)
	return o
}

// mapDiff names the keys whose values differ ("" when equal; nil equals empty).
func mapDiff(want, got map[string]string) string {
	var keys []string
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			keys = append(keys, k)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return strings.Join(keys, ", ")
}

// content is what a move must carry over besides metadata: everything but status.
func content(o *unstructured.Unstructured) map[string]any {
	c := make(map[string]any, len(o.Object))
	for k, v := range o.Object {
		if k == "metadata" || k == "status" || k == "apiVersion" {
			continue
		}
		c[k] = v
	}
	return c
}
func owners(o *unstructured.Unstructured) string {
	var s []string
	for _, r := range o.GetOwnerReferences() {
		ctrl := ""
		if r.Controller != nil && *r.Controller {
			ctrl = "(controller)"
		}
		s = append(s, r.Kind+"/"+r.Name+ctrl)
	}
	sort.Strings(s)
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
