package diagnose

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/authz"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/describe"
	"github.com/capctl/capctl/pkg/inventory"
)

// DefaultConcurrency is how many workload clusters `diagnose clusters` reads at once (each within
// its own WorkloadTimeout). The management side is read in a fixed number of lists whatever the
// number of clusters.
const DefaultConcurrency = 16

// Validate checks the fleet options without any I/O; its errors name the flags.
func (o ClustersRequest) Validate() error {
	if err := cluster.CheckNamespace(o.Namespace); err != nil {
		return err
	}
	if o.Concurrency < 1 {
		return fmt.Errorf("--concurrency must be at least 1")
	}
	return nil
}

// Validate checks the request of `diagnose cluster` before any cluster is contacted: the
// cluster's name and namespace (cluster.CheckClusterRef).
func (o ClusterRequest) Validate() error { return cluster.CheckClusterRef(o.Name, o.Namespace) }

// Cluster diagnoses one cluster: it reads the management side once, then the cluster (and its
// workload cluster when opts.Workload), and runs the rules. A management side that cannot be read
// (no inventory) does not stop the diagnosis: the report says so and the provider rules are skipped.
func Cluster(ctx context.Context, c client.Client, opts ClusterRequest) (*Report, error) {
	mgmt, mgmtErr := FetchManagement(ctx, c)
	if mgmtErr != nil && !errors.Is(mgmtErr, inventory.ErrNoInventory) {
		return nil, mgmtErr
	}
	in, err := Fetch(ctx, c, mgmt, opts)
	if err != nil {
		return nil, err
	}
	rep := Run(in)
	if mgmtErr != nil {
		rep.ManagementError = mgmtErr.Error()
	}
	return rep, nil
}

// ClustersRequest select the clusters of `diagnose clusters`.
type ClustersRequest struct {
	ClusterRequest
	AllNamespaces bool
	// Concurrency: workload clusters read at once (default DefaultConcurrency).
	Concurrency int
}

// FleetReport is the diagnosis of several clusters, problems first.
type FleetReport struct {
	Healthy  bool       `json:"healthy"`
	Clusters []FleetRow `json:"clusters"`
	// ManagementError says why the management side could not be read.
	ManagementError string `json:"managementError,omitempty"`
	// Unread are the kinds that could not be read (RBAC), of the management side and of the
	// fleet's own lists: the view is partial.
	Unread []authz.Unreadable `json:"unread,omitempty"`
}

// Partial tells whether some kind the diagnosis reads could not be read: the view misses it.
func (r *FleetReport) Partial() bool { return len(r.Unread) > 0 }

// FleetRow is one cluster of the fleet.
type FleetRow struct {
	// ManagementCluster is the kubeconfig context of the row, set only in a view over several
	// management clusters.
	ManagementCluster string    `json:"managementCluster,omitempty"`
	Namespace         string    `json:"namespace"`
	Name              string    `json:"name"`
	Healthy           bool      `json:"healthy"`
	Problems          int       `json:"problems"`
	Root              *Finding  `json:"root,omitempty"`
	Findings          []Finding `json:"findings"`
	// NotChecked are the rules not applied for want of a kind that could not be read.
	NotChecked []NotChecked `json:"notChecked,omitempty"`
	// Workload is set when the workload cluster was read (see Input.NeedsWorkload): whether it
	// answered within WorkloadTimeout, and why not.
	Workload *WorkloadSummary `json:"workload,omitempty"`
	// Error says why the cluster could not be diagnosed (it counts as a problem).
	Error string `json:"error,omitempty"`
}

// Clusters diagnoses every cluster of a namespace (or all namespaces). The management side is
// read in one list per kind for the whole fleet (describe.FetchFleet) plus the provider state
// (FetchManagement), and the rules run on that snapshot; with opts.Workload, only the workload
// clusters whose management-side state needs them (Input.NeedsWorkload: Nodes, CNI, PDBs) are
// read, opts.Concurrency at a time, each within opts.WorkloadTimeout, so a workload API server
// that does not answer costs its row that budget and stalls no other row.
func Clusters(ctx context.Context, c client.Client, opts ClustersRequest) (*FleetReport, error) {
	var snaps []*describe.Snapshot
	var mgmt *Management
	var mgmtErr error
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		var err error
		snaps, err = describe.FetchFleet(gctx, c, describe.SummaryRequest{Namespace: opts.Namespace, AllNamespaces: opts.AllNamespaces})
		return err
	})
	g.Go(func() error {
		mgmt, mgmtErr = FetchManagement(gctx, c)
		if mgmtErr != nil && !errors.Is(mgmtErr, inventory.ErrNoInventory) {
			return mgmtErr
		}
		return nil
	})
	if err := g.Wait(); err != nil {
		return nil, err
	}
	fr := &FleetReport{Clusters: make([]FleetRow, len(snaps)), Healthy: true}
	if mgmtErr != nil {
		fr.ManagementError = mgmtErr.Error()
	}
	if mgmt != nil {
		fr.Unread = mgmt.Unread
	}
	if len(snaps) > 0 {
		// The fleet's lists are shared: every snapshot misses the same kinds.
		fr.Unread = append(fr.Unread, snaps[0].Unread...)
	}
	inputs := make([]*Input, len(snaps))
	for i, s := range snaps {
		fr.Clusters[i] = FleetRow{Namespace: s.Cluster.GetNamespace(), Name: s.Cluster.GetName()}
		in, err := NewInput(s, kindCRDs(c, s))
		if err != nil {
			fr.Clusters[i].Error = fmt.Sprintf("cannot be diagnosed: %v", err)
			fr.Clusters[i].Problems = 1
			continue
		}
		in.Now, in.StuckAfter, in.Management = opts.now(), opts.StuckAfter, mgmt
		inputs[i] = in
	}
	if opts.Workload {
		limit := opts.Concurrency
		if limit <= 0 {
			limit = DefaultConcurrency
		}
		var wg errgroup.Group
		wg.SetLimit(limit)
		for i, in := range inputs {
			if in == nil || !in.NeedsWorkload() {
				continue
			}
			row := fr.Clusters[i]
			wg.Go(func() error {
				// Each read has its own budget; an unanswered one is its row's finding.
				in.Workload = opts.workload(ctx, c, row.Namespace, row.Name)
				return nil
			})
		}
		_ = wg.Wait()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	for i, in := range inputs {
		if in == nil {
			continue
		}
		rep := Run(in)
		row := &fr.Clusters[i]
		row.Healthy, row.Problems, row.Findings, row.Root, row.Workload, row.NotChecked = rep.Healthy, rep.Problems(), rep.Findings, rep.Root(), rep.Workload, rep.NotChecked
	}
	sort.SliceStable(fr.Clusters, func(i, j int) bool {
		a, b := fr.Clusters[i], fr.Clusters[j]
		if a.Healthy != b.Healthy {
			return !a.Healthy
		}
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	for _, r := range fr.Clusters {
		if !r.Healthy {
			fr.Healthy = false
		}
	}
	return fr, nil
}

// Providers is `capctl get providers`: the inventory with what the cluster says about each
// provider (contract, controller, webhook, concurrency flags).
func Providers(ctx context.Context, c client.Client) (*Management, error) {
	return FetchManagement(ctx, c)
}
