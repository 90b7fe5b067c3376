package diagnose

import (
	"context"
	"io"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/multicluster"
)

// ClustersResult is `diagnose clusters` over the Env: one management cluster's fleet report, or
// several's as one view.
type ClustersResult struct {
	multicluster.OneOrMany[*FleetReport, *FleetView]
	// Namespace is where the one management cluster's clusters were looked for (the context's
	// namespace when the request named none; unused with all namespaces or several).
	Namespace string
}

// RunClusters is `capctl diagnose clusters` over the Env's management clusters, the namespace
// resolved in each (the request's, else the kubeconfig context's).
func RunClusters(ctx context.Context, e env.Env, req ClustersRequest) (*ClustersResult, error) {
	res := &ClustersResult{}
	v, err := env.Over(ctx, e,
		func(ctx context.Context, c *cluster.Client) (*FleetReport, error) {
			one := req
			one.Namespace = c.NamespaceOr(req.Namespace)
			res.Namespace = one.Namespace
			return Clusters(ctx, c, one)
		},
		func(ctx context.Context, ms []multicluster.Member) (*FleetView, error) {
			return clustersEach(ctx, ms, req), nil
		})
	if err != nil {
		return nil, err
	}
	res.OneOrMany = v
	return res, nil
}

// Empty reports a run over one management cluster that found no cluster.
func (r *ClustersResult) Empty() bool { return !r.Several && len(r.One.Clusters) == 0 }

// RenderText prints one line per cluster, problems first (with a MANAGEMENT column over several).
func (r *ClustersResult) RenderText(w io.Writer, o RenderOptions) error {
	if r.Several {
		return RenderFleetView(w, r.Many, o)
	}
	return RenderFleet(w, r.One, o)
}

// ExitCode is 3 for a partial view, 2 when a cluster has a problem, else 0.
func (r *ClustersResult) ExitCode() int {
	if r.Several {
		return multicluster.ExitCodeOf(r.Many.ManagementClusters, !r.Many.Partial(), true)
	}
	return multicluster.ViewExit(!r.One.Partial(), !r.One.Healthy, true)
}
