package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/describe"
	"github.com/capctl/capctl/pkg/multicluster"
)

func newCmdDescribe(f *factory, clusterRunF func(*describeClusterOptions) error, clustersRunF func(*describeClustersOptions) error) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupTroubleshooting,
		Use:     "describe",
		Short:   "Describe workload clusters",
	}
	cmd.AddCommand(newCmdDescribeCluster(f, clusterRunF), newCmdDescribeClusters(f, clustersRunF))
	return cmd
}

// describeClusterOptions are the flags of `describe cluster`: the tree's options and how to show
// it.
type describeClusterOptions struct {
	deps

	// Describe holds the cluster's name and the presentation; its namespace is the flag's (empty:
	// the kubeconfig context's).
	Describe      describe.ClusterRequest
	V1Beta2       bool
	Color         *bool // set when --color was given
	Output        output.Format
	Watch         bool
	WatchInterval time.Duration
	// Now is the clock of SINCE (tests fix it for stable output).
	Now        func() time.Time
	FromBundle fromBundle

	flags *pflag.FlagSet
	color bool
}

// newCmdDescribeCluster builds `describe cluster`; runF replaces the run (tests capture the
// options, or fix the clock).
func newCmdDescribeCluster(f *factory, runF func(*describeClusterOptions) error) *cobra.Command {
	o := &describeClusterOptions{deps: f.deps(), Now: time.Now}
	cmd := &cobra.Command{
		Use:   "cluster NAME",
		Short: "Describe a workload cluster: its objects as a tree, with their conditions",
		Long: strings.TrimSpace(`
Describe a workload cluster: the Cluster, its infrastructure, control plane and workers (machine
deployments, machine pools, machines) as a tree, with the status of each object, the
MachineHealthChecks watching its machines, and the first failing condition when the cluster is
not available. Machines in the same state are grouped (--grouping=false lists each one).

A kind you may not list (RBAC) leaves its part of the tree empty and is named under it: the
view is partial and the exit code is 3 (0 otherwise).`),
		Example: strings.TrimSpace(`
  capctl describe cluster my-cluster -n prod
  capctl describe cluster my-cluster --show-conditions KubeadmControlPlane,Machine+ --grouping=false
  capctl describe cluster my-cluster -o json | jq '.cluster.firstFailing'
  capctl describe cluster my-cluster --watch`),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("describe cluster needs exactly one cluster name (got %d); `capctl describe clusters` lists them", len(args))
			}
			return nil
		},
	}
	cmd.RunE = leafRun(o, o.complete, runF, runDescribeCluster)
	d := &o.Describe
	fl := cmd.Flags()
	o.flags = fl
	fl.StringVarP(&d.Namespace, "namespace", "n", "", "Namespace of the cluster (default: the kubeconfig context's namespace)")
	fl.StringVar(&d.ShowConditions, "show-conditions", "", "List the conditions of these objects: comma list of all, KIND or KIND/NAME; a trailing + shows only conditions that are not in their normal state")
	fl.BoolVar(&d.ShowMachineSets, "show-machinesets", false, "Show MachineSets under their MachineDeployments")
	fl.BoolVar(&d.ShowResourceSets, "show-resourcesets", false, "Show the ClusterResourceSets applied to the cluster")
	fl.BoolVar(&d.ShowTemplates, "show-templates", false, "Show infrastructure and bootstrap templates")
	fl.BoolVar(&d.Echo, "echo", false, "Show machine infrastructure and bootstrap objects even when they only repeat their machine's state")
	fl.BoolVar(&d.Grouping, "grouping", true, "Group machines in the same state into one row")
	fl.BoolVar(&o.V1Beta2, "v1beta2", true, "Show v1beta2 conditions; --v1beta2=false shows the deprecated v1beta1 conditions (Ready with severity)")
	fl.BoolVarP(&o.color, "color", "c", false, "Colour the output (default: on when stdout is a terminal and NO_COLOR is unset)")
	addFormatFlag(cmd, &o.Output, "json and yaml print the tree as data")
	fl.BoolVarP(&o.Watch, "watch", "w", false, "Redraw whenever the tree changes, until interrupted (ctrl-c)")
	positiveDurationVar(fl, &o.WatchInterval, "watch-interval", describe.DefaultWatchInterval, "How often --watch reads the cluster")
	addFromBundleFlag(cmd, &o.FromBundle)
	return cmd
}

// complete takes the cluster's name and checks every flag, before the cluster is contacted.
func (o *describeClusterOptions) complete(args []string) error {
	o.Describe.Name = args[0]
	o.Describe.V1Beta1 = !o.V1Beta2
	if o.flags.Changed("color") {
		o.Color = &o.color
	}
	if err := o.Describe.Validate(); err != nil {
		return usageError{err}
	}
	return o.FromBundle.check(o.flags, "watch", "watch-interval")
}

