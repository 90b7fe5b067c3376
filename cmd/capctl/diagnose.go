package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/diagnose"
	"github.com/capctl/capctl/pkg/multicluster"
)

// exitProblemsFound is the exit code of `diagnose` when it found problems (README: exit codes).
const exitProblemsFound = multicluster.ExitProblems

func newDiagnoseCmd(f *factory) *cobra.Command {
	cmd := &cobra.Command{
		GroupID: groupTroubleshooting,
		Use:     "diagnose",
		Short:   "Say why workload clusters are stuck, who is responsible, and what to run next",
	}
	cmd.AddCommand(newCmdDiagnoseCluster(f, nil), newCmdDiagnoseClusters(f, nil), newCmdDiagnoseV1Beta1(f, nil), newCmdDiagnoseBundle(f, nil))
	return cmd
}

// DiagnoseClusterOptions are the flags of `diagnose cluster`: Options is the one diagnosis
// request (its Now is the clock of "since"; tests fix it; its namespace is the flag's, empty for
// the kubeconfig context's).
type DiagnoseClusterOptions struct {
	deps
	diagnose.ClusterRequest
	Output     output.Format
	Color      *bool
	FromBundle fromBundle

	flags *pflag.FlagSet
	color bool
}

// addDiagnoseFlags adds the flags both diagnose commands have, into their request.
func addDiagnoseFlags(cmd *cobra.Command, o *diagnose.ClusterRequest, color *bool) {
	fl := cmd.Flags()
	positiveDurationVar(fl, &o.StuckAfter, "stuck-after", diagnose.DefaultStuckAfter, "How long a Machine may stay Pending, Provisioning, Deleting, ... before it counts as stuck")
	fl.BoolVar(&o.Workload, "workload", true, "Also read the workload cluster (Nodes, CNI, PodDisruptionBudgets) through its kubeconfig Secret, read only")
	positiveDurationVar(fl, &o.WorkloadTimeout, "workload-timeout", diagnose.DefaultWorkloadTimeout, "How long reading a workload cluster may take before it counts as unreachable")
	fl.BoolVarP(color, "color", "c", false, "Colour the output (default: on when stdout is a terminal and NO_COLOR is unset)")
}

func newCmdDiagnoseCluster(f *factory, runF func(*DiagnoseClusterOptions) error) *cobra.Command {
	o := &DiagnoseClusterOptions{deps: f.deps(), ClusterRequest: diagnose.ClusterRequest{Now: time.Now}}
	cmd := &cobra.Command{
		Use:   "cluster NAME",
		Short: "Diagnose one workload cluster: what is stuck, since when, who is responsible, what to run next",
		Long: strings.TrimSpace(`
Diagnose a workload cluster. capctl walks the same object tree as describe, reads the management
side (provider controllers, webhooks, cert-manager, contracts) and, through the cluster's
kubeconfig Secret, the workload cluster (Nodes, CNI, PodDisruptionBudgets; read only, short
timeout), and applies its rules. Each finding says what is stuck and since when, why (one
sentence), the responsible component (provider, namespace, Deployment) and the commands to run
next; conditions' messages are quoted. The furthest-upstream problem is marked as the root cause.

Exit codes: 0 no problem found, 2 problems found (errors or warnings), 3 partial view (some kind
could not be read, e.g. RBAC: the checks that needed it say "not checked"), 1 the diagnosis
itself failed (bad flags, management cluster unreachable, cluster not found).`),
		Example: strings.TrimSpace(`
  capctl diagnose cluster my-cluster -n prod
  capctl diagnose cluster my-cluster -o json | jq '.findings[] | select(.root)'
  capctl diagnose cluster my-cluster --stuck-after 30m --workload=false`),
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("diagnose cluster needs exactly one cluster name (got %d); `capctl diagnose clusters` diagnoses them all", len(args))
			}
			return nil
		},
	}
	cmd.RunE = leafRun(o, o.complete, runF, runDiagnoseCluster)
	o.flags = cmd.Flags()
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", "", "Namespace of the cluster (default: the kubeconfig context's namespace)")
	addDiagnoseFlags(cmd, &o.ClusterRequest, &o.color)
	addFormatFlag(cmd, &o.Output, "json and yaml print the findings: rule, severity, object, since, evidence, responsible, next commands")
	addFromBundleFlag(cmd, &o.FromBundle)
	return cmd
}

// complete takes the cluster's name and checks it, before any cluster is contacted.
func (o *DiagnoseClusterOptions) complete(args []string) error {
	o.Name = args[0]
	if o.flags.Changed("color") {
		o.Color = &o.color
	}
	if err := o.ClusterRequest.Validate(); err != nil {
		return usageError{err}
	}
	return o.FromBundle.check(o.flags)
}

