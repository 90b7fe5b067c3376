package describe

import (
	"context"
	"io"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/multicluster"
)

// SummaryResult is `describe clusters` over the Env: one management cluster's rows, or
// several's as one view.
type SummaryResult struct {
	multicluster.OneOrMany[[]ClusterSummary, *SummaryView]
	// Namespace is where the one management cluster's clusters were looked for.
	Namespace string
}

// RunClusters is `capctl describe clusters` over the Env's management clusters, the namespace
// resolved in each (the request's, else the kubeconfig context's; every one with all namespaces).
func RunClusters(ctx context.Context, e env.Env, req SummaryRequest) (*SummaryResult, error) {
	res := &SummaryResult{}
	v, err := env.Over(ctx, e,
		func(ctx context.Context, c *cluster.Client) ([]ClusterSummary, error) {
			one := req
			one.Namespace = c.NamespaceOr(req.Namespace)
			res.Namespace = one.Namespace
			return Summarize(ctx, c, one)
		},
		func(ctx context.Context, ms []multicluster.Member) (*SummaryView, error) {
			return summarizeEach(ctx, ms, req), nil
		})
	if err != nil {
		return nil, err
	}
	res.OneOrMany = v
	return res, nil
}

// Empty reports a run over one management cluster that found no cluster.
func (r *SummaryResult) Empty() bool { return !r.Several && len(r.One) == 0 }

// RenderText prints one row per cluster (with a MANAGEMENT column and the management clusters'
// table over several).
func (r *SummaryResult) RenderText(w io.Writer, o RenderOptions) error {
	if r.Several {
		return RenderSummaryView(w, r.Many, o)
	}
	return RenderSummary(w, r.One, o)
}

// ExitCode is 3 when a management cluster could not be read, else 0.
func (r *SummaryResult) ExitCode() int {
	if r.Several {
		return multicluster.ExitCode(r.Many.ManagementClusters, false)
	}
	return multicluster.ExitOK
}
