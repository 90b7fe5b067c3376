package multicluster

import (
	"context"
	"errors"
	"sort"

	"golang.org/x/sync/errgroup"

	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/contract"
	"github.com/capctl/capctl/pkg/inventory"
)

// Result is one management cluster's part of a view: its summary and, when it could be read,
// what the command's function returned.
type Result[T any] struct {
	ManagementCluster
	Value T
	// Client is the management cluster's client (nil when unreachable), for a second pass.
	Client *cluster.Client
}

// Read tells whether the command's function ran and succeeded on this management cluster.
func (r Result[T]) Read() bool { return r.Reachable && r.Error == "" }

// Each runs fn on every reachable management cluster, Parallel at once, after reading its
// summary (contract and provider inventory). A management cluster whose contract check fails
// (checks as contract.CheckManagementCluster takes them) is not read: its Error says why, as it
// does for one that cannot be reached or whose read failed. The results keep the members' order.
func Each[T any](ctx context.Context, members []Member, checks []contract.CheckOption, fn func(context.Context, *cluster.Client) (T, error)) []Result[T] {
	out := make([]Result[T], len(members))
	var g errgroup.Group
	g.SetLimit(Parallel)
	for i, m := range members {
		out[i].Name = m.Context
		if m.Err != nil {
			out[i].Error = m.Err.Error()
			continue
		}
		out[i].Reachable, out[i].Client = true, m.Client
		g.Go(func() error {
			r := &out[i]
			if err := Inspect(ctx, m.Client, &r.ManagementCluster, checks); err != nil {
				r.Error = err.Error()
				return nil
			}
			v, err := fn(ctx, m.Client)
			if err != nil {
				r.Error = err.Error()
				return nil
			}
			r.Value = v
			return nil
		})
	}
	_ = g.Wait()
	return out
}

// Inspect fills a management cluster's contract and providers (two reads: the Cluster CRD and
// the inventory) and applies the contract check.
func Inspect(ctx context.Context, c *cluster.Client, mc *ManagementCluster, checks []contract.CheckOption) error {
	stored, err := contract.ManagementContract(ctx, c)
	if err == nil {
		mc.Contract = stored
	}
	if err := contract.CheckManagementCluster(ctx, c, checks...); err != nil {
		return err
	}
	providers, err := inventory.List(ctx, c)
	if err != nil && !errors.Is(err, inventory.ErrNoInventory) {
		return err
	}
	mc.Providers = mc.Providers[:0]
	for _, p := range providers {
		mc.Providers = append(mc.Providers, Provider{Name: p.ManifestLabel(), Namespace: p.Namespace, Version: p.Version})
	}
	sort.Slice(mc.Providers, func(i, j int) bool { return mc.Providers[i].Name < mc.Providers[j].Name })
	return nil
}

// Summaries are the results' summaries, in order.
func Summaries[T any](rs []Result[T]) []ManagementCluster {
	out := make([]ManagementCluster, len(rs))
	for i, r := range rs {
		out[i] = r.ManagementCluster
	}
	return out
}
