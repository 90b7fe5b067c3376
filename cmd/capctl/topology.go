package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/diagnose"
	"github.com/capctl/capctl/pkg/fleetupgrade"
	"github.com/capctl/capctl/pkg/multicluster"
	"github.com/capctl/capctl/pkg/topology"
)

func newCmdTopology(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupManagement,
		Use:     "topology",
		Short:   "Preview what ClusterClass, template and Cluster changes do to the clusters built from them",
	}
	cmd.AddCommand(newCmdTopologyPlan(f, nil), newCmdTopologyApply(f, nil))
	return cmd
}

// TopologyApplyOptions are the flags of `topology apply`: ApplyRequest is the one request.
type TopologyApplyOptions struct {
	deps
	topology.ApplyRequest
	Output   output.Format
	Contexts multicluster.Selection

	rolloutFlags rolloutFlags
	flags        *pflag.FlagSet
}

func newCmdTopologyApply(f *factory, runF func(*TopologyApplyOptions) error) *cobra.Command {
	o := &TopologyApplyOptions{deps: f.deps()}
	cmd := &cobra.Command{
		Use:   "apply --plan FILE",
		Short: "Roll a ClusterClass change out as a rebase: the changed class under a new name, the planned clusters moved onto it wave by wave",
		Long: strings.TrimSpace(`
Roll out the ClusterClass change a reviewed topology plan computed (capctl topology plan -f ...
--save FILE), without editing the class the clusters use: the changed templates and the class are
created under new names (--class-name, default the old name and a short digest of the change),
and the planned clusters are moved onto the new class (spec.topology.classRef) wave by wave, with
the rollout flags of upgrade apply --kubernetes-version (wave labels, --canary, --max-parallel,
--max-failures, --soak, --gate-command, --window; env CAPCTL_CLUSTERCLASS and
CAPCTL_CLUSTERCLASS_FROM for the gate). The old class is left as it was.

Before anything is written the plan is checked (its digest; one class; every cluster computed and
admitted by upstream admission when planned) and compared with the management clusters: a planned
cluster or the class changed since the plan is refused, naming it; before each later wave the
clusters are compared again. Each cluster's move is first sent as a server-side dry run; a run
refused then deletes the class and templates it created. A cluster is done when the topology
controller reconciled its new spec and every Machine is up to date and the Cluster Available; the
report and the record (capctl upgrade history) say which parts replaced their machines beside what
the plan predicted. An interrupted run resumes by running the same command again: the class made
from this plan is reused and clusters on it are not moved twice.

--rollback moves the plan's clusters that are on the new class back onto the old one (upstream's
Cluster webhook, through the dry run, refuses what it would refuse); --prune-old-class deletes the
old class after a run that finished, if no Cluster uses it any more.`),
		Example: strings.TrimSpace(`
  capctl topology plan -f clusterclasses/quick-start.yaml --save plan.json
  capctl topology apply --plan plan.json --canary 1 --soak 10m --gate-command ./smoke.sh
  capctl topology apply --plan plan.json --class-name quick-start-v2 --all-contexts
  capctl topology apply --plan plan.json --rollback
  capctl topology apply --plan plan.json --prune-old-class`),
		Args: cobra.NoArgs,
	}
	cmd.RunE = leafRun(o, o.complete, runF, runTopologyApply)
	o.flags = cmd.Flags()
	fl := cmd.Flags()
	fl.StringVar(&o.Plan, "plan", "", "The plan file topology plan --save wrote (required)")
	fl.StringVar(&o.ClassName, "class-name", "", "The new ClusterClass's name (default: the old name and a short digest of the change)")
	fl.BoolVar(&o.Rollback, "rollback", false, "Move the plan's clusters that are on the new class back onto the old one, wave by wave with the same rollout flags (nothing is created)")
	fl.BoolVar(&o.PruneOldClass, "prune-old-class", false, "Once every planned cluster is on the new class, delete the old ClusterClass if no Cluster uses it (its templates are left)")
	o.rolloutFlags.add(cmd, "--plan")
	fl.BoolVar(&o.NoWait, "no-wait", false, "With --window: outside the window, exit at once saying when it opens next, instead of waiting for it")
	positiveDurationVar(fl, &o.Timeout, "timeout", fleetupgrade.DefaultClusterTimeout, "How long one cluster may take to be rebased and settle")
	addContextsFlags(cmd, &o.Contexts)
	addFormatFlag(cmd, &o.Output, "json and yaml print the report: waves, clusters, steps with predicted and replaced parts")
	return cmd
}

// complete checks the flags before the plan or any cluster is read.
func (o *TopologyApplyOptions) complete([]string) error {
	r, err := o.rolloutFlags.toRollout()
	if err != nil {
		return err
	}
	o.Rollout = r
	if err := o.ApplyRequest.Validate(); err != nil {
		return usageError{err}
	}
	return checkContextsFlags(o.flags, o.Contexts)
}

// runTopologyApply makes the one topology.Apply call and prints the report; when the run stops it
// says how to continue.
func runTopologyApply(ctx context.Context, o *TopologyApplyOptions) error {
	e, err := o.env(ctx, o.Contexts)
	if err != nil {
		return err
	}
	progress := output.NewProgress(o.IO)
	e.Progress = func(s string) { progress.Step("%s", s) }
	o.Health = diagnose.SoakHealth
	rep, err := topology.Apply(ctx, e, o.ApplyRequest)
	return fleetApplyDone(o.IO.Out, o.Output, rep, err)
}

