package deletion

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/inventory"
)

// componentSelector selects clusterctl-managed objects of the selected providers, or every
// clusterctl-managed object when cert-manager's are needed too (still one LIST per type).
func componentSelector(selected []inventory.Provider, withCertManager bool) (labels.Selector, error) {
	managed, err := labels.NewRequirement(inventory.ClusterctlLabel, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	sel := labels.NewSelector().Add(*managed)
	if withCertManager {
		return sel, nil
	}
	var names []string
	for _, p := range selected {
		names = append(names, p.ManifestLabel())
	}
	byProvider, err := labels.NewRequirement(inventory.ProviderLabel, selection.In, names)
	if err != nil {
		return nil, err
	}
	return sel.Add(*byProvider), nil
}

// listableTypes returns the preferred version of every type that supports list and delete,
// minus provider CRD kinds and event types (never components).
func listableTypes(d discovery.DiscoveryInterface, excluded map[schema.GroupResource]bool) ([]apiType, []authz.Unreadable, error) {
	lists, err := d.ServerPreferredResources()
	var unlisted []authz.Unreadable
	if err != nil {
		var gdf *discovery.ErrGroupDiscoveryFailed
		if !errors.As(err, &gdf) {
			return nil, nil, fmt.Errorf("discovering the API types of the management cluster: %w", err)
		}
		// A group that cannot be discovered hides its kinds: the search would be incomplete.
		for gv, e := range gdf.Groups {
			unlisted = append(unlisted, authz.NewUnreadable("*."+gv.Group, "", "get (discovery of "+gv.String()+")", e))
		}
	}
	lists = discovery.FilteredBy(discovery.SupportsAllVerbs{Verbs: []string{"list", "delete"}}, lists)
	var out []apiType
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || r.Name == "events" {
				continue
			}
			if excluded[schema.GroupResource{Group: gv.Group, Resource: r.Name}] {
				continue
			}
			out = append(out, apiType{gvk: gv.WithKind(r.Kind), resource: r.Name, namespaced: r.Namespaced})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].gvk.String() < out[j].gvk.String() })
	return out, unlisted, nil
}

// listAll lists every type once (all namespaces, metadata only) with the selector, in parallel.
// A kind the server refuses or fails to list is recorded (authz.Reads) and the others are still
// listed, so the refusal names all that could not be; an error that is not about one kind (a
// bad credential, an unreachable server) is returned.
func listAll(ctx context.Context, c client.Client, types []apiType, sel labels.Selector, concurrency int) ([]listedObject, []authz.Unreadable, error) {
	var (
		mu    sync.Mutex
		found []listedObject
		reads authz.Reads
		g     errgroup.Group
	)
	g.SetLimit(concurrency)
	for _, t := range types {
		g.Go(func() error {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(t.gvk.GroupVersion().WithKind(t.gvk.Kind + "List"))
			ok, err := reads.List(ctx, c, list, client.MatchingLabelsSelector{Selector: sel})
			if !ok || err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for _, it := range list.Items {
				found = append(found, listedObject{
					Object:     Object{GVK: t.gvk, Kind: t.gvk.Kind, Namespace: it.Namespace, Name: it.Name},
					labels:     it.Labels,
					namespaced: t.namespaced,
				})
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, fmt.Errorf("listing the components: %w", err)
	}
	sort.Slice(found, func(i, j int) bool { return found[i].String() < found[j].String() })
	return found, reads.Unread(), nil
}

// checkNoObjects refuses --include-crd while objects of the selected providers' CRDs exist
// (listed at the storage version, so no conversion webhook is needed), for all providers at once.
func checkNoObjects(ctx context.Context, c client.Client, crds []apiextensionsv1.CustomResourceDefinition, selected map[string]inventory.Provider, concurrency int) error {
	var (
		mu     sync.Mutex
		counts = map[string]map[string]int{}
		errs   []error
		g      errgroup.Group
	)
	g.SetLimit(concurrency)
	for i := range crds {
		crd := &crds[i]
		label := crd.Labels[inventory.ProviderLabel]
		if _, ok := selected[label]; !ok {
			continue
		}
		storage := contract.StorageVersion(crd)
		if storage == "" {
			continue
		}
		g.Go(func() error {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(schema.GroupVersionKind{Group: crd.Spec.Group, Version: storage, Kind: crd.Spec.Names.ListKind})
			err := c.List(ctx, list)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, fmt.Errorf("counting %s objects before deleting CRD %s: %w", crd.Spec.Names.Kind, crd.Name, err))
				return nil // every CRD is counted, so the error names all that could not be
			}
			if n := len(list.Items); n > 0 {
				if counts[label] == nil {
					counts[label] = map[string]int{}
				}
				counts[label][crd.Spec.Names.Kind] += n
			}
			return nil
		})
	}
	_ = g.Wait()
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if len(counts) > 0 {
		return &ExistingObjectsError{Counts: counts}
	}
	return nil
}
