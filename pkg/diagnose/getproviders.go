package diagnose

import (
	"context"
	"io"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/multicluster"
)

// GetProvidersRequest is `capctl get providers`: it has no options beyond the management
// clusters of the Env.
type GetProvidersRequest struct{}

// GetProvidersResult is the providers of one management cluster, or of several as one view
// with their drift.
type GetProvidersResult struct {
	multicluster.OneOrMany[*Management, *ProvidersView]
}

// GetProviders is `capctl get providers` over the Env's management clusters.
func GetProviders(ctx context.Context, e env.Env, _ GetProvidersRequest) (*GetProvidersResult, error) {
	v, err := env.Over(ctx, e,
		func(ctx context.Context, c *cluster.Client) (*Management, error) { return Providers(ctx, c) },
		func(ctx context.Context, ms []multicluster.Member) (*ProvidersView, error) {
			return providersEach(ctx, ms), nil
		})
	if err != nil {
		return nil, err
	}
	return &GetProvidersResult{v}, nil
}

// RenderText prints the providers table (with a MANAGEMENT column over several).
func (r *GetProvidersResult) RenderText(w io.Writer) error {
	return r.Render(w, RenderProviders, RenderProvidersView)
}

// ExitCode is 3 when something could not be read (a kind, or a management cluster), else 0.
func (r *GetProvidersResult) ExitCode() int {
	if r.Several {
		return multicluster.ExitCodeOf(r.Many.ManagementClusters, !r.Many.Partial(), false)
	}
	return multicluster.ViewExit(!r.One.Partial(), false, false)
}
