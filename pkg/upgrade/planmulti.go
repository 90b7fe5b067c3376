package upgrade

import (
	"context"

	"github.com/capctl/capctl/pkg/cluster"
	capi "github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/multicluster"
)

// ProviderPlanView is `upgrade plan` over several management clusters: every management
// cluster's provider plan as rows naming it, each one's summary, and the providers whose version
// or contract differs between them (drift, as `get providers --all-contexts` finds it).
type ProviderPlanView struct {
	multicluster.Summary
	Providers []ManagedProviderUpgrade `json:"providers"`
	// Plans are the management clusters' plans by context (contracts, blocked providers,
	// cert-manager), for what the rows do not say.
	Plans map[string]*ProviderPlan `json:"plans"`
}

// ManagedProviderUpgrade is one provider's row of one management cluster's plan to one contract.
type ManagedProviderUpgrade struct {
	ManagementCluster string `json:"managementCluster"`
	// TargetContract is the contract of the plan the row belongs to.
	TargetContract string `json:"targetContract"`
	ProviderUpgrade
}

// planEach plans the provider upgrades of every management cluster (bounded), with one catalog
// for all (the same repositories answer every management cluster's providers). A management
// cluster that cannot be read or planned is reported in its summary; the others are planned.
// The summary's Problems count each plan's blocked providers.
func planEach(ctx context.Context, members []multicluster.Member, cat Catalog) *ProviderPlanView {
	// Plan accepts a management cluster that still stores Clusters at v1beta1 (to plan its way
	// to v1beta2); so does the summary's check.
	results := multicluster.Each(ctx, members, []capi.CheckOption{capi.AllowContract("v1beta1")}, func(ctx context.Context, c *cluster.Client) (*ProviderPlan, error) {
		return Plan(ctx, c, cat)
	})
	v := &ProviderPlanView{Providers: []ManagedProviderUpgrade{}, Plans: map[string]*ProviderPlan{}}
	for i := range results {
		r := &results[i]
		if r.Value == nil {
			continue
		}
		v.Plans[r.Name] = r.Value
		contractOf := map[string]string{}
		for _, cp := range r.Value.Contracts {
			r.Problems += len(cp.Blocked)
			for _, p := range cp.Providers {
				v.Providers = append(v.Providers, ManagedProviderUpgrade{ManagementCluster: r.Name, TargetContract: cp.Contract, ProviderUpgrade: p})
				if _, ok := contractOf[p.Namespace+"/"+p.Name]; !ok {
					contractOf[p.Namespace+"/"+p.Name] = p.CurrentContract
				}
			}
		}
		// The drift compares contracts too: the plan read them from the releases' metadata.
		for j := range r.Providers {
			p := &r.Providers[j]
			p.Contract = contractOf[p.Namespace+"/"+p.Name]
		}
	}
	v.ManagementClusters = multicluster.Summaries(results)
	v.Drift = multicluster.FindDrift(v.ManagementClusters)
	return v
}
