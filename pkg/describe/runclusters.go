package describe

import (
	"context"
	"io"

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
	if e.Several() {
		return &SummaryResult{OneOrMany: multicluster.OneOrMany[[]ClusterSummary, *SummaryView]{Many: summarizeEach(ctx, e.Management, req), Several: true}}, nil
	}
	c, err := e.Single()
	if err != nil {
		return nil, err
	}
	req.Namespace = c.NamespaceOr(req.Namespace)
	rows, err := Summarize(ctx, c, req)
	if err != nil {
		return nil, err
	}
	return &SummaryResult{OneOrMany: multicluster.OneOrMany[[]ClusterSummary, *SummaryView]{One: rows}, Namespace: req.Namespace}, nil
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
