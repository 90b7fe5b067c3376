package fleetupgrade

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/multicluster"
)

// FleetPlanResult is `upgrade plan --kubernetes-version` over the Env: one management cluster's
// plan, or one plan whose waves span several.
type FleetPlanResult struct {
	multicluster.OneOrMany[*FleetPlan, *FleetPlanView]
}

// Plan is `capctl upgrade plan --kubernetes-version` over the Env's management clusters (and,
// with Save, the plan file `upgrade apply --plan` follows).
func Plan(ctx context.Context, e env.Env, req FleetPlanRequest) (*FleetPlanResult, error) {
	v, err := env.Over(ctx, e,
		func(ctx context.Context, c *cluster.Client) (*FleetPlan, error) {
			return PlanFleet(ctx, c, c.Mapper, req)
		},
		func(ctx context.Context, ms []multicluster.Member) (*FleetPlanView, error) {
			return planFleetEach(ctx, ms, req)
		})
	if err != nil {
		return nil, err
	}
	return &FleetPlanResult{v}, nil
}

// RenderText prints the waves (each row naming its management cluster over several).
func (r *FleetPlanResult) RenderText(w io.Writer) error {
	return r.Render(w, RenderPlan, RenderPlanView)
}

// ExitCode is 3 when a management cluster could not be read, else 0.
func (r *FleetPlanResult) ExitCode() int {
	if r.Several {
		return multicluster.ExitCode(r.Many.ManagementClusters, false)
	}
	return multicluster.ExitOK
}

// Apply is `capctl upgrade apply --kubernetes-version` (or --plan) over the Env's management
// clusters: ApplyFleet over one, every one of several refused before any write unless all can
// be used. Progress lines go to the Env's unless the request has its own. It returns the report
// also when the run stops (EndError says how it ended).
func Apply(ctx context.Context, e env.Env, req FleetApplyRequest) (*FleetApplyReport, error) {
	return Roll(ctx, e, req)
}

// Roll is the rollout engine over the Env's management clusters, whatever the change (the
// request's version, Rotation or Rebase): the one entry of every fleet change. Apply is the
// commands' verb over it; another feature's rollout (topology apply's rebase) calls Roll, the
// engine, not that verb.
func Roll(ctx context.Context, e env.Env, req FleetApplyRequest) (*FleetApplyReport, error) {
	if req.Progress == nil && e.Progress != nil {
		req.Progress = e.Stepf
	}
	if e.Several() {
		return applyFleetEach(ctx, e.Management, req)
	}
	c, err := e.Single()
	if err != nil {
		return nil, err
	}
	return ApplyFleet(ctx, c, req)
}

// HistoryResult is `capctl upgrade history [NAME]`: the records read, newest first (the one
// named, with a Name), and the labelled ConfigMaps that hold no readable record.
type HistoryResult struct {
	Name    string
	Records []RolloutRecord
	// Unreadable, when set, makes the history a partial view (exit 3).
	Unreadable *UnreadableRecordsError
}

// RunHistory reads the rollout records of the Env's management cluster (History).
func RunHistory(ctx context.Context, e env.Env, req HistoryRequest) (*HistoryResult, error) {
	c, err := e.Single()
	if err != nil {
		return nil, err
	}
	recs, err := History(ctx, c, req)
	res := &HistoryResult{Name: req.Name, Records: recs}
	if err != nil && !errors.As(err, &res.Unreadable) {
		return nil, err
	}
	return res, nil
}

// MarshalJSON is the record named, or the list: the JSON `upgrade history` has always printed.
func (r *HistoryResult) MarshalJSON() ([]byte, error) {
	if r.Name != "" && len(r.Records) == 1 {
		return json.Marshal(r.Records[0])
	}
	return json.Marshal(r.Records)
}

// RenderText prints the record named, or one line per record.
func (r *HistoryResult) RenderText(w io.Writer) error {
	if r.Name != "" && len(r.Records) == 1 {
		return RenderRecord(w, r.Records[0])
	}
	return RenderHistory(w, r.Records)
}

// ExitCode is 3 when a record could not be read, else 0.
func (r *HistoryResult) ExitCode() int {
	if r.Unreadable != nil {
		return multicluster.ExitIncomplete
	}
	return multicluster.ExitOK
}
