package move

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

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
	deadline := opts.Now().Add(opts.BlockMoveTimeout)
	for {
		type job struct {
			gvk schema.GroupVersionKind
			ns  string
		}
		jobs := map[job]bool{}
		for _, n := range blocked {
			jobs[job{n.Obj.GroupVersionKind(), n.Ref.Namespace}] = true
		}
		for j := range jobs {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(j.gvk.GroupVersion().WithKind(j.gvk.Kind + "List"))
			if err := c.List(ctx, list, client.InNamespace(j.ns)); err != nil {
				return fmt.Errorf("waiting for the block-move annotation to go: listing %s: %w", j.gvk.Kind, err)
			}
			present := map[types.UID]bool{}
			for _, o := range list.Items {
				present[o.UID] = true
				if n, ok := blocked[o.UID]; ok {
					if _, still := o.Annotations[BlockMoveAnnotation]; !still {
						delete(blocked, o.UID)
						_ = n
					}
				}
			}
			for u, n := range blocked {
				if n.Obj.GroupVersionKind() == j.gvk && n.Ref.Namespace == j.ns && !present[u] {
					return fmt.Errorf("%s disappeared from the source while the move waited for it", n.Ref)
				}
			}
		}
		if len(blocked) == 0 {
			opts.Log.Info("Every block-move annotation is gone")
			return nil
		}
		if !opts.Now().Before(deadline) {
			var names []string
			for _, n := range blocked {
				names = append(names, n.Ref.String())
			}
			sort.Strings(names)
			return fmt.Errorf("timed out after %s waiting for the %s annotation to be removed from: %s (its provider removes it once the object is paused; raise --block-move-timeout if it is slow)",
				opts.BlockMoveTimeout, BlockMoveAnnotation, strings.Join(names, ", "))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(opts.PollInterval):
		}
	}
}

// Difference is one way the target differs from the source after a move.
type Difference struct {
	Object  Ref    `json:"object"`
	Problem string `json:"problem"`
}

// Verify lists the moved kinds in the target (one LIST per kind and namespace) and compares them
// with the source objects as they were before the move: kind, name, labels, spec (or data) and
// owner structure. Secret values are compared but never printed.
func Verify(ctx context.Context, dst client.Reader, g *Graph, originals map[types.UID]*unstructured.Unstructured) ([]Difference, error) {
	byKey, err := listMovedKinds(ctx, dst, g)
	if err != nil {
		return nil, err
	}
	return compare(g, byKey, originals), nil
}

// Conflicts lists the objects of the graph that already exist in the target (same kind,
// namespace and name), excluding global objects and copies kept in the source (ClusterClasses a
// earlier --cluster move may have copied), which are adopted as they are.
func Conflicts(ctx context.Context, dst client.Reader, g *Graph) ([]Ref, error) {
	byKey, err := listMovedKinds(ctx, dst, g)
	if err != nil {
		return nil, err
	}
	var out []Ref
	for _, n := range g.Moved() {
		if !n.Global && !n.KeepInSource && byKey[objKey(n)] != nil {
			out = append(out, n.Ref)
		}
	}
	return out, nil
}

func objKey(n *Node) string {
	return n.Obj.GroupVersionKind().GroupKind().String() + "/" + n.Ref.Namespace + "/" + n.Ref.Name
}

// listMovedKinds lists, in c, every kind of the graph in the graph's namespaces.
func listMovedKinds(ctx context.Context, dst client.Reader, g *Graph) (map[string]*unstructured.Unstructured, error) {
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
	objs, err := listAll(ctx, dst, typesToList, namespaces, nil)
	if err != nil {
		return nil, err
	}
	byKey := make(map[string]*unstructured.Unstructured, len(objs))
	for i := range objs {
		o := &objs[i]
		byKey[o.GroupVersionKind().GroupKind().String()+"/"+o.GetNamespace()+"/"+o.GetName()] = o
	}
	return byKey, nil
}

func compare(g *Graph, byKey map[string]*unstructured.Unstructured, originals map[types.UID]*unstructured.Unstructured) []Difference {
	var diffs []Difference
	for _, n := range g.Moved() {
		src := originals[n.Ref.UID]
		if src == nil {
			src = n.Obj
		}
		got := byKey[objKey(n)]
		if got == nil {
			diffs = append(diffs, Difference{Object: n.Ref, Problem: "missing in the target"})
			continue
		}
		if !equality.Semantic.DeepEqual(src.GetLabels(), got.GetLabels()) && !(len(src.GetLabels()) == 0 && len(got.GetLabels()) == 0) {
			diffs = append(diffs, Difference{Object: n.Ref, Problem: "labels differ"})
		}
		if a, b := content(src, isClusterNode(n) && !n.UserPaused), content(got, isClusterNode(n) && !n.UserPaused); !equality.Semantic.DeepEqual(a, b) {
			what := "spec differs"
			if n.Ref.APIVersion == "v1" {
				what = "data differs" // values are never shown
			}
			diffs = append(diffs, Difference{Object: n.Ref, Problem: what})
		}
		if a, b := owners(src), owners(got); a != b {
			diffs = append(diffs, Difference{Object: n.Ref, Problem: fmt.Sprintf("owners differ (source: %s; target: %s)", a, b)})
		}
	}
	return diffs
}

// content is what a move must carry over: everything but metadata and status. A pause capctl set
// and lifted is not a difference.
func content(o *unstructured.Unstructured, dropPaused bool) map[string]any {
	c := make(map[string]any, len(o.Object))
	for k, v := range o.Object {
		if k == "metadata" || k == "status" || k == "apiVersion" {
			continue
		}
		c[k] = v
	}
	if spec, ok := c["spec"].(map[string]any); ok && dropPaused {
		if _, ok := spec["paused"]; ok {
			spec = runtimeCopy(spec)
			delete(spec, "paused")
			c["spec"] = spec
		}
	}
	return c
}

func runtimeCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
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
