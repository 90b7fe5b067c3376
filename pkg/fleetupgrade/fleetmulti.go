package fleetupgrade

import (
	"context"
	"fmt"
	"strings"

	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/multicluster"
)

// FleetMember is one management cluster of a fleet operation.
type FleetMember struct {
	// Name is the kubeconfig context, shown as MANAGEMENT; empty when the operation runs on one
	// management cluster (no --contexts), and then nothing shows it.
	Name   string
	Client client.Client
}

// memberClients maps the members' contexts to their clients, refusing a context named twice
// (its clusters would be planned twice) and a member without a client.
func memberClients(members []FleetMember) (map[string]client.Client, error) {
	if len(members) == 0 {
		return nil, fmt.Errorf("no management cluster to upgrade the fleet of")
	}
	out := make(map[string]client.Client, len(members))
	for _, m := range members {
		if _, dup := out[m.Name]; dup {
			return nil, fmt.Errorf("management cluster %q is named twice", m.Name)
		}
		if m.Client == nil {
			return nil, fmt.Errorf("management cluster %q has no client", m.Name)
		}
		out[m.Name] = m.Client
	}
	return out, nil
}

// ReadFleets reads the clusters sel picks in every management cluster (-n and -l apply inside
// each), multicluster.Parallel at once, each tagged with its management cluster, in members'
// order. A management cluster that cannot be read fails the whole read, naming it: the apply
// plans nothing it cannot see.
func ReadFleets(ctx context.Context, members []FleetMember, sel FleetSelection) ([]ClusterInfo, error) {
	parts := make([][]ClusterInfo, len(members))
	var g errgroup.Group
	g.SetLimit(multicluster.Parallel)
	for i, m := range members {
		g.Go(func() error {
			infos, err := readSelected(ctx, m.Client, m.Client.RESTMapper(), m.Name, sel)
			if err != nil && m.Name != "" {
				return fmt.Errorf("management cluster %s: %w", m.Name, err)
			}
			parts[i] = infos
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var out []ClusterInfo
	for _, p := range parts {
		out = append(out, p...)
	}
	return out, nil
}

// FleetPlanView is `upgrade plan --kubernetes-version` over several management clusters: one
// plan whose waves span them (the plan applyFleetEach follows), each row naming its management
// cluster, and each management cluster's summary (Clusters: how many it has in the plan;
// Problems: how many of those cannot be planned).
type FleetPlanView struct {
	multicluster.Summary
	FleetPlan
}

// planFleetEach reads every management cluster's clusters (bounded, each after its contract
// check) and plans them together with BuildFleetPlan, the planner the apply uses. A management
// cluster that cannot be read is reported in its summary; the others are planned.
func planFleetEach(ctx context.Context, members []multicluster.Member, req FleetPlanRequest) (*FleetPlanView, error) {
	t, err := req.resolve()
	if err != nil {
		return nil, err
	}
	sel := req.Selection
	results := multicluster.Each(ctx, members, nil, func(ctx context.Context, c *cluster.Client) ([]ClusterInfo, error) {
		return readSelected(ctx, c, c.Mapper, c.ContextName, sel)
	})
	var infos []ClusterInfo
	for i := range results {
		r := &results[i]
		for _, in := range r.Value {
			in.ManagementCluster = r.Name
			infos = append(infos, in)
		}
	}
	plan, err := planWaves(infos, versionUpgrade{t}, req.Rollout)
	if err != nil {
		return nil, err
	}
	if req.Save != "" {
		var names, unread []string
		for _, r := range results {
			names = append(names, r.Name)
			if !r.Read() {
				unread = append(unread, fmt.Sprintf("%s (%s)", r.Name, r.Error))
			}
		}
		if len(unread) > 0 {
			return nil, fmt.Errorf("the plan was not saved: management cluster(s) %s could not be read, and a saved plan must cover every one", strings.Join(unread, ", "))
		}
		if err := savePlanFile(req.Save, plan, sel, names, req.Rollout); err != nil {
			return nil, err
		}
	}
	v := &FleetPlanView{FleetPlan: *plan}
	index := map[string]*multicluster.ManagementCluster{}
	for i := range results {
		index[results[i].Name] = &results[i].ManagementCluster
	}
	for _, w := range plan.Waves {
		for _, cu := range w.Clusters {
			index[cu.ManagementCluster].Clusters++
		}
	}
	for _, u := range plan.Unplannable {
		index[u.ManagementCluster].Clusters++
		index[u.ManagementCluster].Problems++
	}
	v.ManagementClusters = multicluster.Summaries(results)
	return v, nil
}

// applyFleetEach is `upgrade apply --kubernetes-version` over several management clusters. Each
// must answer and pass its contract check (read as multicluster.Each reads them), else the
// apply is refused before any write, naming every one that failed; then ApplyFleets runs over
// them all. The report carries the management clusters' summary (Clusters: rows of the report
// from it; Problems: those that failed).
func applyFleetEach(ctx context.Context, members []multicluster.Member, req FleetApplyRequest) (*FleetApplyReport, error) {
	results := multicluster.Each(ctx, members, nil, func(context.Context, *cluster.Client) (struct{}, error) {
		return struct{}{}, nil
	})
	var refused []string
	fleet := make([]FleetMember, 0, len(results))
	for _, r := range results {
		if !r.Read() {
			refused = append(refused, fmt.Sprintf("management cluster %s cannot be used: %s", r.Name, r.Error))
			continue
		}
		fleet = append(fleet, FleetMember{Name: r.Name, Client: r.Client})
	}
	if len(refused) > 0 {
		return nil, &PreflightError{Problems: refused}
	}
	rep, err := ApplyFleets(ctx, fleet, req)
	if rep == nil {
		return nil, err
	}
	summaries := multicluster.Summaries(results)
	index := map[string]*multicluster.ManagementCluster{}
	for i := range summaries {
		index[summaries[i].Name] = &summaries[i]
	}
	for _, w := range rep.Waves {
		for _, c := range w.Clusters {
			index[c.ManagementCluster].Clusters++
			if c.Result == ResultFailed {
				index[c.ManagementCluster].Problems++
			}
		}
	}
	rep.ManagementClusters = summaries
	return rep, err
}

// Ref is the cluster's name in messages (see ClusterUpgrade.Ref).
func (c FleetClusterReport) Ref() string {
	return clusterRef(c.ManagementCluster, c.Namespace, c.Name)
}

// Ref is the failed cluster's name in messages (see ClusterUpgrade.Ref).
func (f FleetApplyFailure) Ref() string {
	return clusterRef(f.ManagementCluster, f.Namespace, f.Name)
}
