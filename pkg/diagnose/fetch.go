package diagnose

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/describe"
)

// Options select a cluster and tune the diagnosis.
type Options struct {
	Namespace, Name string
	// StuckAfter (default 10m): how long a transitional state may last before it is stuck.
	StuckAfter time.Duration
	// Workload reads the workload cluster through its kubeconfig Secret (default in the
	// commands: on). WorkloadTimeout bounds that read (default 5s).
	Workload        bool
	WorkloadTimeout time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

// Fetch reads everything the rules need about one cluster: its describe tree, the Machine and
// Cluster fields the tree does not keep, the management side (mgmt, read once per run by the
// caller; nil skips those rules) and, when asked, the workload cluster.
func Fetch(ctx context.Context, c client.Client, mgmt *Management, opts Options) (*Input, error) {
	tree, err := describe.Discover(ctx, c, describe.Options{Namespace: opts.Namespace, Name: opts.Name, Grouping: false, Echo: true})
	if err != nil {
		return nil, err
	}
	in := &Input{Now: opts.now(), StuckAfter: opts.StuckAfter, Tree: tree, Management: mgmt, Machines: map[string]MachineFacts{}, KindCRDs: map[string]string{}}

	// The Cluster and its Machines once more, for the fields the tree leaves out: one GET and one
	// LIST, whatever the number of machines.
	gv := schema.GroupVersion{Group: "cluster.x-k8s.io", Version: tree.ServedVersion}
	cl := &unstructured.Unstructured{}
	cl.SetGroupVersionKind(gv.WithKind("Cluster"))
	if err := c.Get(ctx, client.ObjectKey{Namespace: opts.Namespace, Name: opts.Name}, cl); err != nil {
		return nil, fmt.Errorf("reading cluster %s/%s: %w", opts.Namespace, opts.Name, err)
	}
	in.Cluster = ClusterFactsFrom(cl)
	ms := &unstructured.UnstructuredList{}
	ms.SetGroupVersionKind(gv.WithKind("MachineList"))
	if err := c.List(ctx, ms, client.InNamespace(opts.Namespace), client.MatchingLabels{"cluster.x-k8s.io/cluster-name": opts.Name}); err != nil {
		return nil, fmt.Errorf("listing the machines of cluster %s/%s: %w", opts.Namespace, opts.Name, err)
	}
	for i := range ms.Items {
		f := MachineFactsFrom(&ms.Items[i])
		in.Machines[f.Name] = f
	}

	// Kind → CRD name, from the REST mapper describe already filled (no request).
	walk(tree.Root, nil, func(n, _ *describe.Node) {
		kg := kindGroup(n)
		if _, done := in.KindCRDs[kg]; done || n.APIVersion == "" {
			return
		}
		gk := schema.ParseGroupKind(kg)
		if gk.Group == "" {
			return
		}
		if m, err := c.RESTMapper().RESTMapping(gk); err == nil {
			in.KindCRDs[kg] = m.Resource.Resource + "." + gk.Group
		}
	})

	if opts.Workload {
		in.Workload = FetchWorkload(ctx, c, opts.Namespace, opts.Name, opts.WorkloadTimeout)
	}
	return in, nil
}