// TopologyPlanOptions are the flags of `topology plan`: PlanRequest is the one request.
type TopologyPlanOptions struct {
	deps
	topology.PlanRequest
	Output   output.Format
	Contexts multicluster.Selection

	flags *pflag.FlagSet
}

func newCmdTopologyPlan(f *factory, runF func(*TopologyPlanOptions) error) *cobra.Command {
	o := &TopologyPlanOptions{deps: f.deps()}
	cmd := &cobra.Command{
		Use:   "plan -f FILE|DIR...",
		Short: "Show what a ClusterClass, template or Cluster change would do to every cluster, before it is applied",
		Long: strings.TrimSpace(`
Plan a ClusterClass change before applying it. -f takes the changed or new ClusterClasses,
provider templates and Clusters (cluster.x-k8s.io/v1beta2), as a pull request carries them;
directories are walked for *.yaml and *.yml. Every Cluster whose class uses a changed class or
template, and every changed Cluster, is planned (in every namespace unless -n, --cluster or -l
narrow it).

For each cluster capctl runs Cluster API's own topology code (the v1.14 topology controller's
desired-state generator, its admission checks and its server-side-apply dry runs) against the
management cluster, and says which objects the controller would create, change, rotate or delete,
whether the control plane and each MachineDeployment roll out (replace machines) or change in
place, and the control plane's upgrade plan when the version changes. A change the admission
webhooks would refuse is shown as refused, with their reason. A class with external patches
(Runtime Extensions) is shown as not computed. Nothing is written: only dry runs are sent, through
a client that refuses every other write (it needs get/list and patch, which dry runs use).

Exit codes, as kubectl diff: 0 nothing changes, 1 something changes, 2 a change is refused or the
plan failed, 3 partial (a cluster or management cluster could not be planned).`),
		Example: strings.TrimSpace(`
  capctl topology plan -f clusterclasses/
  capctl topology plan -f clusterclasses/quick-start.yaml -f clusters/prod/ -n prod --diff
  capctl topology plan -f clusterclasses/ -o json | jq '.clusters[] | select(.controlPlane.rollsOut)'
  capctl topology plan -f clusterclasses/ --all-contexts --save plan.json`),
		Args: cobra.NoArgs,
	}
	cmd.RunE = planExit(leafRun(o, o.complete, runF, runTopologyPlan))
	o.flags = cmd.Flags()
	fl := cmd.Flags()
	fl.StringSliceVarP(&o.Files, "filename", "f", nil, "Changed or new ClusterClasses, templates and Clusters: files, directories (walked for *.yaml/*.yml) or - for standard input; repeatable")
	addNamespaceFlags(cmd, &o.Namespace, &o.AllNamespaces, "Plan only the clusters of this namespace (default: every namespace the change reaches)", "Plan the clusters of every namespace (the default)")
	fl.StringSliceVar(&o.Clusters, "cluster", nil, "Plan only these clusters (names, repeatable or separated by commas)")
	fl.StringVarP(&o.Selector, "selector", "l", "", "Plan only the clusters matching this label selector")
	fl.BoolVar(&o.Diff, "diff", false, "Show each change as a unified diff of the object")
	fl.StringVar(&o.Save, "save", "", "Save the plan (inputs' digests and every cluster's predicted changes) to this file")
	fl.IntVar(&o.Concurrency, "concurrency", topology.DefaultConcurrency, "How many clusters to plan at once on each management cluster")
	addContextsFlags(cmd, &o.Contexts)
	addFormatFlag(cmd, &o.Output, "json and yaml print every cluster's plan: controlPlane, machineDeployments, machinePools, changes, refused, partial")
	return cmd
}

// planExit gives every failure of topology plan the exit code 2 (kubectl diff's rule: 1 means
// "changes"), after printing it.
func planExit(run func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := run(cmd, args)
		if err == nil {
			return nil
		}
		if _, ok := err.(exitCodeError); ok {
			return err
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "Error: %v\n", err)
		return exitCodeError{code: topology.ExitRefused}
	}
}

// complete checks the flags before any file or cluster is read.
func (o *TopologyPlanOptions) complete([]string) error {
	o.Stdin = o.IO.In
	if err := o.PlanRequest.Validate(); err != nil {
		return usageError{err}
	}
	return checkContextsFlags(o.flags, o.Contexts)
}

// runTopologyPlan makes the one topology.Plan call and prints the plan.
func runTopologyPlan(ctx context.Context, o *TopologyPlanOptions) error {
	e, err := o.env(ctx, o.Contexts)
	if err != nil {
		return err
	}
	if !o.Output.Structured() {
		e.Progress = func(s string) { output.NewProgress(o.IO).Step("%s", s) }
	}
	res, err := topology.Plan(ctx, e, o.PlanRequest)
	if err != nil {
		return err
	}
	if err := output.Render(o.IO.Out, o.Output, res, func(w io.Writer) error { return topology.RenderText(w, res) }); err != nil {
		return err
	}
	return exitCode(res.ExitCode())
}
