package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/capctl/capctl/pkg/bundle"
	"github.com/capctl/capctl/pkg/describe"
	"github.com/capctl/capctl/pkg/diagnose"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/multicluster"
)

// DiagnoseBundleOptions are the flags of `diagnose bundle`: Request is the one request.
type DiagnoseBundleOptions struct {
	deps
	bundle.Request
	// Contexts are the management clusters of --contexts/--all-contexts, each bundled in its
	// own folder.
	Contexts multicluster.Selection
	maxSize  string
	flags    *pflag.FlagSet
}

func newCmdDiagnoseBundle(f *factory, runF func(*DiagnoseBundleOptions) error) *cobra.Command {
	o := &DiagnoseBundleOptions{deps: f.deps()}
	cmd := &cobra.Command{
		Use:   "bundle -o FILE.tar.gz",
		Short: "Write a redacted support bundle of the management cluster for someone who cannot reach it",
		Long: strings.TrimSpace(`
Write a support bundle (a gzipped tar, mode 0600) of the management cluster, for a vendor, another
team or a CI job that cannot reach it: every Cluster API object of the namespace (-A: of every
namespace; cluster-scoped kinds always), the Cluster API CRDs (versions and storedVersions, no
schemas), the provider inventory, each provider namespace's Deployments, pods, newest events and
controller logs (the last --log-lines lines of each container, where pods/log is allowed and
served), the namespace's events, the fleet's describe and diagnose views (their -o json), and
manifest.json: every file, and what was left out and why.

Secrets are never bundled with their data: secrets.json names each Secret with its type and key
names; kubeconfig and service-account token Secrets are left out altogether. The bundle is bounded
by --max-size (uncompressed): what would pass it is left out and named in the manifest. A kind
that may not be read (RBAC) is named there too, and the exit code is then 3.

With --contexts a,b or --all-contexts, each management cluster is bundled in its own folder
(named after its context) and the views are the commands' views over all of them; one that
cannot be reached is named in the manifest.

The bundle also records the management cluster's answers to the views' reads, so that whoever
receives it can run describe and diagnose on it with --from-bundle FILE, with no kubeconfig.`),
		Example: strings.TrimSpace(`
  capctl diagnose bundle -o support.tar.gz -n prod
  capctl diagnose bundle -o support.tar.gz -A --max-size 64Mi --log-lines 500
  capctl diagnose bundle -o fleet.tar.gz -A --all-contexts
  tar -xzf support.tar.gz -O manifest.json | jq .leftOut
  capctl diagnose clusters -A --from-bundle support.tar.gz`),
		Args: cobra.NoArgs,
	}
	cmd.RunE = leafRun(o, o.complete, runF, runDiagnoseBundle)
	fl := cmd.Flags()
	fl.StringVarP(&o.Output, "output", "o", "", "The bundle to write: FILE.tar.gz (created 0600)")
	addNamespaceFlags(cmd, &o.Namespace, &o.AllNamespaces, "Namespace of the workload clusters (default: the kubeconfig context's namespace)", "Bundle the clusters of every namespace")
	fl.StringVar(&o.maxSize, "max-size", resource.NewQuantity(bundle.DefaultMaxSize, resource.BinarySI).String(), "The bundle's largest uncompressed size (e.g. 64Mi); what would pass it is left out and named in the manifest")
	fl.Int64Var(&o.LogLines, "log-lines", bundle.DefaultLogLines, "Newest lines of each provider controller's log to keep (-1: no logs)")
	addContextsFlags(cmd, &o.Contexts)
	o.flags = fl
	return cmd
}

// complete parses --max-size, wires the views and checks the request.
func (o *DiagnoseBundleOptions) complete([]string) error {
	q, err := resource.ParseQuantity(o.maxSize)
	if err != nil || q.Value() <= 0 {
		return usageErrorf("invalid --max-size %q: use a size such as 64Mi or 1Gi", o.maxSize)
	}
	o.MaxSize = q.Value()
	o.Views = fleetViews
	if err := o.Request.Validate(); err != nil {
		return usageError{err}
	}
	return checkContextsFlags(o.flags, o.Contexts)
}

// fleetViews are the bundle's describe.json and diagnose.json: the fleet as `describe clusters`
// and `diagnose clusters` print it with -o json (the command wires the two verbs into the
// bundle, which runs neither).
func fleetViews(ctx context.Context, e env.Env, namespace string, all bool) (map[string]any, error) {
	views := map[string]any{}
	sum, err := describe.RunClusters(ctx, e, describe.SummaryRequest{Namespace: namespace, AllNamespaces: all})
	if err != nil {
		return views, err
	}
	views["describe.json"] = sum
	req := diagnose.DefaultClusterRequest(namespace, "")
	req.Now = e.Clock
	workloads := &diagnose.WorkloadRecord{}
	req.Workloads = workloads.Recording(diagnose.FetchWorkload)
	diag, err := diagnose.RunClusters(ctx, e, diagnose.ClustersRequest{AllNamespaces: all, Concurrency: diagnose.DefaultConcurrency, ClusterRequest: req})
	if err != nil {
		return views, err
	}
	views["diagnose.json"] = diag
	views[bundle.WorkloadsFile] = workloads
	return views, nil
}

// runDiagnoseBundle makes the one bundle.Run call and says what it wrote.
func runDiagnoseBundle(ctx context.Context, o *DiagnoseBundleOptions) error {
	e, err := o.env(ctx, o.Contexts)
	if err != nil {
		return err
	}
	e.Progress = func(s string) { o.Logger().Info(s) }
	res, err := bundle.Run(ctx, e, o.Request)
	if err != nil {
		return err
	}
	if err := res.RenderText(o.IO.Out); err != nil {
		return err
	}
	return exitCode(res.ExitCode())
}
