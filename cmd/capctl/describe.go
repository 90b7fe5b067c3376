package main

import (
	"bytes"
	"context"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/capctl/capctl/pkg/describe"
)

func init() { registerCommand(newDescribeCmd) }

// describeNow is the clock for SINCE and AGE; tests fix it for stable output.
var describeNow = time.Now

func newDescribeCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupTroubleshooting,
		Use:     "describe",
		Short:   "Describe workload clusters",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return usageErrorf("describe needs a subcommand: cluster NAME or clusters")
		},
	}
	cmd.AddCommand(newDescribeClusterCmd(f), newDescribeClustersCmd(f))
	return cmd
}

type describeClusterOptions struct {
	namespace      string
	showConditions string
	showMS         bool
	showTemplates  bool
	showRS         bool
	echo           bool
	grouping       bool
	v1beta2        bool
	color          bool
	output         string
	watch          bool
	watchInterval  time.Duration
}

func newDescribeClusterCmd(f *factory) *cobra.Command {
	o := &describeClusterOptions{}
	cmd := &cobra.Command{
		Use:   "cluster NAME",
		Short: "Describe a workload cluster: its objects as a tree, with their conditions",
		Long: strings.TrimSpace(`
Describe a workload cluster: the Cluster, its infrastructure, control plane and workers (machine
deployments, machine pools, machines) as a tree, with the status of each object, the
MachineHealthChecks watching its machines, and the first failing condition when the cluster is
not available. Machines in the same state are grouped (--grouping=false lists each one).`),
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
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.run(cmd, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&o.namespace, "namespace", "n", "", "Namespace of the cluster (default: the kubeconfig context's namespace)")
	fl.StringVar(&o.showConditions, "show-conditions", "", "List the conditions of these objects: comma list of all, KIND or KIND/NAME; a trailing + shows only conditions that are not in their normal state")
	fl.BoolVar(&o.showMS, "show-machinesets", false, "Show MachineSets under their MachineDeployments")
	fl.BoolVar(&o.showRS, "show-resourcesets", false, "Show the ClusterResourceSets applied to the cluster")
	fl.BoolVar(&o.showTemplates, "show-templates", false, "Show infrastructure and bootstrap templates")
	fl.BoolVar(&o.echo, "echo", false, "Show machine infrastructure and bootstrap objects even when they only repeat their machine's state")
	fl.BoolVar(&o.grouping, "grouping", true, "Group machines in the same state into one row")
	fl.BoolVar(&o.v1beta2, "v1beta2", true, "Show v1beta2 conditions; --v1beta2=false shows the deprecated v1beta1 conditions (Ready with severity)")
	fl.BoolVarP(&o.color, "color", "c", false, "Colour the output (default: on when stdout is a terminal and NO_COLOR is unset)")
	fl.StringVarP(&o.output, "output", "o", "", "Output format: text (default), json or yaml")
	fl.BoolVarP(&o.watch, "watch", "w", false, "Redraw whenever the tree changes, until interrupted (ctrl-c)")
	fl.DurationVar(&o.watchInterval, "watch-interval", 2*time.Second, "How often --watch reads the cluster")
	return cmd
}

func validateOutput(output string) error {
	switch output {
	case "", "text", "json", "yaml":
		return nil
	}
	return usageErrorf("invalid output format %q: use one of text, json, yaml", output)
}

func (o *describeClusterOptions) run(cmd *cobra.Command, f *factory, name string) error {
	// Validate everything before touching the cluster.
	if err := validateOutput(o.output); err != nil {
		return err
	}
	if err := describe.ValidateShowConditions(o.showConditions); err != nil {
		return usageErrorf("%v", err)
	}
	if o.watchInterval <= 0 {
		return usageErrorf("--watch-interval must be positive")
	}
	if cmd.Flags().Changed("color") {
		f.IO.ForceColor(o.color)
	}
	ctx := cmd.Context()
	c, err := f.Cluster(ctx)
	if err != nil {
		return err
	}
	ns := o.namespace
	if ns == "" {
		ns = c.Namespace
	}
	opts := describe.Options{
		Namespace: ns, Name: name,
		ShowConditions: o.showConditions, ShowMachineSets: o.showMS, ShowTemplates: o.showTemplates,
		ShowResourceSets: o.showRS, Echo: o.echo, Grouping: o.grouping, V1Beta1: !o.v1beta2,
	}
	frame := func(ctx context.Context) ([]byte, error) {
		t, err := describe.Discover(ctx, c, opts)
		if err != nil {
			return nil, err
		}
		var buf bytes.Buffer
		switch o.output {
		case "json":
			err = describe.RenderJSON(&buf, t)
		case "yaml":
			err = describe.RenderYAML(&buf, t)
		default:
			err = describe.Render(&buf, t, describe.RenderOptions{Color: f.IO.ColorEnabled(), Now: describeNow()})
		}
		return buf.Bytes(), err
	}
	if o.watch {
		clear := f.IO.IsStdoutTTY() && o.output == ""
		return describe.Watch(ctx, o.watchInterval, f.IO.Out, clear, frame)
	}
	out, err := frame(ctx)
	if err != nil {
		return err
	}
	_, err = f.IO.Out.Write(out)
	return err
}

func newDescribeClustersCmd(f *factory) *cobra.Command {
	var namespace, output string
	var all, color bool
	cmd := &cobra.Command{
		Use:   "clusters",
		Short: "One summary row per workload cluster: version, control plane and workers, availability",
		Example: strings.TrimSpace(`
  capctl describe clusters -A
  capctl describe clusters -n prod -o json`),
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := validateOutput(output); err != nil {
				return err
			}
			if all && cmd.Flags().Changed("namespace") {
				return usageErrorf("--all-namespaces and --namespace cannot be used together")
			}
			if cmd.Flags().Changed("color") {
				f.IO.ForceColor(color)
			}
			ctx := cmd.Context()
			c, err := f.Cluster(ctx)
			if err != nil {
				return err
			}
			if namespace == "" {
				namespace = c.Namespace
			}
			rows, err := describe.Summarize(ctx, c, describe.SummaryOptions{Namespace: namespace, AllNamespaces: all})
			if err != nil {
				return err
			}
			switch output {
			case "json":
				return describe.RenderJSON(f.IO.Out, rows)
			case "yaml":
				return describe.RenderYAML(f.IO.Out, rows)
			}
			if len(rows) == 0 {
				where := "namespace " + namespace
				if all {
					where = "any namespace"
				}
				f.Logger().Info("No clusters found in " + where)
				return nil
			}
			return describe.RenderSummary(f.IO.Out, rows, describe.RenderOptions{Color: f.IO.ColorEnabled(), Now: describeNow()})
		},
	}
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "Namespace to list (default: the kubeconfig context's namespace)")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "List clusters of every namespace")
	cmd.Flags().StringVarP(&output, "output", "o", "", "Output format: text (default), json or yaml")
	cmd.Flags().BoolVarP(&color, "color", "c", false, "Colour the output (default: on when stdout is a terminal and NO_COLOR is unset)")
	return cmd
}
