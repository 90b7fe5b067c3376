package fleetupgrade

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/capctl/capctl/pkg/inventory"
	"github.com/capctl/capctl/pkg/kubesupport"
	"github.com/capctl/capctl/pkg/versions"
)

// FleetPreflight is what the fleet apply checked before its first write, for the report.
type FleetPreflight struct {
	// Providers are the installed providers and what each declares about the versions the
	// upgrade will set.
	Providers []ProviderSupport `json:"providers"`
	// Notes are what was not checked, and why.
	Notes []string `json:"notes,omitempty"`
	// DryRunPatches is how many first patches the API server accepted as a server-side dry run.
	DryRunPatches int `json:"dryRunPatches"`
}

// ProviderSupport is one installed provider against the Kubernetes versions the upgrade sets.
type ProviderSupport struct {
	// ManagementCluster is the context of the provider's management cluster over several.
	ManagementCluster string             `json:"managementCluster,omitempty"`
	Namespace         string             `json:"namespace"`
	Provider          string             `json:"provider"`
	Version           string             `json:"version"`
	Status            kubesupport.Status `json:"status"`
	Range             string             `json:"range,omitempty"`
	Source            string             `json:"source,omitempty"`
	// Reason is why a version is not supported or not declared.
	Reason string `json:"reason,omitempty"`
}

// dryRunParallel bounds the clusters read and dry-run patched at once during the preflight:
// a few requests each, enough to keep a large fleet's preflight short without a burst.
const dryRunParallel = 8

// versionsToSet maps every version the upgrade of waves will write to the clusters of the
// management cluster (its context, "" for one) that get it. Steps whose patch is not named
// (vX.Y.x) are refused elsewhere and not listed.
func versionsToSet(waves []FleetWave, management string) map[string][]string {
	out := map[string][]string{}
	for _, w := range waves {
		for _, cu := range w.Clusters {
			if cu.ManagementCluster != management {
				continue
			}
			seen := map[string]bool{}
			for _, s := range cu.Steps {
				if s.AnyPatch || seen[s.Version] {
					continue
				}
				seen[s.Version] = true
				out[s.Version] = append(out[s.Version], cu.Namespace+"/"+cu.Name)
			}
		}
	}
	return out
}

// checkProvidersSupport runs checkProviderSupport on every management cluster, each against the
// versions its own clusters get, and merges what they found (members in order).
func checkProvidersSupport(ctx context.Context, members []FleetMember, waves []FleetWave) (*FleetPreflight, []string, error) {
	pf := &FleetPreflight{Providers: []ProviderSupport{}}
	var problems []string
	for _, m := range members {
		one, refused, err := checkProviderSupport(ctx, m.Client, waves, m.Name)
		if err != nil {
			if m.Name != "" {
				err = fmt.Errorf("management cluster %s: %w", m.Name, err)
			}
			return nil, nil, err
		}
		pf.Providers = append(pf.Providers, one.Providers...)
		pf.Notes = append(pf.Notes, one.Notes...)
		problems = append(problems, refused...)
	}
	return pf, problems, nil
}

