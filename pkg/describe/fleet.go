package describe

import (
	"context"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/contract"
)

// FetchFleet reads the snapshot of every cluster of a namespace (or of all namespaces with
// opts.AllNamespaces), as Fetch reads one cluster's without grouping (every machine's objects),
// with one list per kind for the whole fleet instead of one per kind and cluster: the Clusters,
// the Machines, MachineDeployments, MachineSets, MachinePools and MachineHealthChecks, and each
// referenced kind (infrastructure, control plane, bootstrap configs). The requests do not grow
// with the number of clusters. Snapshots come sorted by namespace, then name.
//
// A referenced object that the list of its kind does not hold is reported missing, with the
// message Fetch gives for it; a reference to another namespace than the listed one is read by GET.
func FetchFleet(ctx context.Context, c Reader, opts SummaryRequest) ([]*Snapshot, error) {
	d, clusterGVK, ns, err := fleetScope(c, opts)
	if err != nil {
		return nil, err
	}
	var clusters, machines, mds, mss, mps, mhcs []unstructured.Unstructured
	g, gctx := errgroup.WithContext(ctx)
	// As in Fetch, a kind the server refuses leaves its part of every snapshot empty and is named
	// in each (Snapshot.Unread); the Clusters themselves must be readable.
	var reads authz.Reads
	listInto := func(dst *[]unstructured.Unstructured, kind string) {
		g.Go(func() error {
			items, err := d.list(gctx, contract.Group, kind, ns, nil)
			*dst = items
			if authz.Tolerable(err) {
				reads.Add(authz.FromError(ns, err))
				return nil
			}
			return err
		})
	}
	g.Go(func() error {
		items, err := d.listGVK(gctx, clusterGVK, ns, nil)
		clusters = items
		return err
	})
	listInto(&machines, "Machine")
	listInto(&mds, "MachineDeployment")
	listInto(&mss, "MachineSet")
	listInto(&mps, "MachinePool")
	listInto(&mhcs, "MachineHealthCheck")
	if err := g.Wait(); err != nil {
		return nil, err
	}
	if err := d.namespaceExists(ctx, clusterGVK, clusters, opts); err != nil {
		return nil, err
	}

	type clusterKey struct{ namespace, name string }
	snaps := make([]*Snapshot, 0, len(clusters))
	byKey := map[clusterKey]*Snapshot{}
	unread := reads.Unread()
	for i := range clusters {
		s := &Snapshot{ServedVersion: clusterGVK.Version, Cluster: &clusters[i], Unread: unread}
		snaps = append(snaps, s)
		byKey[clusterKey{clusters[i].GetNamespace(), clusters[i].GetName()}] = s
	}
	// Each list is sorted by name, so each cluster's share of it is too (as Fetch's lists are).
	split := func(items []unstructured.Unstructured, field func(*Snapshot) *[]unstructured.Unstructured) {
		for i := range items {
			if s, ok := byKey[clusterKey{items[i].GetNamespace(), items[i].GetLabels()[clusterNameLabel]}]; ok {
				dst := field(s)
				*dst = append(*dst, items[i])
			}
		}
	}
	split(machines, func(s *Snapshot) *[]unstructured.Unstructured { return &s.Machines })
	split(mds, func(s *Snapshot) *[]unstructured.Unstructured { return &s.MachineDeployments })
	split(mss, func(s *Snapshot) *[]unstructured.Unstructured { return &s.MachineSets })
	split(mps, func(s *Snapshot) *[]unstructured.Unstructured { return &s.MachinePools })
	// A namespace's MachineHealthChecks belong to each of its clusters' snapshots, as in Fetch.
	mhcsOf := map[string][]unstructured.Unstructured{}
	for i := range mhcs {
		mhcsOf[mhcs[i].GetNamespace()] = append(mhcsOf[mhcs[i].GetNamespace()], mhcs[i])
	}
	for _, s := range snaps {
		s.MachineHealthChecks = mhcsOf[s.Cluster.GetNamespace()]
	}

	// The references of every snapshot, the same Fetch follows without grouping.
	refsOf := make([][]ref, len(snaps))
	var all []ref
	for i, s := range snaps {
		refsOf[i] = snapshotRefs(s)
		all = append(all, refsOf[i]...)
	}
	objs := d.fetchKinds(ctx, all, ns)
	for i, s := range snaps {
		mine := map[objKey]fetched{}
		for _, r := range refsOf[i] {
			if r.defined() {
				mine[keyOf(r)] = objs[keyOf(r)]
			}
		}
		s.Referenced = referencedFrom(mine)
	}
	sort.SliceStable(snaps, func(i, j int) bool {
		a, b := snaps[i].Cluster, snaps[j].Cluster
		if a.GetNamespace() != b.GetNamespace() {
			return a.GetNamespace() < b.GetNamespace()
		}
		return a.GetName() < b.GetName()
	})
	return snaps, nil
}