// runDescribeCluster reads the cluster's snapshot, builds its tree and prints it, once or on
// every change.
func runDescribeCluster(ctx context.Context, o *describeClusterOptions) error {
	if o.Color != nil {
		o.IO.ForceColor(*o.Color)
	}
	e, err := o.FromBundle.env(ctx, o.deps, multicluster.Selection{}, &o.Now)
	if err != nil {
		return err
	}
	code := multicluster.ExitOK
	frame := func(ctx context.Context) ([]byte, error) {
		t, err := describe.RunCluster(ctx, e, o.Describe)
		if err != nil {
			return nil, err
		}
		code = t.ExitCode()
		var buf bytes.Buffer
		err = output.Render(&buf, o.Output, t, func(w io.Writer) error {
			return describe.Render(w, t, describe.RenderOptions{Color: o.IO.ColorEnabled(), Now: o.Now()})
		})
		return buf.Bytes(), err
	}
	if o.Watch {
		clear := o.IO.IsStdoutTTY() && o.Output == output.Text
		return output.Watch(ctx, o.WatchInterval, o.IO.Out, clear, frame)
	}
	out, err := frame(ctx)
	if err != nil {
		return err
	}
	if _, err := o.IO.Out.Write(out); err != nil {
		return err
	}
	// A tree without a kind it could not read is a partial view: exit code 3, as diagnose's.
	return exitCode(code)
}

// describeClustersOptions are the flags of `describe clusters`.
type describeClustersOptions struct {
	deps

	Namespace     string
	AllNamespaces bool
	Color         *bool
	Output        output.Format
	Now           func() time.Time
	// Contexts are the management clusters of --contexts/--all-contexts (none: the one of
	// --kubeconfig/--kubeconfig-context).
	Contexts   multicluster.Selection
	FromBundle fromBundle

	flags *pflag.FlagSet
	color bool
}

func newCmdDescribeClusters(f *factory, runF func(*describeClustersOptions) error) *cobra.Command {
	o := &describeClustersOptions{deps: f.deps(), Now: time.Now}
	cmd := &cobra.Command{
		Use:   "clusters",
		Short: "One summary row per workload cluster: version, control plane and workers, availability",
		Example: strings.TrimSpace(`
  capctl describe clusters -A
  capctl describe clusters -n prod -o json
  capctl describe clusters -A --all-contexts
  capctl describe clusters -A --contexts eu-1,us-1 -o json`),
		Args: cobra.NoArgs,
	}
	cmd.RunE = leafRun(o, o.complete, runF, runDescribeClusters)
	o.flags = cmd.Flags()
	addNamespaceFlags(cmd, &o.Namespace, &o.AllNamespaces, "Namespace to list (default: the kubeconfig context's namespace)", "List clusters of every namespace")
	addFormatFlag(cmd, &o.Output, "json and yaml print the rows as data")
	cmd.Flags().BoolVarP(&o.color, "color", "c", false, "Colour the output (default: on when stdout is a terminal and NO_COLOR is unset)")
	addContextsFlags(cmd, &o.Contexts)
	addFromBundleFlag(cmd, &o.FromBundle)
	return cmd
}

// complete checks the namespace and the management clusters chosen, before any is contacted.
func (o *describeClustersOptions) complete([]string) error {
	if err := cluster.CheckNamespace(o.Namespace); err != nil {
		return usageError{err}
	}
	if err := checkContextsFlags(o.flags, o.Contexts); err != nil {
		return err
	}
	if err := o.FromBundle.check(o.flags); err != nil {
		return err
	}
	if o.flags.Changed("color") {
		o.Color = &o.color
	}
	return nil
}

// runDescribeClusters makes the one describe.RunClusters call and prints the rows.
func runDescribeClusters(ctx context.Context, o *describeClustersOptions) error {
	if o.Color != nil {
		o.IO.ForceColor(*o.Color)
	}
	e, err := o.FromBundle.env(ctx, o.deps, o.Contexts, &o.Now)
	if err != nil {
		return err
	}
	res, err := describe.RunClusters(ctx, e, describe.SummaryRequest{Namespace: o.Namespace, AllNamespaces: o.AllNamespaces})
	if err != nil {
		return err
	}
	err = output.Render(o.IO.Out, o.Output, res, func(w io.Writer) error {
		if res.Empty() {
			where := "namespace " + res.Namespace
			if o.AllNamespaces {
				where = "any namespace"
			}
			o.Logger().Info("No clusters found in " + where)
			return nil
		}
		return res.RenderText(w, describe.RenderOptions{Color: o.IO.ColorEnabled(), Now: o.Now()})
	})
	if err != nil {
		return err
	}
	return exitCode(res.ExitCode())
}
