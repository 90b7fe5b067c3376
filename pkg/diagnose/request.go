package diagnose

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/describe"
	"github.com/capctl/capctl/pkg/inventory"
)

// DefaultConcurrency is how many clusters `diagnose clusters` diagnoses at once.
const DefaultConcurrency = 4

// Cluster diagnoses one cluster: it reads the management side once, then the cluster (and its
// workload cluster when opts.Workload), and runs the rules. A management side that cannot be read
// (no inventory) does not stop the diagnosis: the report says so and the provider rules are skipped.
func Cluster(ctx context.Context, c client.Client, opts Options) (*Report, error) {
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

// FleetOptions select the clusters of `diagnose clusters`.
type FleetOptions struct {
	Options
	AllNamespaces bool
	// Concurrency: clusters diagnosed at once (default 4).
	Concurrency int
}

// FleetReport is the diagnosis of several clusters, problems first.
type FleetReport struct {
	Healthy  bool       `json:"healthy"`
	Clusters []FleetRow `json:"clusters"`
	// ManagementError says why the management side could not be read.
	ManagementError string `json:"managementError,omitempty"`
}

// FleetRow is one cluster of the fleet.
type FleetRow struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Healthy   bool      `json:"healthy"`
	Problems  int       `json:"problems"`
	Root      *Finding  `json:"root,omitempty"`
	Findings  []Finding `json:"findings"`
	// Error says why the cluster could not be diagnosed (it counts as a problem).
	Error string `json:"error,omitempty"`
}

// Clusters diagnoses every cluster of a namespace (or all namespaces), a few at a time, with the
// management side read once for all of them.
func Clusters(ctx context.Context, c client.Client, opts FleetOptions) (*FleetReport, error) {
	rows, err := describe.Summarize(ctx, c, describe.SummaryOptions{Namespace: opts.Namespace, AllNamespaces: opts.AllNamespaces})
	if err != nil {
		return nil, err
	}
	mgmt, mgmtErr := FetchManagement(ctx, c)
	if mgmtErr != nil && !errors.Is(mgmtErr, inventory.ErrNoInventory) {
		return nil, mgmtErr
	}
	fr := &FleetReport{Clusters: make([]FleetRow, len(rows)), Healthy: true}
	if mgmtErr != nil {
		fr.ManagementError = mgmtErr.Error()
	}
	limit := opts.Concurrency
	if limit <= 0 {
		limit = DefaultConcurrency
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(limit)
	var mu sync.Mutex
	for i, s := range rows {
		g.Go(func() error {
			o := opts.Options
			o.Namespace, o.Name = s.Namespace, s.Name
			row := FleetRow{Namespace: s.Namespace, Name: s.Name}
			in, err := Fetch(gctx, c, mgmt, o)
			if err != nil {
				if gctx.Err() != nil {
					return gctx.Err()
				}
				row.Error = fmt.Sprintf("cannot be diagnosed: %v", err)
				row.Problems = 1
			} else {
				rep := Run(in)
				row.Healthy, row.Problems, row.Findings, row.Root = rep.Healthy, rep.Problems(), rep.Findings, rep.Root()
			}
			mu.Lock()
			fr.Clusters[i] = row
			mu.Unlock()
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
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