// checkProviderSupport reads the provider inventory of one management cluster (its context, ""
// for one) and checks every installed provider against every version the upgrade will set on
// its clusters. A provider that declares no range is listed, not refused.
func checkProviderSupport(ctx context.Context, c client.Reader, waves []FleetWave, management string) (*FleetPreflight, []string, error) {
	pf := &FleetPreflight{Providers: []ProviderSupport{}}
	toSet := versionsToSet(waves, management)
	if len(toSet) == 0 {
		return pf, nil, nil
	}
	where := ""
	if management != "" {
		where = " on " + management
	}
	providers, err := inventory.List(ctx, c)
	if errors.Is(err, inventory.ErrNoInventory) {
		mc := "the management cluster"
		if management != "" {
			mc += " " + management
		}
		pf.Notes = append(pf.Notes, mc+" has no provider inventory (clusterctl's Provider objects): the providers' supported Kubernetes versions were not checked")
		return pf, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	vers := make([]string, 0, len(toSet))
	for v := range toSet {
		vers = append(vers, v)
	}
	sort.Slice(vers, func(i, j int) bool { return versions.MustParse(vers[i]).LessThan(versions.MustParse(vers[j])) })
	var problems []string
	for _, p := range providers {
		label := p.ManifestLabel()
		ps := ProviderSupport{ManagementCluster: management, Namespace: p.Namespace, Provider: label, Version: p.Version, Status: kubesupport.Supported}
		var refused []string
		for _, v := range vers {
			chk := kubesupport.SupportsWorkloadKubernetes(label, p.Version, v)
			if chk.Range != "" {
				ps.Range, ps.Source = chk.Range, chk.Source
			}
			switch chk.Status {
			case kubesupport.Unsupported:
				ps.Status = kubesupport.Unsupported
				refused = append(refused, fmt.Sprintf("%s (%s)", v, strings.Join(toSet[v], ", ")))
			case kubesupport.NotDeclared:
				if ps.Status != kubesupport.Unsupported {
					ps.Status, ps.Reason = kubesupport.NotDeclared, chk.Reason
				}
			}
		}
		if ps.Status == kubesupport.Unsupported {
			ps.Reason = fmt.Sprintf("%s %s supports workload clusters %s (%s); the upgrade would set %s",
				label, p.Version, ps.Range, ps.Source, strings.Join(refused, "; "))
			problems = append(problems, fmt.Sprintf("provider %s%s: %s: upgrade the providers first (capctl upgrade plan) or choose a version in that range", p.String(), where, ps.Reason))
		}
		if ps.Status == kubesupport.NotDeclared {
			pf.Notes = append(pf.Notes, fmt.Sprintf("provider %s %s%s: %s: not checked", p.String(), p.Version, where, ps.Reason))
		}
		pf.Providers = append(pf.Providers, ps)
	}
	return pf, problems, nil
}

// dryRunFirstPatches sends every selected cluster's first patch as a server-side dry run, so
// what the API server's admission (the Cluster API webhooks, CEL rules, policies) would refuse is
// refused now, with every other preflight problem, before any cluster is changed. A cluster with
// a rollout under way (a resumed run) is not dry-run: the apply waits for that rollout before its
// next patch, and the webhooks rightly refuse a version change while one is under way. It returns
// the refusals and the notes of clusters not dry-run, in cluster order, and how many patches the
// API server accepted.
func dryRunFirstPatches(ctx context.Context, clients map[string]client.Client, req FleetApplyRequest, ch fleetChange, waves []FleetWave, infos map[string]ClusterInfo) ([]string, []string, int, error) {
	var todo []ClusterUpgrade
	for _, w := range waves {
	clusters:
		for _, cu := range w.Clusters {
			for _, s := range cu.Steps {
				if s.AnyPatch { // refused already, with the version to go through first
					continue clusters
				}
			}
			if !cu.UpToDate {
				todo = append(todo, cu)
			}
		}
	}
	dry := req
	dry.DryRun = true
	a := &fleetApplier{clients: clients, req: dry, infos: infos}
	refusals := make([]string, len(todo))
	notes := make([]string, len(todo))
	accepted := make([]bool, len(todo))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(dryRunParallel)
	for i, cu := range todo {
		g.Go(func() error {
			info := infos[cu.Ref()]
			s, err := a.readState(gctx, info, cu)
			if err != nil {
				return err
			}
			step, send := ch.firstPatch(a, s, info, cu)
			if step == "" {
				return nil
			}
			if p := Pending(s); len(p) > 0 {
				notes[i] = fmt.Sprintf("cluster %s is not settled (%s): its first patch (%s) is sent, and checked by the API server, once that is done", cu.Ref(), strings.Join(p, "; "), step)
				return nil
			}
			if err := send(gctx); err != nil {
				if gctx.Err() != nil {
					return gctx.Err()
				}
				refusals[i] = fmt.Sprintf("cluster %s: the API server refuses its first patch (%s, server-side dry run): %v", cu.Ref(), step, err)
				return nil
			}
			accepted[i] = true
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, 0, fmt.Errorf("preflight: %w", err)
	}
	var out, skipped []string
	n := 0
	for i := range todo {
		if refusals[i] != "" {
			out = append(out, refusals[i])
		}
		if notes[i] != "" {
			skipped = append(skipped, notes[i])
		}
		if accepted[i] {
			n++
		}
	}
	return out, skipped, n, nil
}
