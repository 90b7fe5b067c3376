package main

import (
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/capctl/capctl/internal/output"
	"github.com/capctl/capctl/pkg/cluster"
	"github.com/capctl/capctl/pkg/env"
	"github.com/capctl/capctl/pkg/repository"
	"github.com/capctl/capctl/pkg/templates"
)

// generateClusterOptions are the flags of `generate cluster`: the request for pkg/templates and
// how to print its answer.
type generateClusterOptions struct {
	deps
	// Kubeconfig selects the management cluster (the global flags, read when the run starts).
	Kubeconfig func() cluster.Options

	Request     templates.ClusterRequest
	ListFlavors bool
	Offline     bool
	Output      output.Format
	WriteTo     string

	flags                *pflag.FlagSet
	cpCount, workerCount int64
}

// newCmdGenerateCluster builds `generate cluster`; runF replaces the run (tests capture the
// options without a cluster).
func newCmdGenerateCluster(f *factory, runF func(*generateClusterOptions) error) *cobra.Command {
	o := &generateClusterOptions{deps: f.deps(), Kubeconfig: f.ClusterOptions}
	cmd := &cobra.Command{
		Use:   "cluster NAME",
		Short: "Generate the YAML of a workload cluster from a template",
		Long: `Generate the YAML of a workload cluster from a cluster template.

The template is a flavor of an infrastructure provider's repository (cluster-template[-FLAVOR].yaml),
or a file, URL or stdin (--from), or a ConfigMap (--from-config-map). Variables are taken from
--set, then --values, then the environment, then the config file. When the cluster uses a
ClusterClass of the provider that the management cluster does not have, the ClusterClass is
added to the output.`,
		Example: `  capctl generate cluster capi-quickstart --infrastructure docker:v1.14.0 --flavor development \
    --kubernetes-version v1.34.1 --worker-machine-count 3 > capi-quickstart.yaml
  capctl generate cluster c1 --from ./my-template.yaml --set POD_CIDR='["10.0.0.0/16"]' -o json
  capctl generate cluster c1 --infrastructure docker --flavor development --list-variables`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 {
				return usageErrorf("please specify a cluster name")
			}
			return nil
		},
	}
	cmd.RunE = leafRun(o, o.complete, runF, runGenerateCluster)
	r := &o.Request
	fl := cmd.Flags()
	o.flags = fl
	fl.StringVarP(&r.Source.Infrastructure, "infrastructure", "i", "", "Infrastructure provider NAME[:VERSION] to take the template from. Default: the one installed in the management cluster")
	fl.StringVarP(&r.Source.Flavor, "flavor", "f", "", "Template flavor: reads cluster-template-FLAVOR.yaml (none: cluster-template.yaml)")
	fl.StringVar(&r.KubernetesVersion, "kubernetes-version", "", "Kubernetes version of the cluster (KUBERNETES_VERSION). Default: the environment or config, else the template's")
	fl.Int64Var(&o.cpCount, "control-plane-machine-count", 1, "Number of control plane machines (CONTROL_PLANE_MACHINE_COUNT); without the flag the environment or config may set it")
	fl.Int64Var(&o.workerCount, "worker-machine-count", 0, "Number of worker machines (WORKER_MACHINE_COUNT); without the flag the environment or config may set it")
	fl.StringVarP(&r.TargetNamespace, "target-namespace", "n", "", "Namespace of the cluster's objects (NAMESPACE). Default: the kubeconfig context's namespace, else default")
	fl.StringVar(&r.Source.From, "from", "", "Read the template from a file, an http(s) URL, a GitHub file URL (…/blob/REF/PATH) or - for stdin")
	fl.StringVar(&r.Source.ConfigMap, "from-config-map", "", "Read the template from this ConfigMap in the management cluster")
	fl.StringVar(&r.Source.ConfigMapNamespace, "from-config-map-namespace", "", "Namespace of --from-config-map. Default: the kubeconfig context's namespace")
	fl.StringVar(&r.Source.ConfigMapKey, "from-config-map-key", templates.DefaultConfigMapKey, "Data key of --from-config-map holding the template")
	fl.BoolVar(&r.ListVariables, "list-variables", false, "List the variables the template needs (required, then optional with defaults) instead of generating")
	fl.StringVar(&o.WriteTo, "write-to", "", "Write the YAML to this file (mode 0600) instead of stdout")
	fl.BoolVar(&o.ListFlavors, "list-flavors", false, "List the flavors (templates) of the infrastructure provider version instead of generating")
	fl.BoolVar(&o.Offline, "offline", false, "Read provider templates only from local repositories, the overrides folder and the cache (no network)")
	addValuesFlags(cmd, &r.Values)
	addObjectsFormatFlag(cmd, &o.Output)
	cmd.MarkFlagsMutuallyExclusive("list-variables", "write-to") // the listing goes to stdout
	return cmd
}

// complete takes the cluster's name and the machine counts that were given, and checks the
// request, before anything is read.
func (o *generateClusterOptions) complete(args []string) error {
	o.Request.Name = args[0]
	if o.flags.Changed("control-plane-machine-count") {
		o.Request.ControlPlaneMachineCount = &o.cpCount
	}
	if o.flags.Changed("worker-machine-count") {
		o.Request.WorkerMachineCount = &o.workerCount
	}
	return asUsageError(o.Request.Validate())
}

// runGenerateCluster completes the request with what this run has (config, kubeconfig,
// clients), makes the one pkg/templates call and prints its answer; an input error found then
// is a usage error.
func runGenerateCluster(ctx context.Context, o *generateClusterOptions) error {
	return asUsageError(generateCluster(ctx, o))
}

func generateCluster(ctx context.Context, o *generateClusterOptions) error {
	r := o.Request
	r.Kubeconfig, r.Stdin = o.Kubeconfig(), o.IO.In
	// The management cluster is reached only when the template's source asks (Dial).
	e := env.Env{Dial: o.Cluster, Config: o.Config, Log: o.Logger(),
		Repository: func(ctx context.Context) (*repository.Client, error) { return o.Repository(ctx, o.Offline) }}
	if o.ListFlavors {
		fl, err := templates.ListFlavors(ctx, e, r)
		if err != nil {
			return err
		}
		return fl.RenderFlavors(o.IO.Out, o.IO.ErrOut, o.Output)
	}
	res, err := templates.GenerateCluster(ctx, e, r)
	if err != nil {
		return err
	}
	if res.Listing != nil {
		return res.Listing.Render(o.IO.Out, o.Output)
	}
	return output.WriteObjects(o.IO.Out, o.IO.ErrOut, res.Objects, o.Output, o.WriteTo)
}