// snapshotRefs are the objects an ungrouped Fetch reads for a snapshot's references: the
// Cluster's infrastructure and control plane, each machine's and pool's infrastructure and
// bootstrap config.
func snapshotRefs(s *Snapshot) []ref {
	ns := s.Cluster.GetNamespace()
	out := []ref{readRef(s.Cluster.Object, ns, "spec", "infrastructureRef"), readRef(s.Cluster.Object, ns, "spec", "controlPlaneRef")}
	for i := range s.Machines {
		m := s.Machines[i].Object
		out = append(out, readRef(m, ns, "spec", "infrastructureRef"), readRef(m, ns, "spec", "bootstrap", "configRef"))
	}
	for i := range s.MachinePools {
		m := s.MachinePools[i].Object
		out = append(out, readRef(m, ns, "spec", "template", "spec", "infrastructureRef"), readRef(m, ns, "spec", "template", "spec", "bootstrap", "configRef"))
	}
	return out
}

// fleetKindLimit bounds the referenced kinds listed at once.
const fleetKindLimit = 4

// fetchKinds reads referenced objects with one list per kind (and version) over namespace (""
// for all namespaces). References outside a single listed namespace are read by GET.
func (d *discoverer) fetchKinds(ctx context.Context, refs []ref, namespace string) map[objKey]fetched {
	type bucketKey struct {
		gk      schema.GroupKind
		version string
	}
	buckets := map[bucketKey][]ref{}
	var elsewhere []ref
	for _, r := range refs {
		if !r.defined() {
			continue
		}
		if namespace != "" && r.Namespace != namespace {
			elsewhere = append(elsewhere, r)
			continue
		}
		k := bucketKey{gk: r.gk(), version: r.Version}
		buckets[k] = append(buckets[k], r)
	}
	out := map[objKey]fetched{}
	var mu sync.Mutex
	set := func(r ref, f fetched) {
		mu.Lock()
		out[keyOf(r)] = f
		mu.Unlock()
	}
	var g errgroup.Group
	g.SetLimit(fleetKindLimit)
	for _, rs := range buckets {
		g.Go(func() error {
			gvk, err := d.resolve(ctx, rs[0])
			if err == nil {
				var items []unstructured.Unstructured
				if items, err = d.listGVK(ctx, gvk, namespace, nil); err == nil {
					byName := make(map[objKey]*unstructured.Unstructured, len(items))
					for i := range items {
						byName[objKey{gk: rs[0].gk(), namespace: items[i].GetNamespace(), name: items[i].GetName()}] = &items[i]
					}
					for _, r := range rs {
						if o, ok := byName[keyOf(r)]; ok {
							set(r, fetched{obj: o})
						} else {
							set(r, fetched{err: notFoundRef(r)})
						}
					}
					return nil
				}
			}
			for _, r := range rs {
				set(r, fetched{err: err})
			}
			return nil
		})
	}
	_ = g.Wait() // every failure is recorded per object
	if len(elsewhere) > 0 {
		d.fetchSingles(ctx, elsewhere, out, &mu)
	}
	return out
}