// runDiagnoseCluster makes the one diagnose.RunCluster call and prints the report.
func runDiagnoseCluster(ctx context.Context, o *DiagnoseClusterOptions) error {
	if o.Color != nil {
		o.IO.ForceColor(*o.Color)
	}
	e, err := o.FromBundle.env(ctx, o.deps, multicluster.Selection{}, nil)
	if err != nil {
		return err
	}
	if err := o.FromBundle.diagnose(e, &o.ClusterRequest); err != nil {
		return err
	}
	rep, err := diagnose.RunCluster(ctx, e, o.ClusterRequest)
	if err != nil {
		return err
	}
	if rep.ManagementError != "" && !o.Output.Structured() {
		fmt.Fprintf(o.IO.ErrOut, "Warning: management side not checked: %s\n", rep.ManagementError)
	}
	err = output.Render(o.IO.Out, o.Output, rep, func(w io.Writer) error {
		return diagnose.RenderText(w, rep, diagnose.RenderOptions{Now: o.Now(), Color: o.IO.ColorEnabled()})
	})
	if err != nil {
		return err
	}
	return exitCode(rep.ExitCode())
}

// DiagnoseClustersOptions are the flags of `diagnose clusters`: ClustersRequest is the one
// request (its namespace is the flag's, empty for the kubeconfig context's).
type DiagnoseClustersOptions struct {
	deps
	diagnose.ClustersRequest
	Output output.Format
	Color  *bool
	// Contexts are the management clusters of --contexts/--all-contexts.
	Contexts   multicluster.Selection
	FromBundle fromBundle

	flags *pflag.FlagSet
	color bool
}

func newCmdDiagnoseClusters(f *factory, runF func(*DiagnoseClustersOptions) error) *cobra.Command {
	o := &DiagnoseClustersOptions{deps: f.deps(), ClustersRequest: diagnose.ClustersRequest{ClusterRequest: diagnose.ClusterRequest{Now: time.Now}}}
	cmd := &cobra.Command{
		Use:   "clusters",
		Short: "Diagnose every cluster of a namespace (or all): one line per cluster, problems first",
		Long: strings.TrimSpace(`
Diagnose every workload cluster of the namespace (-A: of every namespace) with the rules of
` + "`diagnose cluster`" + `, a few clusters at a time, and print one line per cluster, problems first,
with its root cause. The management side is read once. -o json|yaml prints every finding.

With --contexts a,b or --all-contexts, diagnose the clusters of several management clusters as
one table (a first MANAGEMENT column), then one row per management cluster; one that cannot be
read is reported in its row and the others are still diagnosed.

Exit codes: 0 no cluster has a problem, 2 some cluster has one, 3 partial view (some kind could
not be read, e.g. RBAC, or some management cluster of --contexts/--all-contexts could not be
read), 1 the diagnosis itself failed.`),
		Example: strings.TrimSpace(`
  capctl diagnose clusters -A
  capctl diagnose clusters -n prod -o json | jq '.clusters[] | select(.healthy | not) | .root.rule'`),
		Args: cobra.NoArgs,
	}
	cmd.RunE = leafRun(o, o.complete, runF, runDiagnoseClusters)
	o.flags = cmd.Flags()
	addContextsFlags(cmd, &o.Contexts)
	addNamespaceFlags(cmd, &o.Namespace, &o.AllNamespaces, "Namespace to diagnose (default: the kubeconfig context's namespace)", "Diagnose the clusters of every namespace")
	cmd.Flags().IntVar(&o.Concurrency, "concurrency", diagnose.DefaultConcurrency, "How many workload clusters to read at once (the management side is read in one list per kind)")
	addDiagnoseFlags(cmd, &o.ClusterRequest, &o.color)
	addFormatFlag(cmd, &o.Output, "json and yaml print every cluster's findings")
	addFromBundleFlag(cmd, &o.FromBundle)
	return cmd
}

// complete checks the flags before any cluster is contacted.
func (o *DiagnoseClustersOptions) complete([]string) error {
	if o.flags.Changed("color") {
		o.Color = &o.color
	}
	if err := o.ClustersRequest.Validate(); err != nil {
		return usageError{err}
	}
	if err := checkContextsFlags(o.flags, o.Contexts); err != nil {
		return err
	}
	return o.FromBundle.check(o.flags)
}

// runDiagnoseClusters makes the one diagnose.RunClusters call and prints the fleet.
func runDiagnoseClusters(ctx context.Context, o *DiagnoseClustersOptions) error {
	if o.Color != nil {
		o.IO.ForceColor(*o.Color)
	}
	e, err := o.FromBundle.env(ctx, o.deps, o.Contexts, nil)
	if err != nil {
		return err
	}
	if err := o.FromBundle.diagnose(e, &o.ClusterRequest); err != nil {
		return err
	}
	res, err := diagnose.RunClusters(ctx, e, o.ClustersRequest)
	if err != nil {
		return err
	}
	if res.Empty() && !o.Output.Structured() {
		where := "namespace " + res.Namespace
		if o.AllNamespaces {
			where = "any namespace"
		}
		o.Logger().Info("No clusters found in " + where)
		return nil
	}
	err = output.Render(o.IO.Out, o.Output, res, func(w io.Writer) error {
		return res.RenderText(w, diagnose.RenderOptions{Now: o.Now(), Color: o.IO.ColorEnabled()})
	})
	if err != nil {
		return err
	}
	return exitCode(res.ExitCode())
}
