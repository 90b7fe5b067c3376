package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/capctl/capctl/pkg/bundle"
	"github.com/capctl/capctl/pkg/diagnose"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/multicluster"
)

// fromBundle is --from-bundle: the command answers from a support bundle (`diagnose bundle`)
// instead of a management cluster, with the output the cluster gave when the bundle was made.
type fromBundle struct {
	Path   string
	opened *bundle.Opened
}

func addFromBundleFlag(cmd *cobra.Command, fb *fromBundle) {
	cmd.Flags().StringVar(&fb.Path, "from-bundle", "", "Answer from a support bundle (capctl diagnose bundle) instead of the management cluster, as the cluster was when the bundle was made; no kubeconfig is read")
}

// check refuses, beside --from-bundle, the flags that need a live management cluster.
func (fb *fromBundle) check(fl *pflag.FlagSet, live ...string) error {
	if fb.Path == "" {
		return nil
	}
	for _, name := range append([]string{"kubeconfig", "kubeconfig-context", "contexts", "all-contexts"}, live...) {
		if f := fl.Lookup(name); f != nil && f.Changed {
			return usageErrorf("--from-bundle and --%s cannot be used together: a bundle answers for the management clusters it was made from, as they were then, with no connection", name)
		}
	}
	return nil
}

// env is the run's environment: the bundle's recorded management cluster with --from-bundle
// (now is then set to the bundle's time, the clock of "since"), else d's.
func (fb *fromBundle) env(ctx context.Context, d deps, sel multicluster.Selection, now *func() time.Time) (env.Env, error) {
	if fb.Path == "" {
		return d.env(ctx, sel)
	}
	o, err := bundle.Open(ctx, fb.Path)
	if err != nil {
		return env.Env{}, err
	}
	e, err := o.Env()
	if err != nil {
		return env.Env{}, err
	}
	fb.opened = o
	if now != nil {
		*now = e.Clock
	}
	return e, nil
}

// diagnose gives a diagnosis replayed from the bundle the bundle's clock and its record of the
// workload clusters read when it was made.
func (fb *fromBundle) diagnose(e env.Env, req *diagnose.ClusterRequest) error {
	if fb.opened == nil {
		return nil
	}
	w, err := fb.workloads()
	if err != nil {
		return err
	}
	req.Now, req.Workloads = e.Clock, w
	return nil
}

// workloads answers the workload reads from the bundle's record of them.
func (fb *fromBundle) workloads() (diagnose.WorkloadFunc, error) {
	rec := &diagnose.WorkloadRecord{}
	if data, ok := fb.opened.File(bundle.WorkloadsFile); ok {
		if err := json.Unmarshal(data, rec); err != nil {
			return nil, fmt.Errorf("--from-bundle %s: %s: %w", fb.Path, bundle.WorkloadsFile, err)
		}
	}
	return rec.Replay(), nil
}
