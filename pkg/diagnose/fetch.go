package diagnose

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/describe"
)

// ClusterRequest select a cluster and tune the diagnosis.
type ClusterRequest struct {
	Namespace, Name string
	// StuckAfter (default 10m): how long a transitional state may last before it is stuck.
	StuckAfter time.Duration
	// Workload reads the workload cluster through its kubeconfig Secret (default in the
	// commands: on). WorkloadTimeout bounds that read (default 5s).
	Workload        bool
	WorkloadTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Workloads reads one workload cluster (nil: FetchWorkload). Offline, a bundle's record of
	// the reads stands in (WorkloadRecord.Replay).
	Workloads WorkloadFunc
}

// WorkloadFunc reads one workload cluster, as FetchWorkload does.
type WorkloadFunc func(ctx context.Context, c client.Client, namespace, name string, timeout time.Duration) *Workload

func (o ClusterRequest) workload(ctx context.Context, c client.Client, namespace, name string) *Workload {
	if o.Workloads != nil {
		return o.Workloads(ctx, c, namespace, name, o.WorkloadTimeout)
	}
	return FetchWorkload(ctx, c, namespace, name, o.WorkloadTimeout)
}

// DefaultClusterRequest is the request with the commands' defaults (the flags' defaults of
// `diagnose cluster`): the front ends and views that diagnose without flags start from it.
func DefaultClusterRequest(namespace, name string) ClusterRequest {
	return ClusterRequest{Namespace: namespace, Name: name, StuckAfter: DefaultStuckAfter,
		Workload: true, WorkloadTimeout: DefaultWorkloadTimeout, Now: time.Now}
}

func (o ClusterRequest) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Fetch reads everything the rules need about one cluster: describe's snapshot of it (the same
// requests as describe: one LIST per kind, whatever the number of machines), the management side
// (mgmt, read once per run by the caller; nil skips those rules) and, when asked, the workload
// cluster.
func Fetch(ctx context.Context, c client.Client, mgmt *Management, opts ClusterRequest) (*Input, error) {
	snap, err := describe.Fetch(ctx, c, describe.ClusterRequest{Namespace: opts.Namespace, Name: opts.Name})
	if err != nil {
		return nil, err
	}
	in, err := NewInput(snap, kindCRDs(c, snap))
	if err != nil {
		return nil, err
	}
	in.Now, in.StuckAfter, in.Management = opts.now(), opts.StuckAfter, mgmt
	if opts.Workload {
		in.Workload = opts.workload(ctx, c, opts.Namespace, opts.Name)
	}
	return in, nil
}

// NewInput builds the rules' input from describe's snapshot, without any request: the tree
// (ungrouped, every machine's objects shown) and the Cluster and Machine fields the tree leaves out.
func NewInput(snap *describe.Snapshot, kindCRDs map[string]string) (*Input, error) {
	tree, err := describe.Build(snap, describe.ClusterRequest{Namespace: snap.Cluster.GetNamespace(), Name: snap.Cluster.GetName(), Grouping: false, Echo: true})
	if err != nil {
		return nil, err
	}
	in := &Input{Tree: tree, Cluster: ClusterFactsFrom(snap.Cluster), Machines: map[string]MachineFacts{}, KindCRDs: kindCRDs}
	for i := range snap.Machines {
		f := MachineFactsFrom(&snap.Machines[i])
		in.Machines[f.Name] = f
	}
	return in, nil
}

// kindCRDs maps the snapshot's "Kind.group"s to their CRD names, from the REST mapper describe
// already filled (no request).
func kindCRDs(c client.Client, snap *describe.Snapshot) map[string]string {
	out := map[string]string{}
	add := func(u *unstructured.Unstructured) {
		if u == nil {
			return
		}
		gk := u.GroupVersionKind().GroupKind()
		key := gk.Kind + "." + gk.Group
		if _, done := out[key]; done || gk.Group == "" {
			return
		}
		if m, err := c.RESTMapper().RESTMapping(gk); err == nil {
			out[key] = m.Resource.Resource + "." + gk.Group
		}
	}
	add(snap.Cluster)
	for _, l := range [][]unstructured.Unstructured{snap.Machines, snap.MachineDeployments, snap.MachineSets, snap.MachinePools, snap.MachineHealthChecks} {
		for i := range l {
			add(&l[i])
		}
	}
	for _, r := range snap.Referenced {
		if r.Object != nil {
			add(r.Object)
		} else if r.Group != "" {
			// A missing object: its kind may still be served.
			if m, err := c.RESTMapper().RESTMapping(schema.GroupKind{Group: r.Group, Kind: r.Kind}); err == nil {
				out[r.Kind+"."+r.Group] = m.Resource.Resource + "." + r.Group
			}
		}
	}
	return out
}
