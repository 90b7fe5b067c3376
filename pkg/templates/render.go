package templates

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/repository"
	"github.com/capctl/capctl/pkg/variables"
)

// ClusterClassGVK is the ClusterClass kind looked up in a management cluster.
var ClusterClassGVK = schema.GroupVersionKind{Group: contract.Group, Version: "v1beta2", Kind: "ClusterClass"}

// ClassRef names a ClusterClass.
type ClassRef struct {
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
}

func (c ClassRef) String() string { return c.Namespace + "/" + c.Name }

// Input is one rendering.
type Input struct {
	// Name is where the template came from (file, URL, provider file), for messages.
	Name string
	// Template is the raw template text.
	Template []byte
	// TargetNamespace is given to every namespaced object (clusterctl's rule: it replaces the
	// namespace a template sets). Empty leaves namespaces as they are.
	TargetNamespace string
	// Lookup gives variable values; nil means none is set.
	Lookup variables.Lookup
	// ListOnly lists the variables without substituting (missing variables are no error).
	ListOnly bool
	// ClusterClass fetches clusterclass-<name>.yaml of the template's provider version. Nil: no
	// ClusterClass inclusion (templates given with --from, as in clusterctl).
	ClusterClass func(ctx context.Context, name string) ([]byte, string, error)
	// Cluster, when a management cluster is reachable, is asked whether a referenced ClusterClass
	// already exists (then it is not emitted) and whether the objects of an included one exist.
	Cluster client.Reader
}

// Result is a rendered template.
type Result struct {
	// Objects in output order: included ClusterClass files first (a Cluster needs its class),
	// then the template's objects in document order.
	Objects []unstructured.Unstructured
	// Variables of every document used (ClusterClass files first, as clusterctl merges them);
	// for a name in several documents, the first non-empty default wins.
	Variables []variables.Variable
	// IncludedClasses were fetched and emitted; ExistingClasses were found in the cluster.
	IncludedClasses []ClassRef
	ExistingClasses []ClassRef
}

// Render substitutes, parses and post-processes a cluster template. Missing variables of the
// template and of its ClusterClass files are reported together in one *variables.MissingError.
func Render(ctx context.Context, in Input) (*Result, error) {
	tvars, err := variables.List(in.Template)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", in.Name, err)
	}
	var missing []string
	objs, perr := processAndParse(in.Name, in.Template, in.Lookup, in.ListOnly)
	var me *variables.MissingError
	switch {
	case errors.As(perr, &me):
		missing = append(missing, me.Names...)
		// Still look for ClusterClasses in the raw text so that their variables are reported too.
		objs, _ = repository.ParseObjects(in.Name, in.Template)
	case perr != nil:
		return nil, perr
	}
	if in.TargetNamespace != "" {
		FixNamespace(objs, in.TargetNamespace)
	}
	res := &Result{}
	var classObjs []unstructured.Unstructured
	var classVars [][]variables.Variable
	if in.ClusterClass != nil {
		for _, ref := range ClassRefs(objs, in.TargetNamespace) {
			if strings.Contains(ref.Name, "${") || strings.Contains(ref.Namespace, "${") {
				continue // only known in the raw text, when variables are missing
			}
			if in.Cluster != nil {
				exists, err := objectExists(ctx, in.Cluster, ClusterClassGVK, ref.Namespace, ref.Name)
				if err != nil {
					return nil, fmt.Errorf("checking whether ClusterClass %s exists in the management cluster: %w", ref, err)
				}
				if exists {
					res.ExistingClasses = append(res.ExistingClasses, ref)
					continue
				}
			}
			raw, name, err := in.ClusterClass(ctx, ref.Name)
			if err != nil {
				return nil, fmt.Errorf("getting the ClusterClass %q the template uses: %w", ref, err)
			}
			vs, err := variables.List(raw)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			classVars = append(classVars, vs)
			cobjs, err := processAndParse(name, raw, in.Lookup, in.ListOnly)
			if errors.As(err, &me) {
				missing = append(missing, me.Names...)
				continue
			} else if err != nil {
				return nil, err
			}
			FixNamespace(cobjs, ref.Namespace)
			if !in.ListOnly {
				if in.Cluster != nil {
					for _, o := range cobjs {
						exists, err := objectExists(ctx, in.Cluster, o.GroupVersionKind(), o.GetNamespace(), o.GetName())
						if err != nil {
							return nil, fmt.Errorf("checking whether %s %s/%s exists: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err)
						}
						if exists {
							return nil, fmt.Errorf("%s/%s (%s) of %s already exists in the cluster, but ClusterClass %s does not: delete it or create the ClusterClass first", o.GetNamespace(), o.GetName(), o.GroupVersionKind(), name, ref)
						}
					}
				}
			}
			res.IncludedClasses = append(res.IncludedClasses, ref)
			classObjs = append(classObjs, cobjs...)
		}
	}
	res.Variables = MergeVariables(append(classVars, tvars)...)
	if len(missing) > 0 && !in.ListOnly {
		return res, &variables.MissingError{Names: sortedUnique(missing)}
	}
	if !in.ListOnly {
		res.Objects = append(classObjs, objs...)
	}
	return res, nil
}

