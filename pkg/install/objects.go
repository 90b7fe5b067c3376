package install

import (
	"context"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cluster"
)

// usualKinds are looked for when listing installed components even when no components set has
// them: an object of a kind the new release dropped must still be found and replaced.
var usualKinds = []schema.GroupVersionKind{
	{Group: "apps", Version: "v1", Kind: "Deployment"},
	{Group: "apps", Version: "v1", Kind: "DaemonSet"},
	{Version: "v1", Kind: "Service"},
	{Version: "v1", Kind: "ServiceAccount"},
	{Version: "v1", Kind: "ConfigMap"},
	{Version: "v1", Kind: "Secret"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "Role"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBinding"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRole"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "ClusterRoleBinding"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "ValidatingWebhookConfiguration"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Kind: "MutatingWebhookConfiguration"},
	{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"},
	{Group: "cert-manager.io", Version: "v1", Kind: "Issuer"},
}

// ListInstalledOptions select the installed objects ListInstalled returns.
type ListInstalledOptions struct {
	// What names the components in errors ("cluster-api", "cert-manager").
	What string
	// Selector picks the components' objects (their labels).
	Selector []client.ListOption
	// Namespace restricts namespaced kinds to one namespace ("" = every namespace).
	Namespace string
	// Skip leaves out kinds that are never replaced (CRDs, Namespaces, ...).
	Skip func(schema.GroupKind) bool
	// Command names who acts on the listing ("capctl upgrade apply") in the refusal of an
	// incomplete one.
	Command string
}

// ListInstalled lists the objects in the cluster, selected by opts, of every kind in the given
// components sets plus the usual kinds of components. Kinds the server does not serve are
// skipped: nothing of them can exist. The callers delete what it returns, so a kind the API server
// refuses to list (or cannot serve) makes it refuse with an authz.IncompleteError naming every such
// kind, once all were tried: what it did not see would stay behind, unrecorded.
func ListInstalled(ctx context.Context, c *cluster.Client, opts ListInstalledOptions, sets ...[]unstructured.Unstructured) ([]unstructured.Unstructured, error) {
	kinds := map[schema.GroupKind]schema.GroupVersionKind{}
	for _, gvk := range usualKinds {
		kinds[gvk.GroupKind()] = gvk
	}
	for _, set := range sets {
		for i := range set {
			gvk := set[i].GroupVersionKind()
			kinds[gvk.GroupKind()] = gvk
		}
	}
	gks := make([]schema.GroupKind, 0, len(kinds))
	for gk := range kinds {
		if opts.Skip == nil || !opts.Skip(gk) {
			gks = append(gks, gk)
		}
	}
	sort.Slice(gks, func(i, j int) bool { return gks[i].String() < gks[j].String() })
	var out []unstructured.Unstructured
	var unread authz.Reads
	for _, gk := range gks {
		m, err := c.Mapper.RESTMapping(gk, kinds[gk].Version)
		if err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return nil, fmt.Errorf("looking up kind %s: %w", gk, err)
		}
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(m.GroupVersionKind.GroupVersion().WithKind(m.GroupVersionKind.Kind + "List"))
		lo := append([]client.ListOption(nil), opts.Selector...)
		ns := ""
		if opts.Namespace != "" && m.Scope.Name() == meta.RESTScopeNameNamespace {
			ns = opts.Namespace
			lo = append(lo, client.InNamespace(ns))
		}
		if err := c.List(ctx, list, lo...); err != nil {
			if meta.IsNoMatchError(err) || apierrors.IsNotFound(err) {
				continue
			}
			if err := unread.Note(strings.TrimSuffix(m.Resource.Resource+"."+gk.Group, "."), ns, "list", err); err != nil {
				return nil, fmt.Errorf("listing the %s objects of %s: %w", gk.Kind, opts.What, err)
			}
			continue
		}
		out = append(out, list.Items...)
	}
	if u := unread.Unread(); u != nil {
		return nil, fmt.Errorf("listing the objects of %s: %w", opts.What, &authz.IncompleteError{Command: opts.Command, Unreadable: u})
	}
	return out, nil
}
