package topologyengine

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/cluster-api/util/index"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// ErrWrite is returned for every write the engine's clients are asked to make that is not a dry
// run: the plan is read-only by construction, not by convention.
var ErrWrite = errors.New("topology plan is read-only: a write was refused")

type objectKey struct {
	gk        schema.GroupKind
	namespace string
	name      string
}

func keyOf(u *unstructured.Unstructured) objectKey {
	return objectKey{gk: u.GroupVersionKind().GroupKind(), namespace: u.GetNamespace(), name: u.GetName()}
}

// view reads the planned objects where they exist and the live API server for everything else,
// so upstream code sees the management cluster as it would be after the change was applied.
type view struct {
	live    client.Reader
	scheme  *runtime.Scheme
	planned map[objectKey]*unstructured.Unstructured
}

func newView(live client.Reader, scheme *runtime.Scheme, planned []*unstructured.Unstructured) *view {
	v := &view{live: live, scheme: scheme, planned: map[objectKey]*unstructured.Unstructured{}}
	for _, u := range planned {
		v.planned[keyOf(u)] = u
	}
	return v
}

func (v *view) gvkOf(obj runtime.Object) (schema.GroupVersionKind, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		return u.GroupVersionKind(), nil
	}
	if u, ok := obj.(*unstructured.UnstructuredList); ok {
		return u.GroupVersionKind(), nil
	}
	return apiutil.GVKForObject(obj, v.scheme)
}

// into copies a planned object into obj, converting to a typed object where obj is one.
func (v *view) into(u *unstructured.Unstructured, obj runtime.Object) error {
	if out, ok := obj.(*unstructured.Unstructured); ok {
		u.DeepCopyInto(out)
		return nil
	}
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.UnstructuredContent(), obj)
}

func (v *view) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	gvk, err := v.gvkOf(obj)
	if err != nil {
		return err
	}
	if u, ok := v.planned[objectKey{gk: gvk.GroupKind(), namespace: key.Namespace, name: key.Name}]; ok {
		return v.into(u, obj)
	}
	return v.live.Get(ctx, key, obj, opts...)
}

// List lists the live objects and puts the planned ones in (replacing those of the same name).
// The one field selector upstream uses (Clusters by ClusterClass, a controller cache index the
// API server does not serve) is evaluated here.
func (v *view) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	fieldSel := lo.FieldSelector
	if fieldSel != nil && !fieldSel.Empty() {
		if _, ok := fieldSel.RequiresExactMatch(index.ClusterClassRefPath); !ok {
			return fmt.Errorf("topology plan: field selector %q is not supported", fieldSel)
		}
		lo.FieldSelector = nil
	}
	if err := v.live.List(ctx, list, lo); err != nil {
		return err
	}
	listGVK, err := v.gvkOf(list)
	if err != nil {
		return err
	}
	gk := schema.GroupKind{Group: listGVK.Group, Kind: trimList(listGVK.Kind)}
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	var out []runtime.Object
	seen := map[objectKey]bool{}
	for _, it := range items {
		o, ok := it.(client.Object)
		if !ok {
			continue
		}
		k := objectKey{gk: gk, namespace: o.GetNamespace(), name: o.GetName()}
		seen[k] = true
		if p, ok := v.planned[k]; ok {
			if it, err = v.plannedItem(p, it); err != nil {
				return err
			}
		}
		out = append(out, it)
	}
	for k, p := range v.planned {
		if k.gk != gk || seen[k] || !matches(p, lo) {
			continue
		}
		it, err := v.plannedItem(p, newItem(items, list))
		if err != nil {
			return err
		}
		out = append(out, it)
	}
	if fieldSel != nil && !fieldSel.Empty() {
		out = filterClusterClassRef(out, fieldSel)
	}
	return meta.SetList(list, out)
}

func trimList(kind string) string {
	if len(kind) > 4 && kind[len(kind)-4:] == "List" {
		return kind[:len(kind)-4]
	}
	return kind
}

// newItem is an empty item of list's element type.
func newItem(items []runtime.Object, list client.ObjectList) runtime.Object {
	if len(items) > 0 {
		return items[0].DeepCopyObject()
	}
	if _, ok := list.(*unstructured.UnstructuredList); ok {
		return &unstructured.Unstructured{}
	}
	if _, ok := list.(*clusterv1.ClusterList); ok {
		return &clusterv1.Cluster{}
	}
	if _, ok := list.(*clusterv1.MachineDeploymentList); ok {
		return &clusterv1.MachineDeployment{}
	}
	if _, ok := list.(*clusterv1.MachinePoolList); ok {
		return &clusterv1.MachinePool{}
	}
	return &unstructured.Unstructured{}
}