func processAndParse(name string, text []byte, lookup variables.Lookup, listOnly bool) ([]unstructured.Unstructured, error) {
	if listOnly {
		// Best effort: the raw text may not parse before substitution.
		objs, _ := repository.ParseObjects(name, text)
		return objs, nil
	}
	out, err := variables.Process(text, lookup)
	if err != nil {
		var me *variables.MissingError
		if errors.As(err, &me) {
			return nil, err
		}
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	objs, err := repository.ParseObjects(name, out)
	if err != nil {
		return nil, fmt.Errorf("after variable substitution: %w", err)
	}
	return objs, nil
}

func sortedUnique(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

// MergeVariables unions variable lists in order: a name keeps its first position; the first
// non-empty default wins and a variable is required only when no list gives it a default.
func MergeVariables(lists ...[]variables.Variable) []variables.Variable {
	index := map[string]int{}
	var out []variables.Variable
	for _, l := range lists {
		for _, v := range l {
			i, ok := index[v.Name]
			if !ok {
				index[v.Name] = len(out)
				out = append(out, v)
				continue
			}
			cur := &out[i]
			if cur.Required && !v.Required {
				cur.Required, cur.Default, cur.HasDefault = false, v.Default, v.HasDefault
			}
			cur.Nested = cur.Nested && v.Nested
		}
	}
	return out
}

// ClassRefs returns the ClusterClasses the template's Clusters use (v1beta2
// spec.topology.classRef.{name,namespace}, v1beta1 spec.topology.{class,classNamespace}); the
// namespace defaults to the Cluster's, then to defaultNamespace. Each class once, in order.
func ClassRefs(objs []unstructured.Unstructured, defaultNamespace string) []ClassRef {
	var out []ClassRef
	seen := map[ClassRef]bool{}
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if gvk.Group != contract.Group || gvk.Kind != "Cluster" {
			continue
		}
		var name, ns string
		switch gvk.Version {
		case "v1beta1":
			name, _, _ = unstructured.NestedString(o.Object, "spec", "topology", "class")
			ns, _, _ = unstructured.NestedString(o.Object, "spec", "topology", "classNamespace")
		default:
			name, _, _ = unstructured.NestedString(o.Object, "spec", "topology", "classRef", "name")
			ns, _, _ = unstructured.NestedString(o.Object, "spec", "topology", "classRef", "namespace")
		}
		if name == "" {
			continue
		}
		if ns == "" {
			ns = o.GetNamespace()
		}
		if ns == "" {
			ns = defaultNamespace
		}
		ref := ClassRef{Name: name, Namespace: ns}
		if !seen[ref] {
			seen[ref] = true
			out = append(out, ref)
		}
	}
	return out
}

// FixNamespace moves template objects into ns as clusterctl does: Namespace objects are renamed,
// every object of a namespaced kind (clusterctl's kind-name heuristic) gets ns, and subjects of
// (Cluster)RoleBindings that name a namespace point to ns.
func FixNamespace(objs []unstructured.Unstructured, ns string) {
	for i := range objs {
		o := &objs[i]
		kind := o.GetKind()
		if kind == "Namespace" {
			o.SetName(ns)
		}
		if repository.IsNamespaced(kind) {
			o.SetNamespace(ns)
		}
		if kind == "RoleBinding" || kind == "ClusterRoleBinding" {
			subjects, ok, _ := unstructured.NestedSlice(o.Object, "subjects")
			if !ok {
				continue
			}
			for _, s := range subjects {
				if m, ok := s.(map[string]any); ok {
					if v, _ := m["namespace"].(string); v != "" {
						m["namespace"] = ns
					}
				}
			}
			_ = unstructured.SetNestedSlice(o.Object, subjects, "subjects")
		}
	}
}

func objectExists(ctx context.Context, c client.Reader, gvk schema.GroupVersionKind, ns, name string) (bool, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err), meta.IsNoMatchError(err):
		// No such object, or Cluster API (that kind) is not installed.
		return false, nil
	}
	return false, err
}
