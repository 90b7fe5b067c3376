package upgrade

import (
	"context"
	"fmt"
	"io"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/multicluster"
)

// PlanRequest is `capctl upgrade plan` without --kubernetes-version: the providers' plan needs
// nothing beyond the Env (its management clusters and provider repositories).
type PlanRequest struct {
	// Save, when set, also writes the plan of the current contract to this file (0600), for
	// `upgrade apply --plan`.
	Save string
}

// Validate has nothing to check without I/O.
func (PlanRequest) Validate() error { return nil }

// PlanResult is the providers' upgrade plan of one management cluster, or of several as one view.
type PlanResult struct {
	multicluster.OneOrMany[*ProviderPlan, *ProviderPlanView]
}

// RunPlan is `capctl upgrade plan` (providers) over the Env's management clusters, with one
// catalog of the Env's repositories for all of them.
func RunPlan(ctx context.Context, e env.Env, req PlanRequest) (*PlanResult, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	rc, err := e.Repositories(ctx)
	if err != nil {
		return nil, err
	}
	cat := RepositoryCatalog{Client: rc}
	if req.Save != "" && e.Several() {
		return nil, fmt.Errorf("--save writes the providers' plan of one management cluster: choose it with --kubeconfig-context, not --contexts")
	}
	e.Step("Checking new release availability...")
	v, err := env.Over(ctx, e,
		func(ctx context.Context, c *cluster.Client) (*ProviderPlan, error) { return Plan(ctx, c, cat) },
		func(ctx context.Context, ms []multicluster.Member) (*ProviderPlanView, error) {
			return planEach(ctx, ms, cat), nil
		})
	if err != nil {
		return nil, err
	}
	if req.Save != "" {
		pf, err := SavePlanFile(ctx, cat, v.One, req.Save)
		if err != nil {
			return nil, err
		}
		e.Stepf("Saved the plan of %d provider upgrade(s) to %s (digest %s): apply it with `capctl upgrade apply --plan %s`", len(pf.Providers), req.Save, pf.Digest, req.Save)
	}
	return &PlanResult{v}, nil
}

// RenderText prints the plan (with a MANAGEMENT column and the management clusters' table over
// several).
func (r *PlanResult) RenderText(w io.Writer) error {
	return r.Render(w, RenderPlan, RenderPlanView)
}

// ExitCode is 3 when a management cluster could not be read, else 0.
func (r *PlanResult) ExitCode() int {
	if r.Several {
		return multicluster.ExitCode(r.Many.ManagementClusters, false)
	}
	return multicluster.ExitOK
}