func (v *view) plannedItem(p *unstructured.Unstructured, like runtime.Object) (runtime.Object, error) {
	it := like.DeepCopyObject()
	if u, ok := it.(*unstructured.Unstructured); ok {
		u.Object = nil
	}
	if err := v.into(p, it); err != nil {
		return nil, fmt.Errorf("planned %s %s/%s: %w", p.GetKind(), p.GetNamespace(), p.GetName(), err)
	}
	return it, nil
}

func matches(u *unstructured.Unstructured, lo *client.ListOptions) bool {
	if lo.Namespace != "" && u.GetNamespace() != lo.Namespace {
		return false
	}
	if lo.LabelSelector != nil && !lo.LabelSelector.Matches(labels.Set(u.GetLabels())) {
		return false
	}
	return true
}

func filterClusterClassRef(items []runtime.Object, sel fields.Selector) []runtime.Object {
	want, _ := sel.RequiresExactMatch(index.ClusterClassRefPath)
	var out []runtime.Object
	for _, it := range items {
		c, ok := it.(*clusterv1.Cluster)
		if !ok {
			continue
		}
		for _, ref := range index.ClusterByClusterClassRef(c) {
			if ref == want {
				out = append(out, it)
				break
			}
		}
	}
	return out
}

// readOnly is the client.Client handed to upstream code: reads go through the view, a
// server-side apply is sent only as a dry run, and every other write is refused with ErrWrite.
type readOnly struct {
	client.Client // the live API server: scheme, REST mapper, dry-run applies
	view          *view
}

func (r *readOnly) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return r.view.Get(ctx, key, obj, opts...)
}

func (r *readOnly) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.view.List(ctx, list, opts...)
}

func (r *readOnly) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	ao := &client.ApplyOptions{}
	ao.ApplyOptions(opts)
	if len(ao.DryRun) != 1 || ao.DryRun[0] != "All" {
		return fmt.Errorf("%w (server-side apply without dry run)", ErrWrite)
	}
	return r.Client.Apply(ctx, obj, opts...)
}

func (r *readOnly) Create(context.Context, client.Object, ...client.CreateOption) error {
	return fmt.Errorf("%w (create)", ErrWrite)
}

func (r *readOnly) Update(context.Context, client.Object, ...client.UpdateOption) error {
	return fmt.Errorf("%w (update)", ErrWrite)
}

func (r *readOnly) Patch(context.Context, client.Object, client.Patch, ...client.PatchOption) error {
	return fmt.Errorf("%w (patch)", ErrWrite)
}

func (r *readOnly) Delete(context.Context, client.Object, ...client.DeleteOption) error {
	return fmt.Errorf("%w (delete)", ErrWrite)
}

func (r *readOnly) DeleteAllOf(context.Context, client.Object, ...client.DeleteAllOfOption) error {
	return fmt.Errorf("%w (deletecollection)", ErrWrite)
}

func (r *readOnly) Status() client.SubResourceWriter { return refusedSubResource{} }

func (r *readOnly) SubResource(string) client.SubResourceClient { return refusedSubResource{} }

type refusedSubResource struct{}

func (refusedSubResource) Get(context.Context, client.Object, client.Object, ...client.SubResourceGetOption) error {
	return fmt.Errorf("%w (subresource get)", ErrWrite)
}

func (refusedSubResource) Create(context.Context, client.Object, client.Object, ...client.SubResourceCreateOption) error {
	return fmt.Errorf("%w (subresource create)", ErrWrite)
}

func (refusedSubResource) Update(context.Context, client.Object, ...client.SubResourceUpdateOption) error {
	return fmt.Errorf("%w (subresource update)", ErrWrite)
}

func (refusedSubResource) Patch(context.Context, client.Object, client.Patch, ...client.SubResourcePatchOption) error {
	return fmt.Errorf("%w (subresource patch)", ErrWrite)
}

func (refusedSubResource) Apply(context.Context, runtime.ApplyConfiguration, ...client.SubResourceApplyOption) error {
	return fmt.Errorf("%w (subresource apply)", ErrWrite)
}
