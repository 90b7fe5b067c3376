package topologyengine

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clusterv1 "sigs.k8s.io/cluster-api/api/core/v1beta2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// cachedReader keeps a plan's reads O(kinds): what every cluster of a class reads again (the
// class's templates, the CRDs upstream resolves contract versions from) is read once, and the
// per-cluster kinds upstream lists or gets by name (MachineDeployments, MachinePools, Machines,
// MachineHealthChecks, and the providers' objects: control planes, infrastructure clusters,
// the templates rotated per cluster) are listed once per namespace and served from memory. A plan is one pass over a point in time; nothing here outlives it.
type cachedReader struct {
	live   client.Reader
	scheme *runtime.Scheme

	mu      sync.Mutex
	objects map[string]*once
}

type once struct {
	sync.Once
	obj runtime.Object
	err error
}

// listedKinds are read as one list per namespace.
var listedKinds = map[string]func() client.ObjectList{
	"MachineDeployment":  func() client.ObjectList { return &clusterv1.MachineDeploymentList{} },
	"MachinePool":        func() client.ObjectList { return &clusterv1.MachinePoolList{} },
	"Machine":            func() client.ObjectList { return &clusterv1.MachineList{} },
	"MachineHealthCheck": func() client.ObjectList { return &clusterv1.MachineHealthCheckList{} },
}

func newCachedReader(live client.Reader, scheme *runtime.Scheme) *cachedReader {
	return &cachedReader{live: live, scheme: scheme, objects: map[string]*once{}}
}

func (r *cachedReader) entry(key string) *once {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.objects[key]
	if !ok {
		e = &once{}
		r.objects[key] = e
	}
	return e
}

func (r *cachedReader) gvk(obj runtime.Object) (schema.GroupVersionKind, error) {
	if k := obj.GetObjectKind().GroupVersionKind(); k.Kind != "" {
		return k, nil
	}
	return apiutil.GVKForObject(obj, r.scheme)
}

// shared reports whether every cluster may read this object: a template or a CRD.
func shared(k schema.GroupVersionKind) bool {
	return k.Group == "apiextensions.k8s.io" || strings.HasSuffix(k.Kind, "Template")
}

func (r *cachedReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	k, err := r.gvk(obj)
	if err != nil {
		return err
	}
	if newList, ok := listedKinds[k.Kind]; ok && k.Group == clusterv1.GroupVersion.Group {
		return r.getFromList(ctx, k, key, obj, newList)
	}
	if _, ok := obj.(*unstructured.Unstructured); ok && key.Namespace != "" && len(opts) == 0 {
		// A provider's object (control plane, infrastructure cluster, the class's templates and
		// those rotated per cluster): one list of the kind per namespace, not a get per object.
		return r.getFromList(ctx, k, key, obj, func() client.ObjectList {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(k.GroupVersion().WithKind(k.Kind + "List"))
			return l
		})
	}
	if !shared(k) {
		return r.live.Get(ctx, key, obj, opts...)
	}
	e := r.entry(fmt.Sprintf("get %T %s %s", obj, k, key))
	e.Do(func() {
		o := obj.DeepCopyObject().(client.Object)
		e.err = r.live.Get(ctx, key, o, opts...)
		e.obj = o
	})
	if e.err != nil && !apierrors.IsNotFound(e.err) {
		r.forget(fmt.Sprintf("get %T %s %s", obj, k, key))
		return e.err
	}
	if e.err != nil {
		return e.err
	}
	return assign(obj, e.obj)
}

func (r *cachedReader) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.objects, key)
}

// assign copies src into dst (both pointers to the same type).
func assign(dst, src runtime.Object) error {
	dv, sv := reflect.ValueOf(dst), reflect.ValueOf(src.DeepCopyObject())
	if dv.Type() != sv.Type() {
		return fmt.Errorf("cached %T read into %T", src, dst)
	}
	dv.Elem().Set(sv.Elem())
	return nil
}

// namespaceList is every object of one listed kind in a namespace, read once.
func (r *cachedReader) namespaceList(ctx context.Context, k schema.GroupVersionKind, ns string, newList func() client.ObjectList) ([]runtime.Object, error) {
	key := fmt.Sprintf("list %T %s %s", newList(), k.GroupKind(), ns)
	e := r.entry(key)
	e.Do(func() {
		l := newList()
		e.err = r.live.List(ctx, l, client.InNamespace(ns))
		e.obj = l
	})
	if e.err != nil {
		r.forget(key)
		return nil, e.err
	}
	return meta.ExtractList(e.obj)
}

func (r *cachedReader) getFromList(ctx context.Context, k schema.GroupVersionKind, key client.ObjectKey, obj client.Object, newList func() client.ObjectList) error {
	items, err := r.namespaceList(ctx, k, key.Namespace, newList)
	if err != nil {
		return err
	}
	for _, it := range items {
		if o := it.(client.Object); o.GetName() == key.Name {
			return assign(obj, it)
		}
	}
	return apierrors.NewNotFound(schema.GroupResource{Group: k.Group, Resource: strings.ToLower(k.Kind) + "s"}, key.Name)
}

func (r *cachedReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	k, err := r.gvk(list)
	if err != nil {
		return err
	}
	kind := strings.TrimSuffix(k.Kind, "List")
	newList, ok := listedKinds[kind]
	lo := &client.ListOptions{}
	lo.ApplyOptions(opts)
	if !ok || k.Group != clusterv1.GroupVersion.Group || lo.Namespace == "" || lo.FieldSelector != nil || reflect.TypeOf(list) != reflect.TypeOf(newList()) {
		return r.live.List(ctx, list, opts...)
	}
	items, err := r.namespaceList(ctx, k, lo.Namespace, newList)
	if err != nil {
		return err
	}
	sel := lo.LabelSelector
	if sel == nil {
		sel = labels.Everything()
	}
	var out []runtime.Object
	for _, it := range items {
		if sel.Matches(labels.Set(it.(client.Object).GetLabels())) {
			out = append(out, it.DeepCopyObject())
		}
	}
	return meta.SetList(list, out)
}
